//! `kgbox-pack push`: sends a bundle to devices (see docs/mqtt.md, "Bundle push").

use std::path::PathBuf;

use anyhow::Result;

#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// The bundle file.
    pub bundle: PathBuf,
}

pub fn run(_args: &PushArgs) -> Result<()> {
    anyhow::bail!("push is not built yet")
}
