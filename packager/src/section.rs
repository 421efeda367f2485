//! A built section's bytes: in memory, or in a temporary file for the
//! sections of a graph too large to hold (deleted when dropped).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use kgbox_bundle::writer::RawSection;
use sha2::{Digest, Sha256};

/// The sections a build produces, in order.
pub type Sections = Vec<(&'static str, SectionData)>;

#[derive(Debug)]
pub enum SectionData {
    Heap(Vec<u8>),
    Spilled {
        file: tempfile::NamedTempFile,
        len: u64,
    },
    /// Only the length and sha256 of the bytes: a section the device
    /// derives (the in-edges of a graph built on disk).
    Digest {
        len: u64,
        sha256: [u8; 32],
    },
}

/// Sections built in memory (the optional stages' output), as [`Sections`] items.
pub fn in_memory(
    list: Vec<(&'static str, Vec<u8>)>,
) -> impl Iterator<Item = (&'static str, SectionData)> {
    list.into_iter().map(|(n, d)| (n, SectionData::Heap(d)))
}

impl From<Vec<u8>> for SectionData {
    fn from(v: Vec<u8>) -> SectionData {
        SectionData::Heap(v)
    }
}

impl SectionData {
    pub fn len(&self) -> u64 {
        match self {
            SectionData::Heap(v) => v.len() as u64,
            SectionData::Spilled { len, .. } | SectionData::Digest { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of a section held in memory (`None` for a spilled one).
    pub fn heap(&self) -> Option<&[u8]> {
        match self {
            SectionData::Heap(v) => Some(v),
            SectionData::Spilled { .. } | SectionData::Digest { .. } => None,
        }
    }

    /// What the bundle writer compresses: the bytes, or the file to stream.
    pub fn into_raw(self) -> io::Result<RawSection> {
        Ok(match self {
            SectionData::Heap(v) => RawSection::Bytes(v),
            SectionData::Spilled { file, len } => RawSection::File {
                file: file.reopen()?,
                len,
            },
            SectionData::Digest { len, sha256 } => RawSection::Digest { len, sha256 },
        })
    }
}

/// Where a section is written while it is built: memory, or a temporary
/// file in `dir` when the build spills.
pub enum SectionOut {
    Heap(Vec<u8>),
    Spill {
        out: BufWriter<tempfile::NamedTempFile>,
        len: u64,
    },
    /// Bytes only hashed, not kept ([`SectionData::Digest`]).
    Digest {
        hasher: Sha256,
        len: u64,
    },
}

impl SectionOut {
    pub fn new(spill_dir: Option<&Path>) -> io::Result<SectionOut> {
        Ok(match spill_dir {
            None => SectionOut::Heap(Vec::new()),
            Some(dir) => SectionOut::Spill {
                out: BufWriter::with_capacity(1 << 20, tempfile::NamedTempFile::new_in(dir)?),
                len: 0,
            },
        })
    }

    /// A section of which only the length and sha256 are kept.
    pub fn digest() -> SectionOut {
        SectionOut::Digest {
            hasher: Sha256::new(),
            len: 0,
        }
    }

    pub fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            SectionOut::Heap(v) => v.extend_from_slice(bytes),
            SectionOut::Digest { hasher, len } => {
                hasher.update(bytes);
                *len += bytes.len() as u64;
            }
            SectionOut::Spill { out, len } => {
                out.write_all(bytes)?;
                *len += bytes.len() as u64;
            }
        }
        Ok(())
    }

    pub fn finish(self) -> io::Result<SectionData> {
        Ok(match self {
            SectionOut::Heap(v) => SectionData::Heap(v),
            SectionOut::Spill { out, len } => {
                let file = out.into_inner().map_err(|e| e.into_error())?;
                SectionData::Spilled { file, len }
            }
            SectionOut::Digest { hasher, len } => SectionData::Digest {
                len,
                sha256: hasher.finalize().into(),
            },
        })
    }
}

impl Write for SectionOut {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        SectionOut::write(self, buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            SectionOut::Heap(_) | SectionOut::Digest { .. } => Ok(()),
            SectionOut::Spill { out, .. } => out.flush(),
        }
    }
}

/// Maps a spilled section read-only (page-aligned, so the typed views of
/// `kgbox_bundle::Kg` can read it in place).
pub fn map(file: &File) -> io::Result<memmap2::Mmap> {
    // SAFETY: the file is this process's own unnamed temporary file; nothing
    // else writes it while the map lives.
    unsafe { memmap2::Mmap::map(file) }
}
