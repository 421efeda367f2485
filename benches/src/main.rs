//! `kgbox-perf`: the foundation performance figures in one command.
//!
//! ```text
//! cargo build --release -p kgbox
//! cargo run --release -p kgbox-benches --bin kgbox-perf -- --kb $DATA/metaqa/kb.tsv [--runs N] [--json]
//! ```
//!
//! Packs the KB in-process (median of N), compares the bundle with `zstd -19`
//! of the TSV, installs it with the `kgbox` binary next to this one (median
//! of N, fresh data dir each time), then starts `kgbox serve` N times and
//! measures spawn-to-first-`200`-from-`/readyz` and resident memory once
//! ready and after a few hundred entity lookups. Progress goes to stderr,
//! the report to stdout. Every temporary file lives in one temporary
//! directory, removed at the end; servers are stopped on every path
//! (SIGINT/SIGTERM/SIGHUP included; not SIGKILL).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;

use kgbox_benches::proc::{self, load_average};
use kgbox_benches::{measure, report};

#[derive(Parser)]
#[command(
    name = "kgbox-perf",
    about = "Measure pack time, bundle size, install time, cold start and RSS of kgbox"
)]
struct Args {
    /// The KB: TSV `head<TAB>relation<TAB>tail` (e.g. $DATA/metaqa/kb.tsv, where $DATA holds the data sets).
    #[arg(long)]
    kb: PathBuf,
    /// Runs of each timed step (pack, install, serve).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,
    /// Print a JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// Entity lookups per serve run before the second RSS reading.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    requests: u32,
    /// The `kgbox` binary (default: next to this executable).
    #[arg(long)]
    kgbox: Option<PathBuf>,
}

/// How many distinct heads to cycle through for entity lookups.
const ENTITY_SAMPLE: usize = 300;

fn step(msg: &str) {
    eprintln!("kgbox-perf: {msg}");
}

fn run(args: Args) -> Result<()> {
    let kgbox = proc::find_kgbox(args.kgbox, "kgbox-perf")?;
    let load_before = load_average();
    let kb: &Path = &args.kb;
    let runs = args.runs as usize;
    let tsv = std::fs::read(kb).with_context(|| format!("reading {}", kb.display()))?;
    let tsv_bytes = tsv.len() as u64;
    step(&format!("zstd -19 of {} ({tsv_bytes} bytes)", kb.display()));
    let zstd19_bytes = measure::zstd19_size(&tsv)?;
    drop(tsv);

    let work = tempfile::Builder::new()
        .prefix("kgbox-perf-")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let key = measure::signing_key();
    let pub_key = work.path().join("kgbox-perf.pub");
    std::fs::write(&pub_key, key.public().to_text())?;
    let bundle = work.path().join("kb.kgb");

    step(&format!("pack x {runs}"));
    let pack = measure::pack_runs(kb, &key, &bundle, runs)?;

    step(&format!("install x {runs} ({})", kgbox.display()));
    let (install, installed) = measure::install_runs(&kgbox, work.path(), &bundle, &pub_key, runs)?;
    step(&format!(
        "installed image {} ({} bytes)",
        installed.image.display(),
        installed.image_bytes
    ));

    let names = measure::sample_heads(kb, ENTITY_SAMPLE)?;
    step(&format!(
        "serve x {runs} ({} entity GETs each over {} heads)",
        args.requests,
        names.len()
    ));
    let mut serve = Vec::with_capacity(runs);
    for i in 0..runs {
        proc::check_interrupted()?;
        let log = work.path().join(format!("serve-{i}.log"));
        let r = measure::serve_run(
            &kgbox,
            &installed.config,
            &log,
            &names,
            args.requests as usize,
        )
        .with_context(|| format!("serve run {}", i + 1))?;
        serve.push(r);
    }

    let figures = report::Figures {
        kb: kb.display().to_string(),
        runs,
        kgbox: kgbox.display().to_string(),
        pack,
        tsv_bytes,
        zstd19_bytes,
        install,
        image_bytes: installed.image_bytes,
        image_allocated: installed.image_allocated,
        serve,
        entity_names: names.len(),
        load_before,
        load_after: load_average(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report::json(&figures))?);
    } else {
        print!("{}", report::markdown(&figures));
    }
    work.close().context("removing the temporary directory")?;
    Ok(())
}

fn main() -> ExitCode {
    proc::catch_interrupts();
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kgbox-perf: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
