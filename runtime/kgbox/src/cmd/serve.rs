//! `kgbox serve`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use kgbox::http::{self, AppState};
use kgbox::metrics::Metrics;
use kgbox::{install, Config};

fn init_logging(level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(level))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

pub fn run(cfg: Config, started: Instant) -> Result<()> {
    init_logging(&cfg.log.level);
    let bundle = match install::load_active(&cfg.data_dir)? {
        Some(b) => {
            let m = b.manifest();
            tracing::info!(bundle = %m.name, version = %m.version, source = %b.source.label(), "loaded the active bundle");
            b
        }
        None if cfg.demo => {
            let b = kgbox::demo::load_demo().context("loading the built-in demo bundle")?;
            tracing::warn!(
                data_dir = %cfg.data_dir.display(),
                "no bundle installed: serving the built-in DEMO bundle `{}` {} (signed with a demo-only key; install your own with `kgbox install`)",
                b.manifest().name,
                b.manifest().version
            );
            b
        }
        None => anyhow::bail!(
            "no bundle is installed in {} and the demo is disabled (demo = false)",
            cfg.data_dir.display()
        ),
    };
    let encoder = if kgbox::dense::has_encoder(&bundle) {
        let t = Instant::now();
        match kgbox::dense::load_encoder(&bundle) {
            Ok(Some(e)) => {
                tracing::info!(
                    load_ms = t.elapsed().as_secs_f64() * 1e3,
                    "loaded the bundle's entity encoder (dense linking on)"
                );
                Some(Arc::new(e))
            }
            Ok(None) => {
                tracing::warn!("the bundle carries an entity encoder but this build has no `dense` feature: linking stays lexical");
                None
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot load the bundle's entity encoder: linking stays lexical");
                None
            }
        }
    } else {
        None
    };
    let model = if kgbox::neural::has_model(&bundle) {
        let t = Instant::now();
        match kgbox::neural::load_model(&bundle, &cfg.executor) {
            Ok(Some(m)) => {
                tracing::info!(
                    load_ms = t.elapsed().as_secs_f64() * 1e3,
                    checkpoint = %m.meta().checkpoint,
                    engine = m.engine().name(),
                    device = m.engine().device(),
                    "loaded the bundle's neural query model (neural and hybrid executors on)"
                );
                Some(Arc::new(m))
            }
            Ok(None) => None,
            Err(e) => {
                // Keep answering from the graph: a device that stops serving
                // over a model it cannot run helps no one. Neural and hybrid
                // requests get `no_neural_model` until this is fixed.
                tracing::error!(
                    error = %e,
                    engine = %cfg.executor.engine,
                    device = ?cfg.executor.device,
                    "cannot load the bundle's neural query model: serving the symbolic executor only"
                );
                None
            }
        }
    } else {
        None
    };
    let mut executor = cfg.executor.clone();
    if model.is_none() && executor.mode != kgbox_query::Executor::Symbolic {
        tracing::warn!(
            configured = %executor.mode,
            "no neural query model: requests that name no executor run symbolic"
        );
        executor.mode = kgbox_query::Executor::Symbolic;
    }
    let qa = kgbox::qa::Qa::load(&bundle, encoder.clone(), &cfg)
        .map_err(|e| anyhow::anyhow!("cannot set up question answering: {e}"))?;
    tracing::info!(planner = %cfg.planner.kind, "question answering: {}", qa.describe());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&cfg.http.listen)
            .await
            .with_context(|| format!("cannot listen on {}", cfg.http.listen))?;
        let addr = listener.local_addr()?;
        let state = Arc::new(AppState {
            bundle: Arc::new(bundle),
            metrics: Metrics::default(),
            ready: AtomicBool::new(false),
            started,
            startup_seconds: started.elapsed().as_secs_f64(),
            query: cfg.query.clone(),
            request_timeout: std::time::Duration::from_millis(cfg.http.request_timeout_ms),
            encoder,
            executor,
            model,
            qa: Arc::new(qa),
            config: Arc::new(cfg.clone()),
        });
        state.ready.store(true, Ordering::Release);
        tracing::info!(%addr, startup_ms = state.startup_seconds * 1e3, "listening on http://{addr}");
        http::serve(listener, state, &cfg.http).await?;
        Ok(())
    })
}
