//! The pieces a build larger than memory spills through, each bounded in
//! memory whatever the size of the graph:
//!
//! - `records.rs`: an external sort of (bytes, number) records.
//! - `partitions.rs`: records written to one of [`PARTITIONS`] temporary
//!   files by the top bits of a 64-bit hash, read back one file at a time.
//! - `seen.rs`: a fixed-size set of 64-bit hashes, cleared when full.

mod partitions;
mod records;
mod seen;

pub use partitions::{partition, Partitions, PARTITIONS};
pub use records::{RecordSorter, Records};
pub use seen::Seen;

use std::path::Path;

/// An unnamed temporary file in `dir` (the system's temporary directory
/// when `None`), deleted when closed.
pub fn tempfile(dir: Option<&Path>) -> std::io::Result<std::fs::File> {
    match dir {
        Some(dir) => tempfile::tempfile_in(dir),
        None => tempfile::tempfile(),
    }
}

/// The 64-bit hash a large build keys entity names by (never 0, which
/// [`Seen`] keeps for empty slots). Only compared within one build, so it
/// need not be stable across releases.
pub fn name_hash(name: &str) -> u64 {
    use std::hash::Hasher;
    let mut h = std::hash::DefaultHasher::new();
    h.write(name.as_bytes());
    h.finish().max(1)
}

/// Reads exactly `N` bytes, or `None` at a clean end of the file.
pub fn read_array<const N: usize>(r: &mut impl std::io::Read) -> std::io::Result<Option<[u8; N]>> {
    let mut buf = [0u8; N];
    let mut got = 0;
    while got < N {
        match r.read(&mut buf[got..])? {
            0 if got == 0 => return Ok(None),
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => got += n,
        }
    }
    Ok(Some(buf))
}
