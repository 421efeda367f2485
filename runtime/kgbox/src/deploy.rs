//! Live deployment: install a bundle while serving, check its health, hot
//! swap it in, mark it good, or roll back. Also the start-up decision of
//! which bundle to serve (RAUC-style mark-good and automatic rollback).
//!
//! ```text
//! install (inactive slot, health = pending, made active) ─► trial ─► load ─► probes
//!        ├─ pass ─► swap (arc-swap) ─► settle ─► good
//!        └─ fail ─► bad, previous slot active again, the old bundle keeps serving
//! start: active good ─► serve · pending ─► check as above · trial (died before
//!        mark-good) ─► bad, roll back · bad ─► nothing to serve (demo or error)
//! ```
//!
//! [`Deployer::deploy_file`] (`PUT /v1/bundles`, an MQTT push) runs it:
//! [`install::install`], then `Served::load` and [`run_probes`] on the new
//! active slot, the `ArcSwap` store, the settle period and mark-good; or
//! `Store::fail_active`. [`startup`] makes the same decisions at start.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use kgbox_query::probe::{run_probe, ProbeOutcome};

use crate::config::Config;
use crate::error::Error;
use crate::install::{self, InstallOptions};
use crate::loaded::{LoadedBundle, Source};
use crate::served::Served;
use crate::service::executors::Overrides;
use crate::store::{Health, Slot, SlotRecord, Store};

/// The messages: what a deployment reports (`PUT /v1/bundles`) and what
/// the device serves (`GET /v1/status`, the MQTT status).
pub use kgbox_protocol::{
    BundleRef, DeployOutcome, DeployReport, DeployTimings, DeviceStatus, Stage,
};

#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    /// Verification or installation failed; nothing changed.
    #[error(transparent)]
    Install(#[from] Error),
    #[error("another deployment is running")]
    Busy,
}

/// The served bundle behind an `ArcSwap`, and the one way to change it.
pub struct Deployer {
    cfg: Arc<Config>,
    served: ArcSwap<Served>,
    started: Instant,
    /// One deployment at a time in this process (installs also take
    /// `install.lock` against other processes).
    deploying: Mutex<()>,
    info: Mutex<Info>,
    changed: tokio::sync::watch::Sender<u64>,
}

struct Info {
    health: Health,
    last_deploy: Option<DeployReport>,
    /// The slots' records as last read (at start, after each deployment
    /// and rollback), for readers that must not open the state database.
    installed: Vec<SlotRecord>,
}

/// The records of the filled slots.
fn slots_of(store: &Store) -> Vec<SlotRecord> {
    store
        .state()
        .map(|s| s.a.into_iter().chain(s.b).collect())
        .unwrap_or_default()
}

/// [`slots_of`] the state database in `data_dir`, when there is one.
fn read_installed(data_dir: &Path) -> Vec<SlotRecord> {
    match Store::open(data_dir, false) {
        Ok(Some(store)) => slots_of(&store),
        _ => Vec::new(),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn bundle_ref(b: &LoadedBundle) -> BundleRef {
    BundleRef {
        name: b.manifest().name.clone(),
        version: b.manifest().version.to_string(),
    }
}

/// Runs the bundle's probe queries with the configured executor (the
/// symbolic one in place of `sparql_store`: the check is of the bundle, and
/// a store that is down must not roll it back).
pub fn run_probes(served: &Served, cfg: &Config) -> Result<Vec<ProbeOutcome>, String> {
    let kg = served.bundle.kg().map_err(|e| e.to_string())?;
    let executors = &served.executors;
    let executor = match executors.config.mode {
        kgbox_query::Executor::SparqlStore => kgbox_query::Executor::Symbolic,
        mode => mode,
    };
    let overrides = Overrides {
        executor: Some(executor),
        deadline: Some(Instant::now() + Duration::from_millis(cfg.health.probe_timeout_ms)),
        ..Overrides::default()
    };
    let run = executors
        .options(&cfg.query, &overrides)
        .map_err(|e| e.to_string())?;
    let projector = executors.projector(&kg, executor, run.seppr);
    let projector = projector.as_ref().map(|p| p as &dyn kgbox_query::Projector);
    let limits = cfg.query.parse_limits();
    Ok(served
        .bundle
        .manifest()
        .probes
        .iter()
        .map(|p| run_probe(&kg, p, &limits, &run.exec, projector))
        .collect())
}

/// Loads a bundle and runs its health check: `Err(reason)` when it fails.
fn check(
    bundle: LoadedBundle,
    cfg: &Config,
) -> (Result<Served, String>, Vec<ProbeOutcome>, f64, f64) {
    let t = Instant::now();
    let served = match Served::load(bundle, cfg) {
        Ok(s) => s,
        Err(e) => return (Err(e), Vec::new(), ms(t.elapsed()), 0.0),
    };
    let load_ms = ms(t.elapsed());
    let t = Instant::now();
    let probes = match run_probes(&served, cfg) {
        Ok(p) => p,
        Err(e) => return (Err(e), Vec::new(), load_ms, ms(t.elapsed())),
    };
    let probe_ms = ms(t.elapsed());
    let failed: Vec<String> = probes
        .iter()
        .filter(|p| !p.passed)
        .map(ProbeOutcome::describe)
        .collect();
    if failed.is_empty() {
        (Ok(served), probes, load_ms, probe_ms)
    } else {
        let reason = format!(
            "{} of {} probe queries failed: {}",
            failed.len(),
            probes.len(),
            failed.join("; ")
        );
        (Err(reason), probes, load_ms, probe_ms)
    }
}

fn open_store(cfg: &Config) -> Result<Store, Error> {
    Store::open(&cfg.data_dir, false)?.ok_or_else(|| Error::NothingInstalled(cfg.data_dir.clone()))
}

fn open_active(store: &Store, rec: &SlotRecord) -> Result<LoadedBundle, Error> {
    LoadedBundle::open_image(&store.image_path(rec), rec.slot)
}

/// Chooses and loads the bundle to serve at start, finishing or undoing
/// what an earlier run left (see the module docs). `Ok(None)`: nothing
/// installed can be served.
pub fn startup(cfg: &Config) -> Result<Option<(Served, Health)>, Error> {
    let Some(store) = Store::open(&cfg.data_dir, false)? else {
        return Ok(None);
    };
    // At most: the active slot, then the one rolled back to.
    for _ in 0..3 {
        let state = store.state()?;
        let Some(rec) = state.active_record().cloned() else {
            return Ok(None);
        };
        let what = format!("{} {} (slot {})", rec.name, rec.version, rec.slot);
        match rec.health {
            Health::Bad => {
                tracing::error!(bundle = %what, error = %rec.error, "the active bundle failed its health check and there is nothing to roll back to");
                return Ok(None);
            }
            Health::Trial => {
                let reason = "the runtime stopped before the bundle was marked good";
                tracing::error!(bundle = %what, "{reason}: rolling back");
                roll_back(&store, reason)?;
                continue;
            }
            Health::Good => match open_active(&store, &rec)
                .map_err(|e| e.to_string())
                .and_then(|b| Served::load(b, cfg))
            {
                Ok(s) => return Ok(Some((s, Health::Good))),
                Err(e) => {
                    let reason = format!("the active bundle cannot be loaded: {e}");
                    tracing::error!(bundle = %what, "{reason}: rolling back");
                    roll_back(&store, &reason)?;
                    continue;
                }
            },
            Health::Pending => {
                store.set_health(rec.slot, Health::Trial, "")?;
                let result = open_active(&store, &rec).map_err(|e| e.to_string());
                let (served, probes, _, _) = match result {
                    Ok(b) => check(b, cfg),
                    Err(e) => (Err(e), Vec::new(), 0.0, 0.0),
                };
                match served {
                    Ok(s) => {
                        if cfg.health.settle_ms > 0 {
                            // Settling happens while serving; see `serve`.
                            return Ok(Some((s, Health::Trial)));
                        }
                        store.set_health(rec.slot, Health::Good, "")?;
                        tracing::info!(bundle = %what, probes = probes.len(), "health check passed: marked good");
                        return Ok(Some((s, Health::Good)));
                    }
                    Err(reason) => {
                        tracing::error!(bundle = %what, %reason, "health check failed: rolling back");
                        roll_back(&store, &reason)?;
                        continue;
                    }
                }
            }
        }
    }
    Err(Error::Rollback(
        "no installed bundle passes its health check".into(),
    ))
}

fn roll_back(store: &Store, reason: &str) -> Result<Option<Slot>, Error> {
    let back = store.fail_active(reason)?;
    match back {
        Some(s) => tracing::warn!(slot = %s, "rolled back to slot {s}"),
        None => tracing::error!("no previous bundle to roll back to"),
    }
    Ok(back)
}

impl Deployer {
    pub fn new(cfg: Arc<Config>, served: Served, health: Health) -> Deployer {
        let (changed, _) = tokio::sync::watch::channel(0);
        let installed = read_installed(&cfg.data_dir);
        Deployer {
            cfg,
            served: ArcSwap::from_pointee(served),
            started: Instant::now(),
            deploying: Mutex::new(()),
            info: Mutex::new(Info {
                health,
                last_deploy: None,
                installed,
            }),
            changed,
        }
    }

    pub fn config(&self) -> &Arc<Config> {
        &self.cfg
    }

    /// The bundle to answer a request with. Hold the `Arc` for the whole
    /// request: a swap meanwhile does not affect it.
    pub fn served(&self) -> Arc<Served> {
        self.served.load_full()
    }

    /// A counter bumped whenever the status changes.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Records golden results for the bundle served now, if it is still
    /// the bundle of `digest`, and republishes the status.
    pub fn set_golden(&self, results: kgbox_protocol::GoldenResults) -> bool {
        let served = self.served();
        let digest = hex::encode(served.bundle.view().prefix.digest());
        if results.digest.as_deref() != Some(digest.as_str()) {
            return false;
        }
        *served.golden.lock().unwrap_or_else(|p| p.into_inner()) = Some(results);
        self.notify();
        true
    }

    fn notify(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    pub fn status(&self) -> DeviceStatus {
        let served = self.served();
        let golden = served
            .golden
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let info = lock(&self.info);
        let slot = match &served.bundle.source {
            Source::Slot { slot, .. } => Some(*slot),
            _ => None,
        };
        DeviceStatus {
            bundle: bundle_ref(&served.bundle),
            // The demo bundle is no base a delta could be applied to
            // (nothing is installed): no digest, so no pusher offers one.
            digest: (served.bundle.source != Source::Demo)
                .then(|| hex::encode(served.bundle.view().prefix.digest())),
            source: served.bundle.source.label(),
            slot,
            health: info.health,
            uptime_s: self.started.elapsed().as_secs(),
            kgbox_version: install::RUNTIME_VERSION.to_string(),
            last_deploy: info.last_deploy.clone(),
            since_deploy: Some(served.stats.snapshot()),
            golden,
        }
    }

    /// The bundles installed in the slots, as last read (at start, after
    /// each deployment and rollback): the state database is not opened
    /// here, so this never competes with a deployment.
    pub fn installed(&self) -> Vec<SlotRecord> {
        lock(&self.info).installed.clone()
    }

    /// After a start that checked a pending bundle: serve it through the
    /// settle period, then mark it good (blocking; run on a thread).
    pub fn finish_settling(&self) -> Result<(), Error> {
        if lock(&self.info).health != Health::Trial {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(self.cfg.health.settle_ms));
        let _guard = lock(&self.deploying);
        let store = open_store(&self.cfg)?;
        if let Some(slot) = self.status().slot {
            store.set_health(slot, Health::Good, "")?;
            tracing::info!(%slot, "settled: marked good");
        }
        lock(&self.info).health = Health::Good;
        self.notify();
        Ok(())
    }

    /// Installs `path`, checks it and swaps it in, or rolls back (blocking).
    /// `stage` hears of each stage as it begins.
    pub fn deploy_file(
        &self,
        path: &Path,
        allow_downgrade: bool,
        stage: &(dyn Fn(Stage) + Sync),
    ) -> Result<DeployReport, DeployError> {
        let _guard = self.deploying.try_lock().map_err(|_| DeployError::Busy)?;
        let t0 = Instant::now();
        let mut timings = DeployTimings::default();
        stage(Stage::Installing);
        let report = install::install(path, &self.cfg, &InstallOptions { allow_downgrade })?;
        timings.install = ms(t0.elapsed());
        let rec = report.record;
        let offered = BundleRef {
            name: rec.name.clone(),
            version: rec.version.clone(),
        };
        let store = open_store(&self.cfg)?;
        store.set_health(rec.slot, Health::Trial, "")?;
        lock(&self.info).health = Health::Trial;
        self.notify();
        stage(Stage::HealthCheck);
        let (served, probes, load_ms, probe_ms) = match open_active(&store, &rec) {
            Ok(b) => check(b, &self.cfg),
            Err(e) => (Err(e.to_string()), Vec::new(), 0.0, 0.0),
        };
        timings.load = load_ms;
        timings.probes = probe_ms;
        let outcome = match served {
            Err(reason) => {
                tracing::error!(bundle = %offered.name, version = %offered.version, %reason, "health check failed: rolling back");
                store.fail_active(&reason)?;
                DeployReport {
                    outcome: DeployOutcome::RolledBack,
                    bundle: offered,
                    slot: rec.slot,
                    reason: Some(reason),
                    probes,
                    serving: bundle_ref(&self.served().bundle),
                    timings_ms: timings,
                }
            }
            Ok(new) => {
                let t = Instant::now();
                let serving = bundle_ref(&new.bundle);
                self.served.store(Arc::new(new));
                timings.swap = ms(t.elapsed());
                if self.cfg.health.settle_ms > 0 {
                    stage(Stage::Settling);
                    let t = Instant::now();
                    std::thread::sleep(Duration::from_millis(self.cfg.health.settle_ms));
                    timings.settle = ms(t.elapsed());
                }
                store.set_health(rec.slot, Health::Good, "")?;
                tracing::info!(bundle = %offered.name, version = %offered.version, slot = %rec.slot, "deployed and marked good");
                DeployReport {
                    outcome: DeployOutcome::Installed,
                    bundle: offered,
                    slot: rec.slot,
                    reason: None,
                    probes,
                    serving,
                    timings_ms: timings,
                }
            }
        };
        let installed = slots_of(&store);
        drop(store);
        lock(&self.info).installed = installed;
        let mut report = outcome;
        report.timings_ms.total = ms(t0.elapsed());
        {
            let mut info = lock(&self.info);
            // After a rollback the old bundle serves on: it was good.
            info.health = Health::Good;
            info.last_deploy = Some(report.clone());
        }
        self.notify();
        Ok(report)
    }

    /// Makes the previous slot active and serves it (blocking).
    pub fn rollback(&self) -> Result<DeviceStatus, DeployError> {
        let _guard = self.deploying.try_lock().map_err(|_| DeployError::Busy)?;
        self.rollback_locked()
    }

    /// [`Deployer::rollback`], only while the bundle of `digest` (hex) is
    /// served: checked under the deployment lock, so that a request
    /// repeated meanwhile undoes nothing else. `Ok(None)`: another bundle
    /// is served.
    pub fn rollback_if_serving(&self, digest: &str) -> Result<Option<DeviceStatus>, DeployError> {
        let _guard = self.deploying.try_lock().map_err(|_| DeployError::Busy)?;
        let served = self.served();
        let serving = hex::encode(served.bundle.view().prefix.digest());
        if served.bundle.source == Source::Demo || !serving.eq_ignore_ascii_case(digest) {
            return Ok(None);
        }
        self.rollback_locked().map(Some)
    }

    /// Republishes the status (what subscribers hear of a change).
    pub fn republish(&self) {
        self.notify();
    }

    fn rollback_locked(&self) -> Result<DeviceStatus, DeployError> {
        install::rollback(&self.cfg.data_dir)?;
        let bundle = install::load_active(&self.cfg.data_dir)?
            .ok_or_else(|| Error::NothingInstalled(self.cfg.data_dir.clone()))?;
        let served = Served::load(bundle, &self.cfg).map_err(Error::Rollback)?;
        self.served.store(Arc::new(served));
        {
            let mut info = lock(&self.info);
            info.health = Health::Good;
            info.installed = read_installed(&self.cfg.data_dir);
        }
        self.notify();
        Ok(self.status())
    }
}
