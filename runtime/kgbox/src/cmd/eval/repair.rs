//! `kgbox eval repair`: query repair over gold queries (`DSL<TAB>ans|ans`).
//!
//! Relax (default): for every query with no answers on the bundle, relax
//! it and score the recovered answers against the gold ones. Tighten
//! (`--tighten`): for every query with more than `--max-answers` answers,
//! tighten it by the constraints its answers share and report how much of
//! the gold set the tightened query keeps.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Result;
use kgbox::Config;
use kgbox_query::repair::{RepairKind, RepairOptions, RepairReport};
use serde::Serialize;

use super::{read_gold, sample_evenly};
use kgbox_protocol::stats::percentile;

/// `kgbox eval repair`.
#[derive(Debug, clap::Args)]
pub struct RepairEvalArgs {
    #[arg(long)]
    pub queries: PathBuf,
    /// Only the first N queries.
    #[arg(long, conflicts_with = "sample")]
    pub limit: Option<usize>,
    /// N queries spread evenly over the file.
    #[arg(long)]
    pub sample: Option<usize>,
    /// Tighten queries with too many answers instead of relaxing empty ones.
    #[arg(long)]
    pub tighten: bool,
    #[arg(long, default_value_t = 50)]
    pub max_answers: usize,
    #[arg(long, default_value_t = 4)]
    pub beam: usize,
    #[arg(long, default_value_t = 2)]
    pub max_edits: usize,
    /// Smallest type fit of a replacement relation.
    #[arg(long, default_value_t = 0.5)]
    pub min_fit: f32,
    /// Print the first N repairs to stderr (examples).
    #[arg(long, default_value_t = 0)]
    pub examples: usize,
    #[command(flatten)]
    pub source: crate::cmd::BundleArgs,
}

#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub file: String,
    pub mode: &'static str,
    pub queries: usize,
    /// Queries that do not bind (an entity or relation the bundle lacks).
    pub invalid: usize,
    /// Relax: queries with no answers; tighten: with more than max_answers.
    pub needing_repair: usize,
    /// A repaired query with answers was found.
    pub repaired: usize,
    /// Relax: among repaired, the top answer is a gold answer.
    pub hits_at_1: f64,
    /// Among repaired, mean share of their answers that are gold answers.
    pub precision: f64,
    /// Among repaired, mean share of the gold answers they return.
    pub recall: f64,
    /// Among repaired, at least one gold answer.
    pub any_gold: f64,
    pub answers_before_mean: f64,
    pub answers_after_mean: f64,
    /// Edits of the chosen repairs, by kind ("dropped", "replaced", "added").
    pub edits: BTreeMap<String, usize>,
    pub candidates_mean: f64,
    pub exhausted: usize,
    pub repair_ms_p50: f64,
    pub repair_ms_p95: f64,
}

pub fn run(cfg: &Config, args: &RepairEvalArgs) -> Result<()> {
    let bundle = crate::cmd::load_bundle(cfg, &args.source)?;
    let kg = bundle.kg()?;
    let mut gold = read_gold(&args.queries)?;
    if let Some(n) = args.limit {
        gold.truncate(n);
    }
    if let Some(n) = args.sample {
        gold = sample_evenly(gold, n);
    }
    let limits = cfg.query.parse_limits();
    let exec = cfg.query.every_answer();
    let ropts = RepairOptions {
        beam: args.beam,
        max_edits: args.max_edits,
        min_fit: args.min_fit,
        tighten: args.tighten,
        max_answers: args.max_answers.max(1),
        ..RepairOptions::default()
    };
    let bar = super::progress_bar(gold.len() as u64, "eval repair");
    let mut r = Report {
        file: args.queries.display().to_string(),
        mode: if args.tighten { "tighten" } else { "relax" },
        queries: gold.len(),
        ..Report::default()
    };
    let (mut times, mut examples) = (Vec::new(), 0usize);
    let (mut h1, mut prec, mut rec, mut any) = (0usize, 0.0f64, 0.0f64, 0usize);
    let (mut before_sum, mut after_sum, mut cand_sum) = (0usize, 0usize, 0usize);
    for (_, query, answers) in &gold {
        bar.inc(1);
        let Ok((found, _)) = kgbox_query::run_query(&kg, query, &limits, &exec) else {
            r.invalid += 1;
            continue;
        };
        let needs = if args.tighten {
            found.total > ropts.max_answers
        } else {
            found.total == 0
        };
        if !needs {
            continue;
        }
        r.needing_repair += 1;
        let report = match kgbox_query::repair::repair_text(
            &kg,
            query,
            found.total,
            &[],
            &limits,
            &exec,
            &ropts,
        ) {
            Ok(Some(rep)) => rep,
            Ok(None) | Err(_) => continue,
        };
        times.push(report.ms);
        cand_sum += report.candidates;
        r.exhausted += usize::from(report.exhausted);
        let Some(text) = report.repaired.as_deref() else {
            continue;
        };
        let Ok((after, _)) = kgbox_query::run_query(&kg, text, &limits, &exec) else {
            continue;
        };
        if after.total == 0 {
            continue;
        }
        r.repaired += 1;
        before_sum += report.answers_before;
        after_sum += after.total;
        for e in &report.edits {
            let kind = e.split_whitespace().next().unwrap_or("?").to_string();
            *r.edits.entry(kind).or_default() += 1;
        }
        let names: Vec<&str> = after
            .answers
            .iter()
            .filter_map(|a| kg.entity_name(a.entity))
            .collect();
        let hits = names.iter().filter(|n| answers.contains(**n)).count();
        h1 += usize::from(names.first().is_some_and(|n| answers.contains(*n)));
        prec += hits as f64 / names.len().max(1) as f64;
        rec += hits as f64 / answers.len().max(1) as f64;
        any += usize::from(hits > 0);
        if examples < args.examples {
            examples += 1;
            bar.suspend(|| print_example(&report, hits, names.len()));
        }
    }
    bar.finish_and_clear();
    let n = r.repaired.max(1) as f64;
    r.hits_at_1 = h1 as f64 / n;
    r.precision = prec / n;
    r.recall = rec / n;
    r.any_gold = any as f64 / n;
    r.answers_before_mean = before_sum as f64 / n;
    r.answers_after_mean = after_sum as f64 / n;
    r.candidates_mean = cand_sum as f64 / times.len().max(1) as f64;
    times.sort_by(f64::total_cmp);
    r.repair_ms_p50 = percentile(&times, 50.0).unwrap_or(0.0);
    r.repair_ms_p95 = percentile(&times, 95.0).unwrap_or(0.0);
    println!("{}", serde_json::to_string(&r)?);
    Ok(())
}

fn print_example(r: &RepairReport, hits: usize, n: usize) {
    let verb = match r.kind {
        RepairKind::Relax => "relaxed",
        RepairKind::Tighten => "tightened",
    };
    eprintln!(
        "{verb} {} ({} answers)\n  -> {} ({} answers, {hits} gold)",
        r.original,
        r.answers_before,
        r.repaired.as_deref().unwrap_or("-"),
        n
    );
    for e in &r.edits {
        eprintln!("     {e}");
    }
}
