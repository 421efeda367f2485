//! An external sort of (bytes, `u64`) records within a memory budget:
//! records gather in one byte arena, each full arena is sorted on all
//! cores and written as a run, and the runs are merged. Exact duplicates
//! are dropped, so what comes out is every distinct record once, in
//! (bytes, number) order. Nothing touches the disk while one arena holds
//! everything.

use std::cmp::{Ordering, Reverse};
use std::collections::binary_heap::PeekMut;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

use rayon::slice::ParallelSliceMut;

use super::read_array;

/// A record's place in the arena: (start, length, number).
type Entry = (u64, u32, u64);

/// Bytes an entry costs beyond its key.
const ENTRY_BYTES: usize = std::mem::size_of::<Entry>();

pub struct RecordSorter {
    arena: Vec<u8>,
    entries: Vec<Entry>,
    budget: usize,
    dir: Option<PathBuf>,
    runs: Vec<File>,
    pushed: u64,
}

impl RecordSorter {
    /// Sorts within `budget` bytes of memory (at least 64 KiB); runs go to
    /// `dir` (the system's temporary directory when `None`).
    pub fn new(budget: usize, dir: Option<PathBuf>) -> RecordSorter {
        RecordSorter {
            arena: Vec::new(),
            entries: Vec::new(),
            budget: budget.max(64 << 10),
            dir,
            runs: Vec::new(),
            pushed: 0,
        }
    }

    /// Records pushed (duplicates included).
    pub fn pushed(&self) -> u64 {
        self.pushed
    }

    pub fn push(&mut self, key: &[u8], value: u64) -> io::Result<()> {
        // What the arena and the entries will hold once this record is in
        // (growing by doubling), against the budget.
        let need = self.arena.len() + key.len();
        let arena = match self.arena.capacity() {
            c if need > c => need.max(2 * c),
            c => c,
        };
        let entries = match self.entries.capacity() {
            c if self.entries.len() == c => (2 * c).max(4),
            c => c,
        };
        if arena + entries * ENTRY_BYTES > self.budget && !self.entries.is_empty() {
            self.spill()?;
        }
        self.pushed += 1;
        self.entries
            .push((self.arena.len() as u64, key.len() as u32, value));
        self.arena.extend_from_slice(key);
        Ok(())
    }

    /// Runs written to disk so far.
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    /// Writes what is in memory as a run and gives its memory back, for a
    /// sort that waits while other work needs the memory.
    pub fn release(&mut self) -> io::Result<()> {
        if !self.entries.is_empty() {
            self.spill()?;
        }
        self.arena = Vec::new();
        self.entries = Vec::new();
        Ok(())
    }

    fn sort(&mut self) {
        let arena = &self.arena;
        let key = |e: &Entry| &arena[e.0 as usize..e.0 as usize + e.1 as usize];
        self.entries
            .par_sort_unstable_by(|a, b| key(a).cmp(key(b)).then(a.2.cmp(&b.2)));
        self.entries
            .dedup_by(|later, earlier| later.2 == earlier.2 && key(later) == key(earlier));
    }

    fn spill(&mut self) -> io::Result<()> {
        self.sort();
        let mut out = BufWriter::with_capacity(1 << 20, super::tempfile(self.dir.as_deref())?);
        for e in &self.entries {
            out.write_all(&e.1.to_le_bytes())?;
            out.write_all(&self.arena[e.0 as usize..e.0 as usize + e.1 as usize])?;
            out.write_all(&e.2.to_le_bytes())?;
        }
        let mut file = out.into_inner().map_err(|e| e.into_error())?;
        file.seek(SeekFrom::Start(0))?;
        self.runs.push(file);
        self.arena.clear();
        self.entries.clear();
        Ok(())
    }

    /// The distinct records in order.
    pub fn finish(mut self) -> io::Result<Records> {
        if self.runs.is_empty() {
            self.sort();
            return Ok(Records::Memory {
                arena: self.arena,
                entries: self.entries.into_iter(),
            });
        }
        if !self.entries.is_empty() {
            self.spill()?;
        }
        let mut readers = Vec::with_capacity(self.runs.len());
        let mut heap = BinaryHeap::with_capacity(self.runs.len());
        for (i, file) in self.runs.into_iter().enumerate() {
            let mut r = BufReader::with_capacity(256 << 10, file);
            if let Some(rec) = read_record(&mut r)? {
                heap.push(Reverse(Head(rec, i)));
            }
            readers.push(r);
        }
        Ok(Records::Merge { readers, heap })
    }
}

fn read_record(r: &mut impl Read) -> io::Result<Option<(Vec<u8>, u64)>> {
    let Some(len) = read_array::<4>(r)? else {
        return Ok(None);
    };
    let mut key = vec![0u8; u32::from_le_bytes(len) as usize];
    r.read_exact(&mut key)?;
    let mut value = [0u8; 8];
    r.read_exact(&mut value)?;
    Ok(Some((key, u64::from_le_bytes(value))))
}

/// A run's next record, ordered by the record (then the run).
#[derive(PartialEq, Eq)]
pub struct Head((Vec<u8>, u64), usize);

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Head {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.cmp(&other.0).then(self.1.cmp(&other.1))
    }
}

/// Puts run `i`'s next record, if any, on the heap.
fn refill(
    readers: &mut [BufReader<File>],
    heap: &mut BinaryHeap<Reverse<Head>>,
    i: usize,
) -> io::Result<()> {
    if let Some(next) = read_record(&mut readers[i])? {
        heap.push(Reverse(Head(next, i)));
    }
    Ok(())
}

/// The sorted records, from memory or merged from the runs.
pub enum Records {
    Memory {
        arena: Vec<u8>,
        entries: std::vec::IntoIter<Entry>,
    },
    Merge {
        readers: Vec<BufReader<File>>,
        heap: BinaryHeap<Reverse<Head>>,
    },
}

impl Records {
    /// The next distinct record.
    pub fn next_record(&mut self) -> io::Result<Option<(Vec<u8>, u64)>> {
        match self {
            Records::Memory { arena, entries } => Ok(entries.next().map(|e| {
                (
                    arena[e.0 as usize..e.0 as usize + e.1 as usize].to_vec(),
                    e.2,
                )
            })),
            Records::Merge { readers, heap } => {
                let Some(Reverse(Head(rec, i))) = heap.pop() else {
                    return Ok(None);
                };
                refill(readers, heap, i)?;
                // Each run holds a record once, so its copies in other runs
                // are the heap's next heads.
                while let Some(Reverse(Head(_, j))) = heap
                    .peek_mut()
                    .and_then(|top| (top.0 .0 == rec).then(|| PeekMut::pop(top)))
                {
                    refill(readers, heap, j)?;
                }
                Ok(Some(rec))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(mut r: Records) -> Vec<(Vec<u8>, u64)> {
        let mut out = Vec::new();
        while let Some(rec) = r.next_record().unwrap() {
            out.push(rec);
        }
        out
    }

    #[test]
    fn runs_merge_to_the_distinct_records_in_order() {
        let mut x = 7u64;
        let mut input = Vec::new();
        for _ in 0..20_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let key = format!("k{}", (x >> 40) % 3_000).into_bytes();
            input.push((key, (x >> 20) % 3));
        }
        let mut expected = input.clone();
        expected.sort();
        expected.dedup();
        let mut small = RecordSorter::new(0, None);
        let mut big = RecordSorter::new(1 << 30, None);
        for (k, v) in &input {
            small.push(k, *v).unwrap();
            big.push(k, *v).unwrap();
        }
        assert!(small.runs() > 5, "{} runs", small.runs());
        assert_eq!(big.runs(), 0);
        assert_eq!(drain(small.finish().unwrap()), expected);
        assert_eq!(drain(big.finish().unwrap()), expected);
    }
}
