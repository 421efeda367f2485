//! Training the learned planner (run by the packager): examples
//! `question<TAB>DSL[<TAB>answers]` → templates and features → a softmax
//! classifier fitted with AdamW, plus the arbitrator's calibrated threshold.
//!
//! Generalisation, not memory: the topic mention is masked before anything
//! sees the question, the model is linear over generic features, and a tenth
//! of the examples (chosen by a fixed hash of the question) is held out to
//! measure accuracy on questions the fit never saw. The final model is then
//! fitted on all examples.

use std::collections::{BTreeMap, HashMap};

use kgbox_bundle::Kg;
use kgbox_query::ast::EntityRef;
use kgbox_query::link::{link_text, LinkOptions};
use kgbox_query::{parse, Query};

use super::features::{featurize, FeatureSpec, Features};
pub use super::fit::TrainOptions;
use super::fit::{embed_distinct, embed_pooled, fit_scored};
use super::heads::WindowVectors;
use super::learned::{Demo, LearnedPlanner, PlannerMeta, DEFAULT_THRESHOLD, FORMAT};
use super::template::Template;
use super::train_heads::{train_heads, HeadExamples};
use crate::question::{mask, mention_range, MASK};
use kgbox_query::dense::TextEncoder;

/// One line of an examples file.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    /// 1-based line number, for messages.
    pub line: usize,
    pub question: String,
    pub dsl: String,
    /// Gold answer names, when the file gives them (for calibration).
    pub answers: Option<Vec<String>>,
}

#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    #[error("line {line}: {message}")]
    Line { line: usize, message: String },
    #[error("no usable examples ({skipped} skipped; the first: {first})")]
    NoExamples { skipped: usize, first: String },
    #[error("embedding the questions failed: {0}")]
    Embed(String),
}

/// Parses an examples file: `question<TAB>DSL[<TAB>ans1|ans2|...]`; empty
/// lines and lines starting with `#` are skipped.
pub fn parse_examples(text: &str) -> Result<Vec<Example>, TrainError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.trim_end_matches('\r');
        if l.trim().is_empty() || l.starts_with('#') {
            continue;
        }
        let mut cols = l.split('\t');
        let question = cols.next().unwrap_or("").trim();
        let dsl = cols.next().map(str::trim).unwrap_or("");
        if question.is_empty() || dsl.is_empty() {
            return Err(TrainError::Line {
                line,
                message: "expected `question<TAB>DSL[<TAB>answers]`".into(),
            });
        }
        let answers = cols.next().map(|a| {
            a.split('|')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        });
        if cols.next().is_some() {
            return Err(TrainError::Line {
                line,
                message: "more than three tab-separated columns".into(),
            });
        }
        out.push(Example {
            line,
            question: question.to_string(),
            dsl: dsl.to_string(),
            answers,
        });
    }
    Ok(out)
}

/// An example made ready: masked question, topic entity, class.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub line: usize,
    pub masked: String,
    pub entity: u32,
    pub template: Template,
    pub answers: Option<Vec<String>>,
}

fn resolve(kg: &Kg<'_>, e: &EntityRef) -> Option<u32> {
    match e {
        EntityRef::Id(id) => kg.entity_name(*id).map(|_| *id),
        EntityRef::Name(n) => kg.entity_id(n).or_else(|| {
            let key = kgbox_bundle::normalize::normalize(n);
            let postings = kg.lookup_normalized(&key);
            match postings.as_slice() {
                [one] => Some(one.entity),
                _ => None,
            }
        }),
    }
}

/// Checks and prepares examples; the ones that cannot be used come back as
/// (line, reason).
pub fn prepare(kg: &Kg<'_>, examples: &[Example]) -> (Vec<Prepared>, Vec<(usize, String)>) {
    let opts = LinkOptions {
        dense: false,
        ..LinkOptions::default()
    };
    let mut ok = Vec::new();
    let mut skipped = Vec::new();
    for ex in examples {
        let query: Query = match parse(&ex.dsl) {
            Ok(q) => q,
            Err(d) => {
                skipped.push((ex.line, format!("the DSL does not parse: {}", d.message)));
                continue;
            }
        };
        let (template, topic) = match Template::from_query(&query) {
            Ok(t) => t,
            Err(e) => {
                skipped.push((ex.line, e.to_string()));
                continue;
            }
        };
        let Some(entity) = resolve(kg, &topic) else {
            skipped.push((
                ex.line,
                format!("the DSL's entity {topic:?} is not in the graph"),
            ));
            continue;
        };
        if let Err(d) = kgbox_query::bind::bind(kg, &query, &ex.dsl) {
            skipped.push((ex.line, format!("the DSL does not bind: {}", d.message)));
            continue;
        }
        let mentions = link_text(kg, &ex.question, &opts);
        let mention = mentions
            .iter()
            .filter(|m| m.candidates.iter().any(|c| c.entity == entity))
            .max_by_key(|m| (m.bracketed, m.end - m.start));
        let Some(mention) = mention else {
            skipped.push((
                ex.line,
                "the question has no mention of the DSL's entity (bracket it)".into(),
            ));
            continue;
        };
        let range = mention_range(&ex.question, mention);
        ok.push(Prepared {
            line: ex.line,
            masked: mask(&ex.question, range),
            entity,
            template,
            answers: ex.answers.clone(),
        });
    }
    (ok, skipped)
}

/// What training did.
#[derive(Debug, Clone)]
pub struct TrainReport {
    pub planner: LearnedPlanner,
    pub used: usize,
    pub skipped: Vec<(usize, String)>,
    pub classes: usize,
    pub heldout: usize,
    pub heldout_accuracy: Option<f32>,
}

fn text_hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Demonstrations kept per template for LLM planners (the nearest to a
/// question are shown).
pub const DEMOS_PER_TEMPLATE: usize = 8;

/// Up to [`DEMOS_PER_TEMPLATE`] examples of each class with distinct masked
/// questions, spread over the file (example files are often sorted), each
/// with its masked question.
fn demos<'p>(
    kg: &Kg<'_>,
    prepared: &'p [Prepared],
    ys: &[usize],
    classes: usize,
) -> Vec<(Demo, &'p str)> {
    let mut by_class: Vec<Vec<usize>> = vec![Vec::new(); classes];
    for (i, &y) in ys.iter().enumerate() {
        if let Some(v) = by_class.get_mut(y) {
            v.push(i);
        }
    }
    let mut out = Vec::new();
    for (class, members) in by_class.iter().enumerate() {
        let mut seen: Vec<&str> = Vec::new();
        // Evenly spaced starting points, then the next unseen masked question.
        let stride = (members.len() / DEMOS_PER_TEMPLATE).max(1);
        for &i in members.iter().step_by(stride).chain(members.iter()) {
            if seen.len() == DEMOS_PER_TEMPLATE {
                break;
            }
            let Some(p) = prepared.get(i) else { continue };
            if seen.contains(&p.masked.as_str()) {
                continue;
            }
            let Some(name) = kg.entity_name(p.entity) else {
                continue;
            };
            seen.push(&p.masked);
            out.push((
                Demo {
                    class,
                    question: p.masked.replacen(MASK, &format!("[{name}]"), 1),
                    topic: name.to_string(),
                },
                p.masked.as_str(),
            ));
        }
    }
    out
}

/// Unit-length copies of the demonstrations' sentence vectors, in order;
/// `None` when any is missing (no encoder).
fn demo_vectors(
    demos: &[(Demo, &str)],
    embedded: &std::collections::HashMap<String, Vec<f32>>,
) -> Option<Vec<f32>> {
    let mut out = Vec::new();
    for (_, masked) in demos {
        let v = embedded.get(*masked)?;
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
        out.extend(v.iter().map(|x| x / norm));
    }
    Some(out)
}

/// Trains a planner on prepared examples. `progress(stage, done, total)`
/// reports embedding and fitting.
pub fn train(
    kg: &Kg<'_>,
    prepared: &[Prepared],
    skipped: Vec<(usize, String)>,
    embedder: Option<&dyn TextEncoder>,
    encoder_name: Option<&str>,
    opts: &TrainOptions,
    progress: &mut dyn FnMut(&str, usize, usize),
) -> Result<TrainReport, TrainError> {
    if prepared.is_empty() {
        let first = skipped
            .first()
            .map(|(l, r)| format!("line {l}: {r}"))
            .unwrap_or_else(|| "the file has no examples".into());
        return Err(TrainError::NoExamples {
            skipped: skipped.len(),
            first,
        });
    }
    let spec = FeatureSpec::new(embedder.map(|e| e.dim()).unwrap_or(0));
    // Classes: templates, most frequent first (ties by text), so that class
    // ids are stable for the same examples.
    let mut counts: BTreeMap<&Template, usize> = BTreeMap::new();
    for p in prepared {
        *counts.entry(&p.template).or_default() += 1;
    }
    let mut templates: Vec<(&Template, usize)> = counts.into_iter().collect();
    templates.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let templates: Vec<Template> = templates.into_iter().map(|(t, _)| t.clone()).collect();
    let class_of: BTreeMap<&Template, usize> =
        templates.iter().enumerate().map(|(i, t)| (t, i)).collect();

    // Masked questions repeat (questions made from templates differ only in
    // the entity): embed each distinct text once.
    // With an encoder, one pass per text gives the question's vector and
    // its head windows' (`WindowVectors::Pooled`).
    let masked: Vec<&str> = prepared.iter().map(|p| p.masked.as_str()).collect();
    let pooled = match embedder {
        Some(e) if spec.embed_dim > 0 => {
            Some(embed_pooled(&masked, e, &spec, "embed", progress).map_err(TrainError::Embed)?)
        }
        _ => None,
    };
    let embedded: HashMap<String, Vec<f32>> = match &pooled {
        Some(p) => p
            .iter()
            .filter_map(|(t, v)| Some((t.clone(), v.first()?.clone())))
            .collect(),
        None => embed_distinct(&masked, embedder, &spec, "embed", progress)
            .map_err(TrainError::Embed)?,
    };
    let features: Vec<Features> = prepared
        .iter()
        .map(|p| {
            let e = embedded.get(p.masked.as_str()).map(Vec::as_slice);
            featurize(kg, &p.masked, p.entity, e, &spec)
        })
        .collect();
    let ys: Vec<usize> = prepared
        .iter()
        .map(|p| class_of.get(&p.template).copied().unwrap_or(0))
        .collect();
    let classes = templates.len();

    // Held out: one masked question in ten, by a fixed hash.
    let held: Vec<bool> = prepared
        .iter()
        .map(|p| opts.holdout_every > 1 && text_hash(&p.masked).is_multiple_of(opts.holdout_every))
        .collect();
    let heldout = held.iter().filter(|h| **h).count();
    let xs: Vec<&Features> = features.iter().collect();
    let (mut w, heldout_accuracy) =
        fit_scored(&xs, &ys, classes, spec.dim(), &held, opts, "fit", progress);
    let entities: Vec<u32> = prepared.iter().map(|p| p.entity).collect();
    let examples = HeadExamples {
        masked: &masked,
        entities: &entities,
        templates: &templates,
        ys: &ys,
        held: &held,
    };
    let (heads, head_weights) = train_heads(
        kg,
        &examples,
        embedder,
        pooled.as_ref(),
        &spec,
        opts,
        progress,
    )
    .map_err(TrainError::Embed)?;
    w.extend(head_weights);
    let demos = demos(kg, prepared, &ys, classes);
    let vectors = (spec.embed_dim > 0)
        .then(|| demo_vectors(&demos, &embedded))
        .flatten();
    let demo_vectors = vectors.is_some();
    w.extend(vectors.unwrap_or_default());
    let meta = PlannerMeta {
        format: FORMAT,
        features: spec,
        templates,
        answer_threshold: DEFAULT_THRESHOLD,
        keep_anchors: Vec::new(),
        demos: demos.into_iter().map(|(d, _)| d).collect(),
        demo_vectors,
        demo_weight: 0.0,
        partial_hops: Vec::new(),
        heads,
        window_vectors: if pooled.is_some() {
            WindowVectors::Pooled
        } else {
            WindowVectors::Alone
        },
        encoder: encoder_name.map(String::from),
        trained_on: prepared.len(),
        heldout_accuracy,
    };
    let planner = LearnedPlanner::new(meta, w).map_err(|e| TrainError::Line {
        line: 0,
        message: e.to_string(),
    })?;
    Ok(TrainReport {
        planner,
        used: prepared.len(),
        skipped,
        classes,
        heldout,
        heldout_accuracy,
    })
}

/// One calibration case: the executor's scores best first, and whether each
/// answer is gold; `gold` is the size of the gold set.
#[derive(Debug, Clone)]
pub struct CalibrationCase {
    pub scored: Vec<(f32, bool)>,
    pub gold: usize,
}

/// The threshold τ (keep answers scoring >= τ · best, and always the best)
/// with the highest mean answer-set F1 over `cases`; ties go to the higher τ.
/// Returns (τ, mean F1).
pub fn calibrate(cases: &[CalibrationCase]) -> Option<(f32, f32)> {
    if cases.is_empty() {
        return None;
    }
    let mut best: Option<(f32, f32)> = None;
    for step in 0..=20 {
        let tau = step as f32 / 20.0;
        let mut sum = 0.0;
        for case in cases {
            let top = case.scored.first().map(|s| s.0).unwrap_or(0.0);
            let kept: Vec<bool> = case
                .scored
                .iter()
                .enumerate()
                .filter(|(i, (s, _))| *i == 0 || *s >= tau * top)
                .map(|(_, (_, g))| *g)
                .collect();
            let tp = kept.iter().filter(|g| **g).count();
            let denom = kept.len() + case.gold;
            sum += if denom == 0 {
                0.0
            } else {
                2.0 * tp as f32 / denom as f32
            };
        }
        let f1 = sum / cases.len() as f32;
        if best.is_none_or(|(_, b)| f1 >= b) {
            best = Some((tau, f1));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_parse_with_clear_errors() {
        let ex = parse_examples("# c\n\nwho directed [X]\t\"X\" -> directed_by\tA|B\nq\td\n")
            .expect("parses");
        assert_eq!(ex.len(), 2);
        assert_eq!(ex[0].line, 3);
        assert_eq!(ex[0].answers, Some(vec!["A".to_string(), "B".to_string()]));
        assert_eq!(ex[1].answers, None);
        let err = parse_examples("ok\tq\nonly a question\n").expect_err("bad line");
        assert!(err.to_string().starts_with("line 2:"), "{err}");
    }

    #[test]
    fn calibration_prefers_the_cut_that_fits_the_gold_sets() {
        // Gold answers score high, wrong ones low: a cut between them wins.
        let cases = vec![
            CalibrationCase {
                scored: vec![(1.0, true), (0.9, true), (0.3, false), (0.2, false)],
                gold: 2,
            },
            CalibrationCase {
                scored: vec![(0.8, true), (0.1, false)],
                gold: 1,
            },
        ];
        let (tau, f1) = calibrate(&cases).expect("cases");
        assert!((0.4..=0.9).contains(&tau), "tau {tau}");
        assert!((f1 - 1.0).abs() < 1e-6);
        assert!(calibrate(&[]).is_none());
    }
}
