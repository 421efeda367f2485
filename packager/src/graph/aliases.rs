//! The alias sections written as the aliases arrive, sorted by (entity,
//! alias) without duplicates: the aliases as a string table and, per
//! entity, where its aliases start (`owners`, `n + 1` offsets).

use kgbox_bundle::kg::encode::StringTableWriter;
use kgbox_bundle::sections as s;

use crate::section::{SectionOut, Sections};

pub struct AliasSections {
    table: StringTableWriter<SectionOut>,
    owners: SectionOut,
    /// `owners` entries written so far.
    written: u64,
}

impl AliasSections {
    pub fn new(spill: Option<&std::path::Path>) -> std::io::Result<AliasSections> {
        Ok(AliasSections {
            table: StringTableWriter::new(SectionOut::new(spill)?, SectionOut::new(spill)?)?,
            owners: SectionOut::new(spill)?,
            written: 0,
        })
    }

    /// Adds `alias` of `entity` (not below the last entity pushed).
    pub fn push(&mut self, entity: u32, alias: &str) -> std::io::Result<()> {
        self.owners_through(u64::from(entity))?;
        self.table.push(alias)
    }

    /// Writes the start of every entity up to and including `entity`.
    fn owners_through(&mut self, entity: u64) -> std::io::Result<()> {
        let count = self.table.len();
        while self.written <= entity {
            self.owners.write(&count.to_ne_bytes())?;
            self.written += 1;
        }
        Ok(())
    }

    /// Adds the sections for `n` entities; returns the alias count.
    pub fn finish(mut self, n: u64, sections: &mut Sections) -> std::io::Result<u64> {
        self.owners_through(n)?;
        let count = self.table.len();
        let (offsets, names) = self.table.finish();
        sections.push((s::ALIAS_OWNERS, self.owners.finish()?));
        sections.push((s::ALIAS_OFFSETS, offsets.finish()?));
        sections.push((s::ALIAS_NAMES, names.finish()?));
        Ok(count)
    }
}
