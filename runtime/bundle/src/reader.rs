//! Reading a bundle file: parse the prefix, check the signature, and stream
//! each section through its checks with bounded memory.

use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};

use sha2::{Digest, Sha256};

use crate::error::{BundleError, Result};
use crate::format::{Header, Prefix, SectionEntry, COMPRESSION_NONE, HEADER_LEN};
use crate::keys::{PublicKey, TrustedKeys};
use crate::kg::iris::Collected;

const CHUNK: usize = 64 * 1024;

/// Bounds on what decompression may produce.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest decompressed size of one section.
    pub max_section_bytes: u64,
    /// Largest decompressed size of all sections together.
    pub max_total_bytes: u64,
    /// zstd window limit (log2 bytes); bounds the decoder's memory.
    pub window_log_max: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_section_bytes: 4 << 30,
            max_total_bytes: 16 << 30,
            window_log_max: 27,
        }
    }
}

/// Copies the decompressed bytes of section `name` from `source` to `out`
/// in 64 KiB steps, stopping as soon as they would exceed `raw_len` (a
/// decompression bomb) and refusing fewer; returns their sha256.
pub(crate) fn pump(
    name: &str,
    source: &mut dyn Read,
    raw_len: u64,
    out: &mut dyn Write,
) -> Result<[u8; 32]> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let mut total = 0u64;
    loop {
        let n = source.read(&mut buf).map_err(|e| BundleError::Decompress {
            name: name.to_string(),
            source: e,
        })?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > raw_len {
            return Err(BundleError::DecompressedOverrun {
                name: name.to_string(),
                declared: raw_len,
            });
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n])
            .map_err(|e| BundleError::io(format!("writing section `{name}`"), e))?;
    }
    if total != raw_len {
        return Err(BundleError::DecompressedUnderrun {
            name: name.to_string(),
            declared: raw_len,
            found: total,
        });
    }
    Ok(hasher.finalize().into())
}

/// What reads a section's stored bytes as its raw bytes: the bytes
/// themselves, or a zstd decoder with the window limit.
pub(crate) fn stored_decoder<'a>(
    name: &str,
    compression: u32,
    stored: impl Read + 'a,
    limits: &Limits,
) -> Result<Box<dyn Read + 'a>> {
    if compression == COMPRESSION_NONE {
        return Ok(Box::new(stored));
    }
    let bad = |source| BundleError::Decompress {
        name: name.to_string(),
        source,
    };
    let mut d = zstd::stream::read::Decoder::with_buffer(BufReader::with_capacity(CHUNK, stored))
        .map_err(bad)?;
    d.window_log_max(limits.window_log_max).map_err(bad)?;
    Ok(Box::new(d))
}

/// A bundle opened for verification or installation.
pub struct BundleReader<R> {
    inner: R,
    prefix: Prefix,
    file_len: u64,
}

impl<R: Read + Seek> BundleReader<R> {
    /// Reads and checks the prefix and the section extents against the file
    /// length. Does not check the signature or the section contents.
    pub fn open(mut inner: R) -> Result<BundleReader<R>> {
        let file_len = inner
            .seek(SeekFrom::End(0))
            .map_err(|e| BundleError::io("reading the bundle length", e))?;
        inner
            .seek(SeekFrom::Start(0))
            .map_err(|e| BundleError::io("seeking in the bundle", e))?;
        let mut head = vec![0u8; HEADER_LEN.min(file_len as usize)];
        inner
            .read_exact(&mut head)
            .map_err(|e| BundleError::io("reading the bundle header", e))?;
        let header = Header::decode(&head)?;
        let prefix_len = header.prefix_len();
        if prefix_len > file_len {
            return Err(BundleError::Truncated(format!(
                "file is {file_len} bytes, but header, section table, manifest and signature need {prefix_len}"
            )));
        }
        head.resize(prefix_len as usize, 0);
        inner
            .read_exact(&mut head[HEADER_LEN..])
            .map_err(|e| BundleError::io("reading the bundle prefix", e))?;
        let prefix = Prefix::parse(head)?;
        if prefix.data_end > file_len {
            let cut = prefix
                .sections
                .iter()
                .find(|s| s.offset + s.stored_len > file_len)
                .map(|s| {
                    format!(
                        " (section `{}` ends at {})",
                        s.name,
                        s.offset + s.stored_len
                    )
                })
                .unwrap_or_default();
            return Err(BundleError::Truncated(format!(
                "file is {file_len} bytes, the section table needs {}{cut}",
                prefix.data_end
            )));
        }
        if prefix.data_end < file_len {
            return Err(BundleError::Corrupt(format!(
                "{} bytes of trailing data after the last section",
                file_len - prefix.data_end
            )));
        }
        Ok(BundleReader {
            inner,
            prefix,
            file_len,
        })
    }

    pub fn prefix(&self) -> &Prefix {
        &self.prefix
    }

    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// Checks the signature against the trusted keys.
    pub fn verify_signature<'k>(&self, keys: &'k TrustedKeys) -> Result<&'k PublicKey> {
        let p = &self.prefix;
        keys.verify_bundle(p.header.key_id, p.signed_bytes(), p.signature())
    }

    /// Hashes the stored bytes of every section (cheap: compressed size) and
    /// checks the declared sizes against the limits, before anything is
    /// decompressed. Sections rejected by `include` only get their hash checked.
    pub fn check_stored(
        &mut self,
        limits: &Limits,
        include: impl Fn(&SectionEntry) -> bool,
    ) -> Result<()> {
        crate::derive::check(&self.prefix)?;
        let total = self.prefix.raw_total(&include);
        if total > limits.max_total_bytes {
            return Err(BundleError::TotalTooLarge {
                total,
                limit: limits.max_total_bytes,
            });
        }
        for i in 0..self.prefix.sections.len() {
            let entry = self.prefix.sections[i].clone();
            if include(&entry) && entry.raw_len > limits.max_section_bytes {
                return Err(BundleError::SectionTooLarge {
                    name: entry.name,
                    declared: entry.raw_len,
                    limit: limits.max_section_bytes,
                });
            }
            let mut hasher = Sha256::new();
            let mut reader = self.stored_reader(&entry)?;
            let mut buf = vec![0u8; CHUNK];
            loop {
                let n = reader
                    .read(&mut buf)
                    .map_err(|e| BundleError::io(format!("reading section `{}`", entry.name), e))?;
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
            }
            let found: [u8; 32] = hasher.finalize().into();
            if found != entry.sha256_stored {
                return Err(BundleError::ChecksumMismatch {
                    name: entry.name,
                    what: "stored",
                    expected: hex::encode(entry.sha256_stored),
                    found: hex::encode(found),
                });
            }
        }
        Ok(())
    }

    fn stored_reader(&mut self, entry: &SectionEntry) -> Result<io::Take<&mut R>> {
        self.inner
            .seek(SeekFrom::Start(entry.offset))
            .map_err(|e| BundleError::io(format!("seeking to section `{}`", entry.name), e))?;
        Ok((&mut self.inner).take(entry.stored_len))
    }

    /// Decompresses one section into `out`, in 64 KiB steps, stopping as soon
    /// as it would exceed its declared size, and checks the raw sha256.
    pub fn copy_section<W: Write>(
        &mut self,
        entry: &SectionEntry,
        limits: &Limits,
        out: &mut W,
    ) -> Result<()> {
        if entry.raw_len > limits.max_section_bytes {
            return Err(BundleError::SectionTooLarge {
                name: entry.name.clone(),
                declared: entry.raw_len,
                limit: limits.max_section_bytes,
            });
        }
        let name = entry.name.clone();
        if crate::derive::is_derived(entry) {
            return crate::derive::write_placeholder(entry, out);
        }
        let stored = self.stored_reader(entry)?;
        let mut source = stored_decoder(&name, entry.compression, stored, limits)?;
        let found = pump(&name, &mut source, entry.raw_len, out)?;
        if found != entry.sha256_raw {
            return Err(BundleError::ChecksumMismatch {
                name,
                what: "decompressed",
                expected: hex::encode(entry.sha256_raw),
                found: hex::encode(found),
            });
        }
        Ok(())
    }

    /// [`BundleReader::copy_section`], also keeping a copy of the sections
    /// whose contents are checked in full once all are decompressed (the
    /// source IRIs, see [`Collected`]; call [`Collected::check`] after the last).
    pub fn copy_checked<W: Write>(
        &mut self,
        entry: &SectionEntry,
        limits: &Limits,
        out: &mut W,
        collected: &mut Collected,
    ) -> Result<()> {
        if !Collected::wants(&entry.name) {
            return self.copy_section(entry, limits, out);
        }
        let mut raw = Vec::new();
        self.copy_section(entry, limits, &mut raw)?;
        out.write_all(&raw)
            .map_err(|e| BundleError::io(format!("writing section `{}`", entry.name), e))?;
        collected.keep(&entry.name, raw);
        Ok(())
    }

    /// Everything `install` checks, without writing anything: signature,
    /// stored hashes, limits, each included section decompressed and hashed,
    /// and the contents of the sections checked in full (source IRIs).
    pub fn verify_all<'k>(
        &mut self,
        keys: &'k TrustedKeys,
        limits: &Limits,
        include: impl Fn(&SectionEntry) -> bool,
    ) -> Result<&'k PublicKey> {
        let key = self.verify_signature(keys)?;
        self.check_stored(limits, &include)?;
        let mut collected = Collected::default();
        for entry in self.prefix.sections.clone() {
            if include(&entry) {
                self.copy_checked(&entry, limits, &mut io::sink(), &mut collected)?;
            }
        }
        collected.check(&self.prefix)?;
        Ok(key)
    }
}
