//! Old id → new id maps, from the base's and the new bundle's name tables,
//! and the array readers the transforms share.
//!
//! Ids are positions in tables sorted bytewise by name, so merging the two
//! sorted tables pairs every name kept with its old and new id: the map is
//! monotone (a kept entity's relative order never changes), which keeps
//! every id-sorted run of a remapped section sorted.

use std::borrow::Cow;
use std::cmp::Ordering;

use crate::error::{BundleError, Result};

/// Marks an old id with no new id (the name was removed).
pub const GONE: u32 = u32::MAX;

fn bad(name: &str, problem: impl Into<String>) -> BundleError {
    BundleError::DeltaCorrupt(format!("section `{name}`: {}", problem.into()))
}

/// `bytes` as little-endian u64s (borrowed when aligned).
pub fn u64s<'a>(name: &str, bytes: &'a [u8]) -> Result<Cow<'a, [u64]>> {
    if !bytes.len().is_multiple_of(8) {
        return Err(bad(name, "length is not a multiple of 8"));
    }
    Ok(match bytemuck::try_cast_slice(bytes) {
        Ok(v) => Cow::Borrowed(v),
        Err(_) => Cow::Owned(
            bytes
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect(),
        ),
    })
}

/// `bytes` as little-endian u32s (borrowed when aligned).
pub fn u32s<'a>(name: &str, bytes: &'a [u8]) -> Result<Cow<'a, [u32]>> {
    if !bytes.len().is_multiple_of(4) {
        return Err(bad(name, "length is not a multiple of 4"));
    }
    Ok(match bytemuck::try_cast_slice(bytes) {
        Ok(v) => Cow::Borrowed(v),
        Err(_) => Cow::Owned(
            bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        ),
    })
}

pub fn u64_bytes(v: &[u64]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

pub fn u32_bytes(v: &[u32]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

/// A string table (u64 offsets into bytes) read with checked slicing.
pub struct Strings<'a> {
    name: &'a str,
    offsets: Cow<'a, [u64]>,
    bytes: &'a [u8],
}

impl<'a> Strings<'a> {
    pub fn new(offsets_name: &'a str, offsets: &'a [u8], bytes: &'a [u8]) -> Result<Strings<'a>> {
        let offsets = u64s(offsets_name, offsets)?;
        if offsets.is_empty() {
            return Err(bad(offsets_name, "no offsets"));
        }
        Ok(Strings {
            name: offsets_name,
            offsets,
            bytes,
        })
    }

    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// String `i`'s bytes.
    pub fn get(&self, i: usize) -> Result<&'a [u8]> {
        let at = |k: usize| {
            self.offsets
                .get(k)
                .and_then(|&o| usize::try_from(o).ok())
                .ok_or_else(|| bad(self.name, format!("no offset {k}")))
        };
        let (a, b) = (at(i)?, at(i + 1)?);
        self.bytes
            .get(a..b)
            .ok_or_else(|| bad(self.name, format!("string {i} is out of bounds")))
    }
}

/// Old id → new id for one id space (entities or relations).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdMap {
    /// Per old id, its new id or [`GONE`].
    pub old_to_new: Vec<u32>,
    /// Number of new ids.
    pub new_len: usize,
}

impl IdMap {
    /// Merges two tables sorted bytewise by name. On tables that are not
    /// sorted it still ends, with a map that pairs fewer names.
    pub fn merge(old: &Strings<'_>, new: &Strings<'_>) -> Result<IdMap> {
        if new.len() > GONE as usize {
            return Err(bad(new.name, "too many names"));
        }
        let mut old_to_new = vec![GONE; old.len()];
        let (mut i, mut j) = (0, 0);
        while i < old.len() && j < new.len() {
            match old.get(i)?.cmp(new.get(j)?) {
                Ordering::Less => i += 1,
                Ordering::Greater => j += 1,
                Ordering::Equal => {
                    old_to_new[i] = j as u32;
                    i += 1;
                    j += 1;
                }
            }
        }
        Ok(IdMap {
            old_to_new,
            new_len: new.len(),
        })
    }

    pub fn old_len(&self) -> usize {
        self.old_to_new.len()
    }

    /// The new id of old id `old`, if it has one.
    pub fn get(&self, old: u32) -> Option<u32> {
        self.old_to_new
            .get(old as usize)
            .copied()
            .filter(|&n| n != GONE)
    }

    /// Per new id, its old id or [`GONE`] (an added name).
    pub fn inverse(&self) -> Vec<u32> {
        let mut inv = vec![GONE; self.new_len];
        for (old, &new) in self.old_to_new.iter().enumerate() {
            if let Some(slot) = inv.get_mut(new as usize) {
                *slot = old as u32;
            }
        }
        inv
    }
}

/// The entity and the relation maps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Maps {
    pub entities: IdMap,
    pub relations: IdMap,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn table(names: &[&str]) -> (Vec<u8>, Vec<u8>) {
        let mut offsets = vec![0u64];
        let mut bytes = Vec::new();
        for n in names {
            bytes.extend_from_slice(n.as_bytes());
            offsets.push(bytes.len() as u64);
        }
        (u64_bytes(&offsets), bytes)
    }

    #[test]
    fn merges_added_and_removed_names() {
        let (oo, ob) = table(&["alien", "brazil", "casablanca", "dune"]);
        let (no, nb) = table(&["aliens", "brazil", "dune", "zelig"]);
        let old = Strings::new("o", &oo, &ob).unwrap();
        let new = Strings::new("n", &no, &nb).unwrap();
        let m = IdMap::merge(&old, &new).unwrap();
        assert_eq!(m.old_to_new, vec![GONE, 1, GONE, 2]);
        assert_eq!(m.inverse(), vec![GONE, 1, 3, GONE]);
        assert_eq!((m.get(3), m.get(0), m.get(99)), (Some(2), None, None));
    }

    #[test]
    fn unaligned_arrays_are_read() {
        let mut b = vec![0u8];
        b.extend_from_slice(&u64_bytes(&[1, 2, 3]));
        assert_eq!(&*u64s("x", &b[1..]).unwrap(), &[1, 2, 3]);
        assert!(u64s("x", &b[..5]).is_err());
        let (o, _) = table(&["a"]);
        let s = Strings::new("o", &o, b"").unwrap();
        assert!(s.get(0).is_err(), "offset past the bytes is an error");
    }
}
