//! `kgbox ask`: a question through the planner, the executor and the
//! arbitrator, as `/v1/ask` runs it.

use std::sync::Arc;

use anyhow::Result;
use kgbox::qa::{AskParams, Qa};
use kgbox::served::Served;
use kgbox::service::ask::{answer, result_json, AskRequest};
use kgbox::service::executors::{Executors, Overrides};
use kgbox::sparql_store::SparqlStore;
use kgbox::{Config, LoadedBundle};
use kgbox_qa::{AskResult, PlannerKind};

/// What `ask` and `eval qa` share: the bundle, its encoder and executors,
/// the planner set-up, and the effective configuration.
pub(crate) struct Session {
    pub bundle: LoadedBundle,
    pub encoder: Option<Arc<kgbox::dense::Encoder>>,
    pub executors: Executors,
    pub qa: Qa,
    pub cfg: Config,
}

pub(crate) fn session(
    cfg: &Config,
    source: &super::BundleArgs,
    exec: &super::ExecArgs,
    planner: Option<PlannerKind>,
) -> Result<Session> {
    let bundle = super::load_bundle(cfg, source)?;
    let mut cfg = cfg.clone();
    cfg.executor = exec.apply(&cfg.executor);
    if let Some(p) = planner {
        cfg.planner.kind = p;
    }
    let model = super::load_model(&bundle, &cfg.executor, false)?;
    let encoder = kgbox::dense::load_encoder(&bundle, &cfg.executor)
        .map_err(|e| anyhow::anyhow!("cannot load the bundle's encoder: {e}"))?
        .map(Arc::new);
    let qa = Qa::load(&bundle, encoder.clone(), &cfg)
        .map_err(|e| anyhow::anyhow!("cannot set up question answering: {e}"))?;
    let store = SparqlStore::for_bundle(&cfg.sparql_store, &bundle.manifest().name);
    let executors = Executors::new(cfg.executor.clone(), model, store);
    Ok(Session {
        bundle,
        encoder,
        executors,
        qa,
        cfg,
    })
}

impl Session {
    /// The settings of a question with `overrides`, checked as a request's.
    pub fn params(&self, overrides: &Overrides) -> Result<AskParams> {
        Ok(AskParams::new(
            self.executors.options(&self.cfg.query, overrides)?,
        ))
    }

    /// The session as the served bundle, for the question service.
    pub fn into_served(self) -> (Served, Config) {
        let served = Served::new(self.bundle, self.encoder, self.executors, self.qa);
        (served, self.cfg)
    }
}

/// `kgbox ask QUESTION`.
#[derive(Debug, clap::Args)]
pub struct AskArgs {
    /// The question, e.g. `"who directed [Blade Runner]"`.
    pub question: String,
    /// Final answers at most.
    #[arg(long, default_value_t = 5)]
    pub top_k: usize,
    /// learned, llm, local, learned+llm or learned+local (default: planner.kind).
    #[arg(long)]
    pub planner: Option<PlannerKind>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub source: super::BundleArgs,
    #[command(flatten)]
    pub exec: super::ExecArgs,
}

pub fn run(cfg: &Config, args: &AskArgs) -> Result<()> {
    let (served, cfg) = session(cfg, &args.source, &args.exec, args.planner)?.into_served();
    let request = AskRequest {
        question: args.question.clone(),
        top_k: Some(args.top_k),
        ..AskRequest::default()
    };
    let (r, executor) = answer(&served, &cfg, request, None)?;
    if args.json {
        let v = result_json(&r, executor)?;
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    print!("{}", render(&r, executor));
    Ok(())
}

/// The readable form of an answer.
pub fn render(r: &AskResult, executor: kgbox_query::Executor) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "query:     {}", r.query);
    let _ = writeln!(out, "planner:   {}   executor: {executor}", r.planner);
    if let Some(rep) = &r.repair {
        let _ = writeln!(
            out,
            "repair:    {} -> {} ({} edits, {} -> {} answers)",
            rep.kind,
            rep.repaired.as_deref().unwrap_or("nothing found"),
            rep.edits.len(),
            rep.answers_before,
            rep.answers_after
        );
    }
    if !r.strategies.is_empty() {
        let tried: Vec<String> = r
            .strategies
            .iter()
            .map(|s| {
                let answered = if s.answered { ", answered" } else { "" };
                format!(
                    "{} ({} candidates{answered})",
                    s.name.as_str(),
                    s.candidates
                )
            })
            .collect();
        let _ = writeln!(out, "strategies: {}", tried.join(" -> "));
    }
    for l in &r.linked {
        let _ = writeln!(
            out,
            "linked:    {:?} -> {} (p={:.2}, {:?})",
            l.mention, l.name, l.probability, l.method
        );
    }
    if let Some(best) = r.plan.alternatives.first() {
        let others: Vec<String> = r
            .plan
            .alternatives
            .iter()
            .skip(1)
            .map(|p| format!("{} {:.2}", p.template.0, p.probability))
            .collect();
        let _ = writeln!(
            out,
            "template:  {} (p={:.2}){}",
            best.template.0,
            best.probability,
            if others.is_empty() {
                String::new()
            } else {
                format!("; next: {}", others.join("; "))
            }
        );
    }
    if r.answers.is_empty() {
        let _ = writeln!(out, "answers:   none");
    } else {
        if let Some(caveat) = &r.caveat {
            let _ = writeln!(out, "caveat:    {} confidence: {caveat}", r.confidence);
        }
        let _ = writeln!(
            out,
            "answers ({} of {} candidates):",
            r.answers.len(),
            r.candidates
        );
    }
    for a in &r.answers {
        let _ = writeln!(out, "  {:<40} {:.3}", a.name, a.score);
        for p in a.paths.iter().take(2) {
            let hops: Vec<String> = p
                .iter()
                .map(|[h, rel, t]| format!("{h} -[{rel}]-> {t}"))
                .collect();
            let _ = writeln!(out, "      via {}", hops.join(", "));
        }
    }
    let t = &r.timings_ms;
    let _ = writeln!(
        out,
        "time ms:   link {:.2}  plan {:.2}  execute {:.2}  arbitrate {:.2}  total {:.2}",
        t.link, t.plan, t.execute, t.arbitrate, t.total
    );
    out
}
