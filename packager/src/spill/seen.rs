//! A set of 64-bit hashes, to skip names already written: one open-
//! addressing table (linear probing) per partition of the hash's top bits,
//! each growing by doubling up to a fixed size, so that memory follows the
//! names seen up to a bound and a table's growth briefly holds only its own
//! share twice. A table that is full at its bound is cleared and starts
//! over: a name seen again is then written again, which costs disk, never
//! memory, and never loses a name.

use super::partition;

/// Tables, one per partition.
const TABLES: usize = super::PARTITIONS;

/// Slots a table starts with.
const FIRST: usize = 64;

pub struct Seen {
    tables: Vec<Table>,
    /// Slots a table may grow to (a power of two).
    max: usize,
    /// Times a table filled up at its bound and was cleared.
    pub windows: u64,
}

struct Table {
    slots: Vec<u64>,
    len: usize,
}

impl Table {
    /// Whether `hash` is present, else the free slot it belongs in.
    fn find(&self, hash: u64) -> Result<(), usize> {
        let mask = self.slots.len() - 1;
        // The low bits pick the slot: the table was picked by the high ones.
        let mut i = (hash as usize) & mask;
        loop {
            match self.slots[i] {
                0 => return Err(i),
                h if h == hash => return Ok(()),
                _ => i = (i + 1) & mask,
            }
        }
    }

    fn full(&self) -> bool {
        self.len >= self.slots.len() / 16 * 15
    }

    fn grow(&mut self) {
        let doubled = vec![0; self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, doubled);
        for h in old.into_iter().filter(|&h| h != 0) {
            if let Err(i) = self.find(h) {
                self.slots[i] = h;
            }
        }
    }
}

impl Seen {
    /// A set of at most about `slots` hashes in all (rounded up to a power
    /// of two; 8 bytes each), held to 15/16 full.
    pub fn new(slots: usize) -> Seen {
        Seen {
            tables: (0..TABLES)
                .map(|_| Table {
                    slots: vec![0; FIRST],
                    len: 0,
                })
                .collect(),
            max: (slots / TABLES).next_power_of_two().max(FIRST),
            windows: 0,
        }
    }

    /// Adds `hash` (never 0); whether it was new since its table was last
    /// cleared.
    pub fn insert(&mut self, hash: u64) -> bool {
        debug_assert!(hash != 0);
        let table = &mut self.tables[partition(hash)];
        if table.find(hash).is_ok() {
            return false;
        }
        if table.full() {
            if table.slots.len() < self.max {
                table.grow();
            } else {
                table.slots.fill(0);
                table.len = 0;
                self.windows += 1;
            }
        }
        if let Err(i) = table.find(hash) {
            table.slots[i] = hash;
            table.len += 1;
        }
        true
    }

    /// Bytes held by the tables.
    pub fn memory(&self) -> usize {
        self.tables.iter().map(|t| t.slots.len() * 8).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hashes that all fall in table 0.
    fn h(i: u64) -> u64 {
        (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 8) | 1
    }

    #[test]
    fn grows_to_its_bound_then_starts_over() {
        // At most 2,048 slots a table: 1,920 hashes.
        let mut s = Seen::new(2048 * TABLES);
        for i in 0..1920 {
            assert!(s.insert(h(i)), "{i}");
        }
        for i in 0..1920 {
            assert!(!s.insert(h(i)), "{i}");
        }
        assert_eq!(s.windows, 0);
        assert_eq!(s.memory(), (2048 + (TABLES - 1) * FIRST) * 8);
        assert!(s.insert(h(5000)));
        assert_eq!(s.windows, 1);
        assert!(s.insert(h(0)), "forgotten after clearing");
        assert!(!s.insert(h(5000)));
        // Other tables are untouched.
        assert!(s.insert(u64::MAX));
        assert!(!s.insert(u64::MAX));
    }
}
