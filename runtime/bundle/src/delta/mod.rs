//! Delta updates (`.kgbd`): a signed file that turns an installed base
//! bundle into a new one, carrying only what changed
//! (docs/bundle-format.md, section 13).
//!
//! A delta holds the base's digest, the new bundle's whole signed prefix,
//! and per section of the new bundle an instruction: `same` (the base's
//! section), `patch` (a zstd frame decoded against a reference, through a
//! [`Transform`]) or `full` (the new bundle's stored bytes). Graph sections
//! are patched against *predictions*: the base's sections moved into the
//! new id space by the id maps both sides compute from the name tables
//! (`maps.rs`, `predict.rs`, `index.rs`).
//!
//! Layers: `format` (bytes) → `maps` → `index`, `predict` → `transform`
//! → `apply` (read, check, build the new image). The packager writes
//! deltas with the same `transform::Context`.

pub mod apply;
pub mod format;
pub mod index;
pub mod maps;
pub mod predict;
pub mod transform;

pub use apply::{patch_decoder, DeltaReader};
pub use format::{
    is_delta, BundleId, DeltaHeader, DeltaInfo, DeltaPrefix, Instruction, Op, Transform,
    DELTA_MAGIC, DELTA_VERSION,
};
pub use predict::Sections;
pub use transform::Context;
