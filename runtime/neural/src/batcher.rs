//! Admission and micro-batching of concurrent projections.
//!
//! Every projection of a model passes one first-come, first-served gate
//! with [`BatchConfig::parallel`] places (by default one per core): at most
//! that many run at once, and the others queue in arrival order, so under a
//! flood of clients each request waits its turn instead of starving in a
//! crowd of threads. The projection at the head of the queue, when a place
//! is free, leads: it takes the queued projections behind it, up to
//! [`BatchConfig::max_nodes`] subgraph nodes (one projection when batching
//! is off), runs SEPPR and the subgraph of each, then the entity model once
//! over all of them as a disjoint batch ([`Scorer::score`], which the entity
//! model implements), and hands each its scores. There is no batching thread
//! and no timer: a batch is whatever queued while the previous ones ran, so a
//! request alone never waits, and a queued one waits for at most the batches
//! ahead of it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use kgbox_bundle::Kg;
use rayon::prelude::*;

use crate::seppr::{self, SepprParams};
use crate::subgraph::Subgraph;
use crate::{NeuralError, Result};

/// How projections are admitted and batched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchConfig {
    /// Run the queued projections together (native engine only).
    pub batch: bool,
    /// A batch takes queued projections until their subgraphs (SEPPR's `k`
    /// each) reach this many nodes; the first is always taken.
    pub max_nodes: usize,
    /// Projections (or batches) running at once.
    pub parallel: usize,
}

impl Default for BatchConfig {
    fn default() -> Self {
        BatchConfig {
            batch: true,
            max_nodes: 16_384,
            parallel: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// One projection: the fuzzy input set (sorted by entity id), the relation
/// type (inverses from R), and the SEPPR parameters of its request.
pub struct Projection {
    pub seeds: Vec<(u32, f32)>,
    pub relation: usize,
    pub params: SepprParams,
}

/// Its result: the subgraph's nodes (global ids) and their logits.
pub type Scored = (Vec<u32>, Vec<f32>);

/// What scores the projections: the entity model
/// ([`crate::model::UltraModel`]).
pub trait Scorer: Sync {
    /// The logits of every node of each item's graph, for the projection
    /// along the item's relation (inverses from R) of its fuzzy start set
    /// (one membership per node of the graph); one result per item, in
    /// order. The items may run as one disjoint batch.
    fn score(&self, items: &[(&Subgraph, usize, &[f32])]) -> Result<Vec<Vec<f32>>>;
}

struct Job {
    projection: Projection,
    result: Mutex<Option<Result<Scored, String>>>,
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Arc<Job>>,
    running: usize,
}

/// The gate and batcher of one model (see the module docs).
pub struct Batcher {
    config: BatchConfig,
    queue: Mutex<Queue>,
    changed: Condvar,
    batches: AtomicUsize,
    projections: AtomicUsize,
}

fn poisoned() -> NeuralError {
    NeuralError::Run("a previous projection panicked".into())
}

impl Batcher {
    pub fn new(config: BatchConfig) -> Batcher {
        Batcher {
            config: BatchConfig {
                max_nodes: config.max_nodes.max(1),
                parallel: config.parallel.max(1),
                ..config
            },
            queue: Mutex::new(Queue::default()),
            changed: Condvar::new(),
            batches: AtomicUsize::new(0),
            projections: AtomicUsize::new(0),
        }
    }

    pub fn config(&self) -> BatchConfig {
        self.config
    }

    /// Batches run so far, and the projections they held.
    pub fn counts(&self) -> (usize, usize) {
        (
            self.batches.load(Ordering::Relaxed),
            self.projections.load(Ordering::Relaxed),
        )
    }

    /// Scores `projection` over `kg` (the bundle `model` belongs to), in
    /// turn and batched with the projections queued with it.
    pub fn project(
        &self,
        kg: &Kg<'_>,
        model: &dyn Scorer,
        projection: Projection,
    ) -> Result<Scored> {
        let mut projection = projection;
        projection.seeds.sort_unstable_by_key(|s| s.0);
        let job = Arc::new(Job {
            projection,
            result: Mutex::new(None),
        });
        let mut q = self.queue.lock().map_err(|_| poisoned())?;
        q.jobs.push_back(job.clone());
        loop {
            if let Some(result) = job.result.lock().map_err(|_| poisoned())?.take() {
                return result.map_err(NeuralError::Run);
            }
            let first = q.jobs.front().is_some_and(|f| Arc::ptr_eq(f, &job));
            if first && q.running < self.config.parallel {
                let batch = self.take(&mut q);
                q.running += 1;
                drop(q);
                // On a pool thread: the many parallel loops of a projection
                // then fork from inside the pool rather than each handing
                // work over from this thread and sleeping until it is done.
                rayon::scope(|_| self.run(kg, model, &batch));
                q = self.queue.lock().map_err(|_| poisoned())?;
                q.running -= 1;
                self.changed.notify_all();
                continue;
            }
            q = self.changed.wait(q).map_err(|_| poisoned())?;
        }
    }

    /// The head of the queue and, when batching, those behind it that fit.
    fn take(&self, q: &mut Queue) -> Vec<Arc<Job>> {
        let mut batch = Vec::new();
        let mut nodes = 0usize;
        while let Some(next) = q.jobs.front() {
            let k = next.projection.params.k.max(1);
            let fits =
                batch.is_empty() || (self.config.batch && nodes + k <= self.config.max_nodes);
            if !fits {
                break;
            }
            nodes += k;
            if let Some(job) = q.jobs.pop_front() {
                batch.push(job);
            }
            if !self.config.batch {
                break;
            }
        }
        batch
    }

    fn run(&self, kg: &Kg<'_>, model: &dyn Scorer, jobs: &[Arc<Job>]) {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.projections.fetch_add(jobs.len(), Ordering::Relaxed);
        let sets: Vec<(&[(u32, f32)], SepprParams)> = jobs
            .iter()
            .map(|j| (j.projection.seeds.as_slice(), j.projection.params))
            .collect();
        let node_sets = seppr::top_nodes_many(kg, &sets);
        // Each job's subgraph and start set, on all cores.
        let (graphs, starts): (Vec<Subgraph>, Vec<Vec<f32>>) = jobs
            .par_iter()
            .zip(node_sets)
            .map(|(job, nodes)| subgraph_of(kg, &job.projection, nodes))
            .unzip();
        let items: Vec<(&Subgraph, usize, &[f32])> = jobs
            .iter()
            .zip(&graphs)
            .zip(&starts)
            .map(|((job, g), h)| (g, job.projection.relation, h.as_slice()))
            .collect();
        let results: Vec<Result<Vec<f32>, String>> = match model.score(&items) {
            Ok(r) if r.len() == jobs.len() => r.into_iter().map(Ok).collect(),
            Ok(r) => {
                vec![Err(format!("{} results for {} graphs", r.len(), jobs.len())); jobs.len()]
            }
            Err(e) => vec![Err(e.to_string()); jobs.len()],
        };
        for ((job, graph), result) in jobs.iter().zip(graphs).zip(results) {
            if let Ok(mut slot) = job.result.lock() {
                *slot = Some(result.map(|logits| (graph.nodes, logits)));
            }
        }
    }
}

/// One projection on its own, without the gate: SEPPR, the subgraph, the
/// entity model.
pub fn project_alone(kg: &Kg<'_>, model: &dyn Scorer, projection: Projection) -> Result<Scored> {
    let mut p = projection;
    p.seeds.sort_unstable_by_key(|s| s.0);
    let nodes = seppr::top_nodes(kg, &p.seeds, &p.params);
    let (graph, h_prob) = subgraph_of(kg, &p, nodes);
    let logits = model
        .score(&[(&graph, p.relation, &h_prob)])?
        .into_iter()
        .next();
    Ok((graph.nodes, logits.unwrap_or_default()))
}

/// The subgraph on `nodes` and the projection's memberships on its nodes
/// (its seeds sorted by id).
fn subgraph_of(kg: &Kg<'_>, p: &Projection, nodes: Vec<u32>) -> (Subgraph, Vec<f32>) {
    let graph = Subgraph::induced(kg, nodes);
    let h_prob = graph
        .nodes
        .iter()
        .map(|v| {
            p.seeds
                .binary_search_by_key(v, |s| s.0)
                .map_or(0.0, |i| p.seeds[i].1)
        })
        .collect();
    (graph, h_prob)
}
