//! Byte layout of a delta update (`.kgbd`, docs/bundle-format.md section 13).
//!
//! ```text
//! offset  size              what
//! 0       128               delta header
//! 128     info_len          info, UTF-8 JSON: base and target bundle (name, version, digest)
//! ..      new_prefix_len    the new bundle's prefix (header, table, manifest, signature), verbatim
//! ..      64 * count        instruction table: one per section of the new bundle, in its order
//! ..      64                ed25519 signature over DELTA_SIGNING_DOMAIN || all of the above
//! ..      ...               payloads, contiguous, in table order, to the end of the file
//! ```

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{BundleError, Result};
use crate::format::{Prefix, ENTRY_LEN, HEADER_LEN, MAX_MANIFEST_LEN, MAX_SECTIONS, SIGNATURE_LEN};
use crate::keys::{KeyId, PublicKey, TrustedKeys};

/// First eight bytes of every delta update (a bundle's are `\x89KGB...`).
pub const DELTA_MAGIC: [u8; 8] = *b"\x89KGD\r\n\x1a\n";
/// The one delta format version this build reads and writes.
pub const DELTA_VERSION: u16 = 1;
pub const DELTA_HEADER_LEN: usize = 128;
pub const INSTRUCTION_LEN: usize = 64;
/// Upper bound on the info JSON.
pub const MAX_INFO_LEN: u32 = 64 << 10;
const SIG_ALG_ED25519: u32 = 1;

/// Whether `head` (the first bytes of a file) starts like a delta update.
pub fn is_delta(head: &[u8]) -> bool {
    head.starts_with(&DELTA_MAGIC)
}

/// What an instruction does to make one section of the new bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// The base's section of the same name, unchanged (no payload).
    Same,
    /// A zstd frame decoded with the transform's reference as its prefix
    /// (zstd "patch-from"), then the transform's inverse.
    Patch,
    /// The new bundle's stored bytes of the section, as in the bundle.
    Full,
}

/// How a patch's reference is made and its decoded bytes are read
/// (see `transform.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transform {
    /// Reference: the base's section of the same name; bytes as decoded.
    Raw,
    /// Reference: the section predicted from the base through the entity
    /// and relation id maps; bytes as decoded.
    Predict,
    /// A u64 offsets array as its consecutive differences (lengths);
    /// reference: the base's offsets as lengths.
    Lengths,
    /// A u64 offsets array as the wrapping difference of its lengths and
    /// the predicted section's lengths (mostly zeros); no reference.
    OffsetsDiff,
}

impl Op {
    fn code(self) -> u32 {
        match self {
            Op::Same => 0,
            Op::Patch => 1,
            Op::Full => 2,
        }
    }

    fn from_code(c: u32) -> Option<Op> {
        Some(match c {
            0 => Op::Same,
            1 => Op::Patch,
            2 => Op::Full,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Op::Same => "same",
            Op::Patch => "patch",
            Op::Full => "full",
        }
    }
}

impl Transform {
    fn code(self) -> u32 {
        match self {
            Transform::Raw => 0,
            Transform::Predict => 1,
            Transform::Lengths => 2,
            Transform::OffsetsDiff => 3,
        }
    }

    fn from_code(c: u32) -> Option<Transform> {
        Some(match c {
            0 => Transform::Raw,
            1 => Transform::Predict,
            2 => Transform::Lengths,
            3 => Transform::OffsetsDiff,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Transform::Raw => "raw",
            Transform::Predict => "predict",
            Transform::Lengths => "lengths",
            Transform::OffsetsDiff => "offsets-diff",
        }
    }
}

/// One row of the instruction table (64 bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    pub op: Op,
    /// `Raw` for `same` and `full`.
    pub transform: Transform,
    /// Where the payload starts, from the start of the delta file.
    pub offset: u64,
    pub len: u64,
    /// sha256 of the payload bytes.
    pub sha256: [u8; 32],
}

impl Instruction {
    pub fn encode(&self) -> [u8; INSTRUCTION_LEN] {
        let mut b = [0u8; INSTRUCTION_LEN];
        b[0..4].copy_from_slice(&self.op.code().to_le_bytes());
        b[4..8].copy_from_slice(&self.transform.code().to_le_bytes());
        b[8..16].copy_from_slice(&self.offset.to_le_bytes());
        b[16..24].copy_from_slice(&self.len.to_le_bytes());
        b[24..56].copy_from_slice(&self.sha256);
        b
    }

    fn decode(b: &[u8], section: &str) -> Result<Instruction> {
        let bad =
            |m: String| BundleError::DeltaCorrupt(format!("instruction for `{section}`: {m}"));
        let op = Op::from_code(u32_at(b, 0)).ok_or_else(|| bad("unknown operation".into()))?;
        let transform =
            Transform::from_code(u32_at(b, 4)).ok_or_else(|| bad("unknown transform".into()))?;
        if b[56..64].iter().any(|&x| x != 0) {
            return Err(bad("reserved bytes are not zero".into()));
        }
        let mut sha256 = [0u8; 32];
        sha256.copy_from_slice(&b[24..56]);
        let i = Instruction {
            op,
            transform,
            offset: u64_at(b, 8),
            len: u64_at(b, 16),
            sha256,
        };
        if op != Op::Patch && transform != Transform::Raw {
            return Err(bad(format!("`{}` takes no transform", op.name())));
        }
        if op == Op::Same && i.len != 0 {
            return Err(bad("`same` has a payload".into()));
        }
        Ok(i)
    }
}

/// A bundle as the info names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleId {
    pub name: String,
    pub version: String,
    /// Hex of the sha256 of its signed prefix ([`Prefix::digest`]).
    pub digest: String,
}

impl std::fmt::Display for BundleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let short = self.digest.get(..16).unwrap_or(&self.digest);
        write!(f, "{} {} (digest {short}…)", self.name, self.version)
    }
}

/// The info JSON: which bundle the delta applies to and which it makes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeltaInfo {
    pub base: BundleId,
    pub target: BundleId,
    pub generator: String,
}

/// The 128-byte delta header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeltaHeader {
    pub instruction_count: u32,
    pub info_len: u32,
    pub key_id: KeyId,
    pub new_prefix_len: u64,
    /// The base bundle's digest: sha256 of its signed prefix.
    pub base_digest: [u8; 32],
}

/// The longest prefix a bundle can have.
const MAX_PREFIX_LEN: u64 = (HEADER_LEN + SIGNATURE_LEN) as u64
    + MAX_SECTIONS as u64 * ENTRY_LEN as u64
    + MAX_MANIFEST_LEN as u64;

impl DeltaHeader {
    pub fn encode(&self) -> [u8; DELTA_HEADER_LEN] {
        let mut b = [0u8; DELTA_HEADER_LEN];
        b[0..8].copy_from_slice(&DELTA_MAGIC);
        b[8..10].copy_from_slice(&DELTA_VERSION.to_le_bytes());
        b[10..12].copy_from_slice(&(DELTA_HEADER_LEN as u16).to_le_bytes());
        b[16..20].copy_from_slice(&self.instruction_count.to_le_bytes());
        b[20..24].copy_from_slice(&self.info_len.to_le_bytes());
        b[24..28].copy_from_slice(&SIG_ALG_ED25519.to_le_bytes());
        b[32..40].copy_from_slice(&self.key_id.0);
        b[40..48].copy_from_slice(&self.new_prefix_len.to_le_bytes());
        b[48..80].copy_from_slice(&self.base_digest);
        b
    }

    /// Parses and checks the header: magic, version, then the rest.
    pub fn decode(b: &[u8]) -> Result<DeltaHeader> {
        let header = DeltaHeader::decode_lengths(b)?;
        let bad = |m: &str| Err(BundleError::DeltaCorrupt(m.into()));
        if u32_at(b, 12) != 0 {
            return bad("unknown header flags set");
        }
        if u32_at(b, 24) != SIG_ALG_ED25519 {
            return bad("unknown signature algorithm");
        }
        if b[28..32].iter().chain(&b[80..128]).any(|&x| x != 0) {
            return bad("reserved header bytes are not zero");
        }
        Ok(header)
    }

    /// The magic, the version and what locates the signed part (each part's
    /// length, bounded), and no more: enough to check the signature before
    /// anything else, so that a flipped byte reads as a bad signature.
    pub fn decode_lengths(b: &[u8]) -> Result<DeltaHeader> {
        let bad = |m: String| BundleError::DeltaCorrupt(m);
        if !is_delta(b) {
            return Err(bad(
                "the file does not start with the delta magic bytes".into()
            ));
        }
        if b.len() < DELTA_HEADER_LEN {
            return Err(bad(format!(
                "{} bytes, shorter than the {DELTA_HEADER_LEN}-byte header",
                b.len()
            )));
        }
        let version = u16::from_le_bytes([b[8], b[9]]);
        if version != DELTA_VERSION {
            return Err(bad(format!(
                "delta format version {version}, this runtime reads version {DELTA_VERSION} \
                 (push the full bundle, or a delta made by a matching kgbox-pack)"
            )));
        }
        if usize::from(u16::from_le_bytes([b[10], b[11]])) != DELTA_HEADER_LEN {
            return Err(bad("header length field is wrong".into()));
        }
        let instruction_count = u32_at(b, 16);
        if instruction_count > MAX_SECTIONS {
            return Err(bad(format!(
                "{instruction_count} instructions, more than {MAX_SECTIONS}"
            )));
        }
        let info_len = u32_at(b, 20);
        if info_len > MAX_INFO_LEN {
            return Err(bad(format!(
                "a {info_len}-byte info, more than {MAX_INFO_LEN}"
            )));
        }
        let new_prefix_len = u64_at(b, 40);
        if new_prefix_len > MAX_PREFIX_LEN {
            return Err(bad(format!(
                "a {new_prefix_len}-byte new prefix, more than {MAX_PREFIX_LEN}"
            )));
        }
        let mut key_id = [0u8; 8];
        key_id.copy_from_slice(&b[32..40]);
        let mut base_digest = [0u8; 32];
        base_digest.copy_from_slice(&b[48..80]);
        Ok(DeltaHeader {
            instruction_count,
            info_len,
            key_id: KeyId(key_id),
            new_prefix_len,
            base_digest,
        })
    }

    /// Length of header + info + new prefix + table + signature (bounded:
    /// every part is).
    pub fn prefix_len(&self) -> u64 {
        DELTA_HEADER_LEN as u64
            + u64::from(self.info_len)
            + self.new_prefix_len
            + u64::from(self.instruction_count) * INSTRUCTION_LEN as u64
            + SIGNATURE_LEN as u64
    }
}

/// The parsed, signed part of a delta.
#[derive(Debug, Clone)]
pub struct DeltaPrefix {
    pub header: DeltaHeader,
    pub info: DeltaInfo,
    /// The new bundle's prefix (its signature is checked separately).
    pub new: Prefix,
    /// One per section of `new`, in its table order.
    pub instructions: Vec<Instruction>,
    /// The exact bytes, signature included.
    pub bytes: Vec<u8>,
    /// One past the last payload: the length the delta file must have.
    pub data_end: u64,
}

impl DeltaPrefix {
    /// Parses a complete delta prefix: structure, the new prefix's
    /// structure, the instructions and their payload extents. The
    /// signatures are checked separately.
    pub fn parse(bytes: Vec<u8>) -> Result<DeltaPrefix> {
        let header = DeltaHeader::decode(&bytes)?;
        let prefix_len = header.prefix_len();
        if (bytes.len() as u64) < prefix_len {
            return Err(BundleError::DeltaCorrupt(format!(
                "truncated: {} bytes, its header and tables need {prefix_len}",
                bytes.len()
            )));
        }
        let info_end = DELTA_HEADER_LEN + header.info_len as usize;
        let info: DeltaInfo = serde_json::from_slice(&bytes[DELTA_HEADER_LEN..info_end])
            .map_err(|e| BundleError::DeltaCorrupt(format!("invalid info: {e}")))?;
        let new_end = info_end + header.new_prefix_len as usize;
        let new = Prefix::parse(bytes[info_end..new_end].to_vec())
            .map_err(|e| BundleError::DeltaCorrupt(format!("the new bundle's prefix: {e}")))?;
        if new.bytes.len() != header.new_prefix_len as usize {
            return Err(BundleError::DeltaCorrupt(
                "the new bundle's prefix length does not match its contents".into(),
            ));
        }
        if new.sections.len() != header.instruction_count as usize {
            return Err(BundleError::DeltaCorrupt(format!(
                "{} instructions for {} sections",
                header.instruction_count,
                new.sections.len()
            )));
        }
        if info.base.digest != hex::encode(header.base_digest)
            || info.target.digest != hex::encode(new.digest())
        {
            return Err(BundleError::DeltaCorrupt(
                "the info's digests do not match the header and the new prefix".into(),
            ));
        }
        let table_end = new_end + header.instruction_count as usize * INSTRUCTION_LEN;
        let mut instructions = Vec::with_capacity(new.sections.len());
        let mut expected = prefix_len;
        for (chunk, entry) in bytes[new_end..table_end]
            .chunks_exact(INSTRUCTION_LEN)
            .zip(&new.sections)
        {
            let i = Instruction::decode(chunk, &entry.name)?;
            if i.offset != expected {
                return Err(BundleError::DeltaCorrupt(format!(
                    "payload of `{}` starts at {}, expected {expected} (payloads are contiguous)",
                    entry.name, i.offset
                )));
            }
            if i.op == Op::Full && (i.len != entry.stored_len || i.sha256 != entry.sha256_stored) {
                return Err(BundleError::DeltaCorrupt(format!(
                    "the `full` payload of `{}` is not the new bundle's stored bytes",
                    entry.name
                )));
            }
            expected = expected.checked_add(i.len).ok_or_else(|| {
                BundleError::DeltaCorrupt(format!("payload of `{}` overflows", entry.name))
            })?;
            instructions.push(i);
        }
        let mut bytes = bytes;
        bytes.truncate(prefix_len as usize);
        Ok(DeltaPrefix {
            header,
            info,
            new,
            instructions,
            bytes,
            data_end: expected,
        })
    }

    /// The bytes covered by the delta's signature.
    pub fn signed_bytes(&self) -> &[u8] {
        &self.bytes[..self.bytes.len() - SIGNATURE_LEN]
    }

    pub fn signature(&self) -> &[u8] {
        &self.bytes[self.bytes.len() - SIGNATURE_LEN..]
    }

    /// Checks the delta's own signature, then the new bundle's, each
    /// against the trusted keys; returns the key that signed the new bundle.
    pub fn verify_signatures<'k>(&self, keys: &'k TrustedKeys) -> Result<&'k PublicKey> {
        keys.verify_delta(self.header.key_id, self.signed_bytes(), self.signature())?;
        keys.verify_bundle(
            self.new.header.key_id,
            self.new.signed_bytes(),
            self.new.signature(),
        )
    }

    /// sha256 of the whole signed part; names the delta.
    pub fn digest(&self) -> [u8; 32] {
        Sha256::digest(&self.bytes).into()
    }
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
