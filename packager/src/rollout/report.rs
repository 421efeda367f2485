//! The rollout's report: per device the outcome, what it ran and runs,
//! what was sent, the bytes and seconds and the reason; totals per outcome
//! and per wave. JSON in a file, and a summary on the terminal.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{json, Value};

use super::state::{now_unix, Outcome, Sent, State};

pub(crate) fn build(state: &State, plan: &Path) -> Value {
    let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut bytes, mut full, mut delta) = (0u64, 0usize, 0usize);
    for d in &state.devices {
        *outcomes.entry(d.outcome.as_str()).or_default() += 1;
        bytes += d.bytes;
        full += usize::from(d.sent == Some(Sent::Full));
        delta += usize::from(d.sent == Some(Sent::Delta));
    }
    let waves: Vec<Value> = state
        .wave_sizes
        .iter()
        .enumerate()
        .map(|(w, n)| {
            let mut o: BTreeMap<&str, usize> = BTreeMap::new();
            for d in state.devices.iter().filter(|d| d.wave == w) {
                *o.entry(d.outcome.as_str()).or_default() += 1;
            }
            json!({"wave": w + 1, "devices": n, "outcomes": o})
        })
        .collect();
    json!({
        "rollout": state.rollout,
        "plan": plan.display().to_string(),
        "bundle": state.bundle,
        "outcome": if state.aborted.is_some() { "aborted" } else if state.finished { "completed" } else { "interrupted" },
        "reason": state.aborted,
        "started_unix": state.started_unix,
        "seconds": now_unix().saturating_sub(state.started_unix),
        "bytes": bytes,
        "sent_full": full,
        "sent_delta": delta,
        "outcomes": outcomes,
        "waves": waves,
        "devices": state.devices,
    })
}

pub(crate) fn write(report: &Value, path: &Path) -> Result<()> {
    let text = serde_json::to_string_pretty(report)? + "\n";
    std::fs::write(path, text)
        .with_context(|| format!("cannot write the report {}", path.display()))
}

/// A few lines: the outcome, the counts, and each device not updated.
pub(crate) fn summary(state: &State) -> String {
    let mut out = format!(
        "rollout {} of {}: {}\n",
        state.rollout,
        state.bundle,
        match &state.aborted {
            Some(why) => format!("stopped ({why})"),
            None => "completed".into(),
        }
    );
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for d in &state.devices {
        *counts.entry(d.outcome.as_str()).or_default() += 1;
    }
    let bytes: u64 = state.devices.iter().map(|d| d.bytes).sum();
    out.push_str(&format!(
        "{} devices: {}; {bytes} bytes sent in {} s\n",
        state.devices.len(),
        counts
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", "),
        now_unix().saturating_sub(state.started_unix)
    ));
    for d in &state.devices {
        if matches!(d.outcome, Outcome::Updated | Outcome::AlreadyCurrent) {
            continue;
        }
        out.push_str(&format!(
            "  {}: {}{}{}\n",
            d.device_id,
            d.outcome.as_str(),
            d.ended_on
                .as_ref()
                .map_or(String::new(), |r| format!(", runs {r}")),
            d.reason
                .as_ref()
                .map_or(String::new(), |r| format!(" ({r})"))
        ));
    }
    out
}
