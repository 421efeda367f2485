//! One module per subcommand, and what several of them share.

pub mod eval;
pub mod install;
pub mod query;
pub mod serve;
pub mod status;
pub mod verify;

use anyhow::{Context, Result};
use kgbox::config::parse_key_ref;
use kgbox::loaded::Source;
use kgbox::{install as inst, Config, LoadedBundle};
use kgbox_bundle::TrustedKeys;

/// `--bundle FILE [--trust KEY]...`: work on a bundle file instead of the
/// active slot.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct BundleArgs {
    /// Use this bundle file instead of the active one.
    #[arg(long)]
    pub bundle: Option<std::path::PathBuf>,
    /// Trusted key for --bundle (file or inline); default: the config's keys.
    #[arg(long)]
    pub trust: Vec<String>,
}

/// The bundle a command works on: `--bundle FILE` (verified against `--trust`
/// keys or the config's), else the active slot, else the demo.
pub fn load_bundle(cfg: &Config, source: &BundleArgs) -> Result<LoadedBundle> {
    if let Some(path) = source.bundle.as_deref() {
        let keys = trusted_keys(cfg, &source.trust)?;
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        return LoadedBundle::from_bundle_bytes(
            &bytes,
            &keys,
            &cfg.limits(),
            Source::File(path.to_path_buf()),
        )
        .with_context(|| format!("cannot load {}", path.display()));
    }
    match inst::load_active(&cfg.data_dir)? {
        Some(b) => Ok(b),
        None if cfg.demo => Ok(kgbox::demo::load_demo()?),
        None => anyhow::bail!("no bundle is installed in {}", cfg.data_dir.display()),
    }
}

/// `--trust` keys (files or inline) when given, else the config's trusted keys.
pub fn trusted_keys(cfg: &Config, trust: &[String]) -> Result<TrustedKeys> {
    if trust.is_empty() {
        return Ok(cfg.trusted_keys()?);
    }
    Ok(TrustedKeys::new(
        trust
            .iter()
            .map(|k| parse_key_ref(k))
            .collect::<Result<_, _>>()?,
    ))
}
