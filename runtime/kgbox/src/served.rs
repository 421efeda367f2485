//! Everything a request needs from the bundle being served: the mapped
//! image, its encoder and neural model loaded into their engines, and the
//! question-answering setup. One `Served` per bundle; a hot swap replaces
//! the whole value (see [`crate::deploy`]).

use std::sync::Arc;
use std::time::Instant;

use crate::config::{Config, ExecutorConfig};
use crate::loaded::LoadedBundle;

pub struct Served {
    pub bundle: Arc<LoadedBundle>,
    /// The bundle's sentence encoder, when it carries one (dense linking).
    pub encoder: Option<Arc<crate::dense::Encoder>>,
    /// The neural executor's settings (symbolic when the model is missing).
    pub executor: ExecutorConfig,
    /// The bundle's neural query model, when it carries one and it loaded.
    pub model: Option<Arc<kgbox_neural::UltraModel>>,
    /// Planners, the LLM and its audit log.
    pub qa: Arc<crate::qa::Qa>,
}

impl Served {
    /// Loads the bundle's models. A model that cannot be loaded is logged and
    /// left out (the graph keeps answering); question answering that cannot
    /// be set up is an error.
    pub fn load(bundle: LoadedBundle, cfg: &Config) -> Result<Served, String> {
        let encoder = load_encoder(&bundle, &cfg.executor);
        let model = load_model(&bundle, cfg);
        let mut executor = cfg.executor.clone();
        if model.is_none()
            && matches!(
                executor.mode,
                kgbox_query::Executor::Neural | kgbox_query::Executor::Hybrid
            )
        {
            tracing::warn!(
                configured = %executor.mode,
                "no neural query model: requests that name no executor run symbolic"
            );
            executor.mode = kgbox_query::Executor::Symbolic;
        }
        let qa = crate::qa::Qa::load(&bundle, encoder.clone(), cfg)
            .map_err(|e| format!("cannot set up question answering: {e}"))?;
        if executor.mode == kgbox_query::Executor::SparqlStore {
            match qa.store.unavailable() {
                // The device keeps answering from its own graph.
                Some(why) => {
                    tracing::warn!(
                        "{why}: requests that name no executor run symbolic on the bundle"
                    );
                    executor.mode = kgbox_query::Executor::Symbolic;
                }
                None => tracing::info!(
                    endpoint = qa.store.endpoint().unwrap_or(""),
                    "queries run on the SPARQL store (executor.mode = sparql_store)"
                ),
            }
        }
        tracing::info!(planner = %cfg.planner.kind, "question answering: {}", qa.describe());
        Ok(Served {
            bundle: Arc::new(bundle),
            encoder,
            executor,
            model,
            qa: Arc::new(qa),
        })
    }
}

fn load_encoder(
    bundle: &LoadedBundle,
    cfg: &crate::config::ExecutorConfig,
) -> Option<Arc<crate::dense::Encoder>> {
    if !crate::dense::has_encoder(bundle) {
        return None;
    }
    let t = Instant::now();
    match crate::dense::load_encoder(bundle, cfg) {
        Ok(Some(e)) => {
            tracing::info!(
                load_ms = t.elapsed().as_secs_f64() * 1e3,
                engine = e.engine(),
                "loaded the bundle's sentence encoder (dense linking on)"
            );
            Some(Arc::new(e))
        }
        Ok(None) => {
            tracing::warn!("the bundle carries an entity encoder but this build has no `dense` feature: linking stays lexical");
            None
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot load the bundle's entity encoder: linking stays lexical");
            None
        }
    }
}

fn load_model(bundle: &LoadedBundle, cfg: &Config) -> Option<Arc<kgbox_neural::UltraModel>> {
    if !crate::neural::has_model(bundle) {
        return None;
    }
    let t = Instant::now();
    match crate::neural::load_model(bundle, &cfg.executor) {
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
            Some(Arc::new(m))
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
