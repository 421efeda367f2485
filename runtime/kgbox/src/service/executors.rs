//! The executors of the served bundle, in one value: the symbolic one over
//! the mapped graph, the neural and hybrid ones over its ULTRA model (the
//! `model.ultra.*` sections, loaded into the configured engine), and
//! `sparql_store` over an external store ([`crate::sparql_store`]).
//!
//! [`Executors::options`] checks and defaults a request's `top_k`, `paths`
//! and `seppr_k` for every front end; [`Executors::run`] runs a query with
//! the executor they chose: `symbolic`, `neural` and `hybrid` through
//! [`kgbox_query::run_query_with`] (parse → bind → plan → execute, with a
//! `NeuralProjector` for the neural two), `sparql_store` through
//! [`crate::sparql_store::run_query`]. To add an executor: a variant of
//! [`kgbox_query::Executor`], its loading in [`Executors::load`] and its
//! arm in [`Executors::run`].

use std::sync::Arc;
use std::time::Instant;

use kgbox_bundle::Kg;
use kgbox_neural::seppr::SepprParams;
use kgbox_neural::{NeuralProjector, UltraModel};
use kgbox_query::{Answers, ExecOptions, Executor, ParseLimits, QueryError, Timings};
use serde::Deserialize;

use super::RequestError;
use crate::config::{Config, ExecutorConfig, QueryConfig};
use crate::loaded::LoadedBundle;
use crate::sparql_store::SparqlStore;

/// Provenance paths per answer a request may ask for.
pub const MAX_PATHS: usize = 100;

/// Provenance paths per answer: `true` (the configured number), `false`
/// (none), or a number (at most [`MAX_PATHS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum Paths {
    On(bool),
    Count(usize),
}

/// What a request may set over the configuration; `None` keeps the
/// configured value.
#[derive(Debug, Clone, Copy, Default)]
pub struct Overrides {
    pub executor: Option<Executor>,
    /// Answers to return (1 to `query.max_top_k`).
    pub top_k: Option<usize>,
    pub paths: Option<Paths>,
    /// SEPPR subgraph size of the neural executors (1 to `executor.max_seppr_k`).
    pub seppr_k: Option<usize>,
    /// The query stops at this instant.
    pub deadline: Option<Instant>,
}

impl Overrides {
    /// The request fields every service takes, in this order.
    pub fn new(
        executor: Option<Executor>,
        top_k: Option<usize>,
        paths: Option<Paths>,
        seppr_k: Option<usize>,
        deadline: Option<Instant>,
    ) -> Overrides {
        Overrides {
            executor,
            top_k,
            paths,
            seppr_k,
            deadline,
        }
    }
}

/// A request's checked options: the executor's, and the SEPPR subgraph of
/// the neural ones.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub exec: ExecOptions,
    pub seppr: SepprParams,
}

/// The served bundle's executors.
pub struct Executors {
    /// `[executor]`, with the mode that requests naming none get: the
    /// configured one, or symbolic when that one cannot run here.
    pub config: ExecutorConfig,
    /// The bundle's neural query model, when it carries one and it loaded.
    pub model: Option<Arc<UltraModel>>,
    /// The `sparql_store` executor's store for this bundle (or why none).
    pub store: Arc<SparqlStore>,
}

impl Executors {
    /// The executors a served bundle offers. A model that cannot be loaded
    /// is logged and left out, and a configured executor that cannot run
    /// gives way to the symbolic one: the graph keeps answering.
    pub fn load(bundle: &LoadedBundle, cfg: &Config) -> Executors {
        let model = load_logged(bundle, cfg).map(Arc::new);
        let store = SparqlStore::for_bundle(&cfg.sparql_store, &bundle.manifest().name);
        let mut config = cfg.executor.clone();
        match config.mode {
            Executor::Neural | Executor::Hybrid if model.is_none() => {
                tracing::warn!(
                    configured = %config.mode,
                    "no neural query model: requests that name no executor run symbolic"
                );
                config.mode = Executor::Symbolic;
            }
            Executor::SparqlStore => match store.unavailable() {
                // The device keeps answering from its own graph.
                Some(why) => {
                    tracing::warn!(
                        "{why}: requests that name no executor run symbolic on the bundle"
                    );
                    config.mode = Executor::Symbolic;
                }
                None => tracing::info!(
                    endpoint = store.endpoint().unwrap_or(""),
                    "queries run on the SPARQL store (executor.mode = sparql_store)"
                ),
            },
            _ => {}
        }
        Executors {
            config,
            model,
            store: Arc::new(store),
        }
    }

    /// Executors as a command sets them up: `config` as given (its mode
    /// unchanged), with `model` when the command loaded one.
    pub fn new(config: ExecutorConfig, model: Option<UltraModel>, store: SparqlStore) -> Executors {
        Executors {
            config,
            model: model.map(Arc::new),
            store: Arc::new(store),
        }
    }

    /// The model, when loaded.
    pub fn model(&self) -> Option<&UltraModel> {
        self.model.as_deref()
    }

    /// A request's options: `query`'s and this `[executor]`'s, with the
    /// request's overrides checked against their limits.
    pub fn options(&self, query: &QueryConfig, o: &Overrides) -> Result<RunOptions, RequestError> {
        let top_k = o.top_k.unwrap_or(query.top_k);
        if top_k == 0 || top_k > query.max_top_k {
            return Err(RequestError::BadRequest(format!(
                "top_k must be between 1 and {}",
                query.max_top_k
            )));
        }
        let seppr_k = o.seppr_k.unwrap_or(self.config.seppr_k);
        if seppr_k == 0 || seppr_k > self.config.max_seppr_k {
            return Err(RequestError::BadRequest(format!(
                "seppr_k must be between 1 and {}",
                self.config.max_seppr_k
            )));
        }
        let max_paths = match o.paths {
            None | Some(Paths::On(true)) => query.max_paths,
            Some(Paths::On(false)) => 0,
            Some(Paths::Count(n)) if n <= MAX_PATHS => n,
            Some(Paths::Count(_)) => {
                return Err(RequestError::BadRequest(format!(
                    "paths must be at most {MAX_PATHS}"
                )))
            }
        };
        let exec = ExecOptions {
            top_k,
            max_paths,
            deadline: o.deadline,
            executor: o.executor.unwrap_or(self.config.mode),
            ..query.exec_options()
        };
        Ok(RunOptions {
            exec,
            seppr: self.config.seppr(seppr_k),
        })
    }

    /// Runs a DSL query with the executor `run.exec.executor`. The
    /// `sparql_store` answers lose `run.exec.exclude` here, its count only
    /// those among the answers it returned.
    pub fn run(
        &self,
        kg: &Kg<'_>,
        text: &str,
        limits: &ParseLimits,
        run: &RunOptions,
    ) -> Result<(Answers, Timings), QueryError> {
        let opts = &run.exec;
        if opts.executor == Executor::SparqlStore {
            let (mut answers, timings) =
                crate::sparql_store::run_query(Some(&self.store), kg, text, limits, opts)?;
            let before = answers.answers.len();
            answers
                .answers
                .retain(|a| !opts.exclude.contains(&a.entity));
            answers.total = answers.total.saturating_sub(before - answers.answers.len());
            return Ok((answers, timings));
        }
        let projector = self.projector(kg, opts.executor, run.seppr);
        let projector = projector.as_ref().map(|p| p as &dyn kgbox_query::Projector);
        kgbox_query::run_query_with(kg, text, limits, opts, projector)
    }

    /// The neural projector for `executor`: `None` for the symbolic and
    /// `sparql_store` executors, or without a model.
    pub fn projector<'k, 'a>(
        &'k self,
        kg: &'k Kg<'a>,
        executor: Executor,
        seppr: SepprParams,
    ) -> Option<NeuralProjector<'k, 'a>> {
        projector(kg, self.model(), executor, seppr)
    }
}

/// The neural projector for `executor` over `model`, over SEPPR subgraphs
/// of `seppr.k` nodes.
pub fn projector<'k, 'a>(
    kg: &'k Kg<'a>,
    model: Option<&'k UltraModel>,
    executor: Executor,
    seppr: SepprParams,
) -> Option<NeuralProjector<'k, 'a>> {
    match executor {
        Executor::Symbolic | Executor::SparqlStore => None,
        Executor::Neural | Executor::Hybrid => model.map(|m| NeuralProjector::new(kg, m, seppr)),
    }
}

/// Whether the bundle carries a neural query model.
pub fn has_model(bundle: &LoadedBundle) -> bool {
    bundle.section(kgbox_bundle::sections::ULTRA_META).is_some()
}

/// Loads the bundle's ULTRA model into the configured engine; `Ok(None)`
/// when the bundle has none.
pub fn load_model(
    bundle: &LoadedBundle,
    cfg: &ExecutorConfig,
) -> Result<Option<UltraModel>, String> {
    let kg = bundle.kg().map_err(|e| e.to_string())?;
    let mut model = UltraModel::from_sections(
        |name| bundle.section(name),
        kg.relation_count(),
        cfg.engine,
        cfg.device,
    )
    .map_err(|e| e.to_string())?;
    if let Some(m) = model.as_mut() {
        m.set_batching(Some(cfg.batching()));
    }
    Ok(model)
}

/// [`load_model`] for serving: what happened is logged, and a model that
/// cannot be loaded is left out.
fn load_logged(bundle: &LoadedBundle, cfg: &Config) -> Option<UltraModel> {
    if !has_model(bundle) {
        return None;
    }
    let t = Instant::now();
    match load_model(bundle, &cfg.executor) {
        Ok(Some(m)) => {
            tracing::info!(
                load_ms = t.elapsed().as_secs_f64() * 1e3,
                checkpoint = %m.meta().checkpoint,
                engine = m.engine_name(),
                device = m.device(),
                "loaded the bundle's neural query model (neural and hybrid executors on)"
            );
            if cfg.executor.device == kgbox_neural::Device::Auto && m.device() == "cpu" {
                if let Some(reason) = kgbox_neural::engine::cuda_unavailable_reason() {
                    tracing::info!(
                        %reason,
                        "executor.device = auto: the neural query model runs on the CPU"
                    );
                }
            }
            Some(m)
        }
        Ok(None) => None,
        Err(e) => {
            // Keep answering from the graph: a device that stops serving
            // over a model it cannot run helps no one. Neural and hybrid
            // requests get `no_neural_model` until this is fixed.
            tracing::error!(
                error = %e,
                engine = %cfg.executor.engine,
                device = ?cfg.executor.device,
                "cannot load the bundle's neural query model: serving the symbolic executor only"
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn executors() -> Executors {
        let cfg = Config::default();
        Executors::new(
            cfg.executor.clone(),
            None,
            SparqlStore::for_bundle(&cfg.sparql_store, "test"),
        )
    }

    fn refused(o: Overrides) -> String {
        match executors().options(&QueryConfig::default(), &o) {
            Err(RequestError::BadRequest(m)) => m,
            other => panic!("expected a bad request, got {other:?}"),
        }
    }

    #[test]
    fn options_default_to_the_configuration() {
        let q = QueryConfig::default();
        let run = executors()
            .options(&q, &Overrides::default())
            .expect("defaults");
        assert_eq!(run.exec.top_k, q.top_k);
        assert_eq!(run.exec.max_paths, q.max_paths);
        assert_eq!(run.exec.executor, Config::default().executor.mode);
        assert_eq!(run.seppr.k, Config::default().executor.seppr_k);
    }

    #[test]
    fn options_take_the_request_within_limits() {
        let o = Overrides {
            top_k: Some(7),
            paths: Some(Paths::Count(MAX_PATHS)),
            seppr_k: Some(123),
            executor: Some(Executor::Neural),
            deadline: None,
        };
        let run = executors()
            .options(&QueryConfig::default(), &o)
            .expect("in range");
        assert_eq!(
            (run.exec.top_k, run.exec.max_paths, run.seppr.k),
            (7, MAX_PATHS, 123)
        );
        assert_eq!(run.exec.executor, Executor::Neural);
        let off = Overrides {
            paths: Some(Paths::On(false)),
            ..Overrides::default()
        };
        let run = executors()
            .options(&QueryConfig::default(), &off)
            .expect("off");
        assert_eq!(run.exec.max_paths, 0);
    }

    #[test]
    fn options_out_of_range_are_refused_by_name() {
        let q = QueryConfig::default();
        let e = Config::default().executor;
        for (o, field) in [
            (
                Overrides {
                    top_k: Some(0),
                    ..Overrides::default()
                },
                "top_k",
            ),
            (
                Overrides {
                    top_k: Some(q.max_top_k + 1),
                    ..Overrides::default()
                },
                "top_k",
            ),
            (
                Overrides {
                    seppr_k: Some(0),
                    ..Overrides::default()
                },
                "seppr_k",
            ),
            (
                Overrides {
                    seppr_k: Some(e.max_seppr_k + 1),
                    ..Overrides::default()
                },
                "seppr_k",
            ),
            (
                Overrides {
                    paths: Some(Paths::Count(MAX_PATHS + 1)),
                    ..Overrides::default()
                },
                "paths",
            ),
        ] {
            let m = refused(o);
            assert!(m.starts_with(field), "{field}: {m}");
        }
    }
}
