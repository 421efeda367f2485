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
        Ok(CsrWriter::with(
            [
                SectionOut::new(spill)?,
                SectionOut::new(spill)?,
                SectionOut::new(spill)?,
            ],
            nodes,
        ))
    }

    /// A writer that keeps only each section's length and sha256 (the
    /// in-edges of a large graph, which the device derives).
    pub fn digest_only(nodes: u64) -> CsrWriter {
        CsrWriter::with(
            [
                SectionOut::digest(),
                SectionOut::digest(),
                SectionOut::digest(),
            ],
            nodes,
        )
    }

    fn with([offsets, relations, others]: [SectionOut; 3], nodes: u64) -> CsrWriter {
        CsrWriter {
            offsets,
            relations,
            others,
            nodes,
            next_node: 0,
            count: 0,
        }
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
