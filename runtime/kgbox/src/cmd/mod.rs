//! One module per subcommand, and what several of them share.

pub mod ask;
pub mod bench;
pub mod config;
pub mod entity;
pub mod eval;
pub mod health;
pub mod healthcheck;
pub mod install;
pub mod keys;
pub mod link;
pub mod manual;
pub mod query;
pub mod render;
pub mod rollback;
pub mod serve;
pub mod sparql;
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

/// `--executor`, `--engine`, `--device`, `--seppr-k`: override `[executor]`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ExecArgs {
    /// symbolic, neural, hybrid (neural and hybrid need a bundle built with
    /// `--ultra`) or sparql_store (the `[sparql_store]` endpoint).
    #[arg(long)]
    pub executor: Option<kgbox_query::Executor>,
    /// ONNX engine for the neural executor: tract or ort.
    #[arg(long)]
    pub engine: Option<kgbox_neural::EngineKind>,
    /// auto, cpu or cuda (ort only).
    #[arg(long)]
    pub device: Option<kgbox_neural::Device>,
    /// SEPPR subgraph size per neural projection.
    #[arg(long)]
    pub seppr_k: Option<usize>,
}

impl ExecArgs {
    /// The configuration with these overrides applied.
    pub fn apply(&self, cfg: &kgbox::config::ExecutorConfig) -> kgbox::config::ExecutorConfig {
        let mut c = cfg.clone();
        if let Some(e) = self.executor {
            c.mode = e;
        }
        if let Some(e) = self.engine {
            c.engine = e;
        }
        if let Some(d) = self.device {
            c.device = d;
        }
        if let Some(k) = self.seppr_k {
            c.seppr_k = k;
        }
        c
    }
}

/// The bundle's neural model when `cfg.mode` needs one (or `always`).
pub fn load_model(
    bundle: &LoadedBundle,
    cfg: &kgbox::config::ExecutorConfig,
    always: bool,
) -> Result<Option<kgbox_neural::UltraModel>> {
    let neural = matches!(
        cfg.mode,
        kgbox_query::Executor::Neural | kgbox_query::Executor::Hybrid
    );
    if !neural && !always {
        return Ok(None);
    }
    let model = kgbox::service::executors::load_model(bundle, cfg).map_err(|e| {
        anyhow::anyhow!(
            "cannot load the bundle's neural query model (engine {}): {e}",
            cfg.engine
        )
    })?;
    if model.is_none() {
        let who = if always {
            "this command".to_string()
        } else {
            format!("the {} executor", cfg.mode)
        };
        anyhow::bail!(
            "{who} needs a bundle with a neural query model (build it with `kgbox-pack build --ultra ...`)"
        );
    }
    Ok(model)
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
