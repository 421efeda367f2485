//! `kgbox eval kgc`: link prediction with the bundle's ULTRA model.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use kgbox::Config;
use kgbox_bundle::Kg;
use kgbox_neural::kgc;
use kgbox_neural::subgraph::Subgraph;

/// `kgbox eval kgc`.
#[derive(Debug, clap::Args)]
pub struct KgcArgs {
    /// Test facts, `head<TAB>relation<TAB>tail` (names as in the bundle).
    #[arg(long)]
    pub test: PathBuf,
    /// Known facts to filter from the ranking (e.g. train and valid); the
    /// test facts always are.
    #[arg(long)]
    pub filter: Vec<PathBuf>,
    /// Only the first N test facts.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Queries per model run.
    #[arg(long, default_value_t = 4)]
    pub batch: usize,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub source: crate::cmd::BundleArgs,
    #[command(flatten)]
    pub exec: crate::cmd::ExecArgs,
}

/// Facts of a `head<TAB>relation<TAB>tail` file as ids. With `strict`, a name
/// the bundle lacks is an error; otherwise the fact is skipped and counted.
fn read_facts(kg: &Kg<'_>, path: &Path, strict: bool) -> Result<(Vec<[u32; 3]>, usize)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut facts = Vec::new();
    let mut skipped = 0;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let parts: Vec<&str> = line.split('\t').collect();
        let [h, r, t] = parts[..] else {
            bail!(
                "{}:{}: expected `head<TAB>relation<TAB>tail`",
                path.display(),
                i + 1
            );
        };
        match (kg.entity_id(h), kg.relation_id(r), kg.entity_id(t)) {
            (Some(h), Some(r), Some(t)) => facts.push([h, r, t]),
            _ if strict => bail!(
                "{}:{}: the bundle has no entity or relation named in {line:?}",
                path.display(),
                i + 1
            ),
            _ => skipped += 1,
        }
    }
    Ok((facts, skipped))
}

pub fn run(cfg: &Config, args: &KgcArgs) -> Result<()> {
    let bundle = crate::cmd::load_bundle(cfg, &args.source)?;
    let kg = bundle.kg()?;
    let exec = args.exec.apply(&cfg.executor);
    let model = crate::cmd::load_model(&bundle, &exec, true)?
        .context("the bundle has no neural query model")?;
    let (mut test, _) = read_facts(&kg, &args.test, true)?;
    if let Some(n) = args.limit {
        test.truncate(n);
    }
    let mut filter = Vec::new();
    let mut skipped = 0;
    for f in &args.filter {
        let (facts, s) = read_facts(&kg, f, false)?;
        filter.extend(facts);
        skipped += s;
    }
    let graph = Subgraph::full(&kg);
    let t0 = Instant::now();
    // Head and tail queries of each test triple.
    let bar = match args.json {
        true => indicatif::ProgressBar::hidden(),
        false => super::progress_bar((test.len() * 2) as u64, "eval kgc"),
    };
    let report = kgc::evaluate(
        &model,
        &graph,
        kg.relation_count(),
        &test,
        &filter,
        args.batch,
        |done| bar.set_position(done as u64),
    )?;
    bar.finish_and_clear();
    let seconds = t0.elapsed().as_secs_f64();
    let engine = format!("{}/{}", model.engine_name(), model.device());
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "test": args.test.display().to_string(),
                "checkpoint": model.meta().checkpoint,
                "engine": engine,
                "queries": report.queries,
                "mrr": report.mrr,
                "mean_rank": report.mean_rank,
                "hits_at_1": report.hits_at_1,
                "hits_at_3": report.hits_at_3,
                "hits_at_10": report.hits_at_10,
                "filter_facts": filter.len(),
                "filter_skipped": skipped,
                "seconds": seconds,
            }))?
        );
        return Ok(());
    }
    println!(
        "{}: {} queries (head and tail), {} on the full graph ({} nodes, {} message edges), checkpoint {}",
        args.test.display(),
        report.queries,
        engine,
        graph.nodes.len(),
        graph.edge_count(),
        model.meta().checkpoint
    );
    println!(
        "MRR {:.4}  Hits@1 {:.4}  Hits@3 {:.4}  Hits@10 {:.4}  MR {:.1}",
        report.mrr, report.hits_at_1, report.hits_at_3, report.hits_at_10, report.mean_rank
    );
    println!(
        "filter: {} facts{}; {:.1} s ({:.1} ms per query)",
        filter.len(),
        if skipped > 0 {
            format!(" ({skipped} skipped: names not in the bundle)")
        } else {
            String::new()
        },
        seconds,
        seconds * 1e3 / report.queries.max(1) as f64
    );
    Ok(())
}
