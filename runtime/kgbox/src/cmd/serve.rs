//! `kgbox serve`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use kgbox::deploy::{self, Deployer};
use kgbox::http::{self, AppState};
use kgbox::metrics::Metrics;
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
    let (served, health) = initial(&cfg)?;
    let admin_token = cfg.admin.token()?;
    let cfg = Arc::new(cfg);
    let deployer = Arc::new(Deployer::new(cfg.clone(), served, health));
    if health == Health::Trial {
        let d = deployer.clone();
        std::thread::spawn(move || {
            if let Err(e) = d.finish_settling() {
                tracing::error!(error = %e, "cannot mark the bundle good");
            }
        });
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&cfg.http.listen)
            .await
            .with_context(|| format!("cannot listen on {}", cfg.http.listen))?;
        let addr = listener.local_addr()?;
        let mqtt_stats = Arc::new(kgbox::mqtt::MqttStats::default());
        let state = Arc::new(AppState {
            deployer: deployer.clone(),
            metrics: Metrics::new(),
            ready: AtomicBool::new(false),
            started,
            startup_seconds: started.elapsed().as_secs_f64(),
            query: cfg.query.clone(),
            request_timeout: std::time::Duration::from_millis(cfg.http.request_timeout_ms),
            config: cfg.clone(),
            admin_token,
            mqtt_stats: mqtt_stats.clone(),
        });
        let app = http::router(state.clone(), &cfg.http);
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mqtt = if cfg.mqtt.enabled {
            let ctx = kgbox::mqtt::MqttContext {
                cfg: cfg.clone(),
                router: app.clone(),
                deployer: deployer.clone(),
                stats: mqtt_stats,
            };
            Some(tokio::spawn(kgbox::mqtt::run(ctx, stop_rx.clone())))
        } else {
            None
        };
        state.ready.store(true, Ordering::Release);
        tracing::info!(%addr, startup_ms = state.startup_seconds * 1e3, "listening on http://{addr}");
        kgbox::systemd::ready(&format!("serving on http://{addr}"));
        if let Some(every) = kgbox::systemd::watchdog_interval() {
            tokio::spawn(kgbox::systemd::watchdog(every));
        }
        let mut http_stop = stop_rx.clone();
        let shutdown = async move {
            tokio::select! {
                _ = http::shutdown_signal() => {},
                _ = http_stop.wait_for(|s| *s) => {},
            }
            kgbox::systemd::stopping();
        };
        let served = http::serve(listener, app, shutdown);
        // Whichever ends first (a signal, or MQTT failing), stop the other.
        let result = served.await;
        let _ = stop_tx.send(true);
        if let Some(m) = mqtt {
            match m.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::error!(error = %e, "MQTT front end stopped"),
                Err(e) => tracing::error!(error = %e, "MQTT front end panicked"),
            }
        }
        result?;
        Ok(())
    })
}
