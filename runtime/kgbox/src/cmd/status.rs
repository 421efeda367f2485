//! `kgbox status`.

use anyhow::{Context, Result};
use kgbox::store::{Slot, SlotStatus, Store};
use kgbox::Config;

/// `kgbox status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    #[arg(long)]
    pub json: bool,
    /// Also load the active image and re-hash every section.
    #[arg(long)]
    pub verify: bool,
    /// The slots of the bundle installed beside the default one
    /// (`install --beside`), by name; default: the default bundle's.
    #[arg(long, value_name = "NAME")]
    pub beside: Option<String>,
}

/// The configuration of the bundle `name` beside the default, or an error
/// when none is installed by that name.
pub fn beside_config(cfg: &Config, name: &str) -> Result<Config> {
    let installed = kgbox::bundles::installed_beside(&cfg.data_dir);
    if !installed.iter().any(|n| n == name) {
        anyhow::bail!(
            "no bundle named {name:?} is installed beside the default (installed: {})",
            if installed.is_empty() {
                "none".to_string()
            } else {
                installed.join(", ")
            }
        );
    }
    Ok(kgbox::bundles::config_for(cfg, name))
}

pub fn run(cfg: &Config, args: &StatusArgs) -> Result<()> {
    if let Some(name) = &args.beside {
        let own = beside_config(cfg, name)?;
        let args = StatusArgs {
            beside: None,
            ..*args
        };
        return run(&own, &args);
    }
    let (json, verify) = (args.json, args.verify);
    let beside = kgbox::bundles::installed_beside(&cfg.data_dir);
    let Some(store) = Store::open(&cfg.data_dir, false)? else {
        if json {
            println!(
                "{}",
                serde_json::json!({"data_dir": cfg.data_dir, "active": null})
            );
        } else {
            println!("data dir {}: no bundle installed", cfg.data_dir.display());
        }
        return Ok(());
    };
    let state = store.state()?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({"data_dir": cfg.data_dir, "state": state, "beside": beside})
            )?
        );
    } else {
        println!("data dir {}", cfg.data_dir.display());
        for slot in [Slot::A, Slot::B] {
            let tag = if state.active == Some(slot) {
                " [active]"
            } else if state.previous == Some(slot) {
                " [previous]"
            } else {
                ""
            };
            match state.record(slot) {
                None => println!("slot {slot}: empty{tag}"),
                Some(r) => match r.status {
                    SlotStatus::Ready => {
                        println!(
                            "slot {slot}: {} {}  health {}  installed {}  key {}  image {} ({} bytes){tag}",
                            r.name, r.version, r.health, r.installed_at, r.key_id, r.image, r.image_bytes
                        );
                        if r.health == kgbox::store::Health::Bad && !r.error.is_empty() {
                            println!("  failed its health check: {}", r.error);
                        }
                    }
                    SlotStatus::Installing => {
                        println!("slot {slot}: incomplete (an install was interrupted){tag}")
                    }
                    SlotStatus::Failed => println!("slot {slot}: failed install: {}{tag}", r.error),
                },
            }
        }
        if state.active.is_none() {
            println!("no active bundle");
        }
        if !beside.is_empty() {
            println!(
                "beside the default: {} (kgbox status --beside NAME)",
                beside.join(", ")
            );
        }
    }
    if verify {
        if let Some(rec) = state.active_record() {
            let path = store.image_path(rec);
            let b = kgbox::LoadedBundle::open_image(&path, rec.slot)?;
            b.verify_hashes()
                .with_context(|| format!("active image {} is damaged", path.display()))?;
            println!("active image verified: every section matches its signed sha256");
        }
    }
    Ok(())
}
