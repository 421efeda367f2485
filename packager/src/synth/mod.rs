//! Training questions from the graph itself, for a bundle packed with no
//! `--planner-examples`: the graph's question [`paths`] (one to three
//! relations that bind from real topics), each asked about sampled topics
//! in several [`phrase`]s, with the answers the graph gives. The learned
//! planner trains on them as on an operator's examples, so a user's own
//! graph gets a planner that follows several relations, and the guided LLM
//! planner gets its demonstrations and grammar.

pub mod aliases;
pub mod classes;
pub mod description;
pub mod paths;
pub mod phrase;
pub mod verbs;

use kgbox_bundle::Kg;
use kgbox_qa::planner::guided::chain_query;
use kgbox_qa::planner::train::Example;
use kgbox_qa::rng::SplitMix64;

use classes::Classes;
use paths::{follow, PathOptions, QuestionPath};
use phrase::{RelationWords, StepWords};

/// How many questions are made.
#[derive(Debug, Clone)]
pub struct SynthOptions {
    pub paths: PathOptions,
    /// Questions per path of 1, 2 and 3 hops (over distinct topics where
    /// the path has them): people ask short questions more often, and the
    /// classifier's prior follows the counts.
    pub per_path: [usize; 3],
    /// Questions at most in all: past it, every path gets fewer (a graph
    /// with hundreds of paths would otherwise take long to embed).
    pub max_questions: usize,
    /// Topic names longer than this are not used (long literals, texts).
    pub max_topic_chars: usize,
    pub seed: u64,
}

impl Default for SynthOptions {
    fn default() -> Self {
        SynthOptions {
            paths: PathOptions::default(),
            per_path: [80, 32, 14],
            max_questions: 6_000,
            max_topic_chars: 60,
            seed: 0x6b67_626f_7800,
        }
    }
}

/// The questions made, and what the operator is told.
#[derive(Debug, Default)]
pub struct Synthesis {
    pub examples: Vec<Example>,
    /// Paths kept, by number of hops (index 0: one hop).
    pub paths_by_hops: Vec<usize>,
    /// Per number of hops, whether the graph has more paths worth asking
    /// than were kept ([`paths::QuestionPaths::partial`]).
    pub partial_hops: Vec<bool>,
}

impl Synthesis {
    /// One line for the pack log.
    pub fn summary(&self) -> String {
        let hops: Vec<String> = self
            .paths_by_hops
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let more = if self.partial_hops.get(i) == Some(&true) {
                    " and more left out"
                } else {
                    ""
                };
                format!(
                    "{n} of {} hop{}{more}",
                    i + 1,
                    if i == 0 { "" } else { "s" }
                )
            })
            .collect();
        format!(
            "planner: no examples given; {} questions synthesised from the graph's own paths ({})",
            self.examples.len(),
            hops.join(", ")
        )
    }
}

/// Questions with their DSL and answers from `kg`'s own paths.
pub fn synthesize(kg: &Kg<'_>, opts: &SynthOptions) -> Synthesis {
    let paths::QuestionPaths {
        paths: found,
        partial,
    } = paths::find_paths(kg, &opts.paths, opts.seed);
    let words: Vec<RelationWords> = (0..kg.relation_count() as u32)
        .map(|r| {
            RelationWords::new(kg.relation_name(r).unwrap_or(""), kg.relation_gloss(r))
                .with_aliases(kg.relation_aliases(r))
        })
        .collect();
    let mut rng = SplitMix64::new(opts.seed ^ 0x5157_4e54);
    let mut out = Synthesis {
        paths_by_hops: vec![0; opts.paths.max_hops],
        partial_hops: partial,
        ..Synthesis::default()
    };
    let classes = Classes::of(kg);
    let planned: usize = found.iter().map(|p| per_path(opts, p, 1.0)).sum();
    let scale = (opts.max_questions as f32 / planned.max(1) as f32).min(1.0);
    for path in &found {
        let n = per_path(opts, path, scale);
        let nouns = classes
            .map(|c| c.of_steps(kg, &path.steps, &path.topics))
            .unwrap_or_else(|| vec![None; path.steps.len()]);
        let made = questions_for(
            kg,
            path,
            n,
            (&words, &nouns),
            opts,
            &mut rng,
            &mut out.examples,
        );
        if made > 0 {
            if let Some(n) = out.paths_by_hops.get_mut(path.steps.len() - 1) {
                *n += 1;
            }
        }
    }
    out
}

/// Questions to ask about `path`: its length's count, times `scale`, at
/// least one.
fn per_path(opts: &SynthOptions, path: &QuestionPath, scale: f32) -> usize {
    let n = opts
        .per_path
        .get(path.steps.len().saturating_sub(1))
        .copied()
        .unwrap_or(0);
    ((n as f32 * scale).round() as usize).clamp(n.min(1), n)
}

/// Adds up to `per_path` questions about `path` to `examples`; the number
/// added.
fn questions_for(
    kg: &Kg<'_>,
    path: &QuestionPath,
    per_path: usize,
    (words, classes): (&[RelationWords], &[Option<String>]),
    opts: &SynthOptions,
    rng: &mut SplitMix64,
    examples: &mut Vec<Example>,
) -> usize {
    let Some(names) = path
        .steps
        .iter()
        .map(|s| s.name(kg))
        .collect::<Option<Vec<String>>>()
    else {
        return 0;
    };
    let Some(step_words) = path
        .steps
        .iter()
        .zip(classes)
        .map(|(s, class)| {
            words.get(s.relation as usize).map(|w| StepWords {
                words: w,
                inverse: s.inverse,
                class: class.clone(),
            })
        })
        .collect::<Option<Vec<StepWords<'_>>>>()
    else {
        return 0;
    };
    let mut topics = path.topics.clone();
    rng.shuffle(&mut topics);
    let mut made = 0;
    // Topics repeat (in other words) when the path has few.
    for &topic in topics.iter().cycle().take(per_path * 2) {
        if made == per_path {
            break;
        }
        let Some(name) = kg.entity_name(topic) else {
            continue;
        };
        if name.is_empty()
            || name.chars().count() > opts.max_topic_chars
            || name.contains(['[', ']'])
        {
            continue;
        }
        let cap = opts.paths.max_answers;
        let Some(answers) = follow(kg, topic, &path.steps, cap) else {
            continue;
        };
        let answers: Vec<String> = answers
            .iter()
            .filter_map(|&a| kg.entity_name(a).map(str::to_string))
            .collect();
        if answers.is_empty() {
            continue;
        }
        examples.push(Example {
            line: examples.len() + 1,
            question: phrase::question(&step_words, name, rng),
            dsl: chain_query(name, &names),
            answers: Some(answers),
        });
        made += 1;
    }
    made
}
