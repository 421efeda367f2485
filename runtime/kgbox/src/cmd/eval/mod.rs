//! `kgbox eval ...`: one module per gold-data evaluation, and the file
//! readers and statistics they share.

pub mod features;
pub mod kgc;
pub mod qa;
pub mod queries;
pub mod repair;
pub mod sparql_store;

use std::collections::HashSet;
use std::path::Path;

use anyhow::{Context, Result};
use kgbox::Config;
use serde::Serialize;

/// `kgbox eval`: evaluate against gold data.
#[derive(Debug, clap::Subcommand)]
pub enum EvalCommand {
    /// Gold queries: lines `<DSL><TAB>ans1|ans2|...`; prints Hits@1/10, F1, latency.
    Queries(queries::EvalArgs),
    /// Questions with their answers (MetaQA or PathQuestion files): Hits@1,
    /// answer-set F1 and latency per stage.
    Qa(qa::EvalQaArgs),
    /// Query repair over gold queries (`<DSL><TAB>ans1|ans2|...`): relax the
    /// queries with no answers (or, with --tighten, tighten those with more
    /// than --max-answers) and score the repaired answers; one JSON line.
    Repair(repair::RepairEvalArgs),
    /// Link prediction with the bundle's ULTRA model: MRR and Hits@1/3/10,
    /// filtered, head and tail queries, over every entity.
    Kgc(kgc::KgcArgs),
    /// The `sparql_store` executor against the local one: each query (one
    /// per line; text after a tab is ignored) runs both ways through the
    /// query service; prints mismatches, counts and p50/p95 latency of both.
    SparqlStore(sparql_store::SparqlStoreArgs),
}

/// Runs one evaluation.
pub fn run(cfg: &Config, command: &EvalCommand) -> Result<()> {
    match command {
        EvalCommand::Queries(args) => queries::run(cfg, args),
        EvalCommand::Qa(args) => qa::run(cfg, args),
        EvalCommand::Repair(args) => repair::run(cfg, args),
        EvalCommand::Kgc(args) => kgc::run(cfg, args),
        EvalCommand::SparqlStore(args) => sparql_store::run(cfg, args),
    }
}

/// Latency percentiles by the nearest-rank rule of
/// [`kgbox_protocol::stats::percentile`], and the mean.
#[derive(Debug, Default, Serialize)]
pub struct Latency {
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub mean: f64,
}

/// The progress bar of an eval on stderr: items done, rate and time left
/// (drawn only on a terminal).
pub fn progress_bar(len: u64, message: &'static str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(len);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({per_sec}, {eta})")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(message);
    bar
}

/// `n` items spread evenly over `items` (all of them when `n >= len`).
pub fn sample_evenly<T>(items: Vec<T>, n: usize) -> Vec<T> {
    let len = items.len();
    if n == 0 || n >= len {
        return items;
    }
    items
        .into_iter()
        .enumerate()
        .filter(|(i, _)| (i * n) % len < n)
        .map(|p| p.1)
        .collect()
}

/// The data lines of a text file with their 1-based numbers: blank lines
/// and `#` comments are skipped, a trailing `\r` is dropped.
pub fn data_lines(path: &Path) -> Result<Vec<(usize, String)>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim_end_matches('\r')))
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|(n, l)| (n, l.to_string()))
        .collect())
}

pub fn read_gold(path: &Path) -> Result<Vec<(usize, String, HashSet<String>)>> {
    let mut out = Vec::new();
    for (n, line) in data_lines(path)? {
        let (query, answers) = line.split_once('\t').with_context(|| {
            format!(
                "{}:{}: expected `<query><TAB>ans1|ans2|...`",
                path.display(),
                n
            )
        })?;
        let gold = answers
            .split('|')
            .map(str::to_string)
            .filter(|a| !a.is_empty())
            .collect();
        out.push((n, query.to_string(), gold));
    }
    Ok(out)
}
