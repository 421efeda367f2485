//! One pushed bundle being assembled on disk (docs/mqtt.md, "Bundle push"):
//! the chunks go to `DATA_DIR/incoming/{transfer}.part` at `index *
//! chunk_bytes`; `{transfer}.json` records the manifest and which chunks are
//! in (a bitmap, hex), so a restart resumes where it stopped.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use kgbox_protocol::push::{valid_transfer_id, Manifest, MAX_RANGES};

#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    #[error("cannot {what} {}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> TransferError + 'a {
    move |source| TransferError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// Which chunks are in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bitmap {
    words: Vec<u64>,
    len: u64,
    count: u64,
}

impl Bitmap {
    pub fn new(len: u64) -> Bitmap {
        Bitmap {
            words: vec![0; len.div_ceil(64) as usize],
            len,
            count: 0,
        }
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn is_complete(&self) -> bool {
        self.count == self.len
    }

    pub fn get(&self, i: u64) -> bool {
        i < self.len && self.words[(i / 64) as usize] & (1 << (i % 64)) != 0
    }

    /// Sets bit `i`; true when it was not set.
    pub fn set(&mut self, i: u64) -> bool {
        if i >= self.len || self.get(i) {
            return false;
        }
        self.words[(i / 64) as usize] |= 1 << (i % 64);
        self.count += 1;
        true
    }

    /// The first index at or after `from` whose bit is `want`.
    fn next(&self, from: u64, want: bool) -> Option<u64> {
        let mut i = from;
        while i < self.len {
            let w = self.words[(i / 64) as usize];
            let w = (if want { w } else { !w }) >> (i % 64);
            if w != 0 {
                let j = i + u64::from(w.trailing_zeros());
                return (j < self.len).then_some(j);
            }
            i = (i / 64 + 1) * 64;
        }
        None
    }

    /// Inclusive ranges of missing indexes, at most `max`; when there are
    /// more, the last one reaches to the end (a superset of what is missing).
    pub fn missing_ranges(&self, max: usize) -> Vec<[u64; 2]> {
        let mut out = Vec::new();
        let mut i = 0;
        while let Some(start) = self.next(i, false) {
            if max == 0 {
                break;
            }
            if out.len() + 1 == max {
                out.push([start, self.len - 1]);
                break;
            }
            let end = self.next(start, true).unwrap_or(self.len);
            out.push([start, end - 1]);
            i = end;
        }
        out
    }

    pub fn to_hex(&self) -> String {
        let bytes: Vec<u8> = self.words.iter().flat_map(|w| w.to_le_bytes()).collect();
        hex::encode(bytes)
    }

    /// The bitmap `to_hex` wrote for `len` bits; `None` when it does not fit.
    pub fn from_hex(len: u64, text: &str) -> Option<Bitmap> {
        let bytes = hex::decode(text).ok()?;
        let mut b = Bitmap::new(len);
        if bytes.len() != b.words.len() * 8 {
            return None;
        }
        for (w, c) in b.words.iter_mut().zip(bytes.chunks_exact(8)) {
            *w = u64::from_le_bytes(c.try_into().ok()?);
        }
        if !len.is_multiple_of(64) {
            let last = b.words.last().copied().unwrap_or(0);
            if last >> (len % 64) != 0 {
                return None;
            }
        }
        b.count = b.words.iter().map(|w| u64::from(w.count_ones())).sum();
        Some(b)
    }
}

/// `{transfer}.json`.
#[derive(Serialize, Deserialize)]
struct Record {
    manifest: Manifest,
    received: String,
}

pub fn part_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.part"))
}

pub fn record_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.json"))
}

/// A transfer being received.
pub struct Transfer {
    pub manifest: Manifest,
    pub bitmap: Bitmap,
    file: Arc<File>,
    dir: PathBuf,
}

impl Transfer {
    /// Resumes the transfer recorded in `dir` when its record matches
    /// `manifest`, else starts it afresh. The bool: resumed.
    pub fn open(dir: &Path, manifest: Manifest) -> Result<(Transfer, bool), TransferError> {
        let part = part_path(dir, &manifest.transfer);
        if let Some(bitmap) = Self::recorded(dir, &manifest) {
            let file = OpenOptions::new().read(true).write(true).open(&part);
            if let Ok(file) = file {
                if file.metadata().is_ok_and(|m| m.len() == manifest.size) {
                    let t = Transfer {
                        manifest,
                        bitmap,
                        file: Arc::new(file),
                        dir: dir.to_path_buf(),
                    };
                    return Ok((t, true));
                }
            }
        }
        let _ = std::fs::remove_file(record_path(dir, &manifest.transfer));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&part)
            .map_err(io("create", &part))?;
        file.set_len(manifest.size).map_err(io("size", &part))?;
        let t = Transfer {
            bitmap: Bitmap::new(manifest.chunks()),
            manifest,
            file: Arc::new(file),
            dir: dir.to_path_buf(),
        };
        Ok((t, false))
    }

    /// The received bitmap of a record in `dir` matching `manifest`.
    fn recorded(dir: &Path, manifest: &Manifest) -> Option<Bitmap> {
        let text = std::fs::read(record_path(dir, &manifest.transfer)).ok()?;
        let rec: Record = serde_json::from_slice(&text).ok()?;
        if rec.manifest != *manifest {
            return None;
        }
        Bitmap::from_hex(manifest.chunks(), &rec.received)
    }

    pub fn id(&self) -> &str {
        &self.manifest.transfer
    }

    pub fn part_path(&self) -> PathBuf {
        part_path(&self.dir, self.id())
    }

    pub fn file(&self) -> Arc<File> {
        self.file.clone()
    }

    /// Writes a chunk whose index and length the caller checked.
    pub fn write_chunk(&mut self, index: u64, data: &[u8]) -> Result<(), TransferError> {
        let offset = index.saturating_mul(self.manifest.chunk_bytes);
        self.file.write_all_at(data, offset).map_err(io(
            "write to",
            &part_path(&self.dir, &self.manifest.transfer),
        ))?;
        self.bitmap.set(index);
        Ok(())
    }

    /// What `persist` needs, taken now; `generation` tells temp files apart.
    pub fn snapshot(&self, generation: u64) -> Snapshot {
        Snapshot {
            record: Record {
                manifest: self.manifest.clone(),
                received: String::new(),
            },
            bitmap: self.bitmap.clone(),
            file: self.file.clone(),
            path: record_path(&self.dir, self.id()),
            tmp: self
                .dir
                .join(format!("{}.json.{generation}.tmp", self.id())),
        }
    }
}

/// A record to write: `write_tmp` (slow: syncs the data) off the event
/// loop, then `commit` (a rename) or `discard`.
pub struct Snapshot {
    record: Record,
    bitmap: Bitmap,
    file: Arc<File>,
    path: PathBuf,
    tmp: PathBuf,
}

impl Snapshot {
    pub fn write_tmp(&mut self) -> Result<(), TransferError> {
        // The chunks the record claims must be on disk before it.
        self.file.sync_data().map_err(io("sync", &self.path))?;
        self.record.received = self.bitmap.to_hex();
        let json = serde_json::to_vec(&self.record).unwrap_or_default();
        let mut f = File::create(&self.tmp).map_err(io("create", &self.tmp))?;
        f.write_all(&json).map_err(io("write", &self.tmp))?;
        f.sync_data().map_err(io("sync", &self.tmp))
    }

    pub fn commit(&self) -> Result<(), TransferError> {
        std::fs::rename(&self.tmp, &self.path).map_err(io("rename", &self.tmp))
    }

    pub fn discard(&self) {
        let _ = std::fs::remove_file(&self.tmp);
    }
}

/// The transfer id a file in `incoming/` belongs to, if it is one of ours.
fn owner(name: &str) -> Option<&str> {
    let (id, rest) = name.split_once('.')?;
    let ours =
        rest == "part" || rest == "json" || (rest.starts_with("json.") && rest.ends_with(".tmp"));
    (ours && valid_transfer_id(id)).then_some(id)
}

/// Deletes the files of the transfers in `dir` that `keep` says to delete
/// (given the transfer id); returns how many.
pub fn remove_files(dir: &Path, delete: impl Fn(&str) -> bool) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut n = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if owner(name).is_some_and(&delete) && std::fs::remove_file(e.path()).is_ok() {
            n += 1;
        }
    }
    n
}

/// Renames the files of the transfers `delete` names (given the transfer
/// id) to `NAME.trash`, and returns those and older `.trash` files: the
/// caller deletes them.
pub fn trash_files(dir: &Path, delete: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.strip_suffix(".trash").and_then(owner).is_some() {
            out.push(e.path());
        } else if owner(name).is_some_and(&delete) {
            let to = dir.join(format!("{name}.trash"));
            if std::fs::rename(e.path(), &to).is_ok() {
                out.push(to);
            }
        }
    }
    out
}

/// Free bytes on the file system holding `dir`, when known.
pub fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: `c` is a NUL-terminated path and `st` a writable statvfs.
    let rc = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: statvfs succeeded, so it filled `st`.
    let st = unsafe { st.assume_init() };
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    Some(u64::from(st.f_bavail) * u64::from(st.f_frsize))
}

#[cfg(test)]
#[path = "transfer_tests.rs"]
mod tests;
