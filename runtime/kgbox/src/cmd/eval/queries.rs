//! `kgbox eval queries`: gold DSL queries with their answers; Hits@1/10,
//! F1, exact match and latency.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use kgbox::service::executors::{Executors, RunOptions};
use kgbox::Config;
use serde::Serialize;

use super::{read_gold, sample_evenly, Latency};
use kgbox_protocol::stats::percentile;

/// `kgbox eval queries`: lines `<DSL><TAB>ans1|ans2|...`.
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    #[arg(long)]
    pub file: PathBuf,
    /// Only the first N queries.
    #[arg(long, conflicts_with = "sample")]
    pub limit: Option<usize>,
    /// N queries spread evenly over the file (every len/N-th).
    #[arg(long)]
    pub sample: Option<usize>,
    /// Answers scoring at least this form the predicted set for F1 and
    /// exact match (default: any score for symbolic, 0.5 for neural and
    /// hybrid: the fused membership is a probability of being an answer).
    #[arg(long)]
    pub threshold: Option<f32>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub source: crate::cmd::BundleArgs,
    #[command(flatten)]
    pub exec: crate::cmd::ExecArgs,
}

#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub file: String,
    pub executor: String,
    pub engine: String,
    pub seppr_k: usize,
    pub queries: usize,
    pub errors: usize,
    pub hits_at_1: f64,
    pub hits_at_10: f64,
    pub f1: f64,
    pub exact_match: f64,
    pub latency_ms: Latency,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub first_errors: Vec<String>,
}

pub fn run(cfg: &Config, args: &EvalArgs) -> Result<()> {
    let bundle = crate::cmd::load_bundle(cfg, &args.source)?;
    let kg = bundle.kg()?;
    let mut gold = read_gold(&args.file)?;
    if let Some(n) = args.limit {
        gold.truncate(n);
    }
    if let Some(n) = args.sample {
        gold = sample_evenly(gold, n);
    }
    let exec = args.exec.apply(&cfg.executor);
    let model = crate::cmd::load_model(&bundle, &exec, false)?;
    let threshold = args.threshold.unwrap_or(match exec.mode {
        kgbox_query::Executor::Symbolic | kgbox_query::Executor::SparqlStore => f32::MIN_POSITIVE,
        kgbox_query::Executor::Neural | kgbox_query::Executor::Hybrid => 0.5,
    });
    let engine = match &model {
        Some(m) => format!("{}/{}", m.engine_name(), m.device()),
        None => "-".into(),
    };
    let store =
        kgbox::sparql_store::SparqlStore::for_bundle(&cfg.sparql_store, &bundle.manifest().name);
    let executors = Executors::new(exec.clone(), model, store);
    let limits = cfg.query.parse_limits();
    // Every answer, ranked, without provenance: the same work a graph
    // database does for `RETURN DISTINCT`, so latencies compare with peers.
    // (More answers than a request may ask for: the options are set here.)
    let full = RunOptions {
        exec: kgbox_query::ExecOptions {
            executor: exec.mode,
            ..cfg.query.every_answer()
        },
        seppr: exec.seppr(exec.seppr_k),
    };
    let mut r = Report {
        file: args.file.display().to_string(),
        executor: exec.mode.to_string(),
        engine,
        seppr_k: exec.seppr_k,
        queries: gold.len(),
        ..Report::default()
    };
    let mut latencies = Vec::with_capacity(gold.len());
    let (mut h1, mut h10, mut f1, mut exact) = (0usize, 0usize, 0.0f64, 0usize);
    for (line, query, answers) in &gold {
        let t = Instant::now();
        let all = executors.run(&kg, query, &limits, &full);
        latencies.push(t.elapsed().as_secs_f64() * 1e3);
        let all = match all {
            Ok((a, _)) => a,
            Err(e) => {
                r.errors += 1;
                if r.first_errors.len() < 5 {
                    r.first_errors.push(format!("line {line}: {e}"));
                }
                continue;
            }
        };
        let ranked: Vec<&str> = all
            .answers
            .iter()
            .filter_map(|a| kg.entity_name(a.entity))
            .collect();
        h1 += usize::from(ranked.first().is_some_and(|n| answers.contains(*n)));
        h10 += usize::from(ranked.iter().take(10).any(|n| answers.contains(*n)));
        let predicted: HashSet<&str> = all
            .answers
            .iter()
            .filter(|a| a.score >= threshold)
            .filter_map(|a| kg.entity_name(a.entity))
            .collect();
        let hit = predicted.iter().filter(|p| answers.contains(**p)).count() as f64;
        if hit > 0.0 {
            let (p, rc) = (hit / predicted.len() as f64, hit / answers.len() as f64);
            f1 += 2.0 * p * rc / (p + rc);
        }
        exact += usize::from(predicted.len() == answers.len() && hit as usize == answers.len());
    }
    let n = gold.len().max(1) as f64;
    r.hits_at_1 = h1 as f64 / n;
    r.hits_at_10 = h10 as f64 / n;
    r.f1 = f1 / n;
    r.exact_match = exact as f64 / n;
    latencies.sort_by(f64::total_cmp);
    r.latency_ms = Latency {
        p50: percentile(&latencies, 50.0).unwrap_or(0.0),
        p95: percentile(&latencies, 95.0).unwrap_or(0.0),
        p99: percentile(&latencies, 99.0).unwrap_or(0.0),
        mean: latencies.iter().sum::<f64>() / n,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        println!(
            "{}: {} queries, {} errors ({} executor{})",
            r.file,
            r.queries,
            r.errors,
            r.executor,
            if executors.model.is_some() {
                format!(", {}, SEPPR k={}", r.engine, r.seppr_k)
            } else {
                String::new()
            }
        );
        println!(
            "Hits@1 {:.4}  Hits@10 {:.4}  F1 {:.4}  exact-set {:.4}",
            r.hits_at_1, r.hits_at_10, r.f1, r.exact_match
        );
        println!(
            "latency ms (parse+bind+execute, all answers ranked): p50 {:.4}  p95 {:.4}  p99 {:.4}  mean {:.4}",
            r.latency_ms.p50, r.latency_ms.p95, r.latency_ms.p99, r.latency_ms.mean
        );
        for e in &r.first_errors {
            println!("error: {e}");
        }
    }
    Ok(())
}
