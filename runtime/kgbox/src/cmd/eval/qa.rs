//! `kgbox eval qa`: questions with their gold answers through the planner,
//! the executor and the arbitrator, as `/v1/ask` runs them: Hits@1,
//! answer-set F1 and latency per stage.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use kgbox::qa::AskParams;
use kgbox::service::executors::{Overrides, Paths};
use kgbox::Config;
use kgbox_qa::PlannerKind;
use serde::Serialize;

use super::{data_lines, features, sample_evenly};
use crate::cmd::ask::session;
use kgbox_protocol::stats::percentile;

/// Question file formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum QaFormat {
    /// `question<TAB>ans1|ans2` (topic entity in [brackets]).
    Metaqa,
    /// `question<TAB>answer(ans1/ans2)<TAB>path`.
    Pathquestion,
}

/// One question with its gold answers.
#[derive(Debug, Clone, PartialEq)]
pub struct GoldQuestion {
    pub line: usize,
    pub question: String,
    pub answers: HashSet<String>,
}

impl GoldQuestion {
    /// Whether entity `id`, named `name`, is a gold answer: by its name, or
    /// by its name without the qualifier the packager added when names
    /// clashed (`Stanford University (stanford-university)`, qualified by
    /// its IRI's end, is gold `Stanford University`; `1999 (literal)` is
    /// `1999`). Gold answers computed by SPARQL name entities by their
    /// labels, which need not be unique.
    pub fn is_answer(&self, kg: &kgbox_bundle::Kg<'_>, id: u32, name: &str) -> bool {
        self.answers.contains(name)
            || unqualified(kg, id, name).is_some_and(|b| self.answers.contains(b))
    }
}

/// `name` without the packager's clash qualifier, when it has one.
fn unqualified<'n>(kg: &kgbox_bundle::Kg<'_>, id: u32, name: &'n str) -> Option<&'n str> {
    let (base, qualifier) = name.strip_suffix(')')?.rsplit_once(" (")?;
    let added = match kg.entity_iri(id) {
        Some(iri) => iri.trim_end_matches(['/', '#']).ends_with(qualifier),
        None => qualifier == kgbox_query::translate::iri::LITERAL_QUALIFIER,
    };
    (added && !base.is_empty() && !qualifier.is_empty()).then_some(base)
}

/// Reads a question file; errors name the file and line.
pub fn read_questions(path: &Path, format: QaFormat) -> Result<Vec<GoldQuestion>> {
    let mut out = Vec::new();
    for (n, line) in data_lines(path)? {
        let bad = |what: &str| anyhow::anyhow!("{}:{}: {what}", path.display(), n);
        let mut cols = line.split('\t');
        let question = cols.next().unwrap_or("").trim().to_string();
        let answers_col = cols
            .next()
            .ok_or_else(|| bad("expected a tab and the answers"))?;
        let answers: HashSet<String> = match format {
            QaFormat::Metaqa => answers_col
                .split('|')
                .map(|a| a.trim().to_string())
                .collect(),
            QaFormat::Pathquestion => {
                let inner = answers_col
                    .find('(')
                    .zip(answers_col.rfind(')'))
                    .and_then(|(a, b)| answers_col.get(a + 1..b))
                    .ok_or_else(|| bad("expected `answer(ans1/ans2/...)` in the second column"))?;
                inner.split('/').map(|a| a.trim().to_string()).collect()
            }
        };
        let answers: HashSet<String> = answers.into_iter().filter(|a| !a.is_empty()).collect();
        if question.is_empty() || answers.is_empty() {
            return Err(bad("empty question or no answers"));
        }
        out.push(GoldQuestion {
            line: n,
            question,
            answers,
        });
    }
    Ok(out)
}

/// `kgbox eval qa`: questions with their answers (MetaQA or PathQuestion
/// files): Hits@1, answer-set F1 and latency per stage.
#[derive(Debug, clap::Args)]
pub struct EvalQaArgs {
    #[arg(long)]
    pub questions: PathBuf,
    #[arg(long, value_enum, default_value = "metaqa")]
    pub format: QaFormat,
    /// Only the first N questions.
    #[arg(long, conflicts_with = "sample")]
    pub limit: Option<usize>,
    /// N questions spread evenly over the file.
    #[arg(long)]
    pub sample: Option<usize>,
    /// Final answers per question at most (the predicted set for F1).
    #[arg(long, default_value_t = 1000)]
    pub top_k: usize,
    /// learned, llm, local, learned+llm or learned+local (default: planner.kind).
    #[arg(long)]
    pub planner: Option<PlannerKind>,
    /// One JSON object on the last line.
    #[arg(long)]
    pub json: bool,
    /// Answer without the bundle's reranker (to compare).
    #[arg(long)]
    pub no_rerank: bool,
    /// Write the reranker features of every scored candidate, labelled
    /// with the gold answers, to FILE (TSV; input of models/reranker/train.py).
    #[arg(long, value_name = "FILE")]
    pub export_features: Option<PathBuf>,
    /// Rerank with PREFIX.onnx and PREFIX.json (from models/reranker/train.py)
    /// instead of the bundle's reranker, to try one before packing it.
    #[arg(long, value_name = "PREFIX", conflicts_with = "no_rerank")]
    pub reranker: Option<PathBuf>,
    /// Write one JSON line per question to FILE: its line, the question,
    /// whether the first answer is gold, the first answers, or the error
    /// (to see which questions fail, or to compare two runs).
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,
    #[command(flatten)]
    pub source: crate::cmd::BundleArgs,
    #[command(flatten)]
    pub exec: crate::cmd::ExecArgs,
}

/// Answers written per question by `--answers`.
const ANSWERS_SHOWN: usize = 5;

/// One line of `--answers`.
#[derive(Serialize)]
struct AnswerRow<'a> {
    line: usize,
    question: &'a str,
    hit: bool,
    answers: Vec<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Debug, Default, Serialize)]
pub struct StageLatency {
    pub p50_ms: f64,
    pub p95_ms: f64,
}

#[derive(Debug, Default, Serialize)]
pub struct QaReport {
    pub questions: String,
    pub n: usize,
    pub errors: usize,
    /// Questions in which no entity was found.
    pub no_entity: usize,
    pub hits_at_1: f64,
    pub f1: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub stages: std::collections::BTreeMap<&'static str, StageLatency>,
    pub planner: String,
    pub executor: String,
    pub seppr_k: usize,
    /// Whether the reranker ran (`on`), was turned off, or the bundle has none.
    pub rerank: &'static str,
    /// Questions whose best answer the reranker changed.
    pub rerank_changed_top: usize,
    /// LLM calls per answered question (planning and the retrieval
    /// strategies; 0 with the learned planner).
    pub llm_calls_per_question: f64,
    /// Replies the LLM planner received per answered question (each call
    /// asks for up to `planner.samples`; over the OpenAI-compatible API
    /// each reply is one HTTP request).
    pub llm_replies_per_question: f64,
    /// Answered questions by the planner whose query ran (with
    /// `learned+llm` / `learned+local`: how often the LLM's plan was used).
    pub planned_by: std::collections::BTreeMap<String, usize>,
    /// Questions with a gold answer among the candidates the reranker sees:
    /// its ceiling (when features were computed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gold_in_candidates: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub first_errors: Vec<String>,
}

fn latency(mut v: Vec<f64>) -> StageLatency {
    v.sort_by(f64::total_cmp);
    StageLatency {
        p50_ms: percentile(&v, 50.0).unwrap_or(0.0),
        p95_ms: percentile(&v, 95.0).unwrap_or(0.0),
    }
}

/// A reranker from `models/reranker/train.py`'s files, to try before packing it.
fn load_reranker_files(prefix: &Path, cfg: &Config) -> Result<kgbox_qa::rerank::Reranker> {
    let file = |ext: &str| {
        let mut p = prefix.as_os_str().to_owned();
        p.push(ext);
        let p = PathBuf::from(p);
        std::fs::read(&p).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", p.display()))
    };
    kgbox_qa::rerank::Reranker::load(
        &file(".json")?,
        &file(".onnx")?,
        cfg.executor.engine,
        cfg.executor.device,
    )
    .map_err(|e| anyhow::anyhow!("the reranker {} cannot be used: {e}", prefix.display()))
}

pub fn run(cfg: &Config, args: &EvalQaArgs) -> Result<()> {
    let mut s = session(cfg, &args.source, &args.exec, args.planner)?;
    if let Some(prefix) = &args.reranker {
        s.qa.reranker = Some(load_reranker_files(prefix, &s.cfg)?);
    }
    let no_paths = Overrides {
        paths: Some(Paths::On(false)),
        ..Overrides::default()
    };
    let defaults = s.params(&no_paths)?;
    let (s, cfg) = s.into_served();
    let mut gold = read_questions(&args.questions, args.format)?;
    if let Some(n) = args.limit {
        gold.truncate(n);
    }
    if let Some(n) = args.sample {
        gold = sample_evenly(gold, n);
    }
    let bar = super::progress_bar(gold.len() as u64, "eval qa");
    let params = AskParams {
        top_k: Some(args.top_k),
        rerank: Some(!args.no_rerank),
        // The features of the candidates the reranker sees also give the
        // ceiling figure; without a reranker they are computed only for
        // the export, so the latencies stay those of the pipeline.
        export_features: args.export_features.is_some()
            || (s.qa.reranker.is_some() && !args.no_rerank),
        ..defaults
    };
    let mut export = match &args.export_features {
        Some(path) => Some(features::Export::create(path, &s.bundle)?),
        None => None,
    };
    let mut r = QaReport {
        questions: args.questions.display().to_string(),
        n: gold.len(),
        planner: cfg.planner.kind.to_string(),
        rerank: match (&s.qa.reranker, args.no_rerank) {
            (None, _) => "absent",
            (Some(_), true) => "off",
            (Some(_), false) => "on",
        },
        executor: cfg.executor.mode.to_string(),
        seppr_k: cfg.executor.seppr_k,
        ..QaReport::default()
    };
    let mut answers_out = match &args.answers {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        )),
        None => None,
    };
    let (mut h1, mut f1) = (0usize, 0.0f64);
    let mut stage: [Vec<f64>; 6] = Default::default();
    let mut gold_seen = 0usize;
    let mut llm_calls = 0usize;
    let mut llm_replies = 0usize;
    for (qid, q) in gold.iter().enumerate() {
        bar.inc(1);
        let res = match s.ask(&cfg, &q.question, &params) {
            Ok(res) => res,
            Err(e) => {
                r.errors += 1;
                if matches!(e, kgbox_qa::AskError::NoEntity) {
                    r.no_entity += 1;
                }
                if r.first_errors.len() < 5 {
                    r.first_errors.push(format!("line {}: {e}", q.line));
                }
                if let Some(out) = &mut answers_out {
                    let row = AnswerRow {
                        line: q.line,
                        question: &q.question,
                        hit: false,
                        answers: Vec::new(),
                        error: Some(e.to_string()),
                    };
                    writeln!(out, "{}", serde_json::to_string(&row)?)?;
                }
                continue;
            }
        };
        let t = res.timings_ms;
        for (v, x) in
            stage
                .iter_mut()
                .zip([t.link, t.plan, t.execute, t.rerank, t.arbitrate, t.total])
        {
            v.push(x);
        }
        let kg = s.bundle.kg()?;
        let is_gold = |e: u32| kg.entity_name(e).is_some_and(|n| q.is_answer(&kg, e, n));
        gold_seen += usize::from(res.features.iter().any(|f| is_gold(f.entity)));
        r.rerank_changed_top += usize::from(res.rerank.as_ref().is_some_and(|i| i.changed_top));
        llm_calls += if res.strategies.is_empty() {
            res.plan.attempts.unwrap_or(0)
        } else {
            res.strategies.iter().map(|s| s.llm_calls).sum()
        };
        llm_replies += res.plan.replies.unwrap_or(0);
        *r.planned_by.entry(res.planner.to_string()).or_default() += 1;
        if let Some(export) = &mut export {
            export.write(qid, q.line, &res.features, &is_gold)?;
        }
        let names: Vec<&str> = res.answers.iter().map(|a| a.name.as_str()).collect();
        let gold_of: Vec<bool> = res
            .answers
            .iter()
            .map(|a| q.is_answer(&kg, a.entity, &a.name))
            .collect();
        let hit1 = gold_of.first().copied().unwrap_or(false);
        h1 += usize::from(hit1);
        if let Some(out) = &mut answers_out {
            let row = AnswerRow {
                line: q.line,
                question: &q.question,
                hit: hit1,
                answers: names.iter().take(ANSWERS_SHOWN).copied().collect(),
                error: None,
            };
            writeln!(out, "{}", serde_json::to_string(&row)?)?;
        }
        let predicted: HashSet<(&str, bool)> = names.into_iter().zip(gold_of).collect();
        let hit = predicted.iter().filter(|(_, gold)| *gold).count() as f64;
        if hit > 0.0 {
            let (p, rc) = (hit / predicted.len() as f64, hit / q.answers.len() as f64);
            f1 += 2.0 * p * rc / (p + rc);
        }
    }
    bar.finish_and_clear();
    if let (Some(mut out), Some(path)) = (answers_out, &args.answers) {
        out.flush()
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("wrote {} answer rows to {}", gold.len(), path.display());
    }
    if let Some(export) = export {
        let (path, rows) = export.finish()?;
        eprintln!("wrote {rows} feature rows to {}", path.display());
    }
    let n = gold.len().max(1) as f64;
    if params.export_features {
        r.gold_in_candidates = Some(gold_seen as f64 / n);
    }
    r.hits_at_1 = h1 as f64 / n;
    let answered = r.planned_by.values().sum::<usize>().max(1) as f64;
    r.llm_calls_per_question = llm_calls as f64 / answered;
    r.llm_replies_per_question = llm_replies as f64 / answered;
    r.f1 = f1 / n;
    let [link, plan, execute, rerank, arbitrate, total] = stage;
    let total = latency(total);
    r.p50_ms = total.p50_ms;
    r.p95_ms = total.p95_ms;
    r.stages.insert("link", latency(link));
    r.stages.insert("plan", latency(plan));
    r.stages.insert("execute", latency(execute));
    r.stages.insert("rerank", latency(rerank));
    r.stages.insert("arbitrate", latency(arbitrate));
    r.stages.insert("total", total);
    if args.json {
        println!("{}", serde_json::to_string(&r)?);
        return Ok(());
    }
    println!(
        "{}: {} questions, {} errors ({} without an entity); planner {}, executor {}",
        r.questions, r.n, r.errors, r.no_entity, r.planner, r.executor
    );
    println!("Hits@1 {:.4}  F1 {:.4}", r.hits_at_1, r.f1);
    let by: Vec<String> = r
        .planned_by
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    println!(
        "planned by: {}; LLM calls per question {:.2} (planner replies {:.2})",
        by.join(", "),
        r.llm_calls_per_question,
        r.llm_replies_per_question
    );
    println!(
        "reranker {}: best answer changed on {} questions",
        r.rerank, r.rerank_changed_top
    );
    if let Some(g) = r.gold_in_candidates {
        println!("a gold answer among the reranked candidates: {g:.4}");
    }
    println!("latency ms          p50        p95");
    for (name, l) in &r.stages {
        println!("  {name:<10} {:>10.3} {:>10.3}", l.p50_ms, l.p95_ms);
    }
    for e in &r.first_errors {
        println!("error: {e}");
    }
    Ok(())
}
