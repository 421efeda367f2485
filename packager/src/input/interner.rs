//! Strings to dense ids, in first-seen order, stored compactly: every name
//! once in one byte arena, and a hash table of ids (4 bytes a slot) that
//! compares through the arena. About 13 bytes per name beyond its text,
//! where a `HashMap<String, u32>` and a `Vec<String>` need over 100.

use std::hash::BuildHasher;

use hashbrown::HashTable;

/// A fixed hasher, so that a build does the same work every time.
#[derive(Clone, Copy, Default)]
struct Fixed;

impl BuildHasher for Fixed {
    type Hasher = rustc_hash::FxHasher;
    fn build_hasher(&self) -> Self::Hasher {
        rustc_hash::FxHasher::default()
    }
}

#[derive(Default)]
pub struct Interner {
    bytes: Vec<u8>,
    /// `offsets[id]..offsets[id + 1]` is `id`'s name in `bytes`.
    offsets: Vec<u64>,
    table: HashTable<u32>,
}

impl std::fmt::Debug for Interner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interner")
            .field("len", &self.len())
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

fn hash(s: &str) -> u64 {
    Fixed.hash_one(s)
}

impl Interner {
    pub fn name(&self, id: u32) -> &str {
        let i = id as usize;
        match (self.offsets.get(i), self.offsets.get(i + 1)) {
            (Some(&a), Some(&b)) => {
                // Only whole `&str`s are ever appended, so every range is
                // on character boundaries.
                std::str::from_utf8(&self.bytes[a as usize..b as usize]).unwrap_or_default()
            }
            _ => "",
        }
    }

    pub fn intern(&mut self, s: &str) -> u32 {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        let h = hash(s);
        let (bytes, offsets) = (&self.bytes, &self.offsets);
        let at = |id: u32| {
            let i = id as usize;
            &bytes[offsets[i] as usize..offsets[i + 1] as usize]
        };
        if let Some(&id) = self.table.find(h, |&id| at(id) == s.as_bytes()) {
            return id;
        }
        let id = self.len() as u32;
        self.bytes.extend_from_slice(s.as_bytes());
        self.offsets.push(self.bytes.len() as u64);
        let (bytes, offsets) = (&self.bytes, &self.offsets);
        self.table.insert_unique(h, id, |&id| {
            let i = id as usize;
            hash(
                std::str::from_utf8(&bytes[offsets[i] as usize..offsets[i + 1] as usize])
                    .unwrap_or_default(),
            )
        });
        id
    }

    pub fn get(&self, s: &str) -> Option<u32> {
        self.table.find(hash(s), |&id| self.name(id) == s).copied()
    }

    /// The names of ids `first..`, in id order.
    pub fn names_from(&self, first: usize) -> Vec<String> {
        (first..self.len())
            .map(|i| self.name(i as u32).to_string())
            .collect()
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.len()).map(|i| self.name(i as u32))
    }

    /// Renames every string; `f` must keep them distinct.
    pub fn rename(&mut self, f: impl Fn(usize, &str) -> String) {
        let renamed: Vec<String> = self.iter().enumerate().map(|(i, n)| f(i, n)).collect();
        *self = Interner::default();
        for n in &renamed {
            self.intern(n);
        }
    }

    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes held (names, offsets and table), for the progress report.
    pub fn memory(&self) -> usize {
        self.bytes.capacity() + self.offsets.capacity() * 8 + self.table.capacity() * 5
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_in_first_seen_order() {
        let mut i = Interner::default();
        assert_eq!(i.intern("b"), 0);
        assert_eq!(i.intern("a"), 1);
        assert_eq!(i.intern("b"), 0);
        assert_eq!(i.intern(""), 2);
        assert_eq!(i.get("a"), Some(1));
        assert_eq!(i.get("c"), None);
        assert_eq!(i.name(1), "a");
        assert_eq!(i.name(9), "");
        assert_eq!(i.len(), 3);
        assert_eq!(i.names_from(1), ["a", ""]);
        i.rename(|k, n| format!("{n}{k}"));
        assert_eq!(i.iter().collect::<Vec<_>>(), ["b0", "a1", "2"]);
        assert_eq!(i.get("a1"), Some(1));
    }

    #[test]
    fn many_names_survive_growth() {
        let mut i = Interner::default();
        for k in 0..50_000u32 {
            assert_eq!(i.intern(&format!("name {k}")), k);
        }
        for k in (0..50_000u32).step_by(997) {
            assert_eq!(i.get(&format!("name {k}")), Some(k));
        }
    }
}
