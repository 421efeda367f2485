//! Choosing each section's instruction: `same` when the raw bytes did not
//! change, else the smallest of `full` and a `patch` under every transform
//! that applies.

use std::io::Write;

use anyhow::{Context as _, Result};
use kgbox_bundle::delta::{Context, Op, Transform};
use kgbox_bundle::format::SectionEntry;
use kgbox_bundle::sections::include_in_image;

use super::load::Loaded;
use super::DeltaOptions;

/// One section's chosen instruction and its payload.
pub struct Chosen {
    pub op: Op,
    pub transform: Transform,
    pub payload: Vec<u8>,
}

/// The fast level the transforms of a large section are compared at.
const TRIAL_LEVEL: i32 = 3;

/// Every transform a patch may use, tried in this order.
const TRANSFORMS: [Transform; 4] = [
    Transform::Raw,
    Transform::Predict,
    Transform::Lengths,
    Transform::OffsetsDiff,
];

/// zstd "patch from": `data` compressed with `reference` as its prefix,
/// in one frame whose window covers both (up to `window_log_max`).
pub fn compress(data: &[u8], reference: &[u8], level: i32, window_log_max: u32) -> Result<Vec<u8>> {
    let span = (reference.len() + data.len()).max(1) as u64;
    let window_log = (64 - (span - 1).leading_zeros()).clamp(10, window_log_max);
    let mut enc = zstd::stream::write::Encoder::with_ref_prefix(Vec::new(), level, reference)?;
    enc.include_checksum(false)?;
    enc.include_contentsize(true)?;
    enc.set_pledged_src_size(Some(data.len() as u64))?;
    enc.window_log(window_log)?;
    enc.long_distance_matching(span > 8 << 20)?;
    enc.write_all(data)?;
    Ok(enc.finish()?)
}

/// The instruction for `entry`, section of the new bundle.
pub fn choose(
    entry: &SectionEntry,
    old: &Loaded,
    new: &Loaded,
    ctx: &mut Context<'_>,
    opts: &DeltaOptions,
) -> Result<Chosen> {
    let name = entry.name.as_str();
    let stored = new
        .stored
        .get(name)
        .with_context(|| format!("section `{name}` has no stored bytes"))?;
    let full = Chosen {
        op: Op::Full,
        transform: Transform::Raw,
        payload: stored.clone(),
    };
    // A section no image holds is never decoded on a device, and a
    // derived one stores nothing: copy it.
    if !include_in_image(entry) || kgbox_bundle::derive::is_derived(entry) {
        return Ok(full);
    }
    let raw = new
        .section(name)
        .with_context(|| format!("section `{name}` was not read"))?;
    let unchanged = old
        .prefix
        .section(name)
        .is_some_and(|o| o.sha256_raw == entry.sha256_raw && old.section(name).is_some());
    if unchanged {
        return Ok(Chosen {
            op: Op::Same,
            transform: Transform::Raw,
            payload: Vec::new(),
        });
    }
    // Patches keep the final level whatever the size: patch-from needs a
    // strong match finder (at level 6 the 10M-triple delta was 3.6 times
    // larger).
    let level = opts.level;
    // Large sections: compare the transforms at a fast level, then
    // compress the winner at `level`.
    // (At level 19 each trial of a 40 MB section takes most of a minute.)
    let trial = raw.len() > opts.trial_from && level > TRIAL_LEVEL;
    let mut best = full;
    let mut best_trial: Option<(usize, Transform)> = None;
    for t in TRANSFORMS {
        if !opts.transforms && t != Transform::Raw {
            continue;
        }
        // A transform that does not apply or cannot be computed here
        // (no base section, no id maps) is simply not a candidate.
        let Ok(data) = ctx.encode(t, name, raw).map(|d| d.into_owned()) else {
            continue;
        };
        let Ok(reference) = ctx.reference(t, name) else {
            continue;
        };
        let at = if trial { TRIAL_LEVEL } else { level };
        let payload = compress(&data, &reference, at, opts.window_log_max)
            .with_context(|| format!("compressing section `{name}`"))?;
        if trial {
            if best_trial.is_none_or(|(len, _)| payload.len() < len) {
                best_trial = Some((payload.len(), t));
            }
        } else if payload.len() < best.payload.len() {
            best = Chosen {
                op: Op::Patch,
                transform: t,
                payload,
            };
        }
    }
    if let Some((_, t)) = best_trial {
        let data = ctx
            .encode(t, name, raw)
            .with_context(|| format!("section `{name}`"))?
            .into_owned();
        let reference = ctx
            .reference(t, name)
            .with_context(|| format!("section `{name}`"))?;
        let payload = compress(&data, &reference, level, opts.window_log_max)
            .with_context(|| format!("compressing section `{name}`"))?;
        if payload.len() < best.payload.len() {
            best = Chosen {
                op: Op::Patch,
                transform: t,
                payload,
            };
        }
    }
    ctx.release(name);
    Ok(best)
}
