//! Errors of the bundle format. Every variant names the problem and, where it
//! applies, the section and the expected vs found values.

use std::io;

/// An error reading, verifying or writing a bundle or an image.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BundleError {
    #[error("I/O error while {context}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
    #[error("not a kgbox bundle: the file does not start with the bundle magic bytes")]
    BadMagic,
    #[error(
        "unsupported bundle format version {found}: it is newer than this runtime, which reads \
         version {supported}; update kgbox"
    )]
    FormatTooNew { found: u16, supported: u16 },
    #[error(
        "unsupported bundle format version {found}: it is older than this runtime, which reads \
         version {supported}; repack it with a current kgbox-pack"
    )]
    FormatTooOld { found: u16, supported: u16 },
    #[error("bundle is truncated: {0}")]
    Truncated(String),
    #[error("corrupt bundle: {0}")]
    Corrupt(String),
    #[error("bundle is signed by key {key_id}, which is not among the trusted keys")]
    UntrustedKey { key_id: String },
    #[error(
        "bad signature: the header, section table or manifest was altered after signing \
         by key {key_id}"
    )]
    BadSignature { key_id: String },
    #[error(
        "section `{name}` is corrupt: sha256 of its {what} bytes is {found}, expected {expected}"
    )]
    ChecksumMismatch {
        name: String,
        what: &'static str,
        expected: String,
        found: String,
    },
    #[error(
        "section `{name}` declares {declared} bytes decompressed, over the limit of {limit} bytes"
    )]
    SectionTooLarge {
        name: String,
        declared: u64,
        limit: u64,
    },
    #[error(
        "section `{name}` decompresses to more than its declared {declared} bytes \
         (refused as a decompression bomb)"
    )]
    DecompressedOverrun { name: String, declared: u64 },
    #[error("section `{name}` decompressed to {found} bytes, but declares {declared}")]
    DecompressedUnderrun {
        name: String,
        declared: u64,
        found: u64,
    },
    #[error("bundle needs {total} bytes decompressed in all, over the limit of {limit} bytes")]
    TotalTooLarge { total: u64, limit: u64 },
    #[error("section `{name}` could not be decompressed")]
    Decompress {
        name: String,
        #[source]
        source: io::Error,
    },
    #[error(
        "required section `{name}` is not known to this runtime (the bundle needs a newer kgbox)"
    )]
    UnknownRequiredSection { name: String },
    #[error("bundle has no section `{0}`")]
    MissingSection(String),
    #[error("invalid manifest: {0}")]
    Manifest(String),
    #[error("invalid key: {0}")]
    Key(String),
    #[error("invalid image: {0}")]
    Image(String),
    #[error("invalid section `{name}`: {problem}")]
    BadSection { name: String, problem: String },
    #[error("invalid bundle contents: {0}")]
    Build(String),
    #[error("corrupt delta update: {0}")]
    DeltaCorrupt(String),
    #[error(
        "bad delta signature: the delta's header, instruction table or the new bundle's prefix \
         was altered after signing by key {key_id}"
    )]
    DeltaBadSignature { key_id: String },
    #[error("delta update is for base bundle {delta_base}, but the base here is {found}")]
    DeltaWrongBase { delta_base: String, found: String },
    #[error(
        "delta update does not rebuild the new bundle: section `{name}` came out with sha256 \
         {found}, the new bundle's signed table says {expected}"
    )]
    DeltaMismatch {
        name: String,
        expected: String,
        found: String,
    },
}

impl BundleError {
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        BundleError::Io {
            context: context.into(),
            source,
        }
    }

    pub(crate) fn bad_section(name: &str, problem: impl Into<String>) -> Self {
        BundleError::BadSection {
            name: name.to_string(),
            problem: problem.into(),
        }
    }
}

pub type Result<T, E = BundleError> = std::result::Result<T, E>;
