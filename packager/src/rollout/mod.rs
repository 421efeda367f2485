//! `kgbox-pack rollout PLAN.toml` (docs/fleet.md): sends a bundle to a
//! fleet in waves, a canary first; after each wave reads every updated
//! device's criteria (its probes passed, its golden questions answered on
//! the device, its errors and p99 since the deploy), rolls back the devices
//! that fail them, and stops when the failures pass the plan's threshold
//! (rolling back, or leaving, the devices already updated; not touching
//! the rest). Deltas go to the devices that run their base, the bundle to
//! the others.
//!
//! Everything that happened is in the state file (`state.rs`), written
//! after every step: the same command resumes an interrupted rollout. The
//! end is a JSON report (`report.rs`) with each device's outcome, time,
//! bytes and reason. `watch.rs` keeps the fleet's statuses; `wave.rs` runs
//! a wave.

mod plan;
mod report;
mod state;
mod watch;
mod wave;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use kgbox_protocol::{BrokerUrl, StatusMessage};
use sha2::{Digest, Sha256};

pub use plan::{OnAbort, Plan};
use state::{DeviceRecord, Outcome, Running, State};
use watch::Watch;

#[derive(Debug, clap::Args)]
pub struct RolloutArgs {
    /// The rollout plan (TOML; see docs/fleet.md).
    pub plan: PathBuf,
    /// The state file, made at the start and updated at every step. Run the
    /// same command again to resume. [default: PLAN with .state.json]
    #[arg(long, value_name = "F")]
    pub state: Option<PathBuf>,
    /// Write the JSON report here. [default: PLAN with .report.json]
    #[arg(long, value_name = "F")]
    pub report: Option<PathBuf>,
    /// Print the JSON report on stdout (else a summary).
    #[arg(long)]
    pub json: bool,
    /// Check the plan, find the devices and print the waves; send nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Only the summary: no line per device.
    #[arg(long, short)]
    pub quiet: bool,
}

/// What a rollout sends: the bundle, and deltas by the digest of their base.
pub(crate) struct Payloads {
    pub bundle: PathBuf,
    pub bundle_sha256: String,
    /// (base digest, delta file, its sha256)
    pub deltas: Vec<(String, PathBuf, String)>,
}

/// The rollout's running context.
pub(crate) struct Ctx<'a> {
    pub plan: &'a Plan,
    pub golden: Vec<kgbox_protocol::GoldenQuestion>,
    pub watch: Watch,
    pub payloads: Payloads,
    pub state_path: PathBuf,
    pub quiet: bool,
}

impl Ctx<'_> {
    pub(crate) fn say(&self, line: String) {
        if !self.quiet {
            eprintln!("{line}");
        }
    }
}

fn with_suffix(plan: &Path, suffix: &str) -> PathBuf {
    let stem = plan.file_stem().map_or_else(
        || "rollout".to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    plan.with_file_name(format!("{stem}{suffix}"))
}

pub fn run(args: &RolloutArgs) -> Result<()> {
    let (plan, text) = Plan::read(&args.plan)?;
    let golden = plan.golden_checked()?;
    let target = crate::push::bundle_id(&plan.bundle)?;
    let bundle_sha256 = crate::push::file_sha256(&plan.bundle)?;
    let rollout = {
        let mut h = Sha256::new();
        h.update(text.as_bytes());
        h.update(bundle_sha256.as_bytes());
        hex::encode(h.finalize())[..12].to_string()
    };
    let state_path = args
        .state
        .clone()
        .unwrap_or_else(|| with_suffix(&args.plan, ".state.json"));
    let report_path = args
        .report
        .clone()
        .unwrap_or_else(|| with_suffix(&args.plan, ".report.json"));
    let bundle = Running {
        name: target.name.clone(),
        version: target.version.clone(),
        digest: Some(target.digest.clone()),
    };
    let existing = State::read(&state_path)?;
    if let Some(s) = &existing {
        if s.rollout != rollout {
            bail!(
                "the state file {} is of rollout {} ({}), not of this plan and bundle ({rollout}): \
                 finish that one, remove the file, or pass --state",
                state_path.display(),
                s.rollout,
                s.bundle
            );
        }
    }
    let addr = BrokerUrl::parse(&plan.broker.url)
        .map_err(|e| anyhow::anyhow!("[broker] url {}: {e}", plan.broker.url))?;
    if addr.tls && plan.broker.ca_file.is_none() {
        bail!("[broker] url {} uses TLS: give ca_file", plan.broker.url);
    }
    let opts = crate::push::broker_options(
        &addr,
        plan.broker.username.as_deref(),
        plan.broker.password_env.as_deref(),
        plan.broker.ca_file.as_deref(),
    )?;
    let watch = Watch::start(opts, &plan.broker.url)?;
    let mut state = match existing {
        Some(s) if s.finished => {
            eprintln!(
                "rollout {rollout} finished before ({}): its report again",
                state_path.display()
            );
            s
        }
        Some(s) => {
            eprintln!(
                "resuming rollout {rollout} ({} to {} devices) at wave {} of {}",
                s.bundle,
                s.devices.len(),
                (s.waves_done + 1).min(s.wave_sizes.len()),
                s.wave_sizes.len()
            );
            // Statuses are needed before anything is sent again.
            let ids: Vec<String> = s.devices.iter().map(|d| d.device_id.clone()).collect();
            watch.discover(
                plan.targets.discover_timeout,
                Duration::from_secs(2),
                |seen| ids.iter().all(|d| seen.contains_key(d)),
            );
            s
        }
        None => {
            let s = new_state(&plan, &watch, rollout.clone(), bundle)?;
            eprintln!(
                "rollout {rollout}: {} to {} devices in {} waves ({}); state in {}",
                s.bundle,
                s.devices.len(),
                s.wave_sizes.len(),
                s.wave_sizes
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                state_path.display()
            );
            s
        }
    };
    if args.dry_run {
        for d in &state.devices {
            println!(
                "wave {}: {} ({})",
                d.wave + 1,
                d.device_id,
                d.from
                    .as_ref()
                    .map_or("no status".into(), Running::to_string)
            );
        }
        return Ok(());
    }
    let pending = state.devices.iter().any(|d| d.rollback_pending.is_some());
    if state.finished && pending && !args.dry_run {
        // Rollbacks an earlier run could not see done: ask again.
        state.finished = false;
    }
    if !state.finished {
        state.save(&state_path)?;
        let payloads = payloads(&plan, &state_path, &bundle_sha256, &target)?;
        let ctx = Ctx {
            plan: &plan,
            golden,
            watch,
            payloads,
            state_path: state_path.clone(),
            quiet: args.quiet,
        };
        wave::run_waves(&ctx, &mut state)?;
        finish(&ctx, &mut state)?;
    }
    let r = report::build(&state, &args.plan);
    report::write(&r, &report_path)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print!("{}", report::summary(&state));
        println!("report: {}", report_path.display());
    }
    if let Some(why) = &state.aborted {
        bail!("the rollout stopped: {why}");
    }
    Ok(())
}

/// The targets, ordered and put in waves, with what each runs now.
fn new_state(plan: &Plan, watch: &Watch, rollout: String, bundle: Running) -> Result<State> {
    let t = &plan.targets;
    let wanted = |seen: &std::collections::HashMap<String, StatusMessage>| -> usize {
        if !t.devices.is_empty() {
            t.devices.iter().filter(|d| seen.contains_key(*d)).count()
        } else {
            seen.values().filter(|m| in_scope(plan, m)).count()
        }
    };
    let expect = t
        .expect
        .or((!t.devices.is_empty()).then_some(t.devices.len()));
    watch.discover(t.discover_timeout, Duration::from_secs(2), |seen| {
        expect.is_some_and(|n| wanted(seen) >= n)
    });
    let seen = watch.all();
    let ids: Vec<String> = if t.devices.is_empty() {
        seen.values()
            .filter(|m| in_scope(plan, m))
            .map(|m| m.device_id.clone())
            .collect()
    } else {
        t.devices.clone()
    };
    let ids = plan.order(ids)?;
    if let Some(n) = t.expect.filter(|n| wanted(&seen) < *n) {
        bail!(
            "only {} of the {n} expected devices reported a status within {}",
            wanted(&seen),
            humantime::format_duration(t.discover_timeout)
        );
    }
    if ids.is_empty() {
        bail!("no device to roll out to: none of the targets has a status on the broker");
    }
    let sizes = plan::wave_sizes(&plan.waves, ids.len());
    let mut state = State::new(rollout, bundle, sizes.clone());
    let mut at = 0;
    for (wave, n) in sizes.iter().enumerate() {
        for id in &ids[at..at + n] {
            let m = seen.get(id);
            state.devices.push(DeviceRecord {
                device_id: id.clone(),
                wave,
                from: m.and_then(running),
                outcome: Outcome::Pending,
                sent: None,
                bytes: 0,
                seconds: 0.0,
                reason: None,
                golden: None,
                ended_on: m.and_then(running),
                online: m.is_some_and(|m| m.online),
                rollback_pending: None,
            });
        }
        at += n;
    }
    Ok(state)
}

fn in_scope(plan: &Plan, m: &StatusMessage) -> bool {
    match &plan.targets.group {
        Some(g) => m.group.as_deref() == Some(g.as_str()),
        None => plan.targets.all,
    }
}

/// What a status says a device runs.
pub(crate) fn running(m: &StatusMessage) -> Option<Running> {
    m.status.as_ref().map(|s| Running {
        name: s.bundle.name.clone(),
        version: s.bundle.version.clone(),
        digest: s.digest.clone(),
    })
}

/// The bundle, and the deltas it can be reached by: a ready-made one per
/// base, or one made now from `delta_from` (kept beside the state file, so
/// that a resumed rollout sends the same bytes).
fn payloads(
    plan: &Plan,
    state_path: &Path,
    bundle_sha256: &str,
    target: &kgbox_bundle::delta::BundleId,
) -> Result<Payloads> {
    let mut deltas = Vec::new();
    let mut add = |path: &Path| -> Result<()> {
        let (base, made_for) = crate::push::delta_ids(path)?;
        if made_for.digest != target.digest {
            bail!(
                "the delta {} makes {made_for}, not the plan's bundle {target}",
                path.display()
            );
        }
        deltas.push((
            base.digest,
            path.to_path_buf(),
            crate::push::file_sha256(path)?,
        ));
        Ok(())
    };
    for d in &plan.deltas {
        add(d)?;
    }
    if let (Some(old), Some(key)) = (&plan.delta_from, &plan.key) {
        let out = state_path.with_extension("delta.kgbd");
        let reusable = crate::push::delta_ids(&out).ok().is_some_and(|(base, t)| {
            t.digest == target.digest
                && crate::push::bundle_id(old).is_ok_and(|o| o.digest == base.digest)
        });
        if !reusable {
            let key = kgbox_bundle::SecretKey::read(key).context("cannot load the signing key")?;
            let r = crate::delta::make_delta(old, &plan.bundle, &key, &out, &Default::default())?;
            eprintln!(
                "made a delta update {} -> {}: {} bytes ({:.2}% of the bundle)",
                r.base,
                r.target,
                r.bytes,
                100.0 * r.bytes as f64 / r.full_bytes.max(1) as f64
            );
        }
        add(&out)?;
    }
    Ok(Payloads {
        bundle: plan.bundle.clone(),
        bundle_sha256: bundle_sha256.to_string(),
        deltas,
    })
}

/// After the waves: an aborted rollout rolls back (or leaves) what it
/// updated and marks the rest untouched; every device gets what it runs now.
fn finish(ctx: &Ctx, state: &mut State) -> Result<()> {
    if let Some(why) = state.aborted.clone() {
        // Every device this rollout put on the bundle: those it counted as
        // updated, and any other that reports the bundle now (one that went
        // offline after installing, one whose rollback is not confirmed).
        let seen = ctx.watch.all();
        let on_target = |id: &str| {
            seen.get(id)
                .and_then(running)
                .is_some_and(|r| r.digest.is_some() && r.digest == state.bundle.digest)
        };
        let updated: Vec<String> = state
            .devices
            .iter()
            .filter(|d| d.outcome != Outcome::AlreadyCurrent)
            .filter(|d| {
                matches!(d.outcome, Outcome::Updated | Outcome::Installed)
                    || d.rollback_pending.is_some()
                    || on_target(&d.device_id)
            })
            .map(|d| d.device_id.clone())
            .collect();
        match ctx.plan.abort.on_abort {
            OnAbort::Rollback if !updated.is_empty() => {
                ctx.say(format!(
                    "rolling back the {} devices this rollout updated",
                    updated.len()
                ));
                wave::roll_back(ctx, state, &updated, &format!("the rollout stopped: {why}"))?;
            }
            OnAbort::Rollback => {}
            OnAbort::Leave => {
                for id in &updated {
                    if let Some(d) = state.device_mut(id) {
                        d.outcome = Outcome::LeftUpdated;
                        d.reason = Some(format!(
                            "the rollout stopped ({why}); left as the plan says"
                        ));
                    }
                }
            }
        }
        for d in &mut state.devices {
            if d.outcome == Outcome::Pending {
                d.outcome = Outcome::NotTouched;
                d.reason = Some(format!("the rollout stopped before wave {}", d.wave + 1));
            }
        }
    }
    let seen = ctx.watch.all();
    for d in &mut state.devices {
        if let Some(m) = seen.get(&d.device_id) {
            d.ended_on = running(m).or(d.ended_on.take());
            d.online = m.online;
        }
    }
    state.finished = true;
    state.save(&ctx.state_path)
}
