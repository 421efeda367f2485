//! `kgbox serve`: `initial` picks the bundle (`deploy::startup`: the
//! active slot after the start-up health decisions; else the built-in demo,
//! `demo::load_demo`), `Deployer::new` holds it (a pending bundle that
//! passed its check at start is marked good by `Deployer::finish_settling`
//! on its own thread after the settle period), and `server::run` serves it
//! over HTTP (and MQTT) on a tokio runtime.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use kgbox::deploy::{self, Deployer};
use kgbox::http::auth;
use kgbox::served::Served;
use kgbox::store::Health;
use kgbox::Config;

/// The bundle to serve: the active slot's (after the start-up health
/// decisions of [`deploy::startup`]) or the built-in demo.
fn initial(cfg: &Config) -> Result<(Served, Health)> {
    if let Some((served, health)) = deploy::startup(cfg)? {
        let m = served.bundle.manifest();
        tracing::info!(bundle = %m.name, version = %m.version, source = %served.bundle.source.label(), %health, "loaded the active bundle");
        return Ok((served, health));
    }
    if !cfg.demo {
        anyhow::bail!(
            "no bundle is installed in {} (or none passes its health check) and the demo is disabled (demo = false)",
            cfg.data_dir.display()
        );
    }
    let b = kgbox::demo::load_demo().context("loading the built-in demo bundle")?;
    tracing::warn!(
        data_dir = %cfg.data_dir.display(),
        "no bundle installed: serving the built-in DEMO bundle `{}` {} (signed with a demo-only key; install your own with `kgbox install`)",
        b.manifest().name,
        b.manifest().version
    );
    let served = Served::load(b, cfg).map_err(anyhow::Error::msg)?;
    Ok((served, Health::Good))
}

/// `kgbox serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on; overrides http.listen.
    #[arg(long)]
    pub listen: Option<String>,
}

pub fn run(mut cfg: Config, args: ServeArgs, started: Instant) -> Result<()> {
    if let Some(l) = args.listen {
        cfg.http.listen = l;
    }
    kgbox::logging::init(&cfg.log);
    let keys = kgbox::keys::Keyring::open(&cfg.data_dir).context("cannot read the API keys")?;
    if let Some(why) = auth::exposure_error(&cfg.http, &keys) {
        anyhow::bail!("refusing to serve: {why}");
    }
    let auth = auth::Auth::new(keys, cfg.http.anonymous_reads(), cfg.http.key_rate_limit);
    let (served, health) = initial(&cfg)?;
    let admin_token = cfg.admin.token()?;
    let cfg = Arc::new(cfg);
    let deployer = Arc::new(Deployer::new(cfg.clone(), served, health));
    settle(&deployer, health);
    let beside = beside(&cfg)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&cfg.http.listen)
            .await
            .with_context(|| format!("cannot listen on {}", cfg.http.listen))?;
        kgbox::server::run(listener, deployer, cfg, admin_token, auth, beside, started).await?;
        Ok(())
    })
}

/// Marks a bundle in its trial good once it has settled, on its own thread.
fn settle(deployer: &Arc<Deployer>, health: Health) {
    if health == Health::Trial {
        let d = deployer.clone();
        std::thread::spawn(move || {
            if let Err(e) = d.finish_settling() {
                tracing::error!(error = %e, "cannot mark the bundle good");
            }
        });
    }
}

/// The bundles installed beside the default one (`kgbox install
/// --beside`), each loaded from its own slots as the default is; one that
/// has nothing to serve is logged and left out.
fn beside(cfg: &Arc<Config>) -> Result<BTreeMap<String, Arc<Deployer>>> {
    let mut out = BTreeMap::new();
    for name in kgbox::bundles::installed_beside(&cfg.data_dir) {
        let own = Arc::new(kgbox::bundles::config_for(cfg, &name));
        match deploy::startup(&own)
            .with_context(|| format!("the bundle {name} beside the default"))?
        {
            Some((served, health)) => {
                tracing::info!(bundle = %name, "serving beside the default at /b/{name}/");
                let d = Arc::new(Deployer::new(own, served, health));
                settle(&d, health);
                out.insert(name, d);
            }
            None => {
                tracing::warn!(bundle = %name, "installed beside the default, but nothing in its slots can be served")
            }
        }
    }
    Ok(out)
}
