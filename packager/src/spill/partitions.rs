//! Records sent to one of [`PARTITIONS`] temporary files by a hash's top
//! bits, so that a later pass holds only one partition's share of a
//! table in memory.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

/// 64 files: a graph of a billion triples and 125M entities has about 2M
/// names a partition.
pub const PARTITIONS: usize = 64;

/// The partition of a 64-bit hash.
pub fn partition(hash: u64) -> usize {
    (hash >> 58) as usize
}

pub struct Partitions {
    files: Vec<BufWriter<File>>,
    bytes: u64,
}

impl Partitions {
    pub fn new(dir: Option<&Path>) -> io::Result<Partitions> {
        let files = (0..PARTITIONS)
            .map(|_| Ok(BufWriter::with_capacity(256 << 10, super::tempfile(dir)?)))
            .collect::<io::Result<_>>()?;
        Ok(Partitions { files, bytes: 0 })
    }

    /// Appends `parts` (one record) to partition `p`.
    pub fn write(&mut self, p: usize, parts: &[&[u8]]) -> io::Result<()> {
        let out = &mut self.files[p];
        for part in parts {
            out.write_all(part)?;
            self.bytes += part.len() as u64;
        }
        Ok(())
    }

    /// Bytes written to all partitions.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Each partition's file, from its start, in partition order; a file
    /// is deleted when its reader is dropped.
    pub fn into_readers(self) -> io::Result<Vec<BufReader<File>>> {
        self.files
            .into_iter()
            .map(|w| {
                let mut f = w.into_inner().map_err(|e| e.into_error())?;
                f.seek(SeekFrom::Start(0))?;
                Ok(BufReader::with_capacity(256 << 10, f))
            })
            .collect()
    }
}
