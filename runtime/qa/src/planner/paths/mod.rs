//! The path ranker: discriminate, don't generate. From the question's
//! topic, every relation path of one to three hops that binds in this
//! graph (both directions) is scored against the question's phrases with
//! the sentence encoder, and the best ones are the plans.
//!
//! Each relation is read as words once ([`StepVectors`]: its name split
//! into words, `homeworld`, `averageHeight` → `average height`, and its
//! description's noun); the question's phrases ([`chunks::phrases`]) are embedded
//! each on its own, one batch per question. A path scores the cosine of
//! each step to a phrase of its own, less a cost per step, plus the share
//! of the question's words its phrases explain ([`chunks::score`]): "where
//! do the pilots of [X] come from" takes `pilot -> homeworld` over `pilot`
//! because "come from" is left unexplained by the shorter one.
//!
//! Paths are walked a hop at a time, from a capped sample of each
//! frontier, and only the best [`RankOptions::beam`] of a length go on:
//! the work grows with the beam, not with the graph.

pub mod chunks;
mod relation_words;

use std::collections::BTreeSet;

use kgbox_bundle::Kg;

use chunks::{Phrases, Weights};
use kgbox_query::dense::TextEncoder;
pub use relation_words::{
    end_types, is_type, names_agent, names_employer, names_person, names_place, relation_domain,
    relation_texts, type_relation, TYPE_IRIS,
};

/// One step of a path: a relation, followed forward or backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Step {
    pub relation: u32,
    /// Against the edges (tail to head): the DSL's `_inv`.
    pub inverse: bool,
}

impl Step {
    /// The step as the DSL names it (`directed_by`, `directed_by_inv`).
    pub fn name(&self, kg: &Kg<'_>) -> Option<String> {
        let name = kg.relation_name(self.relation)?;
        Some(if self.inverse {
            format!("{name}{}", kgbox_query::bind::INVERSE_SUFFIX)
        } else {
            name.to_string()
        })
    }

    /// The entities one step from `node`.
    pub fn neighbours<'a>(&self, kg: &Kg<'a>, node: u32) -> &'a [u32] {
        if self.inverse {
            kg.inc.neighbours(node, self.relation)
        } else {
            kg.out.neighbours(node, self.relation)
        }
    }
}

/// A path from the topic and its score.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedPath {
    pub steps: Vec<Step>,
    pub score: f32,
}

/// Limits of the walk and the scoring weights.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankOptions {
    /// Hops at most.
    pub max_hops: usize,
    /// Paths of one length that go on to the next.
    pub beam: usize,
    /// Nodes of a frontier looked at, at most (the first ones).
    pub frontier: usize,
    pub weights: Weights,
    /// Weight of the learned planner's log-probability when both plan
    /// ([`super::path_plan`]).
    pub learned_weight: f32,
    /// The learned probability a path that is no template of the planner
    /// is weighed with, where the planner's training questions left paths
    /// of its length out ([`super::learned::PlannerMeta::partial_hops`]).
    pub unknown_learned: f32,
}

impl Default for RankOptions {
    fn default() -> RankOptions {
        RankOptions {
            max_hops: 3,
            beam: 48,
            frontier: 256,
            weights: Weights::default(),
            learned_weight: 0.05,
            unknown_learned: 0.05,
        }
    }
}

/// Four unit-length vectors per relation: its name's words and its
/// description's noun ([`relation_texts`]), and the types of its subjects
/// and objects ([`end_types`]; zero where none is known); and one per
/// alias the operator gave it ([`Kg::relation_aliases`]), which a phrase
/// may match instead of the relation's own texts or its objects' type.
/// Made by the bundle's encoder when first needed.
#[derive(Debug, Clone)]
pub struct StepVectors {
    dim: usize,
    vecs: Vec<f32>,
    /// Per relation, whether its subjects' and its objects' types name
    /// people or groups ([`names_agent`]).
    agents: Vec<[bool; 2]>,
    /// Per relation, whether its subjects' and its objects' types name
    /// places ([`names_place`]).
    places: Vec<[bool; 2]>,
    /// Per relation, whether its subjects' and its objects' types name
    /// organisations people work at ([`names_employer`]).
    employers: Vec<[bool; 2]>,
    /// Per relation, the range of its aliases' vectors in `alias_vecs`
    /// (in vectors, not components).
    alias_rows: Vec<std::ops::Range<usize>>,
    /// The vectors of every relation's aliases ([`Kg::relation_aliases`]).
    alias_vecs: Vec<f32>,
}

/// The least cosine of "who" to a type that names people or groups, and
/// of "where" to one that names places.
const GLOSS_MATCH: f32 = 0.8;

/// Vectors per relation in [`StepVectors`].
const PER_RELATION: usize = 4;
/// Texts embedded in one call at most.
const BATCH: usize = 64;
fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
    v
}

fn embed_all(embedder: &dyn TextEncoder, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
    let mut out = Vec::with_capacity(texts.len());
    for batch in texts.chunks(BATCH) {
        let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
        let vecs = embedder.embed(&refs).map_err(|e| e.to_string())?;
        if vecs.len() != refs.len() {
            return Err(format!(
                "the encoder returned {} vectors for {} texts",
                vecs.len(),
                refs.len()
            ));
        }
        out.extend(vecs.into_iter().map(unit));
    }
    Ok(out)
}

impl StepVectors {
    /// Embeds every relation's texts.
    pub fn build(kg: &Kg<'_>, embedder: &dyn TextEncoder) -> Result<StepVectors, String> {
        // Per relation, its PER_RELATION texts in `vector`'s order.
        let types = end_types(kg);
        let flags = |named: fn(&str) -> bool| -> Vec<[bool; 2]> {
            types
                .iter()
                .map(|ends| ends.clone().map(|t| t.as_deref().is_some_and(named)))
                .collect()
        };
        let (agents, places) = (flags(names_agent), flags(names_place));
        let employers = flags(names_employer);
        let slots: Vec<Option<String>> = (0..kg.relation_count() as u32)
            .zip(types)
            .flat_map(|(r, [subjects, objects])| {
                let [name, noun] = relation_texts(kg, r);
                [Some(name), Some(noun), subjects, objects]
            })
            .collect();
        let mut texts: Vec<String> = slots.iter().flatten().cloned().collect();
        let named = texts.len();
        let mut alias_rows = Vec::with_capacity(kg.relation_count());
        for r in 0..kg.relation_count() as u32 {
            let start = texts.len() - named;
            texts.extend(kg.relation_aliases(r).map(str::to_string));
            alias_rows.push(start..texts.len() - named);
        }
        let mut vecs = embed_all(embedder, &texts)?;
        let dim = vecs.first().map_or(0, Vec::len);
        if vecs.iter().any(|v| v.len() != dim) {
            return Err("the encoder returned vectors of different lengths".into());
        }
        let alias_vecs: Vec<f32> = vecs.split_off(named).into_iter().flatten().collect();
        let mut vecs = vecs.into_iter();
        let mut out = Vec::with_capacity(slots.len() * dim);
        for slot in &slots {
            match slot.as_ref().and_then(|_| vecs.next()) {
                Some(v) => out.extend(v),
                None => out.extend(std::iter::repeat_n(0.0, dim)),
            }
        }
        Ok(StepVectors {
            dim,
            vecs: out,
            agents,
            places,
            employers,
            alias_rows,
            alias_vecs,
        })
    }

    /// Relation `r`'s alias vectors.
    fn aliases(&self, r: u32) -> impl Iterator<Item = &[f32]> {
        let rows = self.alias_rows.get(r as usize).cloned().unwrap_or(0..0);
        let (dim, vecs) = (self.dim, &self.alias_vecs);
        rows.filter_map(move |k| vecs.get(k * dim..(k + 1) * dim))
    }

    /// The best cosine of `p` to one of relation `r`'s aliases, if it has
    /// any.
    fn alias_sim(&self, r: u32, p: &[f32]) -> Option<f32> {
        self.aliases(r).map(|a| dot(p, a)).reduce(f32::max)
    }

    /// Relation `r`'s vector `k` (0: name, 1: noun, 2: subjects' type, 3:
    /// objects' type).
    fn vector(&self, r: u32, k: usize) -> Option<&[f32]> {
        let start = (PER_RELATION * r as usize + k) * self.dim;
        self.vecs.get(start..start + self.dim)
    }

    /// Whether the type at one end of `step` ([`Self::node_type`]) names
    /// people or groups.
    fn node_agent(&self, step: Step, to: bool) -> bool {
        end_flag(&self.agents, step, to)
    }

    /// Whether the type at one end of `step` names places.
    fn node_place(&self, step: Step, to: bool) -> bool {
        end_flag(&self.places, step, to)
    }

    /// Whether the type at one end of `step` names organisations people
    /// work at.
    fn node_employer(&self, step: Step, to: bool) -> bool {
        end_flag(&self.employers, step, to)
    }

    /// Relation `r`'s name and noun vectors.
    fn vectors(&self, r: u32) -> Option<(&[f32], &[f32])> {
        Some((self.vector(r, 0)?, self.vector(r, 1)?))
    }

    /// The vector of the type of what `step` leads to (`to`) or leaves
    /// (`!to`): a relation's objects' type at its object (`directed_by`
    /// leads to a director), its subjects' type at its subject
    /// (`directed_by_inv` to a film).
    fn node_type(&self, step: Step, to: bool) -> Option<&[f32]> {
        self.vector(step.relation, if step.inverse == to { 2 } else { 3 })
    }
}

/// A per-relation flag of its subjects' and objects' types, at the end of
/// `step` that it leads to (`to`) or leaves.
fn end_flag(flags: &[[bool; 2]], step: Step, to: bool) -> bool {
    flags
        .get(step.relation as usize)
        .is_some_and(|a| a[usize::from(step.inverse != to)])
}

/// Whether `node` is a literal value of an RDF graph (no IRI, no edges
/// out). A path goes on from one only straight back ("the films released
/// the same year as X").
pub fn is_literal(kg: &Kg<'_>, node: u32) -> bool {
    kg.has_iris() && kg.out.degree(node) == 0 && kg.entity_iri(node).is_none()
}

/// The steps that leave `node`.
pub fn steps_of(kg: &Kg<'_>, node: u32, out: &mut BTreeSet<Step>) {
    for (csr, inverse) in [(&kg.out, false), (&kg.inc, true)] {
        for &relation in csr.edges(node).0 {
            out.insert(Step { relation, inverse });
        }
    }
}

/// Where `step` leads from `frontier`: distinct nodes, the first `cap`.
fn advance(kg: &Kg<'_>, frontier: &[u32], step: Step, cap: usize) -> Vec<u32> {
    let mut seen = BTreeSet::new();
    for &n in frontier {
        for &m in step.neighbours(kg, n) {
            seen.insert(m);
            if seen.len() >= cap {
                return seen.into_iter().collect();
            }
        }
    }
    seen.into_iter().collect()
}

/// Whether the path goes straight back somewhere (`r, r_inv`): a question
/// asks that only for others of the same kind ([`Phrases::same`]).
fn goes_back(steps: &[Step]) -> bool {
    steps
        .windows(2)
        .any(|w| w[1].relation == w[0].relation && w[1].inverse != w[0].inverse)
}

/// Whether the path goes there, back and there again (`r, r_inv, r`): its
/// answers are mostly the first step's, a question nobody asks that way.
pub fn doubles_back(steps: &[Step]) -> bool {
    steps.windows(3).any(|w| w[0] == w[2] && goes_back(&w[..2]))
}

/// A question made ready for ranking: its phrases and their vectors.
pub struct Question {
    phrases: Phrases,
    vecs: Vec<Vec<f32>>,
}

impl Question {
    /// Embeds the phrases of `masked` (the question with its topic as
    /// `mask`) in one batch.
    pub fn new(masked: &str, mask: &str, embedder: &dyn TextEncoder) -> Result<Question, String> {
        let phrases = chunks::phrases(masked, mask);
        let vecs = embed_all(embedder, &phrases.texts)?;
        Ok(Question { phrases, vecs })
    }

    /// Cosine of every phrase to relation `r`: the best of its two texts
    /// and its aliases.
    fn sims(&self, steps: &StepVectors, r: u32) -> Vec<f32> {
        let Some((a, b)) = steps.vectors(r) else {
            return vec![0.0; self.vecs.len()];
        };
        self.vecs
            .iter()
            .map(|p| {
                let own = dot(p, a).max(dot(p, b));
                steps.alias_sim(r, p).map_or(own, |s| own.max(s))
            })
            .collect()
    }

    /// Cosine of every phrase to the type at one end of `step`
    /// ([`StepVectors::node_type`]).
    /// A type that names people or groups matches "who" at
    /// [`GLOSS_MATCH`] at least, and one that names places "where": the
    /// encoder does not put "person" near "solo artist" or "band", and puts
    /// "place" nearer "film" than "planet".
    fn type_sims(&self, steps: &StepVectors, step: Step, to: bool) -> Vec<f32> {
        let Some(t) = steps.node_type(step, to) else {
            return vec![0.0; self.vecs.len()];
        };
        // A relation's aliases name what it leads to as well ("filmmaker"
        // for `directed_by`'s objects), not what it leaves.
        let objects = step.inverse != to;
        let mut sims: Vec<f32> = self
            .vecs
            .iter()
            .map(|p| {
                let own = dot(p, t);
                let alias = objects.then(|| steps.alias_sim(step.relation, p)).flatten();
                alias.map_or(own, |s| own.max(s))
            })
            .collect();
        let glosses = [
            (chunks::PERSON, steps.node_agent(step, to)),
            (chunks::PLACE, steps.node_place(step, to)),
            (chunks::EMPLOYER, steps.node_employer(step, to)),
        ];
        let words = self
            .phrases
            .texts
            .len()
            .saturating_sub(self.phrases.glosses);
        for (j, text) in self.phrases.texts.iter().enumerate().skip(words) {
            if glosses.iter().any(|&(g, named)| named && text == g) {
                if let Some(s) = sims.get_mut(j) {
                    *s = s.max(GLOSS_MATCH);
                }
            }
        }
        sims
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Per relation, its cosines to the question's phrases, computed once.
struct SimCache<'q> {
    question: &'q Question,
    steps: &'q StepVectors,
    rows: Vec<Option<Vec<f32>>>,
    /// Per step and end (`true`: where it leads): cosines to that node's
    /// type.
    types: std::collections::HashMap<(Step, bool), Vec<f32>>,
}

impl SimCache<'_> {
    fn row(&mut self, r: u32) -> &[f32] {
        let i = r as usize;
        if i >= self.rows.len() {
            self.rows.resize(i + 1, None);
        }
        let (question, steps) = (self.question, self.steps);
        self.rows[i].get_or_insert_with(|| question.sims(steps, r))
    }

    /// `untyped_end`: the path's last node has no type of its own, whatever
    /// its relation's objects have elsewhere.
    fn score(&mut self, path: &[Step], untyped_end: bool, w: &Weights) -> f32 {
        for s in path {
            self.row(s.relation);
        }
        let rows: Vec<&[f32]> = path
            .iter()
            .map(|s| self.rows[s.relation as usize].as_deref().unwrap_or(&[]))
            .collect();
        let backs: Vec<bool> = (0..path.len())
            .map(|i| i > 0 && goes_back(&path[i - 1..=i]))
            .collect();
        // The topic's type from the first step, every other node's from the
        // step that reaches it.
        let ends: Vec<(Step, bool)> = path
            .first()
            .map(|&s| (s, false))
            .into_iter()
            .chain(path.iter().map(|&s| (s, true)))
            .collect();
        let (question, steps) = (self.question, self.steps);
        for &end in &ends {
            self.types
                .entry(end)
                .or_insert_with(|| question.type_sims(steps, end.0, end.1));
        }
        let mut types: Vec<&[f32]> = ends
            .iter()
            .map(|e| self.types.get(e).map_or(&[][..], Vec::as_slice))
            .collect();
        if untyped_end {
            if let Some(last) = types.last_mut() {
                *last = &[];
            }
        }
        chunks::score(&rows, &backs, &types, &self.question.phrases, w)
    }
}

/// A path being walked: its steps and where it has got to.
struct Walk {
    steps: Vec<Step>,
    frontier: Vec<u32>,
    score: f32,
}

/// The paths from `topic` that bind, best first (ties: shorter first, then
/// in step order).
pub fn rank(
    kg: &Kg<'_>,
    topic: u32,
    question: &Question,
    steps: &StepVectors,
    opts: &RankOptions,
) -> Vec<RankedPath> {
    let mut cache = SimCache {
        question,
        steps,
        rows: Vec::new(),
        types: Default::default(),
    };
    let mut level = vec![Walk {
        steps: Vec::new(),
        frontier: vec![topic],
        score: 0.0,
    }];
    let mut out = Vec::new();
    for _ in 0..opts.max_hops {
        let mut next = Vec::new();
        for walk in &level {
            let mut leaving = BTreeSet::new();
            let back = walk.steps.last().map(|s| Step {
                inverse: !s.inverse,
                ..*s
            });
            // A value (a literal) leads only back to what else has it,
            // and only a question of the same kind asks that ("who has
            // the same eye colour as [X]"; "what colour are [X]'s eyes"
            // stops at the value).
            for &n in &walk.frontier {
                if walk.steps.is_empty() || !is_literal(kg, n) {
                    steps_of(kg, n, &mut leaving);
                } else if let (Some(b), true) = (back, question.phrases.same) {
                    leaving.insert(b);
                }
            }
            for step in leaving {
                if step.inverse && is_type(kg, step.relation)
                    || walk.steps.last().is_some_and(|s| is_type(kg, s.relation))
                {
                    continue;
                }
                let mut path = walk.steps.clone();
                path.push(step);
                if doubles_back(&path) {
                    continue;
                }
                let frontier = advance(kg, &walk.frontier, step, opts.frontier);
                if frontier.is_empty() {
                    continue;
                }
                // The type relation's objects are typed by the class of
                // classes only where these classes have one ("what species
                // live on [Naboo]" is not `Naboo -> type`: `Planet` is no
                // species).
                let untyped = is_type(kg, step.relation)
                    && !step.inverse
                    && frontier
                        .iter()
                        .all(|&c| kg.out.neighbours(c, step.relation).is_empty());
                let score = cache.score(&path, untyped, &opts.weights);
                next.push(Walk {
                    steps: path,
                    frontier,
                    score,
                });
            }
        }
        next.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.steps.cmp(&b.steps)));
        out.extend(next.iter().map(|w| RankedPath {
            steps: w.steps.clone(),
            score: w.score,
        }));
        next.truncate(opts.beam);
        level = next;
    }
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.steps.len().cmp(&b.steps.len()))
            .then(a.steps.cmp(&b.steps))
    });
    out
}

/// The relation names of a path (`pilot`, `homeworld_inv`).
pub fn path_names(kg: &Kg<'_>, steps: &[Step]) -> Option<Vec<String>> {
    steps.iter().map(|s| s.name(kg)).collect()
}

/// The steps of a chain of relation names, as the binder reads them
/// (`homeworld_inv` is the inverse of `homeworld` unless the graph has a
/// relation of that name).
pub fn path_steps(kg: &Kg<'_>, names: &[&str]) -> Option<Vec<Step>> {
    names
        .iter()
        .map(|n| {
            if let Some(relation) = kg.relation_id(n) {
                return Some(Step {
                    relation,
                    inverse: false,
                });
            }
            let base = n.strip_suffix(kgbox_query::bind::INVERSE_SUFFIX)?;
            Some(Step {
                relation: kg.relation_id(base)?,
                inverse: true,
            })
        })
        .collect()
}

/// The score of a given path (a learned template's chain, say) against
/// the question, as [`rank`] scores it.
pub fn score_path(question: &Question, steps: &StepVectors, path: &[Step], w: &Weights) -> f32 {
    let mut cache = SimCache {
        question,
        steps,
        rows: Vec::new(),
        types: Default::default(),
    };
    cache.score(path, false, w)
}

#[cfg(test)]
mod tests;
