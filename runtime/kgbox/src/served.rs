//! Everything a request needs from the bundle being served: the mapped
//! image, its encoder, its executors (see [`crate::service::executors`])
//! and the question-answering setup. One `Served` per bundle; a hot swap
//! replaces the whole value (see [`crate::deploy`]).

use std::sync::Arc;
use std::time::Instant;

use kgbox_qa::{AskError, AskResult};

use crate::config::Config;
use crate::loaded::LoadedBundle;
use crate::qa::{AskParams, Qa};
use crate::service::executors::Executors;

pub struct Served {
    pub bundle: Arc<LoadedBundle>,
    /// The bundle's sentence encoder, when it carries one (dense linking).
    pub encoder: Option<Arc<crate::dense::Encoder>>,
    /// The executors, with the mode requests that name none get.
    pub executors: Executors,
    /// Planners, the LLM and its audit log.
    pub qa: Arc<Qa>,
    /// What it answered since it began serving (see [`crate::serving_stats`]).
    pub stats: crate::serving_stats::Counters,
    /// Its answers to the last golden-question check (`mqtt::golden`).
    pub golden: std::sync::Mutex<Option<kgbox_protocol::GoldenResults>>,
}

impl Served {
    /// Loads the bundle's models. A model that cannot be loaded is logged and
    /// left out (the graph keeps answering); question answering that cannot
    /// be set up is an error.
    pub fn load(bundle: LoadedBundle, cfg: &Config) -> Result<Served, String> {
        let encoder = load_encoder(&bundle, &cfg.executor);
        let executors = Executors::load(&bundle, cfg);
        let qa = Qa::load(&bundle, encoder.clone(), cfg)
            .map_err(|e| format!("cannot set up question answering: {e}"))?;
        tracing::info!(planner = %cfg.planner.kind, "question answering: {}", qa.describe());
        Ok(Served::new(bundle, encoder, executors, qa))
    }

    /// A bundle served with executors and question answering set up by the
    /// caller (a command that refuses what serving would leave out).
    pub fn new(
        bundle: LoadedBundle,
        encoder: Option<Arc<crate::dense::Encoder>>,
        executors: Executors,
        qa: Qa,
    ) -> Served {
        Served {
            bundle: Arc::new(bundle),
            encoder,
            executors,
            qa: Arc::new(qa),
            stats: Default::default(),
            golden: Default::default(),
        }
    }

    /// Answers a question with `params` (checked by the caller; see
    /// [`crate::service::ask::answer`]).
    pub fn ask(
        &self,
        cfg: &Config,
        question: &str,
        params: &AskParams,
    ) -> Result<AskResult, AskError> {
        self.qa.ask(
            &self.bundle,
            self.encoder.as_deref(),
            &self.executors,
            cfg,
            question,
            params,
        )
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
