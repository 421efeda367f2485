//! Writes a CSR (offsets, relations, other ends) from triples arriving
//! sorted by (node, relation, other), one triple at a time.

use std::io;

use crate::section::{SectionData, SectionOut};

pub struct CsrWriter {
    offsets: SectionOut,
    relations: SectionOut,
    others: SectionOut,
    nodes: u64,
    next_node: u64,
    count: u64,
}

impl CsrWriter {
    pub fn new(nodes: u64, spill: Option<&std::path::Path>) -> io::Result<CsrWriter> {
        Ok(CsrWriter {
            offsets: SectionOut::new(spill)?,
            relations: SectionOut::new(spill)?,
            others: SectionOut::new(spill)?,
            nodes,
            next_node: 0,
            count: 0,
        })
    }

    /// Adds the edge `node -relation-> other`; `node` never decreases.
    pub fn push(&mut self, node: u32, relation: u32, other: u32) -> io::Result<()> {
        while self.next_node <= u64::from(node) {
            self.offsets.write(&self.count.to_ne_bytes())?;
            self.next_node += 1;
        }
        self.relations.write(&relation.to_ne_bytes())?;
        self.others.write(&other.to_ne_bytes())?;
        self.count += 1;
        Ok(())
    }

    /// The (offsets, relations, others) sections.
    pub fn finish(mut self) -> io::Result<[SectionData; 3]> {
        while self.next_node <= self.nodes {
            self.offsets.write(&self.count.to_ne_bytes())?;
            self.next_node += 1;
        }
        Ok([
            self.offsets.finish()?,
            self.relations.finish()?,
            self.others.finish()?,
        ])
    }
}
