//! `kgbox-pack delta OLD.kgb NEW.kgb -o UPDATE.kgbd`: a signed delta update
//! that turns a device's installed OLD into NEW (docs/bundle-format.md,
//! section 13; the device's side is `kgbox_bundle::delta`).
//!
//! Each section of NEW gets the smallest of: `same`, `full` (NEW's stored
//! bytes), or a `patch` under each transform that applies. The delta is
//! then applied here, to OLD, before it is written: a delta that would not
//! rebuild NEW exactly is never written.
//!
//! [`run`] → [`make_delta`]: [`Loaded::read`] (both bundles' raw and stored
//! sections) → [`delta_bytes`] (the same `transform::Context` as the
//! device's: `add_new`, `enable_maps`; `encode::choose` per section) →
//! [`self_check`] (the delta applied to OLD in memory) →
//! `pack::write_atomically`.

mod encode;
mod load;

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use kgbox_bundle::delta::{
    BundleId, Context, DeltaHeader, DeltaInfo, DeltaReader, Instruction, Op, Transform,
};
use kgbox_bundle::format::SIGNATURE_LEN;
use kgbox_bundle::sections::include_in_image;
use kgbox_bundle::{Limits, Prefix, SecretKey};
use sha2::{Digest, Sha256};

pub use encode::compress;
pub use load::Loaded;

/// How a delta is made.
#[derive(Debug, Clone)]
pub struct DeltaOptions {
    /// zstd level of the patches (1-22).
    pub level: i32,
    /// The largest zstd window a patch may need (log2 bytes): the devices'
    /// `limits.zstd_window_log_max` (27 by default).
    pub window_log_max: u32,
    /// Try the graph transforms (`predict`, `lengths`, `offsets-diff`);
    /// off: plain patches against the base's sections only.
    pub transforms: bool,
    /// Sections larger than this many raw bytes have their transforms
    /// compared at a fast level and only the smallest compressed at
    /// `level` (4 MiB by default).
    pub trial_from: usize,
}

impl Default for DeltaOptions {
    fn default() -> Self {
        DeltaOptions {
            level: 19,
            window_log_max: 27,
            transforms: true,
            trial_from: 4 << 20,
        }
    }
}

/// One section of the delta.
#[derive(Debug, Clone)]
pub struct SectionReport {
    pub name: String,
    pub op: Op,
    pub transform: Transform,
    pub payload: u64,
    /// The section's stored size in NEW.
    pub full: u64,
}

/// What [`make_delta`] wrote.
#[derive(Debug, Clone)]
pub struct DeltaReport {
    pub bytes: u64,
    /// NEW's file size.
    pub full_bytes: u64,
    pub base: BundleId,
    pub target: BundleId,
    pub sections: Vec<SectionReport>,
    pub make_time: Duration,
    /// Applying the delta to OLD in memory (the self-check).
    pub apply_time: Duration,
}

fn id_of(p: &Prefix) -> BundleId {
    BundleId {
        name: p.manifest.name.clone(),
        version: p.manifest.version.to_string(),
        digest: hex::encode(p.digest()),
    }
}

/// Makes the delta from `old` to `new` in memory, signed by `key`.
pub fn delta_bytes(
    old: &Loaded,
    new: &Loaded,
    key: &SecretKey,
    opts: &DeltaOptions,
) -> Result<(Vec<u8>, Vec<SectionReport>)> {
    let base = |n: &str| old.section(n);
    let mut ctx = Context::new(&base, u64::MAX);
    // The device makes these first: their instructions cannot use what
    // needs them (the prediction of an alias table needs only the maps).
    for (k, name) in Context::EARLY.iter().enumerate() {
        if k == Context::NAME_TABLES && opts.transforms {
            // Without both name tables there are no maps: plain patches only.
            let _ = ctx.enable_maps();
        }
        if let Some(raw) = new.section(name) {
            ctx.add_new(name, raw.to_vec());
        }
    }
    let mut chosen = Vec::with_capacity(new.prefix.sections.len());
    for entry in &new.prefix.sections {
        chosen.push(encode::choose(entry, old, new, &mut ctx, opts)?);
    }
    let info = DeltaInfo {
        base: id_of(&old.prefix),
        target: id_of(&new.prefix),
        generator: format!("kgbox-pack {}", env!("CARGO_PKG_VERSION")),
    };
    let info = serde_json::to_vec(&info)?;
    let header = DeltaHeader {
        instruction_count: u32::try_from(chosen.len())?,
        info_len: u32::try_from(info.len())?,
        key_id: key.public().key_id(),
        new_prefix_len: new.prefix.bytes.len() as u64,
        base_digest: old.prefix.digest(),
    };
    let mut offset = header.prefix_len();
    let mut bytes = Vec::with_capacity(offset as usize);
    bytes.extend_from_slice(&header.encode());
    bytes.extend_from_slice(&info);
    bytes.extend_from_slice(&new.prefix.bytes);
    let mut reports = Vec::with_capacity(chosen.len());
    for (c, entry) in chosen.iter().zip(&new.prefix.sections) {
        let ins = Instruction {
            op: c.op,
            transform: c.transform,
            offset,
            len: c.payload.len() as u64,
            sha256: Sha256::digest(&c.payload).into(),
        };
        bytes.extend_from_slice(&ins.encode());
        offset += ins.len;
        reports.push(SectionReport {
            name: entry.name.clone(),
            op: c.op,
            transform: c.transform,
            payload: ins.len,
            full: entry.stored_len,
        });
    }
    let signature = key.sign_delta(&bytes);
    bytes.extend_from_slice(&signature);
    debug_assert_eq!(bytes.len() as u64, header.prefix_len());
    debug_assert_eq!(signature.len(), SIGNATURE_LEN);
    for c in &chosen {
        bytes.extend_from_slice(&c.payload);
    }
    Ok((bytes, reports))
}

/// Applies `delta` to `old` in memory and checks that it makes `new`'s
/// image exactly: every section's signed hash (the device's checks),
/// with the devices' zstd window limit, so that a delta they would refuse
/// is never written.
pub fn self_check(delta: &[u8], old: &Loaded, window_log_max: u32) -> Result<Vec<u8>> {
    let limits = Limits {
        max_section_bytes: u64::MAX,
        max_total_bytes: u64::MAX,
        window_log_max,
    };
    let mut reader = DeltaReader::open(std::io::Cursor::new(delta))?;
    reader.check_payloads(&limits, include_in_image)?;
    let base = |n: &str| old.section(n);
    let mut image = Vec::new();
    let plan = reader.write_image(
        &base,
        &old.prefix.digest(),
        &limits,
        include_in_image,
        &mut image,
    )?;
    let mut image = kgbox_bundle::AlignedBytes::from_slice(&image);
    kgbox_bundle::derive::fill(reader.new_prefix(), &plan.ranges, image.as_mut_slice())?;
    Ok(image.to_vec())
}

/// `kgbox-pack delta`: reads both bundles, makes, checks and writes the delta.
pub fn make_delta(
    old: &Path,
    new: &Path,
    key: &SecretKey,
    out: &Path,
    opts: &DeltaOptions,
) -> Result<DeltaReport> {
    let old = Loaded::read(old)?;
    let new = Loaded::read(new)?;
    if old.prefix.digest() == new.prefix.digest() {
        bail!("the two bundles are the same bundle: nothing to update");
    }
    let t = Instant::now();
    let (bytes, sections) = delta_bytes(&old, &new, key, opts)?;
    let make_time = t.elapsed();
    let t = Instant::now();
    self_check(&bytes, &old, opts.window_log_max).context(
        "the delta does not rebuild the new bundle (a kgbox-pack bug; ship the full bundle)",
    )?;
    let apply_time = t.elapsed();
    crate::pack::write_atomically(out, |w| {
        w.write_all(&bytes)?;
        Ok(())
    })?;
    Ok(DeltaReport {
        bytes: bytes.len() as u64,
        full_bytes: new.file_len,
        base: id_of(&old.prefix),
        target: id_of(&new.prefix),
        sections,
        make_time,
        apply_time,
    })
}

/// The report as the command prints it.
pub fn describe(r: &DeltaReport) -> String {
    let mut s = format!(
        "delta {} -> {}: {} bytes, {:.2}% of the full bundle ({} bytes); made in {:.0} ms, applies in {:.0} ms\n",
        r.base,
        r.target,
        r.bytes,
        100.0 * r.bytes as f64 / r.full_bytes.max(1) as f64,
        r.full_bytes,
        r.make_time.as_secs_f64() * 1e3,
        r.apply_time.as_secs_f64() * 1e3,
    );
    s.push_str(&format!(
        "  {:<28} {:<6} {:<13} {:>10} {:>10}\n",
        "section", "op", "transform", "payload", "full"
    ));
    for x in &r.sections {
        let transform = if x.op == Op::Patch {
            x.transform.name()
        } else {
            ""
        };
        s.push_str(&format!(
            "  {:<28} {:<6} {:<13} {:>10} {:>10}\n",
            x.name,
            x.op.name(),
            transform,
            x.payload,
            x.full
        ));
    }
    s
}

/// `kgbox-pack delta OLD.kgb NEW.kgb -o UPDATE.kgbd --key SECRET`.
#[derive(Debug, clap::Args)]
pub struct DeltaArgs {
    /// The bundle the devices run now (the base).
    pub old: std::path::PathBuf,
    /// The bundle they should run.
    pub new: std::path::PathBuf,
    #[arg(short = 'o', long = "out")]
    pub out: std::path::PathBuf,
    /// Secret key file that signs the delta (a key the devices trust).
    #[arg(long)]
    pub key: std::path::PathBuf,
    /// zstd level of the patches (1-22).
    #[arg(long, default_value_t = 19, value_parser = clap::value_parser!(i32).range(1..=22))]
    pub level: i32,
    /// The devices' `limits.zstd_window_log_max`: no patch needs a larger window.
    #[arg(long, default_value_t = 27, value_parser = clap::value_parser!(u32).range(10..=31))]
    pub window_log_max: u32,
    /// Plain patches only (no id-map transforms), for comparison.
    #[arg(long)]
    pub no_transforms: bool,
    /// Print each section's instruction.
    #[arg(long, short)]
    pub verbose: bool,
}

pub fn run(args: &DeltaArgs) -> Result<()> {
    let key = SecretKey::read(&args.key).context("cannot load the signing key")?;
    let opts = DeltaOptions {
        level: args.level,
        window_log_max: args.window_log_max,
        transforms: !args.no_transforms,
        ..DeltaOptions::default()
    };
    let report = make_delta(&args.old, &args.new, &key, &args.out, &opts)?;
    let text = describe(&report);
    if args.verbose {
        print!("{text}");
    } else {
        print!("{}", text.lines().next().unwrap_or_default());
        println!();
    }
    println!(
        "wrote {} (signed by key {})",
        args.out.display(),
        key.public().key_id()
    );
    Ok(())
}
