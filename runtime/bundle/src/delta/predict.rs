//! Predicted sections: what the base's graph sections look like in the new
//! id space. Both sides compute them from data they have (the base and the
//! id maps), so a patch against a prediction carries only what really
//! changed, not every id that shifted.
//!
//! A prediction is only a zstd reference: if it is wrong the patch is
//! larger, and if the two sides ever computed different ones, the result
//! fails its signed sha256 and is refused.

use std::collections::{HashMap, HashSet};

use super::index;
use super::maps::{u32_bytes, u32s, u64_bytes, u64s, IdMap, Maps, Strings, GONE};
use crate::error::{BundleError, Result};
use crate::sections as s;

/// The base's sections, by name (raw bytes, as in its image).
pub type Sections<'a> = dyn Fn(&str) -> Option<&'a [u8]> + 'a;

/// The alias tables, predicted together (the index prediction reads them).
const ALIAS_GROUP: &[&str] = &[s::ALIAS_OWNERS, s::ALIAS_OFFSETS, s::ALIAS_NAMES];

/// Sections predicted together, and the map that moves their ids.
const GROUPS: &[&[&str]] = &[
    &[s::OUT_OFFSETS, s::OUT_RELATIONS, s::OUT_TARGETS],
    &[s::IN_OFFSETS, s::IN_RELATIONS, s::IN_SOURCES],
    ALIAS_GROUP,
    &[s::INDEX_FST, s::INDEX_POSTINGS],
    &[s::ENTITY_IRI_OFFSETS, s::ENTITY_IRI_TEXT],
    &[s::ENTITY_IRI_SORTED],
    &[s::RELATION_IRI_OFFSETS, s::RELATION_IRI_TEXT],
    &[s::RELATION_IRI_SORTED],
    &[s::RELATION_DESC_OFFSETS, s::RELATION_DESC_TEXT],
    &[s::RELATION_ALIAS_OFFSETS, s::RELATION_ALIAS_TEXT],
    &[s::DENSE_VECTORS],
];

/// Whether a section has a prediction.
pub fn predicts(name: &str) -> bool {
    GROUPS.iter().any(|g| g.contains(&name))
}

/// Whether a section is a u64 offsets array (string table or CSR rows).
pub fn is_offsets(name: &str) -> bool {
    [
        s::ENTITY_OFFSETS,
        s::RELATION_OFFSETS,
        s::RELATION_DESC_OFFSETS,
        s::RELATION_ALIAS_OFFSETS,
        s::ENTITY_IRI_OFFSETS,
        s::RELATION_IRI_OFFSETS,
        s::ALIAS_OWNERS,
        s::ALIAS_OFFSETS,
        s::OUT_OFFSETS,
        s::IN_OFFSETS,
    ]
    .contains(&name)
}

fn missing(name: &str) -> BundleError {
    BundleError::DeltaCorrupt(format!("the base has no section `{name}` to predict from"))
}

/// Computes the id maps from the base's name tables and the new bundle's.
pub fn maps(base: &Sections<'_>, new: &Sections<'_>) -> Result<Maps> {
    let map = |offsets: &'static str, names: &'static str| -> Result<IdMap> {
        let table = |get: &Sections<'_>| -> Result<(Vec<u8>, Vec<u8>)> {
            match (get(offsets), get(names)) {
                (Some(o), Some(n)) => Ok((o.to_vec(), n.to_vec())),
                _ => Err(BundleError::DeltaCorrupt(format!(
                    "the id maps need `{offsets}` and `{names}` of both bundles"
                ))),
            }
        };
        let (bo, bn) = table(base)?;
        let (no, nn) = table(new)?;
        IdMap::merge(
            &Strings::new(offsets, &bo, &bn)?,
            &Strings::new(offsets, &no, &nn)?,
        )
    };
    Ok(Maps {
        entities: map(s::ENTITY_OFFSETS, s::ENTITY_NAMES)?,
        relations: map(s::RELATION_OFFSETS, s::RELATION_NAMES)?,
    })
}

/// The new bundle's sections a prediction may read (the id maps' name
/// tables and the alias tables), by name.
pub type NewTables = HashMap<String, Vec<u8>>;

/// Computes predictions on demand, each group once, and keeps each
/// section's until it is released.
pub struct Predictor<'a> {
    base: &'a Sections<'a>,
    maps: Maps,
    /// Largest prediction allowed (the section size limit).
    max_bytes: u64,
    cache: HashMap<String, Vec<u8>>,
    /// The groups computed (by their first section), kept or released.
    done: HashSet<&'static str>,
}

impl<'a> Predictor<'a> {
    pub fn new(base: &'a Sections<'a>, maps: Maps, max_bytes: u64) -> Predictor<'a> {
        Predictor {
            base,
            maps,
            max_bytes,
            cache: HashMap::new(),
            done: HashSet::new(),
        }
    }

    pub fn maps(&self) -> &Maps {
        &self.maps
    }

    /// The prediction of section `name`, until it is released.
    pub fn get(&mut self, name: &str, new: &NewTables) -> Result<&[u8]> {
        self.fill(name, new)?;
        self.cache.get(name).map(Vec::as_slice).ok_or_else(|| {
            BundleError::DeltaCorrupt(format!(
                "the prediction of section `{name}` was already used"
            ))
        })
    }

    /// Computes `name`'s group unless it was computed before (each group
    /// once; what was released stays released). A prediction is a
    /// function of the base and the new tables alone, whatever was
    /// computed or released before (both sides must get the same bytes).
    fn fill(&mut self, name: &str, new: &NewTables) -> Result<()> {
        let group = GROUPS.iter().find(|g| g.contains(&name)).ok_or_else(|| {
            BundleError::DeltaCorrupt(format!("section `{name}` has no prediction"))
        })?;
        if self.done.contains(group[0]) {
            return Ok(());
        }
        let made = self.made(group, new)?;
        for (n, bytes) in group.iter().zip(made) {
            self.cache.insert(n.to_string(), bytes);
        }
        self.done.insert(group[0]);
        Ok(())
    }

    /// `group`'s predictions, each checked against the size limit.
    fn made(&mut self, group: &[&str], new: &NewTables) -> Result<Vec<Vec<u8>>> {
        let made = self.compute(group, new)?;
        for (n, bytes) in group.iter().zip(&made) {
            if bytes.len() as u64 > self.max_bytes {
                return Err(BundleError::SectionTooLarge {
                    name: n.to_string(),
                    declared: bytes.len() as u64,
                    limit: self.max_bytes,
                });
            }
        }
        Ok(made)
    }

    /// Frees a prediction that is no longer needed.
    pub fn release(&mut self, name: &str) {
        self.cache.remove(name);
    }

    fn base(&self, name: &str) -> Result<&'a [u8]> {
        (self.base)(name).ok_or_else(|| missing(name))
    }

    fn compute(&mut self, group: &[&str], new: &NewTables) -> Result<Vec<Vec<u8>>> {
        let (e, r) = (&self.maps.entities, &self.maps.relations);
        Ok(match group[0] {
            s::OUT_OFFSETS | s::IN_OFFSETS => {
                let [o, rel, other] = [group[0], group[1], group[2]];
                let (o, rel, other) = (self.base(o)?, self.base(rel)?, self.base(other)?);
                Vec::from(csr(group, o, rel, other, e, r)?)
            }
            s::ALIAS_OWNERS => Vec::from(aliases(
                self.base(s::ALIAS_OWNERS)?,
                self.base(s::ALIAS_OFFSETS)?,
                self.base(s::ALIAS_NAMES)?,
                e,
            )?),
            s::INDEX_FST => self.index(new)?,
            s::ENTITY_IRI_OFFSETS => strings(group, self.base(group[0])?, self.base(group[1])?, e)?,
            s::RELATION_IRI_OFFSETS | s::RELATION_DESC_OFFSETS | s::RELATION_ALIAS_OFFSETS => {
                strings(group, self.base(group[0])?, self.base(group[1])?, r)?
            }
            s::ENTITY_IRI_SORTED => vec![sorted(group[0], self.base(group[0])?, e)?],
            s::RELATION_IRI_SORTED => vec![sorted(group[0], self.base(group[0])?, r)?],
            s::DENSE_VECTORS => vec![rows(group[0], self.base(group[0])?, e, self.max_bytes)?],
            other => return Err(missing(other)),
        })
    }

    /// The index group: the base's index moved, with the new tables' edits.
    fn index(&mut self, new: &NewTables) -> Result<Vec<Vec<u8>>> {
        let get = |n: &str| new.get(n).map(Vec::as_slice).ok_or_else(|| missing(n));
        let names = Strings::new(
            s::ENTITY_OFFSETS,
            get(s::ENTITY_OFFSETS)?,
            get(s::ENTITY_NAMES)?,
        )?;
        let new_aliases = match (
            get(s::ALIAS_OWNERS),
            get(s::ALIAS_OFFSETS),
            get(s::ALIAS_NAMES),
        ) {
            (Ok(o), Ok(f), Ok(n)) => Some(aliases_of(o, f, n)?),
            _ => None,
        };
        // The base's aliases moved (none when the base has no alias
        // tables). An error computing them is the delta's error: both
        // sides must predict the same index or refuse. Kept predictions
        // are read; released ones are made again, for this use only.
        let base_has_aliases = ALIAS_GROUP.iter().all(|n| (self.base)(n).is_some());
        let mut fresh = None;
        if base_has_aliases {
            self.fill(s::ALIAS_OWNERS, new)?;
            if !ALIAS_GROUP.iter().all(|n| self.cache.contains_key(*n)) {
                fresh = Some(self.made(ALIAS_GROUP, new)?);
            }
        }
        let predicted = match (&fresh, base_has_aliases) {
            (Some(v), _) => match v.as_slice() {
                [o, f, n] => Some(aliases_of(o, f, n)?),
                _ => return Err(missing(s::ALIAS_OWNERS)),
            },
            (None, true) => {
                let get = |n: &str| self.cache.get(n).ok_or_else(|| missing(n));
                Some(aliases_of(
                    get(s::ALIAS_OWNERS)?,
                    get(s::ALIAS_OFFSETS)?,
                    get(s::ALIAS_NAMES)?,
                )?)
            }
            (None, false) => None,
        };
        let e = &self.maps.entities;
        let edits = index::edits(&names, new_aliases.as_ref(), predicted.as_ref(), e)?;
        let (fst, postings) = index::predict(
            self.base(s::INDEX_FST)?,
            self.base(s::INDEX_POSTINGS)?,
            e,
            &edits,
        )?;
        Ok(vec![fst, postings])
    }
}

fn aliases_of<'x>(
    owners: &'x [u8],
    offsets: &'x [u8],
    names: &'x [u8],
) -> Result<index::Aliases<'x>> {
    Ok(index::Aliases {
        owners: u64s(s::ALIAS_OWNERS, owners)?,
        names: Strings::new(s::ALIAS_OFFSETS, offsets, names)?,
    })
}

/// Edge range `offsets[n]..offsets[n+1]`, checked.
fn row(name: &str, offsets: &[u64], n: usize, edges: usize) -> Result<std::ops::Range<usize>> {
    let at = |k: usize| offsets.get(k).and_then(|&x| usize::try_from(x).ok());
    match (at(n), at(n + 1)) {
        (Some(a), Some(b)) if a <= b && b <= edges => Ok(a..b),
        _ => Err(BundleError::DeltaCorrupt(format!(
            "the base's `{name}` has bad offsets at row {n}"
        ))),
    }
}

/// A CSR moved into the new id space: rows by new entity id, each row's
/// edges with their relation and other end mapped, edges that touch a
/// removed entity or relation dropped. Rows stay sorted: the maps are monotone.
fn csr(
    names: &[&str],
    offsets: &[u8],
    rels: &[u8],
    others: &[u8],
    e: &IdMap,
    r: &IdMap,
) -> Result<[Vec<u8>; 3]> {
    let offsets = u64s(names[0], offsets)?;
    let rels = u32s(names[1], rels)?;
    let others = u32s(names[2], others)?;
    if offsets.len() != e.old_len() + 1 || rels.len() != others.len() {
        return Err(BundleError::DeltaCorrupt(format!(
            "the base's `{}` does not match its entities",
            names[0]
        )));
    }
    let inverse = e.inverse();
    let mut p_off = Vec::with_capacity(inverse.len() + 1);
    let mut p_rel = Vec::with_capacity(rels.len());
    let mut p_other = Vec::with_capacity(others.len());
    p_off.push(0u64);
    for &old in &inverse {
        if old != GONE {
            for k in row(names[0], &offsets, old as usize, others.len())? {
                if let (Some(rel), Some(o)) = (r.get(rels[k]), e.get(others[k])) {
                    p_rel.push(rel);
                    p_other.push(o);
                }
            }
        }
        p_off.push(p_rel.len() as u64);
    }
    Ok([u64_bytes(&p_off), u32_bytes(&p_rel), u32_bytes(&p_other)])
}

/// The alias table moved: each kept entity's aliases, in new id order.
fn aliases(owners: &[u8], offsets: &[u8], names: &[u8], e: &IdMap) -> Result<[Vec<u8>; 3]> {
    let owners = u64s(s::ALIAS_OWNERS, owners)?;
    let table = Strings::new(s::ALIAS_OFFSETS, offsets, names)?;
    if owners.len() != e.old_len() + 1 {
        return Err(BundleError::DeltaCorrupt(
            "the base's alias owners do not match its entities".into(),
        ));
    }
    let mut p_owners = vec![0u64];
    let mut p_offsets = vec![0u64];
    let mut p_names = Vec::with_capacity(names.len());
    for old in e.inverse() {
        if old != GONE {
            for a in row(s::ALIAS_OWNERS, &owners, old as usize, table.len())? {
                p_names.extend_from_slice(table.get(a)?);
                p_offsets.push(p_names.len() as u64);
            }
        }
        p_owners.push(p_offsets.len() as u64 - 1);
    }
    Ok([u64_bytes(&p_owners), u64_bytes(&p_offsets), p_names])
}

/// A string table with one string per id, moved (added ids: empty).
fn strings(names: &[&str], offsets: &[u8], text: &[u8], map: &IdMap) -> Result<Vec<Vec<u8>>> {
    let table = Strings::new(names[0], offsets, text)?;
    if table.len() != map.old_len() {
        return Err(BundleError::DeltaCorrupt(format!(
            "the base's `{}` does not have one string per id",
            names[0]
        )));
    }
    let mut p_offsets = vec![0u64];
    let mut p_text = Vec::with_capacity(text.len());
    for old in map.inverse() {
        if old != GONE {
            p_text.extend_from_slice(table.get(old as usize)?);
        }
        p_offsets.push(p_text.len() as u64);
    }
    Ok(vec![u64_bytes(&p_offsets), p_text])
}

/// A u32 list of ids, each mapped, removed ones dropped (order kept).
fn sorted(name: &str, ids: &[u8], map: &IdMap) -> Result<Vec<u8>> {
    let ids = u32s(name, ids)?;
    let moved: Vec<u32> = ids.iter().filter_map(|&id| map.get(id)).collect();
    Ok(u32_bytes(&moved))
}

/// Fixed-size rows, one per entity, moved (added entities: zeros).
fn rows(name: &str, bytes: &[u8], e: &IdMap, max_bytes: u64) -> Result<Vec<u8>> {
    let n = e.old_len();
    if n == 0 || !bytes.len().is_multiple_of(n) {
        return Err(BundleError::DeltaCorrupt(format!(
            "the base's `{name}` does not have one row per entity"
        )));
    }
    let width = bytes.len() / n;
    let total = (width as u64).saturating_mul(e.new_len as u64);
    if total > max_bytes {
        return Err(BundleError::SectionTooLarge {
            name: name.to_string(),
            declared: total,
            limit: max_bytes,
        });
    }
    let mut out = Vec::with_capacity(total as usize);
    for old in e.inverse() {
        let at = old as usize;
        match bytes.get(at.saturating_mul(width)..at.saturating_add(1).saturating_mul(width)) {
            Some(row) if old != GONE => out.extend_from_slice(row),
            _ => out.resize(out.len() + width, 0),
        }
    }
    Ok(out)
}

#[cfg(test)]
#[path = "predict_tests.rs"]
mod tests;
