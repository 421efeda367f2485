//! An external sort of triples: runs of at most `capacity` triples are
//! sorted on all cores and, once there is more than one, written to
//! temporary files and merged. A graph that fits in one run never touches
//! the disk.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

use rayon::slice::ParallelSliceMut;

pub type Triple = [u32; 3];

pub struct Sorter {
    buf: Vec<Triple>,
    capacity: usize,
    dir: Option<PathBuf>,
    runs: Vec<(File, u64)>,
}

impl Sorter {
    /// Sorts in runs of `capacity` triples; run files go to `dir` (the
    /// system's temporary directory when `None`).
    pub fn new(capacity: usize, dir: Option<PathBuf>) -> Sorter {
        Sorter {
            buf: Vec::new(),
            capacity: capacity.max(1024),
            dir,
            runs: Vec::new(),
        }
    }

    pub fn push(&mut self, t: Triple) -> io::Result<()> {
        if self.buf.len() >= self.capacity {
            self.spill()?;
        }
        self.buf.push(t);
        Ok(())
    }

    fn spill(&mut self) -> io::Result<()> {
        self.buf.par_sort_unstable();
        let file = match &self.dir {
            Some(dir) => tempfile::tempfile_in(dir)?,
            None => tempfile::tempfile()?,
        };
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(bytemuck::cast_slice(&self.buf))?;
        let mut file = out.into_inner().map_err(|e| e.into_error())?;
        file.seek(SeekFrom::Start(0))?;
        self.runs.push((file, self.buf.len() as u64));
        self.buf.clear();
        Ok(())
    }

    /// Runs written to disk so far.
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    /// The triples in ascending order (duplicates kept).
    pub fn finish(mut self) -> io::Result<Sorted> {
        if self.runs.is_empty() {
            self.buf.par_sort_unstable();
            return Ok(Sorted::Memory(std::mem::take(&mut self.buf).into_iter()));
        }
        if !self.buf.is_empty() {
            self.spill()?;
        }
        self.buf = Vec::new();
        let mut readers = Vec::with_capacity(self.runs.len());
        let mut heap = BinaryHeap::with_capacity(self.runs.len());
        for (i, (file, len)) in self.runs.into_iter().enumerate() {
            let mut r = RunReader {
                reader: BufReader::with_capacity(1 << 18, file),
                left: len,
            };
            if let Some(t) = r.next()? {
                heap.push(Reverse((t, i)));
            }
            readers.push(r);
        }
        Ok(Sorted::Merge { readers, heap })
    }
}

pub struct RunReader {
    reader: BufReader<File>,
    left: u64,
}

impl RunReader {
    fn next(&mut self) -> io::Result<Option<Triple>> {
        if self.left == 0 {
            return Ok(None);
        }
        let mut t = [0u32; 3];
        self.reader.read_exact(bytemuck::cast_slice_mut(&mut t))?;
        self.left -= 1;
        Ok(Some(t))
    }
}

/// The sorted triples, from memory or merged from the runs.
pub enum Sorted {
    Memory(std::vec::IntoIter<Triple>),
    Merge {
        readers: Vec<RunReader>,
        heap: BinaryHeap<Reverse<(Triple, usize)>>,
    },
}

impl Sorted {
    pub fn next(&mut self) -> io::Result<Option<Triple>> {
        match self {
            Sorted::Memory(it) => Ok(it.next()),
            Sorted::Merge { readers, heap } => {
                let Some(Reverse((t, i))) = heap.pop() else {
                    return Ok(None);
                };
                if let Some(next) = readers[i].next()? {
                    heap.push(Reverse((next, i)));
                }
                Ok(Some(t))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(mut s: Sorted) -> Vec<Triple> {
        let mut out = Vec::new();
        while let Some(t) = s.next().unwrap() {
            out.push(t);
        }
        out
    }

    #[test]
    fn merged_runs_equal_one_sort() {
        let mut x = 12345u32;
        let input: Vec<Triple> = (0..10_000)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                [x % 97, x % 13, x % 1000]
            })
            .collect();
        let mut expected = input.clone();
        expected.sort_unstable();
        let mut spilling = Sorter::new(1024, None);
        let mut memory = Sorter::new(1 << 20, None);
        for &t in &input {
            spilling.push(t).unwrap();
            memory.push(t).unwrap();
        }
        assert!(spilling.runs() >= 9);
        assert_eq!(memory.runs(), 0);
        assert_eq!(drain(spilling.finish().unwrap()), expected);
        assert_eq!(drain(memory.finish().unwrap()), expected);
    }
}
