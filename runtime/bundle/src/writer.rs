//! Writing a bundle: compress sections (in parallel), build the table, sign.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use crate::error::{BundleError, Result};
use crate::format::{
    check_section_name, Header, SectionEntry, COMPRESSION_NONE, COMPRESSION_ZSTD, ENTRY_LEN,
    FLAG_REQUIRED, FORMAT_VERSION, HEADER_LEN, MAX_MANIFEST_LEN, MAX_SECTIONS, SIGNATURE_LEN,
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
        check_section_name(name)?;
        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), level)
            .map_err(|e| BundleError::io(format!("compressing section `{name}`"), e))?;
        let setup = enc
            .include_checksum(true)
            .and_then(|_| enc.include_contentsize(true))
            .and_then(|_| enc.set_pledged_src_size(Some(raw.len() as u64)))
            .and_then(|_| enc.long_distance_matching(raw.len() > 8 << 20));
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
    pending: Vec<(String, bool, Vec<u8>)>,
    stored: Vec<StoredSection>,
    level: i32,
}

impl BundleWriter {
    pub fn new(manifest: Manifest) -> BundleWriter {
        BundleWriter {
            manifest,
            pending: Vec::new(),
            stored: Vec::new(),
            level: 19,
        }
    }

    /// zstd level for [`BundleWriter::add_section`] sections (default 19).
    pub fn level(mut self, level: i32) -> Self {
        self.level = level;
        self
    }

    pub fn manifest_mut(&mut self) -> &mut Manifest {
        &mut self.manifest
    }

    /// Adds a section to be compressed at write time.
    pub fn add_section(&mut self, name: &str, required: bool, raw: Vec<u8>) -> Result<()> {
        check_section_name(name)?;
        self.check_new_name(name)?;
        self.pending.push((name.to_string(), required, raw));
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
        if self.pending.iter().any(|p| p.0 == name) || self.stored.iter().any(|s| s.name == name) {
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
            level,
        } = self;
        let mut sections = compress_all(pending, level)?;
        sections.extend(stored);
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
                stored_len: s.stored.len() as u64,
                raw_len: s.raw_len,
                sha256_raw: s.sha256_raw,
                sha256_stored: Sha256::digest(&s.stored).into(),
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
        for s in &sections {
            out.write_all(&s.stored).map_err(wr)?;
        }
        out.flush().map_err(wr)?;
        Ok(WriteReport {
            bytes: offset,
            raw_bytes: sections.iter().map(|s| s.raw_len).sum(),
            sections: entries,
        })
    }
}

/// Compresses sections on up to `available_parallelism` threads, keeping order.
fn compress_all(pending: Vec<(String, bool, Vec<u8>)>, level: i32) -> Result<Vec<StoredSection>> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(pending.len().max(1));
    // Largest first, so one big section does not start last.
    let mut order: Vec<usize> = (0..pending.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(pending[i].2.len()));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<StoredSection>>>> =
        Mutex::new((0..pending.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = order.get(k) else { break };
                let (name, required, raw) = &pending[i];
                let r = StoredSection::compress(name, *required, raw, level);
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
