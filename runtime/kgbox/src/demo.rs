//! The built-in demo: a slice of the MetaQA movie KB, signed with a key that
//! is for this demo only (its secret half is published in the repository).

use kgbox_bundle::{PublicKey, TrustedKeys};

use crate::error::Result;
use crate::loaded::{LoadedBundle, Source};

/// The demo bundle, built by `scripts/make-demo.sh` from `demo/movies.tsv`.
pub const DEMO_BUNDLE: &[u8] = include_bytes!("../../../demo/demo.kgb");
/// The demo's public key. DEMO ONLY: anyone can sign with its secret half.
pub const DEMO_PUBLIC_KEY: &str = include_str!("../../../demo/DEMO-ONLY.pub");

/// Verifies and loads the demo bundle into memory.
pub fn load_demo() -> Result<LoadedBundle> {
    let key = PublicKey::parse(DEMO_PUBLIC_KEY)?;
    LoadedBundle::from_bundle_bytes(
        DEMO_BUNDLE,
        &TrustedKeys::new(vec![key]),
        &kgbox_bundle::Limits::default(),
        Source::Demo,
    )
}
