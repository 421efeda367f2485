//! Building a graph that was read to disk ([`LargeKg`]) in bounded memory:
//!
//! 1. The distinct names come out of their external sort in name order,
//!    which is the id order: the entity table is written as they come, and
//!    each name goes to a partition file by its hash, with its id.
//! 2. The triples' heads, then their tails, are resolved one partition at
//!    a time (that partition's names in memory, sorted by hash) and the
//!    triples go into the forward sort; the CSR is then built as for any
//!    graph ([`super::csr_sections`]).
//! 3. Aliases are resolved the same way and sorted on disk by (entity,
//!    alias); the lexical index's keys go through one more external sort.
//!
//! The result is the same bundle, byte for byte, as a build in memory.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};

use kgbox_bundle::kg::encode::{index_order, StringTableWriter};
use kgbox_bundle::kg::{MAX_ENTITIES, POSTING_ALIAS};
use kgbox_bundle::normalize::normalize;
use kgbox_bundle::sections as s;
use kgbox_bundle::KgStats;

use super::{aliases::AliasSections, csr_sections, index, relation_sections, sort};
use super::{BuildError, BuildOptions, BuiltKg};
use crate::input::{skipped_aliases, AliasRecord, LargeKg, RawKg};
use crate::section::{SectionOut, Sections};
use crate::spill::{name_hash, partition, read_array, Partitions, RecordSorter};

pub(super) fn build(
    mut raw: RawKg,
    disk: LargeKg,
    opts: &BuildOptions,
) -> Result<BuiltKg, BuildError> {
    let total = disk.count;
    let spill_dir = Some(opts.spill_dir.clone().unwrap_or_else(std::env::temp_dir));
    let spill = spill_dir.as_deref();
    let budget = opts.sort_run.saturating_mul(8);
    let bar = &opts.progress;
    let (names, triples, aliases) = disk.into_parts();
    let mut sections: Sections = Vec::new();
    let mut keys = RecordSorter::new(budget, spill_dir.clone());

    // 1. Names, in id order.
    bar.set_message("merging the sorted entity names");
    bar.set_length(names.pushed());
    bar.set_position(0);
    let mut sorted = names.finish()?;
    let mut maps = Partitions::new(spill)?;
    let mut table = StringTableWriter::new(SectionOut::new(spill)?, SectionOut::new(spill)?)?;
    while let Some((name, _)) = sorted.next_record()? {
        let name =
            String::from_utf8(name).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        let id = table.len();
        if id >= MAX_ENTITIES as u64 {
            return Err(BuildError::TooManyEntities(id as usize + 1));
        }
        let h = name_hash(&name);
        maps.write(
            partition(h),
            &[
                &h.to_le_bytes(),
                &(id as u32).to_le_bytes(),
                &(name.len() as u32).to_le_bytes(),
                name.as_bytes(),
            ],
        )?;
        let key = normalize(&name);
        if !key.is_empty() {
            keys.push(key.as_bytes(), index_order(id as u32))?;
        }
        table.push(&name)?;
        bar.inc(1);
    }
    drop(sorted);
    // The index keys wait on disk while the triples are sorted.
    keys.release()?;
    let n = table.len();
    let (o, b) = table.finish();
    sections.push((s::ENTITY_OFFSETS, o.finish()?));
    sections.push((s::ENTITY_NAMES, b.finish()?));
    let (rmap, relations) = relation_sections(&mut raw, &mut sections)?;
    let mut maps = maps.into_readers()?;

    // 2. Heads, then tails, one partition at a time.
    bar.set_message("resolving the heads of the triples");
    bar.set_length(total);
    bar.set_position(0);
    let mut tails = Partitions::new(spill)?;
    for (p, mut part) in triples.into_readers()?.into_iter().enumerate() {
        let map = NameMap::load(&mut maps[p])?;
        while let Some(rec) = read_array::<20>(&mut part)? {
            let (h, r, t) = (
                word64(&rec[0..8]),
                word32(&rec[8..12]),
                word64(&rec[12..20]),
            );
            let head = map.id(h)?;
            let r = rmap[r as usize];
            tails.write(
                partition(t),
                &[&head.to_le_bytes(), &r.to_le_bytes(), &t.to_le_bytes()],
            )?;
            bar.inc(1);
        }
    }
    bar.set_message("resolving the tails of the triples");
    bar.set_position(0);
    let mut forward = sort::Sorter::new(opts.sort_run, spill_dir.clone());
    for (p, mut part) in tails.into_readers()?.into_iter().enumerate() {
        let map = NameMap::load(&mut maps[p])?;
        while let Some(rec) = read_array::<16>(&mut part)? {
            let (head, r, t) = (word32(&rec[0..4]), word32(&rec[4..8]), word64(&rec[8..16]));
            forward.push([head, r, map.id(t)?])?;
            bar.inc(1);
        }
    }
    let (kept, derived_in) = csr_sections(forward, n, opts, &spill_dir, &mut sections)?;

    // 3. Aliases and the lexical index.
    bar.set_message("aliases and the entity index");
    bar.set_length(0);
    bar.set_position(0);
    let mut warnings = Vec::new();
    let mut alias_out = AliasSections::new(spill)?;
    if let Some((path, parts)) = aliases {
        let mut by_entity = RecordSorter::new(budget, spill_dir.clone());
        let (mut skipped, mut first) = (0u64, None::<(u64, String)>);
        for (p, mut part) in parts.into_readers()?.into_iter().enumerate() {
            let map = NameMap::load(&mut maps[p])?;
            while let Some(rec) = AliasRecord::read(&mut part)? {
                match map.get(rec.hash) {
                    Some((id, name)) if name == rec.entity => {
                        if rec.alias != name {
                            let mut key = id.to_be_bytes().to_vec();
                            key.extend_from_slice(rec.alias.as_bytes());
                            by_entity.push(&key, 0)?;
                        }
                    }
                    _ => {
                        skipped += 1;
                        if first.as_ref().is_none_or(|(line, _)| rec.line < *line) {
                            first = Some((rec.line, rec.entity));
                        }
                    }
                }
            }
        }
        if let Some((line, name)) = first {
            warnings.push(skipped_aliases(&path, skipped, line, &name));
        }
        let mut sorted = by_entity.finish()?;
        while let Some((key, _)) = sorted.next_record()? {
            let (id, alias) = key.split_at(4);
            let id = word32_be(id);
            let alias = std::str::from_utf8(alias)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            alias_out.push(id, alias)?;
            let key = normalize(alias);
            if !key.is_empty() {
                keys.push(key.as_bytes(), index_order(id | POSTING_ALIAS))?;
            }
        }
    }
    drop(maps);
    let alias_count = alias_out.finish(n, &mut sections)?;
    let (fst, postings) = index::build_sorted(keys.finish()?, spill)?;
    sections.push((s::INDEX_FST, fst));
    sections.push((s::INDEX_POSTINGS, postings));

    Ok(BuiltKg {
        sections,
        stats: KgStats {
            entities: n,
            relations,
            triples: kept,
            aliases: alias_count,
            duplicates_removed: total - kept,
        },
        derived_in,
        warnings,
    })
}

/// The `bits` bits of `hash` after the partition's six.
fn bucket(hash: u64, bits: u32) -> usize {
    ((hash << 6) >> (64 - bits)) as usize
}

fn word64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b.try_into().unwrap_or_default())
}

fn word32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b.try_into().unwrap_or_default())
}

fn word32_be(b: &[u8]) -> u32 {
    u32::from_be_bytes(b.try_into().unwrap_or_default())
}

/// One partition's names: (hash, id, start, length) sorted by hash, the
/// names' bytes, and where each bucket of the hash's next `bits` bits (after
/// the partition's) starts, so that a lookup reads about one entry instead
/// of searching two million (a billion triples make two billion lookups).
struct NameMap {
    entries: Vec<(u64, u32, u64, u32)>,
    text: Vec<u8>,
    bits: u32,
    starts: Vec<u32>,
}

impl NameMap {
    /// Reads partition `r` from its start (it is read once per pass).
    fn load(r: &mut BufReader<File>) -> Result<NameMap, BuildError> {
        r.seek(SeekFrom::Start(0))?;
        let (mut entries, mut text) = (Vec::new(), Vec::new());
        while let Some(head) = read_array::<16>(r)? {
            let len = word32(&head[12..16]);
            let start = text.len() as u64;
            text.resize(text.len() + len as usize, 0);
            r.read_exact(&mut text[start as usize..])?;
            entries.push((word64(&head[0..8]), word32(&head[8..12]), start, len));
        }
        entries.sort_unstable_by_key(|e| e.0);
        let bits = (entries.len().max(2).next_power_of_two().trailing_zeros()).min(58);
        let mut starts = Vec::with_capacity((1 << bits) + 1);
        for (i, e) in entries.iter().enumerate() {
            let b = bucket(e.0, bits);
            while starts.len() <= b {
                starts.push(i as u32);
            }
        }
        while starts.len() <= 1 << bits {
            starts.push(entries.len() as u32);
        }
        let map = NameMap {
            entries,
            text,
            bits,
            starts,
        };
        if let Some(w) = map.entries.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(BuildError::HashCollision(
                map.name(&w[0]).to_string(),
                map.name(&w[1]).to_string(),
            ));
        }
        Ok(map)
    }

    fn name(&self, e: &(u64, u32, u64, u32)) -> &str {
        std::str::from_utf8(&self.text[e.2 as usize..(e.2 + u64::from(e.3)) as usize])
            .unwrap_or_default()
    }

    fn get(&self, hash: u64) -> Option<(u32, &str)> {
        let b = bucket(hash, self.bits);
        let range = self.starts[b] as usize..self.starts[b + 1] as usize;
        let e = self.entries[range].iter().find(|e| e.0 == hash)?;
        Some((e.1, self.name(e)))
    }

    /// The id of a name every triple's hash was recorded for.
    fn id(&self, hash: u64) -> io::Result<u32> {
        self.get(hash).map(|(id, _)| id).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "a spilled triple names an entity (hash {hash:016x}) whose name was not kept"
                ),
            )
        })
    }
}
