//! The device's front ends, together: HTTP and (when `mqtt.enabled`) MQTT
//! over one [`Deployer`], from ready to stopped as systemd expects.
//! `kgbox serve` loads the bundle and calls [`run`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::deploy::Deployer;
use crate::http::{self, AppState};
use crate::metrics::Metrics;

/// Serves on `listener` until a signal (SIGINT, SIGTERM) or until MQTT
/// fails, then stops both front ends. `started` is when the process
/// started (for `kgbox_startup_seconds`).
pub async fn run(
    listener: tokio::net::TcpListener,
    deployer: Arc<Deployer>,
    cfg: Arc<Config>,
    admin_token: Option<String>,
    auth: http::auth::Auth,
    beside: std::collections::BTreeMap<String, Arc<Deployer>>,
    started: Instant,
) -> std::io::Result<()> {
    let addr = listener.local_addr()?;
    let mqtt_stats = Arc::new(crate::mqtt::MqttStats::default());
    let beside_list: Vec<(String, Arc<Deployer>)> =
        beside.iter().map(|(n, d)| (n.clone(), d.clone())).collect();
    let bundles = crate::bundles::Bundles::new(deployer.clone(), beside);
    let state = Arc::new(AppState {
        deployer: deployer.clone(),
        bundles,
        // The MQTT front end's counters (zero when it is off).
        metrics: Metrics::new().with_source(mqtt_stats.clone()),
        ready: AtomicBool::new(false),
        started,
        startup_seconds: started.elapsed().as_secs_f64(),
        query: cfg.query.clone(),
        request_timeout: Duration::from_millis(cfg.http.request_timeout_ms),
        config: cfg.clone(),
        admin_token,
        auth,
    });
    let app = http::router(state.clone(), &cfg.http);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mqtt = if cfg.mqtt.enabled {
        let ctx = crate::mqtt::MqttContext {
            cfg: cfg.clone(),
            router: app.clone(),
            deployer,
            beside: beside_list,
            stats: mqtt_stats,
        };
        Some(tokio::spawn(crate::mqtt::run(ctx, stop_rx.clone())))
    } else {
        None
    };
    // HTTPS when configured: the certificate is read now (a bad one stops
    // the start) and again on each SIGHUP.
    let tls = match &cfg.http.tls {
        Some(tls) => {
            let config = http::tls::server_config(tls).map_err(std::io::Error::other)?;
            let current = Arc::new(arc_swap::ArcSwap::new(config));
            http::tls::reload_on_sighup(tls.clone(), current.clone());
            Some(current)
        }
        None => {
            http::tls::ignore_sighup();
            None
        }
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    state.ready.store(true, Ordering::Release);
    tracing::info!(%addr, startup_ms = state.startup_seconds * 1e3, "listening on {scheme}://{addr}");
    crate::systemd::ready(&format!("serving on {scheme}://{addr}"));
    if let Some(every) = crate::systemd::watchdog_interval() {
        tokio::spawn(crate::systemd::watchdog(every));
    }
    let mut http_stop = stop_rx.clone();
    let shutdown = async move {
        tokio::select! {
            _ = http::shutdown_signal() => {},
            _ = http_stop.wait_for(|s| *s) => {},
        }
        crate::systemd::stopping();
    };
    // Whichever ends first (a signal, or MQTT failing), stop the other.
    let result = match tls {
        Some(current) => {
            let listener = http::tls::TlsListener::new(listener, current)?;
            http::serve(listener, app, shutdown).await
        }
        None => http::serve(listener, app, shutdown).await,
    };
    let _ = stop_tx.send(true);
    if let Some(m) = mqtt {
        match m.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!(error = %e, "MQTT front end stopped"),
            Err(e) => tracing::error!(error = %e, "MQTT front end panicked"),
        }
    }
    result
}
