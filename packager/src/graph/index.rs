//! The lexical index (normalized name → postings), with the `fst` streamed
//! into its section: `kgbox_bundle::kg::encode::IndexKeys`, the one
//! encoder of the index, written to memory or a spill file.

use kgbox_bundle::kg::encode::IndexKeys;

use crate::section::{SectionData, SectionOut};

/// The (fst, postings) sections of `keys`.
pub fn build(
    keys: IndexKeys,
    spill: Option<&std::path::Path>,
) -> Result<(SectionData, SectionData), fst::Error> {
    let (fst, postings) = keys.build_into(SectionOut::new(spill)?)?;
    let mut out = SectionOut::new(spill)?;
    out.write(bytemuck::cast_slice(&postings))?;
    Ok((fst.finish()?, out.finish()?))
}

/// The (fst, postings) sections from index entries sorted by (normalized
/// key, [`kgbox_bundle::kg::encode::index_order`]), as a large build's
/// external sort gives them.
pub fn build_sorted(
    mut entries: crate::spill::Records,
    spill: Option<&std::path::Path>,
) -> Result<(SectionData, SectionData), fst::Error> {
    let mut index = kgbox_bundle::kg::encode::IndexWriter::new(
        SectionOut::new(spill)?,
        SectionOut::new(spill)?,
    )?;
    while let Some((key, order)) = entries.next_record()? {
        index.push(&key, order as u32)?;
    }
    let (fst, postings) = index.finish()?;
    Ok((fst.finish()?, postings.finish()?))
}
