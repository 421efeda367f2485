//! Fits the `hybrid` executor's fusion (`kgbox_query::fusion`) at pack time:
//! logistic regression of "is a gold answer" on the symbolic membership and
//! the neural score of every entity either executor returns, over planner
//! examples held out of the executor's training (`train::held_out`).

use std::collections::{BTreeMap, HashSet};

use anyhow::{Context, Result};
use kgbox_neural::seppr::SepprParams;
use kgbox_neural::{Device, EngineKind, NeuralProjector, UltraModel};
use kgbox_qa::planner::train::Example;
use kgbox_query::fusion::{features, Fusion};
use kgbox_query::plan::Plan;
use kgbox_query::{execute_with, ExecOptions, Executor};

use crate::graph::Aligned;
use crate::train::{chain, held_out, plan_of};

/// Held-out examples used per chain length (longer plans count as one group).
const PER_GROUP: usize = 200;
/// Answers each executor contributes as candidates.
const CANDIDATES: usize = 100;
/// One-sided p-value below which the best candidate replaces
/// [`Fusion::STATED_FIRST`].
const SIGNIFICANCE: f64 = 0.05;

/// Hits@1 of each executor on the calibration examples of one chain length.
#[derive(Debug, Clone, Default)]
pub struct GroupScore {
    pub examples: usize,
    pub symbolic: usize,
    pub neural: usize,
    pub fused_default: usize,
    pub fused: usize,
}

/// The best-scoring candidate against [`Fusion::STATED_FIRST`] on the
/// calibration questions.
#[derive(Debug, Clone, Copy)]
pub struct Versus {
    pub best: Fusion,
    /// Questions whose top answer is gold with `best` and not with stated-first.
    pub wins: usize,
    /// The reverse.
    pub losses: usize,
    /// P(at least `wins` of `wins + losses` by chance), one-sided sign test.
    pub p_value: f64,
}

pub struct Fitted {
    pub fusion: Fusion,
    pub versus_stated_first: Versus,
    /// Keyed by chain length (0: other plans).
    pub scores: BTreeMap<usize, GroupScore>,
}

impl Fitted {
    pub fn report(&self) -> String {
        let pct = |k: usize, n: usize| 100.0 * k as f64 / n.max(1) as f64;
        let groups: Vec<String> = self
            .scores
            .iter()
            .map(|(hops, g)| {
                format!(
                    "{}: n {} symbolic {:.1} neural {:.1} default {:.1} fused {:.1}",
                    if *hops == 0 {
                        "other".to_string()
                    } else {
                        format!("{hops}-hop")
                    },
                    g.examples,
                    pct(g.symbolic, g.examples),
                    pct(g.neural, g.examples),
                    pct(g.fused_default, g.examples),
                    pct(g.fused, g.examples)
                )
            })
            .collect();
        let f = self.fusion;
        let v = self.versus_stated_first;
        let choice = if f == Fusion::STATED_FIRST {
            "stated-first"
        } else {
            "fitted"
        };
        format!(
            "fusion ({choice}): stated {:.3} neural {:.3} both {:.3} bias {:.3}; best fit \
             against stated-first: {} better, {} worse (p {:.3}); held-out Hits@1 {}",
            f.stated,
            f.neural,
            f.both,
            f.bias,
            v.wins,
            v.losses,
            v.p_value,
            groups.join("; ")
        )
    }
}

/// One calibration question: its candidates' (s, p) and whether each is gold.
struct Case {
    group: usize,
    rows: Vec<([f32; 2], bool)>,
}

/// Fits the fusion on the held-out examples with answers; `None` when the
/// bundle has no neural model or there are no such examples.
pub fn fit(
    built: &[(&'static str, crate::section::SectionData)],
    examples: &[Example],
) -> Result<Option<Fitted>> {
    let aligned = Aligned::new(built)?;
    let get = |name: &str| aligned.get(name);
    let kg = aligned.kg()?;
    let Some(model) =
        UltraModel::from_sections(get, kg.relation_count(), EngineKind::Native, Device::Cpu)
            .context("the neural model does not load")?
    else {
        return Ok(None);
    };
    let projector = NeuralProjector::new(&kg, &model, SepprParams::default());
    // Every held-out example with answers, by chain length; then up to
    // PER_GROUP of each, evenly spaced (example files are often sorted by
    // question type).
    let mut groups: BTreeMap<usize, Vec<(Plan, HashSet<u32>)>> = BTreeMap::new();
    for ex in examples.iter().filter(|e| held_out(&e.question)) {
        let (Some(answers), Some(plan)) = (&ex.answers, plan_of(&kg, &ex.dsl)) else {
            continue;
        };
        let group = chain(&plan).map_or(0, |(_, steps)| steps.len());
        let gold: HashSet<u32> = answers.iter().filter_map(|a| kg.entity_id(a)).collect();
        groups.entry(group).or_default().push((plan, gold));
    }
    let mut picked = Vec::new();
    for (group, all) in groups {
        let take = all.len().min(PER_GROUP);
        let mut all: Vec<Option<(Plan, HashSet<u32>)>> = all.into_iter().map(Some).collect();
        let len = all.len();
        for i in 0..take {
            if let Some((plan, gold)) = all.get_mut(i * len / take).and_then(Option::take) {
                picked.push((group, plan, gold));
            }
        }
    }
    if picked.is_empty() {
        return Ok(None);
    }
    let opts = |executor| ExecOptions {
        top_k: CANDIDATES,
        max_paths: 0,
        executor,
        ..ExecOptions::default()
    };
    let workers = std::thread::available_parallelism().map_or(1, usize::from);
    let chunk = picked.len().div_ceil(workers);
    let cases: Vec<Case> = std::thread::scope(|scope| {
        let handles: Vec<_> = picked
            .chunks(chunk)
            .map(|part| {
                let (kg, projector) = (&kg, &projector);
                scope.spawn(move || {
                    part.iter()
                        .filter_map(|(group, plan, gold)| {
                            let s = execute_with(kg, plan, &opts(Executor::Symbolic), None).ok()?;
                            let p =
                                execute_with(kg, plan, &opts(Executor::Neural), Some(projector))
                                    .ok()?;
                            let mut sp: BTreeMap<u32, [f32; 2]> = BTreeMap::new();
                            for a in &s.answers {
                                sp.entry(a.entity).or_default()[0] = a.score;
                            }
                            for a in &p.answers {
                                sp.entry(a.entity).or_default()[1] = a.score;
                            }
                            let rows = sp
                                .into_iter()
                                .map(|(e, v)| (v, gold.contains(&e)))
                                .collect();
                            Some(Case {
                                group: *group,
                                rows,
                            })
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    // Candidates: the logistic fit, the default, and a small grid around the
    // default (the fit optimises likelihood, not the top answer); the one
    // with the most held-out Hits@1 wins, earlier ones on ties. It replaces
    // the stated-first order only when it is better beyond chance (a one-sided
    // sign test over the questions where the two disagree): where the graph is
    // complete, reordering its stated answers can only trade coin tosses.
    let mut candidates = vec![logistic(&cases).bounded(), Fusion::default()];
    for stated in [0.0, 0.5, 1.0, 2.0, 4.0] {
        for both in [-0.25, 0.0, 0.25] {
            candidates.push(Fusion {
                stated,
                neural: 0.5,
                both,
                bias: 0.0,
            });
        }
    }
    let tops = |f: &Fusion| -> Vec<bool> {
        cases
            .iter()
            .map(|c| top_is_gold(&c.rows, |[s, p]| f.logit(s, p)))
            .collect()
    };
    let hits = |f: &Fusion| tops(f).into_iter().filter(|&t| t).count();
    let mut best = candidates[0];
    for f in &candidates[1..] {
        if hits(f) > hits(&best) {
            best = *f;
        }
    }
    let baseline = tops(&Fusion::STATED_FIRST);
    let (mut wins, mut losses) = (0, 0);
    for (b, s) in tops(&best).into_iter().zip(baseline) {
        wins += usize::from(b && !s);
        losses += usize::from(s && !b);
    }
    let p_value = sign_test(wins, losses);
    let fusion = if p_value < SIGNIFICANCE {
        best
    } else {
        Fusion::STATED_FIRST
    };
    let default = Fusion::default();
    let mut scores: BTreeMap<usize, GroupScore> = BTreeMap::new();
    for case in &cases {
        let g = scores.entry(case.group).or_default();
        g.examples += 1;
        let member = |x: f32| if x > 0.0 { x } else { f32::NEG_INFINITY };
        g.symbolic += usize::from(top_is_gold(&case.rows, |[s, _]| member(s)));
        g.neural += usize::from(top_is_gold(&case.rows, |[_, p]| member(p)));
        g.fused_default += usize::from(top_is_gold(&case.rows, |[s, p]| default.logit(s, p)));
        g.fused += usize::from(top_is_gold(&case.rows, |[s, p]| fusion.logit(s, p)));
    }
    Ok(Some(Fitted {
        fusion,
        versus_stated_first: Versus {
            best,
            wins,
            losses,
            p_value,
        },
        scores,
    }))
}

/// Whether the best-scoring row (ties: the first, as entity ids ascend) is
/// gold; rows scored `-inf` are not answers.
fn top_is_gold(rows: &[([f32; 2], bool)], score: impl Fn([f32; 2]) -> f32) -> bool {
    let mut best: Option<(f32, bool)> = None;
    for &(v, gold) in rows {
        let z = score(v);
        if z > f32::NEG_INFINITY && best.is_none_or(|(b, _)| z > b) {
            best = Some((z, gold));
        }
    }
    best.is_some_and(|(_, g)| g)
}

/// One-sided sign test: the probability of at least `wins` successes in
/// `wins + losses` fair coin tosses.
fn sign_test(wins: usize, losses: usize) -> f64 {
    let n = wins + losses;
    if wins == 0 {
        return 1.0;
    }
    // ln C(n, k) by running sums, so large n does not overflow.
    let ln_half_n = n as f64 * 0.5f64.ln();
    let mut ln_choose = 0.0f64; // ln C(n, 0)
    let mut tail = 0.0f64;
    for k in 0..=n {
        if k > 0 {
            ln_choose += ((n - k + 1) as f64).ln() - (k as f64).ln();
        }
        if k >= wins {
            tail += (ln_choose + ln_half_n).exp();
        }
    }
    tail.min(1.0)
}

/// Weighted logistic regression by Newton's method (each question weighs 1,
/// spread over its candidates; a small ridge keeps it finite when the data
/// separate).
fn logistic(cases: &[Case]) -> Fusion {
    const RIDGE: f64 = 1e-3;
    let mut x: Vec<([f64; 4], f64, f64)> = Vec::new();
    for case in cases {
        let w = 1.0 / case.rows.len().max(1) as f64;
        for &([s, p], gold) in &case.rows {
            let [a, b, c] = features(s, p);
            x.push((
                [f64::from(a), f64::from(b), f64::from(c), 1.0],
                f64::from(u8::from(gold)),
                w,
            ));
        }
    }
    let mut beta = [0.0f64; 4];
    for _ in 0..50 {
        let mut grad = [0.0f64; 4];
        let mut hess = [[0.0f64; 4]; 4];
        for (f, y, w) in &x {
            let z: f64 = (0..4).map(|i| beta[i] * f[i]).sum();
            let mu = 1.0 / (1.0 + (-z).exp());
            for i in 0..4 {
                grad[i] += w * (mu - y) * f[i];
                for j in 0..4 {
                    hess[i][j] += w * mu * (1.0 - mu) * f[i] * f[j];
                }
            }
        }
        for i in 0..4 {
            grad[i] += RIDGE * beta[i];
            hess[i][i] += RIDGE;
        }
        let Some(step) = solve(hess, grad) else {
            break;
        };
        let mut moved = 0.0f64;
        for i in 0..4 {
            beta[i] -= step[i];
            moved = moved.max(step[i].abs());
        }
        if moved < 1e-8 {
            break;
        }
    }
    Fusion {
        stated: beta[0] as f32,
        neural: beta[1] as f32,
        both: beta[2] as f32,
        bias: beta[3] as f32,
    }
}

/// Solves `a · x = b` (4×4, Gaussian elimination with partial pivoting).
fn solve(mut a: [[f64; 4]; 4], mut b: [f64; 4]) -> Option<[f64; 4]> {
    for col in 0..4 {
        let pivot = (col..4).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() < 1e-12 {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        let pivot_row = a[col];
        for row in col + 1..4 {
            let k = a[row][col] / pivot_row[col];
            for (x, p) in a[row].iter_mut().zip(pivot_row).skip(col) {
                *x -= k * p;
            }
            b[row] -= k * b[col];
        }
    }
    let mut x = [0.0f64; 4];
    for row in (0..4).rev() {
        let s: f64 = (row + 1..4).map(|c| a[row][c] * x[c]).sum();
        x[row] = (b[row] - s) / a[row][row];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logistic_learns_that_stated_answers_are_right() {
        // Stated candidates are gold, inferred ones are gold when the model is sure.
        let mut cases = Vec::new();
        for i in 0..50 {
            let p = (i as f32 + 0.5) / 50.0;
            cases.push(Case {
                group: 1,
                rows: vec![
                    ([1.0, 0.3], true),
                    ([0.0, p], p > 0.8),
                    ([0.0, 0.05], false),
                ],
            });
        }
        let f = logistic(&cases);
        assert!(f.stated > 0.0 && f.neural > 0.0, "{f:?}");
        assert!(f.logit(1.0, 0.3) > f.logit(0.0, 0.5));
        assert!(f.logit(0.0, 0.95) > f.logit(0.0, 0.1));
    }

    #[test]
    fn sign_test_matches_the_binomial_tail() {
        assert_eq!(sign_test(0, 5), 1.0);
        assert!((sign_test(2, 0) - 0.25).abs() < 1e-12);
        assert!((sign_test(5, 0) - 1.0 / 32.0).abs() < 1e-12);
        // P(X >= 8 | n = 10) = (45 + 10 + 1) / 1024
        assert!((sign_test(8, 2) - 56.0 / 1024.0).abs() < 1e-12);
        assert!((sign_test(5, 5) - 638.0 / 1024.0).abs() < 1e-12);
        assert!(sign_test(600, 400) < 1e-9);
        assert!(sign_test(2000, 2000) > 0.49);
    }

    #[test]
    fn solve_inverts_a_system() {
        let a = [
            [4.0, 1.0, 0.0, 0.0],
            [1.0, 3.0, 0.0, 0.0],
            [0.0, 0.0, 2.0, 0.0],
            [0.0, 0.0, 0.0, 1.0],
        ];
        let x = solve(a, [1.0, 2.0, 4.0, -1.0]).unwrap();
        assert!((4.0 * x[0] + x[1] - 1.0).abs() < 1e-9);
        assert!((x[0] + 3.0 * x[1] - 2.0).abs() < 1e-9);
        assert_eq!([x[2], x[3]], [2.0, -1.0]);
        assert!(solve([[0.0; 4]; 4], [1.0; 4]).is_none());
    }
}
