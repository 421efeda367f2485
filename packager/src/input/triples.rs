//! The triples as read, in interned ids, kept in memory up to a limit and
//! spilled to an unnamed temporary file beyond it, so that reading a graph
//! larger than memory costs 12 bytes of disk per triple, not of memory.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

/// Triples in memory before the first spill (32 Mi triples, 384 MiB)
/// unless [`Triples::with_limit`] says otherwise.
pub const DEFAULT_LIMIT: usize = 32 << 20;

pub struct Triples {
    mem: Vec<[u32; 3]>,
    limit: usize,
    dir: Option<PathBuf>,
    spill: Option<BufWriter<File>>,
    spilled: u64,
}

impl Default for Triples {
    fn default() -> Triples {
        Triples::with_limit(DEFAULT_LIMIT, None)
    }
}

impl std::fmt::Debug for Triples {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Triples")
            .field("len", &self.len())
            .field("spilled", &self.spilled)
            .finish()
    }
}

impl Triples {
    /// At most `limit` triples in memory; spill files go to `dir` (the
    /// system's temporary directory when `None`).
    pub fn with_limit(limit: usize, dir: Option<PathBuf>) -> Triples {
        Triples {
            mem: Vec::new(),
            limit: limit.max(1),
            dir,
            spill: None,
            spilled: 0,
        }
    }

    pub fn push(&mut self, t: [u32; 3]) -> io::Result<()> {
        if self.mem.len() >= self.limit {
            self.flush_to_disk()?;
        }
        self.mem.push(t);
        Ok(())
    }

    /// Once some triples are on disk, moves the rest there too and frees
    /// the memory they held (for the sort that follows).
    pub fn spill_rest(&mut self) -> io::Result<()> {
        if self.spilled > 0 && !self.mem.is_empty() {
            self.flush_to_disk()?;
            self.mem = Vec::new();
        }
        Ok(())
    }

    fn flush_to_disk(&mut self) -> io::Result<()> {
        let out = match &mut self.spill {
            Some(out) => out,
            None => {
                let file = match &self.dir {
                    Some(dir) => tempfile::tempfile_in(dir)?,
                    None => tempfile::tempfile()?,
                };
                self.spill.insert(BufWriter::with_capacity(1 << 20, file))
            }
        };
        out.write_all(bytemuck::cast_slice(&self.mem))?;
        self.spilled += self.mem.len() as u64;
        self.mem.clear();
        Ok(())
    }

    pub fn len(&self) -> u64 {
        self.spilled + self.mem.len() as u64
    }

    /// Triples held in memory before spilling.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Where spill files go.
    pub fn dir(&self) -> Option<PathBuf> {
        self.dir.clone()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether some triples live on disk.
    pub fn spilled(&self) -> bool {
        self.spilled > 0
    }

    /// The triples in memory (all of them unless [`Triples::spilled`]).
    pub fn in_memory(&self) -> &[[u32; 3]] {
        &self.mem
    }

    /// Calls `f` on every triple in the order pushed, in blocks.
    pub fn for_each_block(&mut self, mut f: impl FnMut(&[[u32; 3]])) -> io::Result<()> {
        if let Some(out) = &mut self.spill {
            out.flush()?;
            let file = out.get_mut();
            file.seek(SeekFrom::Start(0))?;
            let mut reader = BufReader::with_capacity(1 << 20, &*file);
            let mut block = vec![[0u32; 3]; 1 << 16];
            let mut left = self.spilled;
            while left > 0 {
                let n = (block.len() as u64).min(left) as usize;
                reader.read_exact(bytemuck::cast_slice_mut(&mut block[..n]))?;
                f(&block[..n]);
                left -= n as u64;
            }
            file.seek(SeekFrom::End(0))?;
        }
        f(&self.mem);
        Ok(())
    }

    /// Every triple, in memory (for the small graphs of the optional
    /// stages that need random access).
    pub fn to_vec(&mut self) -> io::Result<Vec<[u32; 3]>> {
        let mut all = Vec::with_capacity(self.len() as usize);
        self.for_each_block(|b| all.extend_from_slice(b))?;
        Ok(all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spilled_triples_come_back_in_order() {
        let mut t = Triples::with_limit(3, None);
        for i in 0..10u32 {
            t.push([i, i + 1, i + 2]).unwrap();
        }
        assert!(t.spilled());
        assert_eq!(t.len(), 10);
        let all = t.to_vec().unwrap();
        assert_eq!(all.len(), 10);
        assert!(all
            .iter()
            .enumerate()
            .all(|(i, x)| x[0] == i as u32 && x[2] == i as u32 + 2));
        // Pushing after a pass appends.
        t.push([99, 0, 0]).unwrap();
        assert_eq!(t.to_vec().unwrap().last(), Some(&[99, 0, 0]));
        assert_eq!(t.to_vec().unwrap().len(), 11);
    }
}
