//! `kgbox bench`: in-process latency of the served bundle's executors on
//! queries drawn from its own graph, and of entity linking over its names.
//!
//! Queries are random walks of 1 to 3 hops from a random entity, along
//! out- or in-edges (`r` or `r_inv`), written as `#id -> r1 -> r2_inv`.
//! A walk is *hub-touching* when an entity on it has a degree above the
//! hub threshold (the degree of the top 0.1% of entities, at least 10
//! times the mean), and *non-hub* otherwise; each kind is drawn until it
//! has its count (or the tries run out). Every query's time covers parse,
//! bind, plan and execute, as `POST /v1/query` runs them.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use kgbox::Config;
use kgbox_bundle::Kg;
use kgbox_qa::rng::SplitMix64 as Rng;
use kgbox_query::bind::INVERSE_SUFFIX;
use kgbox_query::{ExecOptions, Executor};
use serde::Serialize;

use kgbox_protocol::stats::percentile;

/// `kgbox bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Queries per hop count and kind (non-hub, hub-touching).
    #[arg(long, default_value_t = 1000)]
    pub queries: usize,
    /// Names to link (drawn from the entity names and aliases).
    #[arg(long, default_value_t = 1000)]
    pub links: usize,
    /// One-hop neural projections to time (0: none; needs a bundle built
    /// with `--ultra`). SEPPR's k comes from `--seppr-k` or the config.
    #[arg(long, default_value_t = 50)]
    pub neural: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Also write the queries as `<DSL><TAB>answers` lines (the format of
    /// `kgbox eval queries` and `kgbox-load --queries`).
    #[arg(long, value_name = "FILE")]
    pub write_queries: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub source: crate::cmd::BundleArgs,
    #[command(flatten)]
    pub exec: crate::cmd::ExecArgs,
}

#[derive(Debug, Default, Serialize)]
pub struct Micros {
    pub count: usize,
    /// Queries that returned an error (e.g. over the edge-visit budget),
    /// not in the latencies.
    pub errors: usize,
    pub p50: f64,
    pub p95: f64,
    pub mean_answers: f64,
}

#[derive(Debug, Default, Serialize)]
pub struct BenchReport {
    pub entities: usize,
    pub triples: usize,
    pub hub_degree: usize,
    /// `hops_{1,2,3}_{nonhub,hub}`: symbolic query latency in µs.
    pub symbolic: std::collections::BTreeMap<String, Micros>,
    /// Entity linking of one name, µs.
    pub link: Micros,
    /// One neural projection (SEPPR subgraph + model), µs; absent without a model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub neural: Option<Micros>,
    pub seppr_k: usize,
}

fn degree(kg: &Kg<'_>, e: u32) -> usize {
    kg.out.degree(e) + kg.inc.degree(e)
}

/// The hub threshold: the degree of the top 0.1% (from a sample), at
/// least ten times the mean.
fn hub_degree(kg: &Kg<'_>, rng: &mut Rng) -> usize {
    let n = kg.entity_count();
    let mut sample: Vec<usize> = (0..100_000.min(n))
        .map(|_| degree(kg, rng.below(n) as u32))
        .collect();
    sample.sort_unstable();
    let top = sample
        .get(sample.len().saturating_sub(1 + sample.len() / 1000))
        .copied()
        .unwrap_or(0);
    let mean = 2 * kg.triple_count() / n.max(1);
    top.max(10 * mean).max(1)
}

/// A random walk of `hops` edges as a query, and whether it touched a hub.
fn walk(kg: &Kg<'_>, hops: usize, hub: usize, rng: &mut Rng) -> Option<(String, bool)> {
    let n = kg.entity_count();
    let start = rng.below(n) as u32;
    let mut at = start;
    let mut touched = degree(kg, at) > hub;
    let mut text = format!("#{start}");
    for _ in 0..hops {
        let (out_deg, in_deg) = (kg.out.degree(at), kg.inc.degree(at));
        if out_deg + in_deg == 0 {
            return None;
        }
        let k = rng.below(out_deg + in_deg);
        let (rel, next, inverse) = if k < out_deg {
            let (r, t) = kg.out.edges(at);
            (r[k], t[k], false)
        } else {
            let (r, s) = kg.inc.edges(at);
            (r[k - out_deg], s[k - out_deg], true)
        };
        let name = kg.relation_name(rel)?;
        text.push_str(" -> ");
        text.push_str(name);
        if inverse {
            text.push_str(INVERSE_SUFFIX);
        }
        at = next;
        touched |= degree(kg, at) > hub;
    }
    Some((text, touched))
}

fn summarize(mut micros: Vec<f64>, answers: usize, errors: usize) -> Micros {
    micros.sort_by(f64::total_cmp);
    Micros {
        count: micros.len(),
        errors,
        p50: percentile(&micros, 50.0).unwrap_or(0.0),
        p95: percentile(&micros, 95.0).unwrap_or(0.0),
        mean_answers: answers as f64 / micros.len().max(1) as f64,
    }
}

pub fn run(cfg: &Config, args: &BenchArgs) -> Result<()> {
    let bundle = crate::cmd::load_bundle(cfg, &args.source)?;
    let kg = bundle.kg()?;
    anyhow::ensure!(kg.entity_count() > 0, "the bundle's graph is empty");
    let mut rng = Rng::new(args.seed);
    let hub = hub_degree(&kg, &mut rng);
    let limits = cfg.query.parse_limits();
    // The configured options; the executor is the symbolic one.
    let opts: ExecOptions = cfg.query.exec_options();
    let mut report = BenchReport {
        entities: kg.entity_count(),
        triples: kg.triple_count(),
        hub_degree: hub,
        ..BenchReport::default()
    };
    let mut dump = Vec::new();
    for hops in 1..=3 {
        for want_hub in [false, true] {
            let (mut micros, mut answers, mut errors) = (Vec::with_capacity(args.queries), 0, 0);
            let mut tries = 0;
            while micros.len() + errors < args.queries && tries < args.queries * 50 {
                tries += 1;
                let Some((text, touched)) = walk(&kg, hops, hub, &mut rng) else {
                    continue;
                };
                if touched != want_hub {
                    continue;
                }
                let t = Instant::now();
                let run = kgbox_query::run_query(&kg, &text, &limits, &opts);
                let elapsed = t.elapsed().as_secs_f64() * 1e6;
                let Ok((found, _)) = run else {
                    errors += 1;
                    continue;
                };
                micros.push(elapsed);
                answers += found.answers.len();
                if args.write_queries.is_some() {
                    let names: Vec<&str> = found
                        .answers
                        .iter()
                        .filter_map(|a| kg.entity_name(a.entity))
                        .collect();
                    dump.push(format!("{text}\t{}", names.join("|")));
                }
            }
            let kind = if want_hub { "hub" } else { "nonhub" };
            report.symbolic.insert(
                format!("hops_{hops}_{kind}"),
                summarize(micros, answers, errors),
            );
        }
    }
    if let Some(path) = &args.write_queries {
        std::fs::write(path, dump.join("\n") + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }

    // Linking: names and aliases drawn uniformly from all entities.
    let link_opts = kgbox_query::link::LinkOptions::default();
    let (mut micros, mut found) = (Vec::with_capacity(args.links), 0);
    for _ in 0..args.links {
        let e = rng.below(kg.entity_count()) as u32;
        let alias = kg.aliases(e).next();
        let name = match alias {
            Some(a) if rng.below(4) == 0 => a,
            _ => kg.entity_name(e).unwrap_or_default(),
        };
        let t = Instant::now();
        let mentions = kgbox_query::link::link_text(&kg, name, &link_opts);
        micros.push(t.elapsed().as_secs_f64() * 1e6);
        found += usize::from(
            mentions
                .iter()
                .any(|m| m.candidates.iter().any(|c| c.entity == e)),
        );
    }
    report.link = summarize(micros, found, 0);

    let exec = args.exec.apply(&cfg.executor);
    report.seppr_k = exec.seppr_k;
    if args.neural > 0 {
        let model = kgbox::service::executors::load_model(&bundle, &exec)
            .map_err(|e| anyhow::anyhow!("cannot load the bundle's neural model: {e}"))?;
        if let Some(model) = model {
            let projector = kgbox::service::executors::projector(
                &kg,
                Some(&model),
                Executor::Neural,
                exec.seppr(exec.seppr_k),
            );
            let mut neural = opts.clone();
            neural.executor = Executor::Neural;
            let (mut micros, mut answers, mut errors) = (Vec::new(), 0, 0);
            let mut tries = 0;
            while micros.len() + errors < args.neural && tries < args.neural * 50 {
                tries += 1;
                let Some((text, false)) = walk(&kg, 1, hub, &mut rng) else {
                    continue;
                };
                let t = Instant::now();
                let run = kgbox_query::run_query_with(
                    &kg,
                    &text,
                    &limits,
                    &neural,
                    projector.as_ref().map(|p| p as &dyn kgbox_query::Projector),
                );
                let elapsed = t.elapsed().as_secs_f64() * 1e6;
                match run {
                    Ok((found, _)) => {
                        micros.push(elapsed);
                        answers += found.answers.len();
                    }
                    Err(_) => errors += 1,
                }
            }
            report.neural = Some(summarize(micros, answers, errors));
        }
    }

    if args.json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    println!(
        "{} entities, {} triples; hub: degree > {}",
        report.entities, report.triples, report.hub_degree
    );
    println!("| what | count | errors | p50 µs | p95 µs | mean answers |");
    println!("|---|---:|---:|---:|---:|---:|");
    let row = |what: &str, m: &Micros| {
        println!(
            "| {what} | {} | {} | {:.1} | {:.1} | {:.1} |",
            m.count, m.errors, m.p50, m.p95, m.mean_answers
        )
    };
    for (k, m) in &report.symbolic {
        row(&format!("symbolic {k}"), m);
    }
    row("link one name (mean answers: found rate)", &report.link);
    if let Some(m) = &report.neural {
        row(&format!("neural 1-hop, SEPPR k = {}", report.seppr_k), m);
    }
    Ok(())
}
