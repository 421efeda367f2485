//! Writing a bundle: compress sections (in parallel), build the table, sign.
//! Sections come from memory or, for graphs too large to hold, from files;
//! those are compressed as streams into temporary files and copied into the
//! bundle, so a section is never held whole in memory.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use crate::error::{BundleError, Result};
use crate::format::{
    check_section_name, Header, SectionEntry, COMPRESSION_DERIVED, COMPRESSION_NONE,
    COMPRESSION_ZSTD, ENTRY_LEN, FLAG_REQUIRED, FORMAT_VERSION, HEADER_LEN, MAX_MANIFEST_LEN,
    MAX_SECTIONS, SIGNATURE_LEN,
};
use crate::keys::SecretKey;
use crate::manifest::Manifest;

/// A section ready to be written: its stored bytes and what they decode to.
#[derive(Debug, Clone)]
pub struct StoredSection {
    pub name: String,
    pub required: bool,
    pub compression: u32,
    pub stored: Vec<u8>,
    pub raw_len: u64,
    pub sha256_raw: [u8; 32],
}

impl StoredSection {
    /// Compresses raw bytes with zstd at `level` (checksummed frames).
    pub fn compress(name: &str, required: bool, raw: &[u8], level: i32) -> Result<StoredSection> {
        Self::compress_with(name, required, raw, (level, raw.len() > 8 << 20))
    }

    /// [`StoredSection::compress`] at `level`, with or without long-distance matching.
    fn compress_with(
        name: &str,
        required: bool,
        raw: &[u8],
        (level, long): (i32, bool),
    ) -> Result<StoredSection> {
        check_section_name(name)?;
        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), level)
            .map_err(|e| BundleError::io(format!("compressing section `{name}`"), e))?;
        let setup = enc
            .include_checksum(true)
            .and_then(|_| enc.include_contentsize(true))
            .and_then(|_| enc.set_pledged_src_size(Some(raw.len() as u64)))
            .and_then(|_| enc.long_distance_matching(long));
        setup.map_err(|e| BundleError::io(format!("compressing section `{name}`"), e))?;
        enc.write_all(raw)
            .map_err(|e| BundleError::io(format!("compressing section `{name}`"), e))?;
        let stored = enc
            .finish()
            .map_err(|e| BundleError::io(format!("compressing section `{name}`"), e))?;
        Ok(StoredSection {
            name: name.to_string(),
            required,
            compression: COMPRESSION_ZSTD,
            stored,
            raw_len: raw.len() as u64,
            sha256_raw: Sha256::digest(raw).into(),
        })
    }

    /// Stores raw bytes without compression.
    pub fn uncompressed(name: &str, required: bool, raw: Vec<u8>) -> Result<StoredSection> {
        check_section_name(name)?;
        Ok(StoredSection {
            name: name.to_string(),
            required,
            compression: COMPRESSION_NONE,
            raw_len: raw.len() as u64,
            sha256_raw: Sha256::digest(&raw).into(),
            stored: raw,
        })
    }
}

/// A section's raw bytes: in memory, or a file of `len` bytes read from its
/// start; or, for a section the device derives (see [`crate::derive`]),
/// only their length and sha256.
#[derive(Debug)]
pub enum RawSection {
    Bytes(Vec<u8>),
    File { file: File, len: u64 },
    Digest { len: u64, sha256: [u8; 32] },
}

impl RawSection {
    pub fn len(&self) -> u64 {
        match self {
            RawSection::Bytes(v) => v.len() as u64,
            RawSection::File { len, .. } | RawSection::Digest { len, .. } => *len,
        }
    }

    /// The length and sha256 of the bytes.
    fn digest(self, name: &str) -> Result<(u64, [u8; 32])> {
        match self {
            RawSection::Bytes(v) => Ok((v.len() as u64, Sha256::digest(&v).into())),
            RawSection::Digest { len, sha256 } => Ok((len, sha256)),
            RawSection::File { mut file, len } => {
                let io = |e| BundleError::io(format!("hashing section `{name}`"), e);
                file.seek(SeekFrom::Start(0)).map_err(io)?;
                let mut hasher = Sha256::new();
                let copied = std::io::copy(&mut (&mut file).take(len), &mut hasher).map_err(io)?;
                if copied != len {
                    return Err(BundleError::Build(format!(
                        "section `{name}`: {copied} bytes read back, {len} written"
                    )));
                }
                Ok((len, hasher.finalize().into()))
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// How sections are compressed: `level`, or `large_level` for sections of
/// more than `large_from` raw bytes (without long-distance matching, whose
/// window would cost hundreds of MiB per thread).
#[derive(Debug, Clone, Copy)]
struct Levels {
    level: i32,
    large_level: i32,
    large_from: u64,
}

impl Levels {
    /// (level, long-distance matching) for a section of `len` bytes.
    fn for_len(&self, len: u64) -> (i32, bool) {
        if len > self.large_from {
            (self.large_level, false)
        } else {
            (self.level, len > 8 << 20)
        }
    }
}

/// A compressed section's bytes: in memory, or in a temporary file.
enum Data {
    Bytes(Vec<u8>),
    File(File),
}

/// A section compressed and hashed, ready for the table.
struct Written {
    name: String,
    required: bool,
    compression: u32,
    raw_len: u64,
    stored_len: u64,
    sha256_raw: [u8; 32],
    sha256_stored: [u8; 32],
    data: Data,
}

impl From<StoredSection> for Written {
    fn from(s: StoredSection) -> Written {
        Written {
            sha256_stored: Sha256::digest(&s.stored).into(),
            stored_len: s.stored.len() as u64,
            name: s.name,
            required: s.required,
            compression: s.compression,
            raw_len: s.raw_len,
            sha256_raw: s.sha256_raw,
            data: Data::Bytes(s.stored),
        }
    }
}

/// Counts and hashes what passes through to `inner`.
struct Hashing<W> {
    inner: W,
    hasher: Sha256,
    len: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Compresses `len` bytes of `file` (from its start) into a temporary file
/// in `dir`, as [`StoredSection::compress`] would compress them in memory.
fn compress_file(
    name: &str,
    required: bool,
    mut file: File,
    len: u64,
    (level, long): (i32, bool),
    dir: Option<&std::path::Path>,
) -> Result<Written> {
    check_section_name(name)?;
    let io = |e| BundleError::io(format!("compressing section `{name}`"), e);
    let out = match dir {
        Some(d) => tempfile::tempfile_in(d),
        None => tempfile::tempfile(),
    }
    .map_err(io)?;
    let sink = Hashing {
        inner: std::io::BufWriter::with_capacity(1 << 20, out),
        hasher: Sha256::new(),
        len: 0,
    };
    let mut enc = zstd::stream::write::Encoder::new(sink, level).map_err(io)?;
    enc.include_checksum(true)
        .and_then(|_| enc.include_contentsize(true))
        .and_then(|_| enc.set_pledged_src_size(Some(len)))
        .and_then(|_| enc.long_distance_matching(long))
        .map_err(io)?;
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    let mut raw_hash = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let n = (buf.len() as u64).min(left) as usize;
        file.read_exact(&mut buf[..n]).map_err(io)?;
        raw_hash.update(&buf[..n]);
        enc.write_all(&buf[..n]).map_err(io)?;
        left -= n as u64;
    }
    let sink = enc.finish().map_err(io)?;
    let stored_len = sink.len;
    let sha256_stored = sink.hasher.finalize().into();
    let mut out = sink.inner.into_inner().map_err(|e| io(e.into_error()))?;
    out.seek(SeekFrom::Start(0)).map_err(io)?;
    Ok(Written {
        name: name.to_string(),
        required,
        compression: COMPRESSION_ZSTD,
        raw_len: len,
        stored_len,
        sha256_raw: raw_hash.finalize().into(),
        sha256_stored,
        data: Data::File(out),
    })
}

/// What [`BundleWriter::write`] wrote.
#[derive(Debug, Clone)]
pub struct WriteReport {
    pub bytes: u64,
    pub raw_bytes: u64,
    pub sections: Vec<SectionEntry>,
}

/// Collects sections and writes a signed bundle.
pub struct BundleWriter {
    manifest: Manifest,
    pending: Vec<Pending>,
    stored: Vec<StoredSection>,
    levels: Levels,
    spill_dir: Option<PathBuf>,
}

impl BundleWriter {
    pub fn new(manifest: Manifest) -> BundleWriter {
        BundleWriter {
            manifest,
            pending: Vec::new(),
            stored: Vec::new(),
            levels: Levels {
                level: 19,
                large_level: 19,
                large_from: u64::MAX,
            },
            spill_dir: None,
        }
    }

    /// zstd level for [`BundleWriter::add_section`] sections (default 19).
    pub fn level(mut self, level: i32) -> Self {
        self.levels.level = level;
        self
    }

    /// zstd level for sections of more than `from` raw bytes (by default
    /// every section gets [`BundleWriter::level`]).
    pub fn large_level(mut self, level: i32, from: u64) -> Self {
        self.levels.large_level = level;
        self.levels.large_from = from;
        self
    }

    /// Where sections added as files are compressed to (the system's
    /// temporary directory by default).
    pub fn spill_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.spill_dir = dir;
        self
    }

    pub fn manifest_mut(&mut self) -> &mut Manifest {
        &mut self.manifest
    }

    /// Adds a section to be compressed at write time.
    pub fn add_section(&mut self, name: &str, required: bool, raw: Vec<u8>) -> Result<()> {
        self.add_raw(name, required, RawSection::Bytes(raw))
    }

    /// Adds a section, in memory or in a file, to be compressed at write time.
    pub fn add_raw(&mut self, name: &str, required: bool, raw: RawSection) -> Result<()> {
        check_section_name(name)?;
        self.check_new_name(name)?;
        self.pending.push(Pending {
            name: name.to_string(),
            required,
            raw,
            derived: false,
        });
        Ok(())
    }

    /// Adds a section the device derives at install instead of reading it
    /// (only the in-edges, see [`crate::derive`]): the table keeps its
    /// length and sha256, the bundle none of its bytes.
    pub fn add_derived(&mut self, name: &str, required: bool, raw: RawSection) -> Result<()> {
        check_section_name(name)?;
        if !crate::derive::DERIVABLE.contains(&name) {
            return Err(BundleError::Build(format!(
                "section `{name}` cannot be derived on the device"
            )));
        }
        self.check_new_name(name)?;
        self.pending.push(Pending {
            name: name.to_string(),
            required,
            raw,
            derived: true,
        });
        Ok(())
    }

    /// Adds a section whose stored bytes are already prepared (e.g. by a
    /// caller with its own compression, or by tests building hostile bundles).
    pub fn add_stored(&mut self, section: StoredSection) -> Result<()> {
        self.check_new_name(&section.name)?;
        self.stored.push(section);
        Ok(())
    }

    fn check_new_name(&self, name: &str) -> Result<()> {
        if self.pending.iter().any(|p| p.name == name) || self.stored.iter().any(|s| s.name == name)
        {
            return Err(BundleError::Build(format!("section `{name}` added twice")));
        }
        Ok(())
    }

    /// Compresses pending sections on all cores, then writes header, table,
    /// manifest, signature and data to `out`.
    pub fn write<W: Write>(self, key: &SecretKey, out: &mut W) -> Result<WriteReport> {
        let BundleWriter {
            manifest,
            pending,
            stored,
            levels,
            spill_dir,
        } = self;
        let mut sections = compress_all(pending, levels, spill_dir.as_deref())?;
        sections.extend(stored.into_iter().map(Written::from));
        if sections.len() > MAX_SECTIONS as usize {
            return Err(BundleError::Build(format!(
                "{} sections, more than the maximum {MAX_SECTIONS}",
                sections.len()
            )));
        }
        let manifest_json = manifest.to_json()?;
        if manifest_json.len() > MAX_MANIFEST_LEN as usize {
            return Err(BundleError::Build("manifest too large".into()));
        }
        let header = Header {
            format_version: FORMAT_VERSION,
            section_count: sections.len() as u32,
            manifest_len: manifest_json.len() as u32,
            key_id: key.public().key_id(),
        };
        let mut offset =
            (HEADER_LEN + sections.len() * ENTRY_LEN + manifest_json.len() + SIGNATURE_LEN) as u64;
        let mut prefix = Vec::with_capacity(offset as usize);
        prefix.extend_from_slice(&header.encode());
        let mut entries = Vec::with_capacity(sections.len());
        for s in &sections {
            let entry = SectionEntry {
                name: s.name.clone(),
                flags: if s.required { FLAG_REQUIRED } else { 0 },
                compression: s.compression,
                offset,
                stored_len: s.stored_len,
                raw_len: s.raw_len,
                sha256_raw: s.sha256_raw,
                sha256_stored: s.sha256_stored,
            };
            prefix.extend_from_slice(&entry.encode()?);
            offset += entry.stored_len;
            entries.push(entry);
        }
        prefix.extend_from_slice(&manifest_json);
        let signature = key.sign_bundle(&prefix);
        prefix.extend_from_slice(&signature);
        let wr = |e| BundleError::io("writing the bundle", e);
        out.write_all(&prefix).map_err(wr)?;
        for s in sections.iter_mut() {
            match &mut s.data {
                Data::Bytes(b) => out.write_all(b).map_err(wr)?,
                Data::File(f) => {
                    let copied = std::io::copy(f, out).map_err(wr)?;
                    if copied != s.stored_len {
                        return Err(BundleError::Build(format!(
                            "section `{}`: {copied} compressed bytes read back, {} written",
                            s.name, s.stored_len
                        )));
                    }
                }
            }
        }
        out.flush().map_err(wr)?;
        Ok(WriteReport {
            bytes: offset,
            raw_bytes: sections.iter().map(|s| s.raw_len).sum(),
            sections: entries,
        })
    }
}

/// A section added to a writer, compressed (or hashed) at write time.
struct Pending {
    name: String,
    required: bool,
    raw: RawSection,
    derived: bool,
}

/// A derived section's table row: its raw length and hash, nothing stored.
fn derived(name: String, required: bool, raw: RawSection) -> Result<Written> {
    let (raw_len, sha256_raw) = raw.digest(&name)?;
    Ok(Written {
        name,
        required,
        compression: COMPRESSION_DERIVED,
        raw_len,
        stored_len: 0,
        sha256_raw,
        sha256_stored: Sha256::digest([]).into(),
        data: Data::Bytes(Vec::new()),
    })
}

/// Compresses sections on up to `available_parallelism` threads, keeping order.
fn compress_all(
    pending: Vec<Pending>,
    levels: Levels,
    dir: Option<&std::path::Path>,
) -> Result<Vec<Written>> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(pending.len().max(1));
    // Largest first, so one big section does not start last.
    let mut order: Vec<usize> = (0..pending.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(pending[i].raw.len()));
    let pending: Vec<Mutex<Option<Pending>>> =
        pending.into_iter().map(|p| Mutex::new(Some(p))).collect();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Written>>>> =
        Mutex::new((0..pending.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = order.get(k) else { break };
                let Some(Pending {
                    name,
                    required,
                    raw,
                    derived: is_derived,
                }) = pending[i].lock().ok().and_then(|mut p| p.take())
                else {
                    break;
                };
                let r = match raw {
                    raw if is_derived => derived(name, required, raw),
                    RawSection::Digest { .. } => Err(BundleError::Build(format!(
                        "section `{name}`: only a derived section may be given by its digest"
                    ))),
                    RawSection::Bytes(raw) => {
                        let chosen = levels.for_len(raw.len() as u64);
                        StoredSection::compress_with(&name, required, &raw, chosen)
                            .map(Written::from)
                    }
                    RawSection::File { file, len } => {
                        compress_file(&name, required, file, len, levels.for_len(len), dir)
                    }
                };
                if let Ok(mut slots) = results.lock() {
                    slots[i] = Some(r);
                }
            });
        }
    });
    results
        .into_inner()
        .map_err(|_| BundleError::Build("a compression thread panicked".into()))?
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(BundleError::Build("section not compressed".into()))))
        .collect()
}
