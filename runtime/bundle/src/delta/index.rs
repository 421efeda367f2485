//! The predicted lexical index: the base's `fst` keys with their postings'
//! entity ids moved through the entity map, plus the postings of added
//! entities and aliases and minus those of removed aliases (both from the
//! new name and alias tables), rebuilt the way the packager builds an index
//! (`kg::encode::lexical_index`): a key with one posting holds it inline, a
//! key with more points into the postings array, a key left with none is
//! dropped, and when an entity's name and alias share a key the name wins.
//!
//! Base keys stream in order (nothing is sorted but the edits), so memory
//! is the fst and the postings being built. When the new bundle was packed
//! by the same builder the prediction is the new index, byte for byte.

use std::collections::BTreeSet;

use fst::{MapBuilder, Streamer};

use super::maps::{u32_bytes, u32s, IdMap, Strings, GONE};
use crate::error::{BundleError, Result};
use crate::kg::{POSTINGS_LIST, POSTING_ALIAS};
use crate::normalize::normalize;
use crate::sections as s;

fn bad(problem: impl Into<String>) -> BundleError {
    BundleError::DeltaCorrupt(format!("the base's `{}`: {}", s::INDEX_FST, problem.into()))
}

/// An alias table: per entity, a range of alias indexes.
pub struct Aliases<'a> {
    pub owners: std::borrow::Cow<'a, [u64]>,
    pub names: Strings<'a>,
}

impl Aliases<'_> {
    fn of(&self, entity: usize) -> Result<Vec<&[u8]>> {
        let at = |k: usize| self.owners.get(k).and_then(|&x| usize::try_from(x).ok());
        let (a, b) = match (at(entity), at(entity + 1)) {
            (Some(a), Some(b)) if a <= b => (a, b),
            _ => return Err(bad(format!("alias owners are bad at entity {entity}"))),
        };
        (a..b).map(|i| self.names.get(i)).collect()
    }
}

/// Postings to add to and remove from keys, sorted by key.
#[derive(Debug, Default)]
pub struct Edits {
    adds: Vec<(String, u32)>,
    removes: Vec<(String, u32)>,
}

fn key_of(bytes: &[u8]) -> String {
    normalize(&String::from_utf8_lossy(bytes))
}

/// What the new tables add to and remove from the moved base index: the
/// names and aliases of added entities, and the aliases a kept entity
/// gained or lost (`predicted`: the base's aliases moved to new ids).
pub fn edits(
    names: &Strings<'_>,
    new: Option<&Aliases<'_>>,
    predicted: Option<&Aliases<'_>>,
    e: &IdMap,
) -> Result<Edits> {
    let mut out = Edits::default();
    let inverse = e.inverse();
    for (n, &old) in inverse.iter().enumerate() {
        let id = n as u32;
        let new_aliases = match new {
            Some(a) => a.of(n)?,
            None => Vec::new(),
        };
        if old == GONE {
            out.adds.push((key_of(names.get(n)?), id));
            for a in &new_aliases {
                out.adds.push((key_of(a), id | POSTING_ALIAS));
            }
            continue;
        }
        let old_aliases = match predicted {
            Some(p) => p.of(n)?,
            None => Vec::new(),
        };
        if old_aliases == new_aliases {
            continue;
        }
        let keys = |v: &[&[u8]]| v.iter().map(|a| key_of(a)).collect::<BTreeSet<String>>();
        let (was, is) = (keys(&old_aliases), keys(&new_aliases));
        out.adds
            .extend(is.difference(&was).map(|k| (k.clone(), id | POSTING_ALIAS)));
        out.removes
            .extend(was.difference(&is).map(|k| (k.clone(), id | POSTING_ALIAS)));
    }
    out.adds.retain(|(k, _)| !k.is_empty());
    out.adds.sort_unstable();
    out.removes.sort_unstable();
    Ok(out)
}

/// (fst bytes, postings bytes) of the base's index moved to the new ids,
/// with `edits` applied.
pub fn predict(
    fst_bytes: &[u8],
    postings: &[u8],
    e: &IdMap,
    edits: &Edits,
) -> Result<(Vec<u8>, Vec<u8>)> {
    let postings = u32s(s::INDEX_POSTINGS, postings)?;
    let map = fst::Map::new(fst_bytes).map_err(|err| bad(err.to_string()))?;
    // The fst crate panics on damaged node bytes (see `Kg::with_index`).
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rebuild(&map, &postings, e, edits)
    }))
    .map_err(|_| bad("damaged index"))?
}

/// Writes keys and their postings in the encoder's layout.
struct Out {
    builder: MapBuilder<Vec<u8>>,
    postings: Vec<u32>,
}

impl Out {
    fn emit(&mut self, key: &[u8], list: &mut Vec<u32>) -> Result<()> {
        list.sort_unstable_by_key(|&p| (p & !POSTING_ALIAS, p));
        list.dedup_by_key(|p| *p & !POSTING_ALIAS);
        let value = match list.len() {
            0 => return Ok(()),
            1 => u64::from(list[0]),
            n => {
                let at = self.postings.len() as u64;
                self.postings.push(n as u32);
                self.postings.extend_from_slice(list);
                POSTINGS_LIST + at
            }
        };
        self.builder
            .insert(key, value)
            .map_err(|err| bad(err.to_string()))
    }
}

fn rebuild(
    map: &fst::Map<&[u8]>,
    postings: &[u32],
    e: &IdMap,
    edits: &Edits,
) -> Result<(Vec<u8>, Vec<u8>)> {
    let moved = |p: u32| e.get(p & !POSTING_ALIAS).map(|id| id | (p & POSTING_ALIAS));
    let mut out = Out {
        builder: MapBuilder::memory(),
        postings: Vec::with_capacity(postings.len()),
    };
    let (adds, removes) = (&edits.adds, &edits.removes);
    let (mut ai, mut ri) = (0, 0);
    let mut list: Vec<u32> = Vec::new();
    let mut keys = map.stream();
    while let Some((key, value)) = keys.next() {
        // Keys only the edits have, before this one.
        while ai < adds.len() && adds[ai].0.as_bytes() < key {
            let k = adds[ai].0.clone();
            list.clear();
            while ai < adds.len() && adds[ai].0 == k {
                list.push(adds[ai].1);
                ai += 1;
            }
            out.emit(k.as_bytes(), &mut list)?;
        }
        list.clear();
        if value < POSTINGS_LIST {
            let p = u32::try_from(value).map_err(|_| bad("a value out of range"))?;
            list.extend(moved(p));
        } else {
            let at = usize::try_from(value - POSTINGS_LIST).map_err(|_| bad("a bad list"))?;
            let count = *postings
                .get(at)
                .ok_or_else(|| bad("a list out of bounds"))? as usize;
            let items = postings
                .get(at + 1..at.saturating_add(1).saturating_add(count))
                .ok_or_else(|| bad("a list out of bounds"))?;
            list.extend(items.iter().filter_map(|&p| moved(p)));
        }
        while ri < removes.len() && removes[ri].0.as_bytes() < key {
            ri += 1;
        }
        while ri < removes.len() && removes[ri].0.as_bytes() == key {
            let gone = removes[ri].1;
            list.retain(|&p| p != gone);
            ri += 1;
        }
        while ai < adds.len() && adds[ai].0.as_bytes() == key {
            list.push(adds[ai].1);
            ai += 1;
        }
        out.emit(key, &mut list)?;
    }
    while ai < adds.len() {
        let k = adds[ai].0.clone();
        list.clear();
        while ai < adds.len() && adds[ai].0 == k {
            list.push(adds[ai].1);
            ai += 1;
        }
        out.emit(k.as_bytes(), &mut list)?;
    }
    let fst = out
        .builder
        .into_inner()
        .map_err(|err| bad(err.to_string()))?;
    Ok((fst, u32_bytes(&out.postings)))
}
