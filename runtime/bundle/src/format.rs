//! Byte layout of the bundle prefix: header, section table, manifest, signature.
//!
//! All integers are little-endian and decoded with `from_le_bytes`.
//!
//! ```text
//! offset  size            what
//! 0       64              header
//! 64      144 * count     section table
//! ..      manifest_len    manifest (UTF-8 JSON)
//! ..      64              ed25519 signature over SIGNING_DOMAIN || header || table || manifest
//! ..      ...             section data, contiguous, in table order, to the end of the file
//! ```

use sha2::{Digest, Sha256};

use crate::error::{BundleError, Result};
use crate::keys::KeyId;
pub use crate::keys::SIGNING_DOMAIN;
use crate::manifest::Manifest;

/// First eight bytes of every bundle. The `\r\n` and `\x1a` catch text-mode
/// transfers the way PNG's signature does.
pub const MAGIC: [u8; 8] = *b"\x89KGB\r\n\x1a\n";
/// The one format version this build reads and writes.
pub const FORMAT_VERSION: u16 = 1;
pub const HEADER_LEN: usize = 64;
pub const ENTRY_LEN: usize = 144;
pub const SIGNATURE_LEN: usize = 64;
pub const MAX_NAME_LEN: usize = 48;
/// Upper bounds that keep a hostile header from making us allocate much.
pub const MAX_SECTIONS: u32 = 4096;
pub const MAX_MANIFEST_LEN: u32 = 4 << 20;
pub const SIG_ALG_ED25519: u32 = 1;

pub const FLAG_REQUIRED: u32 = 1;
pub const COMPRESSION_NONE: u32 = 0;
pub const COMPRESSION_ZSTD: u32 = 1;
/// Not stored (`stored_len` 0): the device computes the raw bytes from other
/// sections when it installs the bundle and checks them against
/// `sha256_raw` (see [`crate::derive`]).
pub const COMPRESSION_DERIVED: u32 = 2;

/// The fixed 64-byte header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub format_version: u16,
    pub section_count: u32,
    pub manifest_len: u32,
    pub key_id: KeyId,
}

impl Header {
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..10].copy_from_slice(&self.format_version.to_le_bytes());
        b[10..12].copy_from_slice(&(HEADER_LEN as u16).to_le_bytes());
        // 12..16 flags: zero
        b[16..20].copy_from_slice(&self.section_count.to_le_bytes());
        b[20..24].copy_from_slice(&self.manifest_len.to_le_bytes());
        b[24..28].copy_from_slice(&SIG_ALG_ED25519.to_le_bytes());
        // 28..32 reserved
        b[32..40].copy_from_slice(&self.key_id.0);
        // 40..64 reserved
        b
    }

    /// Parses and checks the header. The magic and version are checked first so
    /// a file of another kind or a newer format gets the right message.
    pub fn decode(b: &[u8]) -> Result<Header> {
        if b.len() < 8 || b[0..8] != MAGIC {
            if b.len() < 8 && MAGIC.starts_with(b) {
                return Err(BundleError::Truncated(format!(
                    "{} bytes, shorter than the {HEADER_LEN}-byte header",
                    b.len()
                )));
            }
            return Err(BundleError::BadMagic);
        }
        if b.len() < HEADER_LEN {
            return Err(BundleError::Truncated(format!(
                "{} bytes, shorter than the {HEADER_LEN}-byte header",
                b.len()
            )));
        }
        let format_version = u16_at(b, 8);
        if format_version > FORMAT_VERSION {
            return Err(BundleError::FormatTooNew {
                found: format_version,
                supported: FORMAT_VERSION,
            });
        }
        if format_version < FORMAT_VERSION {
            return Err(BundleError::FormatTooOld {
                found: format_version,
                supported: FORMAT_VERSION,
            });
        }
        let header_len = u16_at(b, 10);
        if usize::from(header_len) != HEADER_LEN {
            return Err(BundleError::Corrupt(format!(
                "header length field is {header_len}, expected {HEADER_LEN}"
            )));
        }
        if u32_at(b, 12) != 0 {
            return Err(BundleError::Corrupt("unknown header flags set".into()));
        }
        let alg = u32_at(b, 24);
        if alg != SIG_ALG_ED25519 {
            return Err(BundleError::Corrupt(format!(
                "unknown signature algorithm {alg} (expected {SIG_ALG_ED25519}, ed25519)"
            )));
        }
        if b[28..32].iter().chain(&b[40..64]).any(|&x| x != 0) {
            return Err(BundleError::Corrupt(
                "reserved header bytes are not zero".into(),
            ));
        }
        let section_count = u32_at(b, 16);
        if section_count > MAX_SECTIONS {
            return Err(BundleError::Corrupt(format!(
                "header declares {section_count} sections, more than the maximum {MAX_SECTIONS}"
            )));
        }
        let manifest_len = u32_at(b, 20);
        if manifest_len > MAX_MANIFEST_LEN {
            return Err(BundleError::Corrupt(format!(
                "header declares a {manifest_len}-byte manifest, more than the maximum {MAX_MANIFEST_LEN}"
            )));
        }
        let mut key_id = [0u8; 8];
        key_id.copy_from_slice(&b[32..40]);
        Ok(Header {
            format_version,
            section_count,
            manifest_len,
            key_id: KeyId(key_id),
        })
    }

    /// Length of header + table + manifest + signature.
    pub fn prefix_len(&self) -> u64 {
        HEADER_LEN as u64
            + u64::from(self.section_count) * ENTRY_LEN as u64
            + u64::from(self.manifest_len)
            + SIGNATURE_LEN as u64
    }
}

/// One row of the section table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionEntry {
    pub name: String,
    pub flags: u32,
    pub compression: u32,
    /// Offset of the stored (compressed) bytes from the start of the bundle file.
    pub offset: u64,
    pub stored_len: u64,
    pub raw_len: u64,
    pub sha256_raw: [u8; 32],
    pub sha256_stored: [u8; 32],
}

impl SectionEntry {
    pub fn required(&self) -> bool {
        self.flags & FLAG_REQUIRED != 0
    }

    pub fn encode(&self) -> Result<[u8; ENTRY_LEN]> {
        let mut b = [0u8; ENTRY_LEN];
        check_section_name(&self.name)?;
        b[..self.name.len()].copy_from_slice(self.name.as_bytes());
        b[48..52].copy_from_slice(&self.flags.to_le_bytes());
        b[52..56].copy_from_slice(&self.compression.to_le_bytes());
        b[56..64].copy_from_slice(&self.offset.to_le_bytes());
        b[64..72].copy_from_slice(&self.stored_len.to_le_bytes());
        b[72..80].copy_from_slice(&self.raw_len.to_le_bytes());
        b[80..112].copy_from_slice(&self.sha256_raw);
        b[112..144].copy_from_slice(&self.sha256_stored);
        Ok(b)
    }

    pub fn decode(b: &[u8], index: usize) -> Result<SectionEntry> {
        let raw_name = &b[..MAX_NAME_LEN];
        let end = raw_name
            .iter()
            .position(|&c| c == 0)
            .unwrap_or(MAX_NAME_LEN);
        if raw_name[end..].iter().any(|&c| c != 0) {
            return Err(BundleError::Corrupt(format!(
                "section table entry {index}: name is not NUL-padded"
            )));
        }
        let name = std::str::from_utf8(&raw_name[..end])
            .map_err(|_| {
                BundleError::Corrupt(format!("section table entry {index}: name is not UTF-8"))
            })?
            .to_string();
        check_section_name(&name)
            .map_err(|e| BundleError::Corrupt(format!("section table entry {index}: {e}")))?;
        let flags = u32_at(b, 48);
        if flags & !FLAG_REQUIRED != 0 {
            return Err(BundleError::Corrupt(format!(
                "section `{name}`: unknown flags {flags:#x}"
            )));
        }
        let compression = u32_at(b, 52);
        if ![COMPRESSION_NONE, COMPRESSION_ZSTD, COMPRESSION_DERIVED].contains(&compression) {
            return Err(BundleError::Corrupt(format!(
                "section `{name}`: unknown compression {compression}"
            )));
        }
        let mut sha256_raw = [0u8; 32];
        sha256_raw.copy_from_slice(&b[80..112]);
        let mut sha256_stored = [0u8; 32];
        sha256_stored.copy_from_slice(&b[112..144]);
        Ok(SectionEntry {
            name,
            flags,
            compression,
            offset: u64_at(b, 56),
            stored_len: u64_at(b, 64),
            raw_len: u64_at(b, 72),
            sha256_raw,
            sha256_stored,
        })
    }
}

/// Section names are printable ASCII without spaces, 1 to 48 bytes.
pub fn check_section_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err(BundleError::Build(format!(
            "section name `{name}` must be 1 to {MAX_NAME_LEN} bytes"
        )));
    }
    if !name.bytes().all(|c| c.is_ascii_graphic()) {
        return Err(BundleError::Build(format!(
            "section name `{name}` must be printable ASCII without spaces"
        )));
    }
    Ok(())
}

/// The parsed, signed prefix of a bundle (header, table, manifest, signature).
#[derive(Debug, Clone)]
pub struct Prefix {
    pub header: Header,
    pub sections: Vec<SectionEntry>,
    pub manifest: Manifest,
    /// The exact prefix bytes, signature included (copied into images).
    pub bytes: Vec<u8>,
    /// Offset one past the last section's stored bytes: the length the bundle file must have.
    pub data_end: u64,
}

impl Prefix {
    /// Parses a complete prefix. Checks structure and section extents; the
    /// signature is checked separately (see
    /// [`BundleReader::verify_signature`](crate::BundleReader::verify_signature)).
    pub fn parse(bytes: Vec<u8>) -> Result<Prefix> {
        let header = Header::decode(&bytes)?;
        let prefix_len = header.prefix_len();
        if (bytes.len() as u64) < prefix_len {
            return Err(BundleError::Truncated(format!(
                "{} bytes, but header, section table, manifest and signature need {prefix_len}",
                bytes.len()
            )));
        }
        let table_end = HEADER_LEN + header.section_count as usize * ENTRY_LEN;
        let mut sections = Vec::with_capacity(header.section_count as usize);
        let mut expected_offset = prefix_len;
        for (i, chunk) in bytes[HEADER_LEN..table_end]
            .chunks_exact(ENTRY_LEN)
            .enumerate()
        {
            let e = SectionEntry::decode(chunk, i)?;
            if sections.iter().any(|s: &SectionEntry| s.name == e.name) {
                return Err(BundleError::Corrupt(format!(
                    "section `{}` appears twice",
                    e.name
                )));
            }
            if e.offset != expected_offset {
                return Err(BundleError::Corrupt(format!(
                    "section `{}` starts at {}, expected {expected_offset} (sections must be contiguous)",
                    e.name, e.offset
                )));
            }
            if e.compression == COMPRESSION_NONE && e.stored_len != e.raw_len {
                return Err(BundleError::Corrupt(format!(
                    "section `{}` is uncompressed but stores {} bytes for {} raw",
                    e.name, e.stored_len, e.raw_len
                )));
            }
            if e.compression == COMPRESSION_DERIVED && e.stored_len != 0 {
                return Err(BundleError::Corrupt(format!(
                    "section `{}` is derived at install but stores {} bytes",
                    e.name, e.stored_len
                )));
            }
            expected_offset = expected_offset.checked_add(e.stored_len).ok_or_else(|| {
                BundleError::Corrupt(format!("section `{}` length overflows", e.name))
            })?;
            sections.push(e);
        }
        let manifest_end = table_end + header.manifest_len as usize;
        let manifest = Manifest::from_json(&bytes[table_end..manifest_end])?;
        let mut bytes = bytes;
        bytes.truncate(prefix_len as usize);
        Ok(Prefix {
            header,
            sections,
            manifest,
            bytes,
            data_end: expected_offset,
        })
    }

    /// The bytes covered by the signature (header, table, manifest).
    pub fn signed_bytes(&self) -> &[u8] {
        &self.bytes[..self.bytes.len() - SIGNATURE_LEN]
    }

    pub fn signature(&self) -> &[u8] {
        &self.bytes[self.bytes.len() - SIGNATURE_LEN..]
    }

    pub fn section(&self, name: &str) -> Option<&SectionEntry> {
        self.sections.iter().find(|s| s.name == name)
    }

    /// Total decompressed size of the sections accepted by `include`.
    pub fn raw_total(&self, include: impl Fn(&SectionEntry) -> bool) -> u64 {
        self.sections
            .iter()
            .filter(|s| include(s))
            .map(|s| s.raw_len)
            .fold(0u64, u64::saturating_add)
    }

    /// sha256 of the prefix; identifies the bundle's signed content.
    pub fn digest(&self) -> [u8; 32] {
        Sha256::digest(&self.bytes).into()
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(x)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}
