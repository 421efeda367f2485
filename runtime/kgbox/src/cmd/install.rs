//! `kgbox install`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use kgbox::install::{install, InstallOptions};
use kgbox::Config;

/// `kgbox install BUNDLE` (a bundle, or a delta update made against the
/// active bundle by `kgbox-pack delta`).
#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    pub bundle: PathBuf,
    /// Accept a version lower than the active one.
    #[arg(long)]
    pub allow_downgrade: bool,
    /// Install it beside the default bundle, into slots of its own
    /// (DATA_DIR/bundles/NAME, NAME from its manifest), to be served at
    /// /b/NAME/ and as the OpenAI model NAME; a later install with --beside
    /// of the same name updates it.
    #[arg(long)]
    pub beside: bool,
}

pub fn run(cfg: &Config, args: &InstallArgs) -> Result<()> {
    let options = InstallOptions {
        allow_downgrade: args.allow_downgrade,
    };
    let beside;
    let (cfg, name) = if args.beside {
        let name = manifest_name(&args.bundle)?;
        kgbox::bundles::check_name(&name).map_err(anyhow::Error::msg)?;
        beside = kgbox::bundles::config_for(cfg, &name);
        (&beside, Some(name))
    } else {
        (cfg, None)
    };
    let report = install(&args.bundle, cfg, &options)?;
    let r = &report.record;
    if let Some(name) = &name {
        // The manifest read before is the one install verified: the same file.
        anyhow::ensure!(
            &r.name == name,
            "{} names itself {name:?} but installed as {:?}",
            args.bundle.display(),
            r.name
        );
        println!(
            "beside the default bundle, in {}: served at /b/{name}/",
            cfg.data_dir.display()
        );
    }
    println!(
        "installed {} {} into slot {} ({} bytes image) in {:.0} ms; it is now active",
        r.name,
        r.version,
        r.slot,
        r.image_bytes,
        report.elapsed.as_secs_f64() * 1e3
    );
    if let Some(n) = report.delta_bytes {
        println!("from a delta update of {n} bytes, applied to the active bundle");
    }
    if let Some(prev) = report.replaced {
        println!("previous: {prev} (kgbox rollback returns to it)");
    }
    Ok(())
}

/// The name in a bundle file's manifest (read, not yet verified: `install`
/// verifies the same file).
fn manifest_name(path: &std::path::Path) -> Result<String> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let reader =
        kgbox_bundle::BundleReader::open(std::io::BufReader::new(file)).with_context(|| {
            format!(
                "{} is not a bundle (--beside takes a full bundle, not a delta update)",
                path.display()
            )
        })?;
    Ok(reader.prefix().manifest.name.clone())
}
