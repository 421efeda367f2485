//! Errors of the runtime library.

use std::path::PathBuf;

use kgbox_bundle::BundleError;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Bundle(#[from] BundleError),
    #[error("configuration: {0}")]
    Config(String),
    /// A FIFO, device, socket or directory where a bundle file belongs.
    #[error("{path} is not a regular file (a bundle must be one)")]
    NotAFile { path: PathBuf },
    #[error("state database in {path}")]
    State {
        path: PathBuf,
        #[source]
        source: heed::Error,
    },
    #[error("state database in {path} is inconsistent: {problem}")]
    StateCorrupt { path: PathBuf, problem: String },
    #[error("{context}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("data dir {path} is not writable")]
    NotWritable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "bundle is for devices of kind `{bundle}`, this device is `{device}` (the `compatible` strings differ)"
    )]
    Incompatible { bundle: String, device: String },
    #[error("bundle needs kgbox >= {needed}, this is {running}")]
    RuntimeTooOld { needed: String, running: String },
    #[error(
        "refusing to downgrade from {active} to {offered} (the active bundle is newer); pass --allow-downgrade to force"
    )]
    Downgrade { active: String, offered: String },
    #[error("no trusted keys: set trust.keys in the config (or pass --trust to `kgbox verify`)")]
    NoTrustedKeys,
    #[error("another install is running in {0}")]
    Busy(PathBuf),
    #[error("no bundle is installed in {0}")]
    NothingInstalled(PathBuf),
    #[error("cannot roll back: {0}")]
    Rollback(String),
    #[error(
        "this delta update is for {delta_base}, but no bundle is installed here to apply it to; \
         install the full bundle"
    )]
    DeltaNoBase { delta_base: String },
    #[error(
        "this delta update is for {delta_base}, but the active bundle is {active}; push the full \
         bundle, or a delta made against the active one"
    )]
    DeltaBase { delta_base: String, active: String },
    #[error("installed image {path} cannot be loaded")]
    BadImage {
        path: PathBuf,
        #[source]
        source: BundleError,
    },
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
