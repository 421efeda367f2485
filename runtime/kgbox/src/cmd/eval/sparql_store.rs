//! `kgbox eval sparql-store`: the cross-check of the `sparql_store`
//! executor. Each query runs through the query service (`POST /v1/query`'s
//! `answer`) twice, with the local symbolic executor and on the store, and
//! the answers (ids, names, scores, order, paths) and totals must be equal;
//! prints the mismatches, the counts and the latency of both.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use kgbox::config::SparqlStoreConfig;
use kgbox::service::executors::{Executors, Paths};
use kgbox::service::query::{answer, QueryRequest, QueryResponse, QueryTarget};
use kgbox::service::RequestError;
use kgbox::sparql_store::SparqlStore;
use kgbox::Config;
use kgbox_query::repair::RepairMode;
use kgbox_query::Executor;
use serde::Serialize;

use super::{data_lines, sample_evenly, Latency};
use kgbox_protocol::stats::percentile;

/// `kgbox eval sparql-store --queries FILE`.
#[derive(Debug, clap::Args)]
pub struct SparqlStoreArgs {
    /// DSL queries, one per line; text after a tab (gold answers) is ignored.
    #[arg(long)]
    pub queries: PathBuf,
    /// The store's SPARQL endpoint (default: the configured one for the bundle).
    #[arg(long)]
    pub endpoint: Option<String>,
    /// The store's timeout, milliseconds (default: `sparql_store.timeout_ms`).
    #[arg(long)]
    pub timeout_ms: Option<u64>,
    /// Answers compared per query (default: `query.top_k`).
    #[arg(long)]
    pub top_k: Option<usize>,
    /// Provenance paths compared per answer (default: `query.max_paths`).
    #[arg(long)]
    pub paths: Option<usize>,
    /// Keep anchors (`include_anchors`).
    #[arg(long)]
    pub include_anchors: bool,
    /// Only the first N queries.
    #[arg(long, conflicts_with = "sample")]
    pub limit: Option<usize>,
    /// N queries spread evenly over the file.
    #[arg(long)]
    pub sample: Option<usize>,
    /// Mismatches printed in full (all are counted).
    #[arg(long, default_value_t = 10)]
    pub show: usize,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub source: crate::cmd::BundleArgs,
}

#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub file: String,
    pub endpoint: String,
    pub queries: usize,
    /// Same answers, totals and paths (or the same error code on both sides).
    pub agree: usize,
    pub mismatches: usize,
    /// Queries that failed on both sides with the same code.
    pub both_failed: usize,
    pub answers_compared: usize,
    pub local_ms: Latency,
    pub store_ms: Latency,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub first_mismatches: Vec<String>,
}

pub fn run(cfg: &Config, args: &SparqlStoreArgs) -> Result<()> {
    let bundle = crate::cmd::load_bundle(cfg, &args.source)?;
    let kg = bundle.kg()?;
    let mut queries: Vec<(usize, String)> = data_lines(&args.queries)?
        .into_iter()
        .map(|(n, l)| (n, l.split('\t').next().unwrap_or("").to_string()))
        .collect();
    if let Some(n) = args.limit {
        queries.truncate(n);
    }
    if let Some(n) = args.sample {
        queries = sample_evenly(queries, n);
    }
    let name = bundle.manifest().name.clone();
    let mut store_cfg: SparqlStoreConfig = cfg.sparql_store.clone();
    if let Some(e) = &args.endpoint {
        store_cfg.bundles.remove(&name);
        store_cfg.endpoint = Some(e.clone());
    }
    if let Some(t) = args.timeout_ms {
        store_cfg.timeout_ms = t;
        for o in store_cfg.bundles.values_mut() {
            o.timeout_ms = Some(t);
        }
    }
    let store = SparqlStore::for_bundle(&store_cfg, &name);
    if let Some(why) = store.unavailable() {
        anyhow::bail!("{why}; give --endpoint URL");
    }
    let endpoint = store.endpoint().unwrap_or("").to_string();
    let executors = Executors::new(cfg.executor.clone(), None, store);
    let target = QueryTarget {
        kg: &kg,
        executors: &executors,
        query: &cfg.query,
    };
    let request = |query: &str, executor: Executor| QueryRequest {
        query: query.to_string(),
        top_k: args.top_k,
        paths: args.paths.map(Paths::Count),
        include_anchors: args.include_anchors,
        executor: Some(executor),
        repair: RepairMode::Off,
        ..QueryRequest::default()
    };
    let mut r = Report {
        file: args.queries.display().to_string(),
        endpoint,
        queries: queries.len(),
        ..Report::default()
    };
    let (mut local_ms, mut store_ms) = (Vec::new(), Vec::new());
    for (line, query) in &queries {
        let t = Instant::now();
        let local = answer(&target, request(query, Executor::Symbolic), None);
        local_ms.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let remote = answer(&target, request(query, Executor::SparqlStore), None);
        store_ms.push(t.elapsed().as_secs_f64() * 1e3);
        let difference = match (&local, &remote) {
            (Ok(a), Ok(b)) => {
                r.answers_compared += a.answers.len();
                compare(a, b)?
            }
            (Err(a), Err(b)) if same_failure(a, b) => {
                r.both_failed += 1;
                None
            }
            (Err(a), Err(b)) => Some(format!("local failed with {a}, the store with {b}")),
            (Err(a), Ok(_)) => Some(format!("local failed with {a}, the store answered")),
            (Ok(_), Err(b)) => Some(format!("the store failed: {b}")),
        };
        match difference {
            None => r.agree += 1,
            Some(d) => {
                r.mismatches += 1;
                if r.first_mismatches.len() < args.show {
                    r.first_mismatches
                        .push(format!("line {line}: {query}: {d}"));
                }
            }
        }
    }
    r.local_ms = latency(local_ms);
    r.store_ms = latency(store_ms);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(());
    }
    for m in &r.first_mismatches {
        println!("mismatch {m}");
    }
    println!(
        "{}: {} queries on {} ({}): {} agree, {} mismatches ({} failed alike on both sides); {} answers compared",
        r.file, r.queries, r.endpoint, name, r.agree, r.mismatches, r.both_failed, r.answers_compared
    );
    for (who, l) in [
        ("local symbolic", &r.local_ms),
        ("sparql_store  ", &r.store_ms),
    ] {
        println!(
            "{who} ms per query: p50 {:.3}  p95 {:.3}  p99 {:.3}  mean {:.3}",
            l.p50, l.p95, l.p99, l.mean
        );
    }
    Ok(())
}

/// The first difference between two responses' answers and totals.
fn compare(local: &QueryResponse, store: &QueryResponse) -> Result<Option<String>> {
    if local.total != store.total {
        return Ok(Some(format!(
            "total {} locally, {} on the store",
            local.total, store.total
        )));
    }
    if local.answers.len() != store.answers.len() {
        return Ok(Some(format!(
            "{} answers locally, {} on the store",
            local.answers.len(),
            store.answers.len()
        )));
    }
    for (i, (a, b)) in local.answers.iter().zip(&store.answers).enumerate() {
        let (a, b) = (serde_json::to_value(a)?, serde_json::to_value(b)?);
        if a != b {
            return Ok(Some(format!(
                "answer {}: {a} locally, {b} on the store",
                i + 1
            )));
        }
    }
    Ok(None)
}

fn latency(mut ms: Vec<f64>) -> Latency {
    ms.sort_by(f64::total_cmp);
    let n = ms.len().max(1) as f64;
    Latency {
        p50: percentile(&ms, 50.0).unwrap_or(0.0),
        p95: percentile(&ms, 95.0).unwrap_or(0.0),
        p99: percentile(&ms, 99.0).unwrap_or(0.0),
        mean: ms.iter().sum::<f64>() / n,
    }
}

/// Whether both executors failed the same way: the same kind of error, and
/// for a query that did not bind or run, the same diagnostic or failure.
fn same_failure(a: &RequestError, b: &RequestError) -> bool {
    use kgbox_query::QueryError;
    use std::mem::discriminant;
    match (a, b) {
        (
            RequestError::Query(QueryError::Invalid(a)),
            RequestError::Query(QueryError::Invalid(b)),
        ) => a.kind == b.kind,
        (RequestError::Query(QueryError::Exec(a)), RequestError::Query(QueryError::Exec(b))) => {
            discriminant(a) == discriminant(b)
        }
        _ => discriminant(a) == discriminant(b),
    }
}
