//! One wave of a rollout: push to its devices (a few at once), let them
//! serve for the plan's `wait`, ask each for its golden questions and read
//! its criteria, roll back those that fail; then the abort thresholds.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::Result;
use kgbox_protocol::topics::PushTopics;
use kgbox_protocol::{
    to_wire, CheckRequest, DeviceStatus, Progress, RollbackRequest, TransferState,
};

use super::plan::Criteria;
use super::state::{now_unix, Outcome, Sent, State};
use super::{running, Ctx};
use crate::push::{push_file, PushArgs};

/// A push that could not reach the broker is tried again after this long.
const RETRY: Duration = Duration::from_secs(2);
/// Requests a device has not acted on go again this often.
const RESEND: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(100);

fn lock<'a, 'b>(m: &'a Mutex<&'b mut State>) -> MutexGuard<'a, &'b mut State> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn percent(n: usize, of: usize) -> f64 {
    100.0 * n as f64 / of.max(1) as f64
}

/// Asks again for the rollbacks not seen done, of devices online now.
pub(crate) fn pending_rollbacks(ctx: &Ctx, state: &mut State) -> Result<()> {
    let reasons: HashMap<String, String> = state
        .devices
        .iter()
        .filter(|d| ctx.watch.status(&d.device_id).is_some_and(|m| m.online))
        .filter_map(|d| Some((d.device_id.clone(), d.rollback_pending.clone()?)))
        .collect();
    if reasons.is_empty() {
        return Ok(());
    }
    ctx.say(format!(
        "{} devices still to roll back are online: asking again",
        reasons.len()
    ));
    let ids: Vec<String> = reasons.keys().cloned().collect();
    roll_back_each(ctx, state, &ids, &reasons)
}

pub(crate) fn run_waves(ctx: &Ctx, state: &mut State) -> Result<()> {
    let waves = state.wave_sizes.len();
    while state.waves_done < waves && state.aborted.is_none() {
        let w = state.waves_done;
        pending_rollbacks(ctx, state)?;
        let mut ids: Vec<String> = state
            .devices
            .iter()
            .filter(|d| d.wave == w && matches!(d.outcome, Outcome::Pending | Outcome::Installed))
            .map(|d| d.device_id.clone())
            .collect();
        let retry = back_online(ctx, state, w);
        ctx.say(format!(
            "wave {}/{waves}: {} devices{}",
            w + 1,
            ids.len(),
            if retry.is_empty() {
                String::new()
            } else {
                format!(", and {} unreachable before, online again", retry.len())
            }
        ));
        ids.extend(retry);
        run_wave(ctx, state, &ids, w)?;
        let (tried, failed, unreachable) = state.tally(w);
        let a = &ctx.plan.abort;
        if percent(failed, tried) > a.max_failed_percent {
            state.aborted = Some(format!(
                "{failed} of {tried} devices failed by wave {} ({:.1}%, more than max_failed_percent {})",
                w + 1,
                percent(failed, tried),
                a.max_failed_percent
            ));
        } else if percent(unreachable, tried) > a.max_unreachable_percent {
            state.aborted = Some(format!(
                "{unreachable} of {tried} devices unreachable by wave {} ({:.1}%, more than max_unreachable_percent {})",
                w + 1,
                percent(unreachable, tried),
                a.max_unreachable_percent
            ));
        }
        state.waves_done = w + 1;
        state.save(&ctx.state_path)?;
        ctx.say(format!(
            "wave {}/{waves} done: {failed} failed, {unreachable} unreachable of {tried} so far{}",
            w + 1,
            state
                .aborted
                .as_ref()
                .map_or(String::new(), |why| format!("; stopping: {why}"))
        ));
    }
    pending_rollbacks(ctx, state)?;
    if state.aborted.is_none() {
        let retry = back_online(ctx, state, waves);
        if !retry.is_empty() {
            ctx.say(format!(
                "{} devices unreachable during their wave are online again: updating them",
                retry.len()
            ));
            run_wave(ctx, state, &retry, waves.saturating_sub(1))?;
        }
    }
    Ok(())
}

/// Devices of waves before `w` that were unreachable and are online now.
fn back_online(ctx: &Ctx, state: &State, w: usize) -> Vec<String> {
    state
        .devices
        .iter()
        .filter(|d| d.wave < w && d.outcome == Outcome::Unreachable)
        .filter(|d| d.rollback_pending.is_none())
        .filter(|d| ctx.watch.status(&d.device_id).is_some_and(|m| m.online))
        .map(|d| d.device_id.clone())
        .collect()
}

fn run_wave(ctx: &Ctx, state: &mut State, ids: &[String], w: usize) -> Result<()> {
    let queue = Mutex::new(ids.iter().cloned().collect::<VecDeque<_>>());
    let shared = Mutex::new(&mut *state);
    let workers = ctx.plan.waves.max_parallel.min(ids.len()).max(1);
    let saved: Mutex<Result<()>> = Mutex::new(Ok(()));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let Some(id) = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front() else {
                    return;
                };
                let outcome = push_one(ctx, &id, &shared);
                let mut st = lock(&shared);
                if let Some(d) = st.device_mut(&id) {
                    d.outcome = outcome.outcome;
                    d.sent = outcome.sent.or(d.sent);
                    d.bytes += outcome.bytes;
                    d.seconds += outcome.seconds;
                    d.reason = outcome.reason.clone();
                }
                if let Err(e) = st.save(&ctx.state_path) {
                    *saved.lock().unwrap_or_else(|p| p.into_inner()) = Err(e);
                }
                drop(st);
                let sent = match outcome.sent {
                    Some(Sent::Delta) => format!("delta, {} bytes, ", outcome.bytes),
                    Some(Sent::Full) => format!("bundle, {} bytes, ", outcome.bytes),
                    None => String::new(),
                };
                ctx.say(format!(
                    "  {id}: {}{:.1} s: {}{}",
                    sent,
                    outcome.seconds,
                    outcome.outcome.as_str(),
                    outcome.reason.map_or(String::new(), |r| format!(" ({r})"))
                ));
            });
        }
    });
    saved.into_inner().unwrap_or_else(|p| p.into_inner())?;
    let installed: Vec<String> = ids
        .iter()
        .filter(|id| {
            state
                .devices
                .iter()
                .any(|d| &d.device_id == *id && d.outcome == Outcome::Installed)
        })
        .cloned()
        .collect();
    if installed.is_empty() {
        return Ok(());
    }
    let wait = ctx.plan.waves.wait;
    if !wait.is_zero() {
        ctx.say(format!(
            "  serving {} before reading the criteria of {} devices",
            humantime::format_duration(wait),
            installed.len()
        ));
        std::thread::sleep(wait);
    }
    let failing = check(ctx, state, &installed, w)?;
    if !failing.is_empty() {
        let ids: Vec<String> = failing.keys().cloned().collect();
        for (id, why) in &failing {
            ctx.say(format!("  {id}: fails its criteria ({why}): rolling back"));
        }
        roll_back_each(ctx, state, &ids, &failing)?;
    }
    Ok(())
}

/// What a push came to.
struct Pushed {
    outcome: Outcome,
    sent: Option<Sent>,
    bytes: u64,
    seconds: f64,
    reason: Option<String>,
}

fn push_one(ctx: &Ctx, id: &str, shared: &Mutex<&mut State>) -> Pushed {
    let started = Instant::now();
    let (target, from) = {
        let st = lock(shared);
        let from = st
            .devices
            .iter()
            .find(|d| d.device_id == id)
            .and_then(|d| d.from.clone());
        (st.bundle.digest.clone(), from)
    };
    let done = |outcome, reason: Option<String>| Pushed {
        outcome,
        sent: None,
        bytes: 0,
        seconds: started.elapsed().as_secs_f64(),
        reason,
    };
    let Some(m) = ctx.watch.status(id) else {
        return done(Outcome::Unreachable, Some("no status on the broker".into()));
    };
    if !m.online {
        return done(Outcome::Unreachable, Some("offline".into()));
    }
    let digest = m.status.as_ref().and_then(|s| s.digest.clone());
    if digest.is_some() && digest == target {
        return if from.and_then(|f| f.digest) == target {
            done(Outcome::AlreadyCurrent, None)
        } else {
            done(
                Outcome::Installed,
                Some("installed before the rollout was resumed".into()),
            )
        };
    }
    let p = &ctx.payloads;
    let delta = digest
        .as_ref()
        .and_then(|d| p.deltas.iter().find(|(base, _, _)| base == d));
    let mut bytes = 0;
    let until = started + ctx.plan.waves.push_timeout;
    // A broker that is away (restarting) is tried again until the push
    // times out; the device resumes a transfer where it stopped.
    let mut attempt = |file: &std::path::Path, sha: &str| -> (Option<Progress>, Option<String>) {
        loop {
            let mut args = push_args(ctx, id, file);
            args.timeout = until.saturating_duration_since(Instant::now());
            match push_file(&args, file, sha) {
                Ok(r) => {
                    bytes += r.bytes;
                    return (r.last, None);
                }
                Err(e) if Instant::now() + RETRY < until => {
                    say_retry(ctx, id, &e);
                    std::thread::sleep(RETRY);
                }
                Err(e) => return (None, Some(format!("{e:#}"))),
            }
        }
    };
    let (mut sent, (mut last, mut error)) = match delta {
        Some((_, file, sha)) => (Sent::Delta, attempt(file, sha)),
        None => (Sent::Full, attempt(&p.bundle, &p.bundle_sha256)),
    };
    // A delta the device could not apply: the bundle itself, once.
    if sent == Sent::Delta
        && last
            .as_ref()
            .is_some_and(|l| l.state == TransferState::Failed)
    {
        let why = last
            .as_ref()
            .and_then(|l| l.error.clone())
            .unwrap_or_default();
        ctx.say(format!(
            "  {id}: the delta failed ({why}): sending the bundle"
        ));
        sent = Sent::Full;
        (last, error) = attempt(&p.bundle, &p.bundle_sha256);
    }
    let timeout = humantime::format_duration(ctx.plan.waves.push_timeout);
    let (outcome, reason) = match (&last, error) {
        (_, Some(e)) => (Outcome::Unreachable, Some(e)),
        (None, None) => (
            Outcome::Unreachable,
            Some(format!("no answer within {timeout}")),
        ),
        (Some(l), None) => match l.state {
            TransferState::Installed => (Outcome::Installed, None),
            TransferState::RolledBack => (
                Outcome::RolledBack,
                Some(format!(
                    "its health check failed: {}",
                    l.reason.as_deref().unwrap_or("?")
                )),
            ),
            TransferState::Failed => (
                Outcome::Failed,
                Some(l.error.clone().unwrap_or_else(|| "failed".into())),
            ),
            other => (
                Outcome::Unreachable,
                Some(format!(
                    "stopped answering while {other} (within {timeout})"
                )),
            ),
        },
    };
    Pushed {
        outcome,
        sent: Some(sent),
        bytes,
        seconds: started.elapsed().as_secs_f64(),
        reason,
    }
}

fn say_retry(ctx: &Ctx, id: &str, e: &anyhow::Error) {
    ctx.say(format!("  {id}: {e:#}; trying again"));
}

fn push_args(ctx: &Ctx, id: &str, file: &std::path::Path) -> PushArgs {
    let (b, w) = (&ctx.plan.broker, &ctx.plan.waves);
    PushArgs {
        bundle: file.to_path_buf(),
        broker: Some(b.url.clone()),
        device: Some(id.to_string()),
        group: None,
        expect: None,
        chunk_bytes: w.chunk_bytes,
        timeout: w.push_timeout,
        allow_downgrade: w.allow_downgrade,
        username: b.username.clone(),
        password_env: b.password_env.clone(),
        ca_file: b.ca_file.clone(),
        http: None,
        token_env: "KGBOX_ADMIN_TOKEN".into(),
        quiet: true,
        delta_from: None,
        delta: None,
        key: None,
        silent: true,
    }
}

/// Asks each device for its golden questions and reads its criteria.
/// Those that meet them are `updated`; those that do not are returned
/// with why (to be rolled back).
fn check(
    ctx: &Ctx,
    state: &mut State,
    ids: &[String],
    w: usize,
) -> Result<HashMap<String, String>> {
    let started = Instant::now();
    let target = state.bundle.digest.clone();
    let check = format!("{}-w{}-{}", state.rollout, w + 1, now_unix());
    let payload = to_wire(&CheckRequest {
        check: check.clone(),
        questions: ctx.golden.clone(),
    });
    let answered = ask_until(
        ctx,
        ids,
        |id| PushTopics::device(id).check(),
        &payload,
        |_, m| {
            let s = m.status.as_ref()?;
            if s.digest != target {
                return Some(Err(format!(
                    "it runs {} {} now",
                    s.bundle.name, s.bundle.version
                )));
            }
            match &s.golden {
                Some(g) if g.check == check => Some(Ok(m.clone())),
                _ => None,
            }
        },
    )?;
    let c = &ctx.plan.criteria;
    let secs = started.elapsed().as_secs_f64();
    let mut failing = HashMap::new();
    for id in ids {
        let online = ctx.watch.status(id).is_some_and(|m| m.online);
        let Some(d) = state.device_mut(id) else {
            continue;
        };
        d.seconds += secs;
        match answered.get(id).cloned() {
            None if !online => {
                d.outcome = Outcome::Unreachable;
                d.reason = Some("went offline after installing, before its golden check".into());
            }
            None => {
                let why = format!(
                    "no golden results within {}",
                    humantime::format_duration(c.check_timeout)
                );
                failing.insert(id.clone(), why);
            }
            Some(Err(why)) => {
                d.outcome = Outcome::RolledBack;
                d.reason = Some(format!("it went back by itself: {why}"));
            }
            Some(Ok(m)) => {
                let Some(s) = m.status.as_ref() else { continue };
                d.golden = s.golden.as_ref().map(|g| g.describe());
                let problems = problems(s, c);
                if problems.is_empty() {
                    d.outcome = Outcome::Updated;
                    d.reason = None;
                } else {
                    failing.insert(id.clone(), problems.join("; "));
                }
            }
        }
    }
    state.save(&ctx.state_path)?;
    Ok(failing)
}

/// Why a device's status fails the criteria (none: it meets them).
pub(crate) fn problems(s: &DeviceStatus, c: &Criteria) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(g) = &s.golden {
        let share = if g.total == 0 {
            1.0
        } else {
            g.passed as f64 / g.total as f64
        };
        if share < c.min_golden_share {
            out.push(g.describe());
        }
    }
    if let Some(st) = s
        .since_deploy
        .as_ref()
        .filter(|st| st.requests >= c.min_requests.max(1))
    {
        let rate = st.errors as f64 / st.requests as f64;
        if c.max_error_rate.is_some_and(|max| rate > max) {
            out.push(format!(
                "{} server errors in {} requests since the deploy",
                st.errors, st.requests
            ));
        }
        if let (Some(max), Some(p99)) = (c.max_p99_ms, st.p99_ms) {
            if p99 > max {
                out.push(format!("p99 {p99} ms since the deploy, above {max} ms"));
            }
        }
    }
    out
}

/// Publishes `payload` to each device's `topic` (again every [`RESEND`]
/// to those that have not acted) until `done` finds in its status what it
/// waits for, or the check timeout passes: what `done` found, by device.
fn ask_until<T>(
    ctx: &Ctx,
    ids: &[String],
    topic: impl Fn(&str) -> String,
    payload: &str,
    mut done: impl FnMut(&str, &kgbox_protocol::StatusMessage) -> Option<T>,
) -> Result<HashMap<String, T>> {
    let deadline = Instant::now() + ctx.plan.criteria.check_timeout;
    let mut pending: Vec<String> = ids.to_vec();
    let mut found = HashMap::new();
    let mut sent_at: Option<Instant> = None;
    while !pending.is_empty() && Instant::now() < deadline {
        if sent_at.is_none_or(|t| t.elapsed() >= RESEND) {
            for id in &pending {
                ctx.watch.publish(&topic(id), payload.to_string())?;
            }
            sent_at = Some(Instant::now());
        }
        std::thread::sleep(POLL);
        pending.retain(|id| {
            let got = ctx.watch.status(id).and_then(|m| done(id, &m));
            match got {
                Some(v) => {
                    found.insert(id.clone(), v);
                    false
                }
                None => true,
            }
        });
    }
    Ok(found)
}

/// Rolls back `ids` (an abort), all for one reason.
pub(crate) fn roll_back(ctx: &Ctx, state: &mut State, ids: &[String], why: &str) -> Result<()> {
    let reasons = ids.iter().map(|id| (id.clone(), why.to_string())).collect();
    roll_back_each(ctx, state, ids, &reasons)
}

/// Asks each device to leave the rollout's bundle, until its status shows
/// another (or the check timeout passes).
fn roll_back_each(
    ctx: &Ctx,
    state: &mut State,
    ids: &[String],
    reasons: &HashMap<String, String>,
) -> Result<()> {
    let started = Instant::now();
    let Some(target) = state.bundle.digest.clone() else {
        return Ok(());
    };
    let payload = to_wire(&RollbackRequest {
        from: target.clone(),
        by: Some(state.rollout.clone()),
    });
    let mut back = ask_until(
        ctx,
        ids,
        |id| PushTopics::device(id).rollback(),
        &payload,
        |_, m| running(m).filter(|r| m.online && r.digest.as_deref() != Some(target.as_str())),
    )?;
    let secs = started.elapsed().as_secs_f64();
    for id in ids {
        let why = reasons.get(id).cloned().unwrap_or_default();
        let online = ctx.watch.status(id).is_some_and(|m| m.online);
        let Some(d) = state.device_mut(id) else {
            continue;
        };
        d.seconds += secs;
        match back.remove(id) {
            Some(r) => {
                ctx.say(format!("  {id}: rolled back to {r}"));
                d.outcome = Outcome::RolledBack;
                d.reason = Some(why);
                d.ended_on = Some(r);
                d.rollback_pending = None;
            }
            None if !online => {
                d.outcome = Outcome::Unreachable;
                d.reason = Some(format!(
                    "{why}; offline before its rollback was confirmed (asked again when it is back)"
                ));
                d.rollback_pending = Some(why);
            }
            None => {
                d.outcome = Outcome::Failed;
                d.reason = Some(format!(
                    "{why}; it still runs the bundle: its rollback was not confirmed within {}",
                    humantime::format_duration(ctx.plan.criteria.check_timeout)
                ));
                d.rollback_pending = Some(why);
            }
        }
    }
    state.save(&ctx.state_path)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use kgbox_protocol::{BundleRef, GoldenResults, Health, ServingStats};

    fn status(golden: Option<(usize, usize)>, stats: Option<(u64, u64, f64)>) -> DeviceStatus {
        DeviceStatus {
            bundle: BundleRef {
                name: "films".into(),
                version: "1.1.0".into(),
            },
            digest: Some("ab".into()),
            source: "slot-b".into(),
            slot: None,
            health: Health::Good,
            uptime_s: 1,
            kgbox_version: "0".into(),
            last_deploy: None,
            since_deploy: stats.map(|(requests, errors, p99)| ServingStats {
                since_unix: 0,
                requests,
                errors,
                client_errors: 0,
                p99_ms: Some(p99),
            }),
            golden: golden.map(|(passed, total)| GoldenResults {
                check: "c".into(),
                digest: Some("ab".into()),
                total,
                passed,
                failed: Vec::new(),
                checked_unix: 0,
                ms: 1.0,
            }),
        }
    }

    #[test]
    fn reads_the_criteria() {
        let c = Criteria {
            max_error_rate: Some(0.05),
            max_p99_ms: Some(200.0),
            min_requests: 10,
            ..Criteria::default()
        };
        assert!(problems(&status(Some((2, 2)), Some((100, 5, 150.0))), &c).is_empty());
        assert!(
            problems(&status(Some((0, 0)), None), &c).is_empty(),
            "nothing to answer"
        );
        let p = problems(&status(Some((1, 2)), None), &c);
        assert_eq!(p, ["1 of 2 golden questions answered"]);
        let p = problems(&status(None, Some((100, 6, 150.0))), &c);
        assert_eq!(p, ["6 server errors in 100 requests since the deploy"]);
        let p = problems(&status(None, Some((100, 0, 250.0))), &c);
        assert_eq!(p, ["p99 250 ms since the deploy, above 200 ms"]);
        // Too few requests to judge errors or latency by.
        assert!(problems(&status(None, Some((9, 9, 9000.0))), &c).is_empty());
        let lenient = Criteria {
            min_golden_share: 0.5,
            ..c
        };
        assert!(problems(&status(Some((1, 2)), None), &lenient).is_empty());
    }
}
