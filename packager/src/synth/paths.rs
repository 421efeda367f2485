//! The graph's question paths: chains of one to three relations, each in
//! either direction, that bind from real topic entities of the graph and
//! lead to a modest answer set (people ask "who directed the films X
//! starred in", not "which films share a release year with X": the second
//! passes through a hub and answers thousands).
//!
//! The schema is read from samples: for each relation and direction, up to
//! [`PathOptions::topics_per_step`] entities that have an edge of it are
//! walked one step at a time along every chain of up to
//! [`PathOptions::max_hops`] steps that their neighbourhood offers. A chain
//! is kept, and tried one step longer, when at least
//! [`PathOptions::min_bound`] of its sampled topics reach between one and
//! [`PathOptions::max_answers`] answers (the topic itself never counts as
//! one).

use std::collections::{BTreeMap, BTreeSet};

use kgbox_bundle::Kg;
use kgbox_qa::rng::SplitMix64;

pub use kgbox_qa::planner::paths::Step;
use kgbox_qa::planner::paths::{doubles_back, is_literal, steps_of};

/// How paths are found.
#[derive(Debug, Clone)]
pub struct PathOptions {
    /// Steps in a path at most.
    pub max_hops: usize,
    /// Topics sampled per first step.
    pub topics_per_step: usize,
    /// Answers a question may have at most (more: nobody asks it).
    pub max_answers: usize,
    /// Share of the sampled topics the path must answer (1 to
    /// `max_answers` answers).
    pub min_bound: f32,
    /// Paths kept at most (better-bound and more varied first, shared among the lengths by
    /// `hop_quotas`).
    pub max_paths: usize,
    /// Entities scanned for topics at most (spread over the graph).
    pub max_scan: usize,
}

impl Default for PathOptions {
    fn default() -> Self {
        PathOptions {
            max_hops: 3,
            topics_per_step: 40,
            max_answers: 30,
            min_bound: 0.4,
            max_paths: 360,
            max_scan: 2_000_000,
        }
    }
}

/// A path kept, with the sampled topics it answers well.
#[derive(Debug, Clone)]
pub struct QuestionPath {
    pub steps: Vec<Step>,
    /// Topics with 1 to `max_answers` answers.
    pub topics: Vec<u32>,
    /// Share of the sampled topics among them.
    pub bound: f32,
    /// How much the answers differ from topic to topic: distinct answers
    /// over those topics, per topic, at most 1. A path that answers every
    /// topic alike ("the type of X's papers": always the same class) tells
    /// little and is kept after those that do not.
    pub spread: f32,
}

impl QuestionPath {
    /// What the paths of one length are ranked by.
    fn worth(&self) -> f32 {
        self.bound * self.spread
    }
}

/// The entities one `step` from `frontier`, the topic left out; `None`
/// once there are more than `cap`.
fn advance(kg: &Kg<'_>, topic: u32, frontier: &[u32], step: Step, cap: usize) -> Option<Vec<u32>> {
    let mut next = BTreeSet::new();
    for &n in frontier {
        next.extend(step.neighbours(kg, n).iter().filter(|&&m| m != topic));
        if next.len() > cap {
            return None;
        }
    }
    Some(next.into_iter().collect())
}

/// The entities reached from `topic` along `steps`, the topic left out;
/// `None` once a frontier grows past `cap`.
pub fn follow(kg: &Kg<'_>, topic: u32, steps: &[Step], cap: usize) -> Option<Vec<u32>> {
    let mut frontier = vec![topic];
    for &step in steps {
        frontier = advance(kg, topic, &frontier, step, cap)?;
    }
    Some(frontier)
}

/// Up to `per_step` topics for each first step, sampled evenly from at
/// most `max_scan` entities spread over the graph (reservoir sampling).
fn sample_topics(
    kg: &Kg<'_>,
    per_step: usize,
    max_scan: usize,
    rng: &mut SplitMix64,
) -> BTreeMap<Step, Vec<u32>> {
    let n = kg.entity_count();
    let stride = n.div_ceil(max_scan.max(1)).max(1);
    let mut seen: BTreeMap<Step, usize> = BTreeMap::new();
    let mut topics: BTreeMap<Step, Vec<u32>> = BTreeMap::new();
    let mut steps = BTreeSet::new();
    for e in (0..n).step_by(stride) {
        let e = e as u32;
        steps.clear();
        steps_of(kg, e, &mut steps);
        for &s in &steps {
            let count = seen.entry(s).or_insert(0);
            *count += 1;
            let list = topics.entry(s).or_default();
            if list.len() < per_step {
                list.push(e);
            } else {
                let j = rng.below(*count);
                if j < per_step {
                    list[j] = e;
                }
            }
        }
    }
    topics
}

/// A path being walked: its steps, how many topics were sampled for its
/// first step, and each topic's frontier (those that did not outgrow the
/// cap).
struct Walk {
    steps: Vec<Step>,
    sampled: usize,
    frontiers: Vec<(u32, Vec<u32>)>,
}

/// The graph's question paths, shorter first, then in turns over their
/// beginnings, better-bound and more varied first. Walked one
/// hop at a time: only a path that is itself worth asking is extended, so
/// the work grows with the paths kept, not with every chain the graph has.
pub fn question_paths(kg: &Kg<'_>, opts: &PathOptions, seed: u64) -> Vec<QuestionPath> {
    find_paths(kg, opts, seed).paths
}

/// [`question_paths`], and which lengths the quota cut.
#[derive(Debug, Default)]
pub struct QuestionPaths {
    pub paths: Vec<QuestionPath>,
    /// Per length (index 0: one hop), whether paths worth asking were left
    /// out to keep within [`PathOptions::max_paths`].
    pub partial: Vec<bool>,
}

/// The graph's question paths ([`question_paths`]) with the lengths whose
/// paths were not all kept.
pub fn find_paths(kg: &Kg<'_>, opts: &PathOptions, seed: u64) -> QuestionPaths {
    let mut rng = SplitMix64::new(seed);
    let topics = sample_topics(kg, opts.topics_per_step, opts.max_scan, &mut rng);
    // A frontier this large only leads to larger ones.
    let cap = opts.max_answers * 8;
    let mut level: Vec<Walk> = topics
        .iter()
        .map(|(&first, list)| Walk {
            steps: vec![first],
            sampled: list.len(),
            frontiers: list
                .iter()
                .filter_map(|&t| Some((t, advance(kg, t, &[t], first, cap)?)))
                .collect(),
        })
        .collect();
    let mut kept = Vec::new();
    for hop in 1..=opts.max_hops {
        let mut next_level = Vec::new();
        for walk in level {
            let mut good = Vec::new();
            let mut distinct = BTreeSet::new();
            for (t, f) in &walk.frontiers {
                if (1..=opts.max_answers).contains(&f.len()) {
                    good.push(*t);
                    distinct.extend(f.iter().copied());
                }
            }
            // Share of all topics sampled for the first step, not only of
            // those that reached this far.
            let bound = good.len() as f32 / walk.sampled.max(1) as f32;
            if bound < opts.min_bound {
                continue;
            }
            let spread = (distinct.len() as f32 / good.len().max(1) as f32).min(1.0);
            if hop < opts.max_hops {
                let mut next_steps = BTreeSet::new();
                for (_, f) in &walk.frontiers {
                    for &n in f {
                        steps_of(kg, n, &mut next_steps);
                    }
                }
                for step in next_steps {
                    let mut steps = walk.steps.clone();
                    steps.push(step);
                    // A literal is passed through only straight back
                    // ("the films released the same year as X").
                    let back = walk.steps.len() == 1
                        && walk.steps[0].relation == step.relation
                        && walk.steps[0].inverse != step.inverse;
                    let frontiers = walk
                        .frontiers
                        .iter()
                        .filter(|(t, _)| !is_literal(kg, *t))
                        .filter_map(|(t, f)| {
                            let f: Vec<u32> = if back {
                                f.clone()
                            } else {
                                f.iter().copied().filter(|&n| !is_literal(kg, n)).collect()
                            };
                            Some((*t, advance(kg, *t, &f, step, cap)?))
                        })
                        .collect();
                    next_level.push(Walk {
                        steps,
                        sampled: walk.sampled,
                        frontiers,
                    });
                }
            }
            if !doubles_back(&walk.steps) {
                kept.push(QuestionPath {
                    steps: walk.steps,
                    topics: good,
                    bound,
                    spread,
                });
            }
        }
        level = next_level;
    }
    kept.sort_by(|a, b| {
        a.steps
            .len()
            .cmp(&b.steps.len())
            .then(b.worth().total_cmp(&a.worth()))
            .then(a.steps.cmp(&b.steps))
    });
    // Round robin over the paths' beginnings (all but the last step), so
    // that a quota is not filled by one well-bound start with every ending.
    let mut seen: BTreeMap<&[Step], usize> = BTreeMap::new();
    let turns: Vec<usize> = kept
        .iter()
        .map(|p| {
            let n = seen.entry(&p.steps[..p.steps.len() - 1]).or_default();
            *n += 1;
            *n
        })
        .collect();
    let mut ranked: Vec<(usize, QuestionPath)> = turns.into_iter().zip(kept).collect();
    // Stable: within a turn, the order above.
    ranked.sort_by_key(|(turn, p)| (p.steps.len(), *turn));
    let mut kept: Vec<QuestionPath> = ranked.into_iter().map(|(_, p)| p).collect();
    let mut by_hops = vec![0; opts.max_hops];
    for p in &kept {
        by_hops[p.steps.len() - 1] += 1;
    }
    let quota = hop_quotas(&by_hops, opts.max_paths);
    let mut taken = vec![0; opts.max_hops];
    kept.retain(|p| {
        let h = p.steps.len() - 1;
        taken[h] += 1;
        taken[h] <= quota[h]
    });
    QuestionPaths {
        paths: kept,
        partial: by_hops.iter().zip(&quota).map(|(n, q)| n > q).collect(),
    }
}

/// How many paths of each length to keep out of `found`, `max` in all:
/// one-hop paths first (up to half), then the rest shared evenly among the
/// longer lengths, a length with fewer paths than its share leaving the
/// remainder to the others. Without it a graph with many one- and two-hop
/// paths would keep no three-hop path at all.
fn hop_quotas(found: &[usize], max: usize) -> Vec<usize> {
    let mut quota = vec![0; found.len()];
    let Some((&first, rest)) = found.split_first() else {
        return quota;
    };
    quota[0] = first.min(max.div_ceil(2).max(max.saturating_sub(rest.iter().sum())));
    let mut left = max - quota[0];
    let mut open: Vec<usize> = (1..found.len()).filter(|&h| found[h] > 0).collect();
    while left > 0 && !open.is_empty() {
        let share = (left / open.len()).max(1);
        let mut still = Vec::new();
        for &h in &open {
            let take = share.min(found[h] - quota[h]).min(left);
            quota[h] += take;
            left -= take;
            if quota[h] < found[h] {
                still.push(h);
            }
        }
        open = still;
    }
    quota
}

#[cfg(test)]
mod tests {
    use super::hop_quotas;

    #[test]
    fn longer_paths_keep_a_share() {
        assert_eq!(hop_quotas(&[121, 500, 400], 360), vec![121, 120, 119]);
        assert_eq!(hop_quotas(&[400, 500, 400], 360), vec![180, 90, 90]);
        assert_eq!(hop_quotas(&[10, 500, 20], 360), vec![10, 330, 20]);
        assert_eq!(hop_quotas(&[10, 5, 20], 360), vec![10, 5, 20]);
        assert_eq!(hop_quotas(&[], 360), Vec::<usize>::new());
    }
}
