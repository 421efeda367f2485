//! Bundle push over MQTT, the device's side (docs/mqtt.md, "Bundle push"):
//! assembles chunks in `DATA_DIR/incoming/`, resumably, then deploys.
//!
//! One transfer at a time. Inline (on the MQTT event loop) only small file
//! operations and one positioned write per chunk; syncing the record, the
//! sha256 check, the deployment and deleting files run on blocking threads.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use kgbox_protocol::topics::BundleTopic;
use kgbox_protocol::{to_wire, Progress, TransferState};
use sha2::{Digest, Sha256};

use super::transfer::{self, Manifest, Transfer, MAX_RANGES};
use crate::config::Config;
use crate::deploy::{Deployer, Stage};

/// The record of received chunks is written at most this often...
const PERSIST_EVERY: Duration = Duration::from_secs(1);
/// ...or after this share of the chunks (also the progress message step).
const STEP_PERCENT: u64 = 5;
/// A finished transfer's final state is reported again to a `begin` with
/// its id for this long (a pusher that missed it asks again).
const FINISHED_TTL: Duration = Duration::from_secs(120);

/// Receives pushed bundles. Progress messages (JSON bytes) for
/// `kgbox/{id}/bundle/progress` go to `progress`; the MQTT loop publishes them.
pub struct BundleReceiver {
    shared: Arc<Shared>,
}

struct Shared {
    cfg: Arc<Config>,
    device_id: String,
    deployer: Arc<Deployer>,
    progress: tokio::sync::mpsc::UnboundedSender<Vec<u8>>,
    dir: PathBuf,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    current: Option<Active>,
    finished: Option<Finished>,
    generation: u64,
    /// The transfer id last warned about (stray chunks).
    warned: String,
}

struct Active {
    transfer: Transfer,
    generation: u64,
    /// `receiving`, else the deployment's state (`verifying`, `installing`, ...).
    phase: TransferState,
    last_persist: Instant,
    persisted: u64,
    persisting: bool,
    reported: u64,
}

struct Finished {
    id: String,
    message: Progress,
    at: Instant,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `f` on a blocking thread of the current runtime, or a new thread.
fn run_blocking(f: impl FnOnce() + Send + 'static) {
    match tokio::runtime::Handle::try_current() {
        Ok(h) => drop(h.spawn_blocking(f)),
        Err(_) => {
            if let Err(e) = std::thread::Builder::new()
                .name("kgbox-bundle".into())
                .spawn(f)
            {
                tracing::error!(error = %e, "cannot start a thread for a bundle transfer");
            }
        }
    }
}

/// An error with its sources, `a: b: c`.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        s.push_str(": ");
        s.push_str(&x.to_string());
        src = x.source();
    }
    s
}

impl Shared {
    fn message(&self, transfer: &str, state: TransferState, received: u64, total: u64) -> Progress {
        Progress::new(&self.device_id, transfer, state, received, total)
    }

    fn active_message(&self, a: &Active) -> Progress {
        let b = &a.transfer.bitmap;
        let mut m = self.message(a.transfer.id(), a.phase, b.count(), b.len());
        if a.phase == TransferState::Receiving {
            m.missing = Some(b.missing_ranges(MAX_RANGES));
        }
        m
    }

    fn send(&self, m: &Progress) {
        // Fails only when the MQTT loop is gone: nothing to tell then.
        let _ = self.progress.send(to_wire(m).into_bytes());
    }

    fn fail(&self, transfer: &str, error: String) {
        tracing::warn!(transfer, %error, "bundle push failed");
        self.send(&Progress::failed(&self.device_id, transfer, 0, 0, error));
    }

    /// Deletes the files of every transfer but the current one: renamed
    /// under the lock (quick), deleted after (slow for a big file).
    fn cleanup(self: &Arc<Self>) {
        let me = self.clone();
        run_blocking(move || {
            let trash = {
                let st = lock(&me.state);
                let keep = st.current.as_ref().map(|a| a.transfer.id());
                transfer::trash_files(&me.dir, |id| Some(id) != keep)
            };
            let n = trash
                .iter()
                .filter(|p| std::fs::remove_file(p).is_ok())
                .count();
            if n > 0 {
                tracing::info!(files = n, "deleted abandoned bundle transfers");
            }
        });
    }

    fn begin(self: &Arc<Self>, payload: &[u8]) {
        let max_chunk = u64::try_from(self.cfg.mqtt.bundle_chunk_max_bytes).unwrap_or(u64::MAX);
        let m = match Manifest::parse(payload, self.cfg.admin.max_bundle_bytes, max_chunk) {
            Ok(m) => m,
            Err(bad) => return self.fail(&bad.transfer, bad.error),
        };
        let mut st = lock(&self.state);
        if let Some(f) = &st.finished {
            if f.id == m.transfer && f.at.elapsed() < FINISHED_TTL {
                return self.send(&f.message);
            }
        }
        if let Some(a) = &st.current {
            let same_id = a.transfer.id() == m.transfer;
            if a.phase != TransferState::Receiving {
                if same_id {
                    return self.send(&self.active_message(a));
                }
                let busy = format!("busy: transfer {} is being installed", a.transfer.id());
                return self.fail(&m.transfer, busy);
            }
            if same_id && a.transfer.manifest == m {
                return self.send(&self.active_message(a));
            }
            tracing::info!(old = a.transfer.id(), new = %m.transfer, "a new bundle push abandons the partial one");
            // Transfer::open starts the files afresh for the same id;
            // cleanup deletes another id's.
            st.current = None;
        }
        if let Err(e) = std::fs::create_dir_all(&self.dir) {
            return self.fail(
                &m.transfer,
                format!("cannot create {}: {e}", self.dir.display()),
            );
        }
        // Runs once the lock is free: with the new transfer current.
        self.cleanup();
        let (t, resumed) = match Transfer::open(&self.dir, m.clone()) {
            Ok(t) => t,
            Err(e) => return self.fail(&m.transfer, chain(&e)),
        };
        let need = (t.bitmap.len() - t.bitmap.count()).saturating_mul(m.chunk_bytes);
        if let Some(free) = transfer::free_bytes(&self.dir) {
            if free < need {
                drop(t);
                transfer::remove_files(&self.dir, |id| id == m.transfer);
                let e = format!(
                    "not enough space in {}: {need} bytes needed, {free} free",
                    self.dir.display()
                );
                return self.fail(&m.transfer, e);
            }
        }
        tracing::info!(transfer = %m.transfer, size = m.size, chunks = t.bitmap.len(), received = t.bitmap.count(), resumed, "bundle push");
        st.generation += 1;
        st.finished = None;
        let a = Active {
            reported: t.bitmap.count(),
            persisted: t.bitmap.count(),
            transfer: t,
            generation: st.generation,
            phase: TransferState::Receiving,
            last_persist: Instant::now(),
            persisting: false,
        };
        self.send(&self.active_message(&a));
        let complete = a.transfer.bitmap.is_complete();
        st.current = Some(a);
        if complete {
            self.finish(&mut st);
        }
    }

    fn chunk(self: &Arc<Self>, id: &str, index: &str, payload: &[u8]) {
        let mut st = lock(&self.state);
        let known = st.current.as_ref().is_some_and(|a| a.transfer.id() == id);
        if !known {
            // Once per transfer id: a group push sends chunks on to the
            // devices that still miss some after this one is done.
            let finished = st.finished.as_ref().is_some_and(|f| f.id == id);
            if !finished && st.warned != id {
                tracing::warn!(
                    transfer = id,
                    index,
                    "bundle chunks for no transfer in progress: ignored"
                );
                st.warned = id.to_string();
            }
            return;
        }
        let Some(a) = st.current.as_mut() else { return };
        if a.phase != TransferState::Receiving {
            return;
        }
        let m = &a.transfer.manifest;
        let problem = match index.parse::<u64>() {
            Err(_) => Some(format!("chunk index {index:?} is not a number")),
            Ok(i) => match m.chunk_len(i) {
                None => Some(format!(
                    "chunk {i} is out of range: the transfer has {} chunks",
                    m.chunks()
                )),
                Some(n) if n != payload.len() as u64 => Some(format!(
                    "chunk {i} is {} bytes, expected {n}",
                    payload.len()
                )),
                Some(_) if a.transfer.bitmap.get(i) => return,
                Some(_) => a.transfer.write_chunk(i, payload).err().map(|e| chain(&e)),
            },
        };
        if let Some(problem) = problem {
            st.current = None;
            self.cleanup();
            return self.fail(id, problem);
        }
        let b = &a.transfer.bitmap;
        let step = (b.len() * STEP_PERCENT / 100).max(1);
        let (count, complete) = (b.count(), b.is_complete());
        if count - a.reported >= step || complete {
            a.reported = count;
            self.send(&self.active_message(a));
        }
        if complete {
            return self.finish(&mut st);
        }
        if !a.persisting
            && (count - a.persisted >= step || a.last_persist.elapsed() >= PERSIST_EVERY)
        {
            a.persisting = true;
            a.persisted = count;
            a.last_persist = Instant::now();
            let mut snap = a.transfer.snapshot(a.generation);
            let (me, generation) = (self.clone(), a.generation);
            run_blocking(move || {
                let written = snap.write_tmp();
                let mut st = lock(&me.state);
                let current = st
                    .current
                    .as_mut()
                    .filter(|a| a.generation == generation && a.phase == TransferState::Receiving);
                match current {
                    Some(a) => {
                        a.persisting = false;
                        if let Err(e) = written.and_then(|()| snap.commit()) {
                            snap.discard();
                            tracing::warn!(error = %chain(&e), "cannot record the bundle transfer (it will not resume after a restart)");
                        }
                    }
                    None => snap.discard(),
                }
            });
        }
    }

    /// Every chunk is in: verify and deploy on a blocking thread.
    fn finish(self: &Arc<Self>, st: &mut State) {
        let Some(a) = st.current.as_mut() else { return };
        a.phase = TransferState::Verifying;
        self.send(&self.active_message(a));
        let (me, generation) = (self.clone(), a.generation);
        let (file, path, m) = (
            a.transfer.file(),
            a.transfer.part_path(),
            a.transfer.manifest.clone(),
        );
        run_blocking(move || {
            let message = me.verify_and_deploy(&file, &path, &m, generation);
            drop(file);
            let mut st = lock(&me.state);
            if st
                .current
                .as_ref()
                .is_some_and(|a| a.generation == generation)
            {
                st.current = None;
            }
            st.finished = Some(Finished {
                id: m.transfer.clone(),
                message: message.clone(),
                at: Instant::now(),
            });
            drop(st);
            // No longer current: no record is written after this.
            transfer::remove_files(&me.dir, |id| id == m.transfer);
            me.send(&message);
        });
    }

    /// The final progress message.
    fn verify_and_deploy(
        &self,
        file: &std::fs::File,
        path: &std::path::Path,
        m: &Manifest,
        generation: u64,
    ) -> Progress {
        let total = m.chunks();
        let failed =
            |error: String| Progress::failed(&self.device_id, &m.transfer, total, total, error);
        if let Err(e) = verify(file, m) {
            tracing::error!(transfer = %m.transfer, error = %e, "pushed bundle rejected");
            return failed(e);
        }
        let stage = |s: Stage| {
            let state = TransferState::from(s);
            let mut st = lock(&self.state);
            if let Some(a) = st.current.as_mut().filter(|a| a.generation == generation) {
                a.phase = state;
            }
            drop(st);
            self.send(&self.message(&m.transfer, state, total, total));
        };
        match self.deployer.deploy_file(path, m.allow_downgrade, &stage) {
            Ok(report) => Progress {
                reason: report.reason,
                bundle: Some(report.bundle),
                slot: Some(report.slot),
                serving: Some(report.serving),
                probes: Some(report.probes),
                ..self.message(&m.transfer, report.outcome.into(), total, total)
            },
            Err(e) => {
                tracing::error!(transfer = %m.transfer, error = %chain(&e), "pushed bundle not installed");
                failed(chain(&e))
            }
        }
    }
}

/// Syncs the assembled file and checks its size and sha256.
fn verify(file: &std::fs::File, m: &Manifest) -> Result<(), String> {
    use std::os::unix::fs::FileExt;
    file.sync_all()
        .map_err(|e| format!("cannot sync the received bundle: {e}"))?;
    let len = file
        .metadata()
        .map_err(|e| format!("cannot read the received bundle: {e}"))?
        .len();
    if len != m.size {
        return Err(format!(
            "the received bundle is {len} bytes, the manifest says {}",
            m.size
        ));
    }
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut off = 0u64;
    while off < len {
        let n = usize::try_from((len - off).min(buf.len() as u64)).unwrap_or(buf.len());
        file.read_exact_at(&mut buf[..n], off)
            .map_err(|e| format!("cannot read the received bundle: {e}"))?;
        hasher.update(&buf[..n]);
        off += n as u64;
    }
    let got = hex::encode(hasher.finalize());
    if got != m.sha256 {
        return Err(format!(
            "sha256 mismatch: received {got}, the manifest says {}",
            m.sha256
        ));
    }
    Ok(())
}

impl BundleReceiver {
    pub fn new(
        cfg: Arc<Config>,
        device_id: String,
        deployer: Arc<Deployer>,
        progress: tokio::sync::mpsc::UnboundedSender<Vec<u8>>,
    ) -> BundleReceiver {
        let dir = cfg.data_dir.join("incoming");
        BundleReceiver {
            shared: Arc::new(Shared {
                cfg,
                device_id,
                deployer,
                progress,
                dir,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// Handles a message whose topic ends in `bundle/{rest}`: `rest` is
    /// `begin` or `chunk/{transfer}/{index}`. Never panics on bad input; a
    /// bad message is answered with a progress message in state `failed`
    /// (or ignored, when it names no transfer). Cheap: chunk writes are one
    /// positioned write; the deployment runs on a blocking thread.
    pub fn on_message(&self, rest: &str, payload: &[u8]) {
        if !self.shared.cfg.mqtt.bundle_push {
            tracing::warn!(
                topic = rest,
                "bundle push is off (mqtt.bundle_push = false): ignored"
            );
            return;
        }
        match BundleTopic::parse(rest) {
            BundleTopic::Begin => self.shared.begin(payload),
            BundleTopic::Chunk { transfer, index } => self.shared.chunk(transfer, index, payload),
            BundleTopic::Check | BundleTopic::Rollback | BundleTopic::Unknown => {
                tracing::warn!(topic = rest, "unknown bundle topic: ignored")
            }
        }
    }
}

#[cfg(test)]
#[path = "bundle_tests.rs"]
mod tests;
