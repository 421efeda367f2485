//! The kgbox bundle format (v1) and its installed, memory-mappable image.
//!
//! A **bundle** (`.kgb`) is what the packager writes and what travels to a device:
//! a fixed header, a section table, a JSON manifest and an ed25519 signature over
//! those three, followed by zstd-compressed sections. See `docs/bundle-format.md`.
//!
//! An **image** is what the runtime writes into an A/B slot when it installs a
//! bundle: the signed prefix of the bundle followed by every known section,
//! decompressed and aligned to 64 bytes, so that the graph arrays can be viewed
//! in place from a memory map.
//!
//! Layers: [`format`](mod@format) (bytes of the header and table) →
//! [`reader`] (verify and stream sections) → [`image`] (write and open
//! images) → [`kg`] (typed, zero-copy views of the knowledge graph). The
//! packager's side, behind the feature `write` (off by default, so the
//! device binary carries none of it): `writer` (sign and write bundles),
//! `kg::encode` (the graph's encoders) and `tiny` (small in-memory graphs
//! for tests).

#[cfg(not(target_endian = "little"))]
compile_error!(
    "kgbox images store little-endian arrays viewed in place; big-endian hosts are not supported"
);

pub mod delta;
pub mod derive;
pub mod error;
pub mod format;
pub mod image;
pub mod keys;
pub mod kg;
pub mod manifest;
pub mod normalize;
pub mod reader;
pub mod sections;
#[cfg(feature = "write")]
pub mod tiny;
#[cfg(feature = "write")]
pub mod writer;

pub use error::{BundleError, Result};
pub use format::{Prefix, SectionEntry, FORMAT_VERSION};
pub use image::{AlignedBytes, ImageView, OwnedImage};
pub use keys::{KeyId, PublicKey, SecretKey, TrustedKeys};
pub use kg::Kg;
pub use manifest::{KgStats, Manifest, ModelInfo, Probe};
pub use reader::{BundleReader, Limits};
#[cfg(feature = "write")]
pub use writer::BundleWriter;

/// Hex of a sha256 digest.
pub fn hex_digest(d: &[u8]) -> String {
    hex::encode(d)
}
