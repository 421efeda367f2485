//! `--planner-examples`: trains the learned planner on the operator's
//! examples and calibrates it; with an encoder in the bundle, also writes the
//! zero-shot planner's relation vectors (`planner.relvecs`).

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use kgbox_bundle::sections as s;
use kgbox_bundle::{Kg, ModelInfo};
use kgbox_neural::engine::{Device, EngineKind};
use kgbox_neural::seppr::SepprParams;
use kgbox_neural::{NeuralProjector, UltraModel};
use kgbox_qa::planner::template::Template;
use kgbox_qa::planner::train::{self, CalibrationCase, Prepared, TrainOptions};
use kgbox_qa::planner::zeroshot::{relation_text, RelationVectors};
use kgbox_query::dense::TextEncoder;
use kgbox_query::{ExecOptions, Executor, ParseLimits};

use crate::synth::SynthOptions;

/// Examples per template used to decide whether its queries keep anchors.
const ANCHOR_SAMPLE: usize = 40;
/// `PlannerMeta::demo_weight` of a planner trained on synthesised questions
/// (chosen among 0 to 1,000 on benches/owngraph: 10 to 60 help there, more
/// lets a few stored demonstrations overrule the classifier).
const SYNTH_DEMO_WEIGHT: f32 = 25.0;

/// Examples used to calibrate the arbitrator's threshold.
const THRESHOLD_SAMPLE: usize = 300;

#[derive(Debug, Clone)]
pub struct PlannerOptions {
    /// `question<TAB>DSL[<TAB>answers]` lines; `None`: zero-shot vectors only.
    pub examples: Option<PathBuf>,
    /// The executor the threshold is calibrated with (the one the device will run).
    pub executor: Executor,
    /// Use the bundle's sentence encoder for question features (when it has one).
    pub use_encoder: bool,
    /// With an encoder in the bundle: train the planner on questions
    /// synthesised from the graph's own paths ([`crate::synth`]); with
    /// examples, on those of the examples' templates beside them
    /// ([`graph_phrasings`]).
    pub synthesize: bool,
}

impl Default for PlannerOptions {
    /// `kgbox-pack build`'s planner without its planner flags: no examples,
    /// calibrated for the symbolic executor, the encoder used and questions
    /// synthesised when the bundle has one.
    fn default() -> PlannerOptions {
        PlannerOptions {
            examples: None,
            executor: Executor::Symbolic,
            use_encoder: true,
            synthesize: true,
        }
    }
}

pub struct PlannerSections {
    pub sections: Vec<(&'static str, Vec<u8>)>,
    pub model: Option<ModelInfo>,
    /// Lines for the operator.
    pub report: Vec<String>,
}

/// A progress bar on stderr (hidden when not `enabled`).
pub(crate) fn bar(enabled: bool, len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(
        Some(len),
        if enabled {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    if let Ok(style) = ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({eta})") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(what.to_string());
    bar
}

/// Builds the planner sections from the bundle's other sections and the
/// examples parsed from `opts.examples` (the caller reads that file once).
pub fn sections(
    built: &[(&'static str, crate::section::SectionData)],
    opts: &PlannerOptions,
    examples: &[train::Example],
    progress: bool,
) -> Result<PlannerSections> {
    let has = |name: &str| built.iter().any(|(n, _)| *n == name);
    let digests_only = built
        .iter()
        .any(|(_, d)| matches!(d, crate::section::SectionData::Digest { .. }));
    if digests_only
        && opts.examples.is_none()
        && !(has(s::ENCODER_ONNX) && has(s::ENCODER_TOKENIZER))
    {
        // Nothing to embed or fit, and reading this graph back would
        // derive its in-edges here, in memory (gigabytes at a billion
        // triples); the device checks them against their hashes.
        return Ok(PlannerSections {
            sections: Vec::new(),
            model: None,
            report: Vec::new(),
        });
    }
    let aligned = crate::graph::Aligned::new(built)?;
    let get = |name: &str| aligned.get(name);
    let kg = aligned.kg()?;
    let embedder = match (get(s::ENCODER_ONNX), get(s::ENCODER_TOKENIZER)) {
        (Some(onnx), Some(tok)) => Some(
            kgbox_neural::Encoder::load(EngineKind::Native, Device::Cpu, onnx, tok)
                .context("the encoder cannot be loaded")?,
        ),
        _ => None,
    };
    let mut out = PlannerSections {
        sections: Vec::new(),
        model: None,
        report: Vec::new(),
    };
    if let Some(e) = &embedder {
        let texts: Vec<String> = (0..kg.relation_count() as u32)
            .map(|r| relation_text(&kg, r))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vecs = e.embed(&refs).map_err(anyhow::Error::msg)?;
        let rv = RelationVectors::new(e.dim(), vecs.into_iter().flatten().collect());
        out.sections.push((s::PLANNER_RELVECS, rv.to_section()));
        out.report.push(format!(
            "zero-shot planner: {} relation texts embedded",
            texts.len()
        ));
    }
    let synthesized;
    let mut partial_hops = Vec::new();
    let (examples, source) = match &opts.examples {
        Some(path) => (examples, path.display().to_string()),
        None if opts.synthesize && embedder.is_some() => {
            let synthesis = crate::synth::synthesize(&kg, &SynthOptions::default());
            out.report.push(synthesis.summary());
            if synthesis.examples.is_empty() {
                return Ok(out);
            }
            synthesized = synthesis.examples;
            partial_hops = synthesis.partial_hops;
            (
                &synthesized[..],
                "the questions synthesised from the graph".to_string(),
            )
        }
        None => return Ok(out),
    };
    let (mut prepared, skipped) = train::prepare(&kg, examples);
    // With examples, the graph's own phrasings of the examples' query
    // templates are learned beside them (after them: calibration reads
    // the examples only).
    let own = prepared.len();
    if opts.examples.is_some() && opts.synthesize && embedder.is_some() {
        let added = graph_phrasings(&kg, &prepared);
        out.report.push(format!(
            "planner: {} questions synthesised from the graph for the examples' query templates added (--no-planner-synth: the examples alone)",
            added.len()
        ));
        prepared.extend(added);
    }
    if !skipped.is_empty() {
        out.report.push(format!(
            "planner: {} of {} examples skipped; the first: line {}: {}",
            skipped.len(),
            examples.len(),
            skipped[0].0,
            skipped[0].1
        ));
    }
    let embed_bar = bar(progress, prepared.len() as u64, "planner: embedding");
    let fit_bar = bar(progress, 1, "planner: fitting");
    let mut on_progress = |stage: &str, done: usize, total: usize| match stage {
        "embed" => {
            embed_bar.set_length(total as u64);
            embed_bar.set_position(done as u64);
        }
        _ => {
            embed_bar.finish_and_clear();
            fit_bar.set_message(format!("planner: {stage}"));
            fit_bar.set_length(total as u64);
            fit_bar.set_position(done as u64);
        }
    };
    let planner_embedder = embedder.as_ref().filter(|_| opts.use_encoder);
    let encoder_name = planner_embedder.map(|_| encoder_name(built));
    let mut report = train::train(
        &kg,
        &prepared,
        skipped,
        planner_embedder.map(|e| e as &dyn TextEncoder),
        encoder_name.as_deref(),
        &TrainOptions::default(),
        &mut on_progress,
    )
    .with_context(|| format!("training the planner on {source}"))?;
    fit_bar.finish_and_clear();
    out.report.push(format!(
        "planner: {} examples, {} query templates, held-out accuracy {}",
        report.used,
        report.classes,
        report
            .heldout_accuracy
            .map(|a| format!("{:.2}% ({} questions)", 100.0 * a, report.heldout))
            .unwrap_or_else(|| "n/a (too few examples)".into())
    ));

    for h in &report.planner.meta.heads {
        out.report.push(format!(
            "planner: {:?} head, {} relations, held-out accuracy {}",
            h.kind,
            h.labels.len(),
            h.heldout_accuracy
                .map(|a| format!("{:.2}%", 100.0 * a))
                .unwrap_or_else(|| "n/a".into())
        ));
    }
    let calibration = calibrate(&kg, &get, &prepared[..own], &report.planner, opts.executor)?;
    report.planner.set_keep_anchors(calibration.keep_anchors);
    // Synthesised questions are answered exactly by their own queries: a
    // threshold fitted on them says nothing about real ones.
    let threshold = calibration.threshold.filter(|_| opts.examples.is_some());
    if let Some((tau, f1)) = threshold {
        report.planner.set_answer_threshold(tau);
        out.report.push(format!(
            "planner: answer threshold {tau:.2} (mean F1 {:.3} on {} examples, {} executor)",
            f1, calibration.cases, opts.executor
        ));
    }
    if calibration.kept > 0 {
        out.report.push(format!(
            "planner: {} templates keep anchor entities in their answers",
            calibration.kept
        ));
    }
    if opts.examples.is_none() {
        // Synthesised phrasings are narrower than people's: the nearest
        // stored question of each template counts beside the classifier.
        report.planner.set_demo_weight(SYNTH_DEMO_WEIGHT);
        report.planner.meta.partial_hops = partial_hops;
    }
    let (meta, weights) = report.planner.to_sections();
    out.sections.push((s::PLANNER_META, meta));
    out.sections.push((s::PLANNER_WEIGHTS, weights));
    out.model = Some(ModelInfo {
        name: "kgbox-learned-planner".into(),
        section: s::PLANNER_WEIGHTS.into(),
        engine: "linear".into(),
        opset: 0,
        role: "planner".into(),
        training: None,
    });
    Ok(out)
}

/// Questions synthesised from the graph ([`crate::synth`]) whose query
/// template is one of `prepared`'s: a planner trained on the operator's
/// examples also learns how else the graph's relations are asked about,
/// and nothing it was not shown an example of.
pub fn graph_phrasings(kg: &Kg<'_>, prepared: &[Prepared]) -> Vec<Prepared> {
    let known: HashSet<&Template> = prepared.iter().map(|p| &p.template).collect();
    let synthesis = crate::synth::synthesize(kg, &SynthOptions::default());
    let (synthesized, _) = train::prepare(kg, &synthesis.examples);
    synthesized
        .into_iter()
        .filter(|p| known.contains(&p.template))
        .collect()
}

fn encoder_name(built: &[(&'static str, crate::section::SectionData)]) -> String {
    built
        .iter()
        .find(|(n, _)| *n == s::DENSE_META)
        .and_then(|(_, d)| d.heap())
        .and_then(|d| kgbox_query::dense::DenseMeta::from_json(d).ok())
        .map(|m| m.model)
        .unwrap_or_else(|| "encoder".into())
}

struct Calibration {
    keep_anchors: Vec<bool>,
    kept: usize,
    threshold: Option<(f32, f32)>,
    cases: usize,
}

fn f1(found: &[String], gold: &HashSet<&str>) -> f32 {
    let tp = found.iter().filter(|n| gold.contains(n.as_str())).count();
    let denom = found.len() + gold.len();
    if denom == 0 {
        0.0
    } else {
        2.0 * tp as f32 / denom as f32
    }
}

/// Decides per template whether to keep anchors, and calibrates the
/// threshold, on examples that list their answers.
fn calibrate<'a>(
    kg: &Kg<'a>,
    get: &impl Fn(&str) -> Option<&'a [u8]>,
    prepared: &[Prepared],
    planner: &kgbox_qa::LearnedPlanner,
    executor: Executor,
) -> Result<Calibration> {
    let templates = &planner.meta.templates;
    let mut by_template: BTreeMap<usize, Vec<&Prepared>> = BTreeMap::new();
    for p in prepared.iter().filter(|p| p.answers.is_some()) {
        if let Some(i) = templates.iter().position(|t| *t == p.template) {
            by_template.entry(i).or_default().push(p);
        }
    }
    let limits = ParseLimits::default();
    let names = |answers: &kgbox_query::Answers| -> Vec<String> {
        answers
            .answers
            .iter()
            .filter_map(|a| kg.entity_name(a.entity).map(String::from))
            .collect()
    };
    let run = |q: &str,
               keep: bool,
               executor: Executor,
               projector: Option<&dyn kgbox_query::Projector>| {
        let opts = ExecOptions {
            top_k: 200,
            max_paths: 0,
            exclude_anchors: !keep,
            executor,
            ..ExecOptions::default()
        };
        kgbox_query::run_query_with(kg, q, &limits, &opts, projector).map(|(a, _)| a)
    };
    let mut keep_anchors = vec![false; templates.len()];
    for (&class, examples) in &by_template {
        let (mut with, mut without) = (0.0, 0.0);
        for p in examples.iter().take(ANCHOR_SAMPLE) {
            let Some(gold) = &p.answers else { continue };
            let gold: HashSet<&str> = gold.iter().map(String::as_str).collect();
            let name = kg.entity_name(p.entity).unwrap_or("");
            let q = p.template.instantiate(name);
            if let (Ok(a), Ok(b)) = (
                run(&q, true, Executor::Symbolic, None),
                run(&q, false, Executor::Symbolic, None),
            ) {
                with += f1(&names(&a), &gold);
                without += f1(&names(&b), &gold);
            }
        }
        keep_anchors[class] = with > without + 0.01 * examples.len().min(ANCHOR_SAMPLE) as f32;
    }
    let kept = keep_anchors.iter().filter(|k| **k).count();

    // The threshold, on examples spread over the file.
    let with_answers: Vec<&Prepared> = prepared.iter().filter(|p| p.answers.is_some()).collect();
    if with_answers.is_empty() {
        return Ok(Calibration {
            keep_anchors,
            kept,
            threshold: None,
            cases: 0,
        });
    }
    let model = if executor == Executor::Symbolic {
        None
    } else {
        let m =
            UltraModel::from_sections(get, kg.relation_count(), EngineKind::Native, Device::Cpu)
                .context("loading the neural model to calibrate the planner")?;
        if m.is_none() {
            bail!("--planner-executor {executor} needs the neural model (--ultra)");
        }
        m
    };
    let projector = model
        .as_ref()
        .map(|m| NeuralProjector::new(kg, m, SepprParams::default()));
    let step = (with_answers.len() / THRESHOLD_SAMPLE).max(1);
    let mut cases = Vec::new();
    for p in with_answers.iter().step_by(step).take(THRESHOLD_SAMPLE) {
        let Some(gold) = &p.answers else { continue };
        let gold: HashSet<&str> = gold.iter().map(String::as_str).collect();
        let class = templates.iter().position(|t| *t == p.template).unwrap_or(0);
        let name = kg.entity_name(p.entity).unwrap_or("");
        let q = p.template.instantiate(name);
        let proj = projector.as_ref().map(|p| p as &dyn kgbox_query::Projector);
        let Ok(found) = run(&q, keep_anchors[class], executor, proj) else {
            continue;
        };
        let scored = found
            .answers
            .iter()
            .map(|a| {
                let n = kg.entity_name(a.entity).unwrap_or("");
                (a.score, gold.contains(n))
            })
            .collect();
        cases.push(CalibrationCase {
            scored,
            gold: gold.len(),
        });
    }
    Ok(Calibration {
        keep_anchors,
        kept,
        threshold: train::calibrate(&cases),
        cases: cases.len(),
    })
}
