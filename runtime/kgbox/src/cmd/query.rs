//! `kgbox query`.

use anyhow::Result;
use kgbox::service::executors::{Executors, Paths};
use kgbox::service::query::{answer, QueryRequest, QueryTarget};
use kgbox::sparql_store::SparqlStore;
use kgbox::Config;

/// `kgbox query QUERY`.
#[derive(Debug, clap::Args)]
pub struct QueryArgs {
    /// The query, e.g. `"Blade Runner" -> directed_by`.
    pub query: String,
    #[arg(long, default_value_t = 10)]
    pub top_k: usize,
    /// Provenance paths per answer.
    #[arg(long, default_value_t = 3)]
    pub paths: usize,
    /// Keep anchor entities in multi-hop answers.
    #[arg(long)]
    pub include_anchors: bool,
    #[arg(long)]
    pub json: bool,
    /// Print the query as openCypher or SPARQL (cypher | sparql) instead of running it.
    #[arg(long, value_name = "LANGUAGE")]
    pub render: Option<kgbox_query::render::Language>,
    #[command(flatten)]
    pub repair: RepairArgs,
    #[command(flatten)]
    pub source: super::BundleArgs,
    #[command(flatten)]
    pub exec: super::ExecArgs,
}

/// `--repair`, `--tighten`, `--max-answers`, `--tighten-with`: query repair
/// (docs/query-language.md, "Query repair").
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RepairArgs {
    /// auto: relax a query with no answers (and tighten with --tighten); off.
    #[arg(long, default_value = "auto")]
    pub repair: kgbox_query::repair::RepairMode,
    /// Tighten a query with more than --max-answers answers.
    #[arg(long)]
    pub tighten: bool,
    /// Answers a tightened query keeps at most.
    #[arg(long, default_value_t = 50)]
    pub max_answers: usize,
    /// An entity a tightening constrains the answers by first; repeatable.
    #[arg(long, value_name = "ENTITY")]
    pub tighten_with: Vec<String>,
}

pub fn run(cfg: &Config, args: &QueryArgs) -> Result<()> {
    let bundle = super::load_bundle(cfg, &args.source)?;
    let kg = bundle.kg()?;
    if let Some(lang) = args.render {
        let opts = kgbox_query::render::RenderOptions {
            exclude_anchors: !args.include_anchors,
            ..Default::default()
        };
        let text = kgbox_query::render::render_text(
            &kg,
            &args.query,
            &cfg.query.parse_limits(),
            lang,
            &opts,
        )?;
        if args.json {
            println!("{}", serde_json::json!({"language": lang, "text": text}));
        } else {
            println!("{text}");
        }
        return Ok(());
    }
    let exec = args.exec.apply(&cfg.executor);
    let model = super::load_model(&bundle, &exec, false)?;
    let store = SparqlStore::for_bundle(&cfg.sparql_store, &bundle.manifest().name);
    let executors = Executors::new(exec, model, store);
    let target = QueryTarget {
        kg: &kg,
        executors: &executors,
        query: &cfg.query,
    };
    let r = answer(&target, args.request(), None)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(());
    }
    if let Some(rep) = &r.repair {
        print_repair(rep);
    }
    let t = &r.timings_ms;
    println!(
        "{} answers ({} shown, {} executor), {} edges visited, {:.3} ms",
        r.total,
        r.answers.len(),
        r.executor,
        r.edge_visits,
        t.parse + t.bind + t.execute
    );
    for (i, a) in r.answers.iter().enumerate() {
        println!(
            "{:>3}. {}  (score {:.3}, #{})",
            i + 1,
            a.name,
            a.score,
            a.entity
        );
        for p in &a.paths {
            let steps: Vec<String> = p
                .iter()
                .map(|[h, r, t]| format!("({h} -{r}-> {t})"))
                .collect();
            println!("       {}", steps.join(" "));
        }
    }
    Ok(())
}

impl QueryArgs {
    /// The request `POST /v1/query` would get for these arguments.
    fn request(&self) -> QueryRequest {
        let repair = &self.repair;
        let tighten = repair.tighten || !repair.tighten_with.is_empty();
        QueryRequest {
            query: self.query.clone(),
            top_k: Some(self.top_k),
            paths: Some(Paths::Count(self.paths)),
            include_anchors: self.include_anchors,
            executor: self.exec.executor,
            seppr_k: self.exec.seppr_k,
            repair: repair.repair,
            tighten,
            max_answers: tighten.then_some(repair.max_answers.max(1)),
            tighten_with: repair.tighten_with.clone(),
            ..QueryRequest::default()
        }
    }
}

/// A repair report, as text.
fn print_repair(r: &kgbox_query::repair::RepairReport) {
    match &r.repaired {
        Some(q) => println!(
            "repair ({}): {} answers -> {}: {q}",
            r.kind, r.answers_before, r.answers_after
        ),
        None => println!(
            "repair ({}): no candidate qualified ({} examined{})",
            r.kind,
            r.candidates,
            if r.exhausted {
                ", search limit reached"
            } else {
                ""
            }
        ),
    }
    for e in &r.edits {
        println!("  {e}");
    }
}
