//! Question answering over the served bundle: its planner sections
//! (`planner.*`), the configured LLM (`[llm]`, behind the privacy policy and
//! the audit log) and the executor, put together for `/v1/ask`, `kgbox ask`
//! and `kgbox eval qa`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kgbox_bundle::sections as s;
use kgbox_neural::seppr::SepprParams;
use kgbox_neural::UltraModel;
use kgbox_qa::llm::audit::AuditLog;
use kgbox_qa::llm::openai::OpenAiClient;
use kgbox_qa::llm::ChatBackend;
use kgbox_qa::planner::StepVectors;
use kgbox_qa::rerank::Reranker;
use kgbox_qa::RelationVectors;
use kgbox_qa::{
    AskError, AskOptions, AskResult, Context, Embedder, ExecSpec, LearnedPlanner, PlannerKind,
    Stages,
};
use kgbox_query::link::{LinkOptions, Mention};
use kgbox_query::{Answers, Executor, ParseLimits, QueryError};

use crate::config::Config;
use crate::loaded::LoadedBundle;

/// What a loaded bundle and the configuration offer for questions.
pub struct Qa {
    pub learned: Option<LearnedPlanner>,
    pub relvecs: Option<RelationVectors>,
    pub embedder: Option<Box<dyn Embedder>>,
    /// The OpenAI-compatible endpoint, when one is configured.
    pub llm: Option<Arc<dyn ChatBackend>>,
    /// The in-process model, when one is configured.
    pub local: Option<Arc<dyn ChatBackend>>,
    pub audit: Arc<AuditLog>,
    /// The bundle's answer reranker, when it has one and it loaded.
    pub reranker: Option<Reranker>,
    /// What the retrieval strategies did, for `/metrics`.
    pub strategies: crate::metrics::StrategyCounters,
    /// Which planner wrote the queries, for `/metrics`.
    pub plans: crate::metrics::PlanCounters,
    /// The `sparql_store` executor's store for this bundle (or why none).
    pub store: Arc<crate::sparql_store::SparqlStore>,
    /// The path ranker's relation vectors, made on the first question
    /// (`None` without an encoder, or when embedding them failed).
    steps: std::sync::OnceLock<Option<StepVectors>>,
}

/// One question's settings (request fields over the configuration).
#[derive(Debug, Clone, Default)]
pub struct AskParams {
    pub planner: Option<PlannerKind>,
    pub top_k: Option<usize>,
    pub executor: Option<Executor>,
    pub seppr_k: Option<usize>,
    /// Provenance paths per answer.
    pub paths: Option<usize>,
    pub deadline: Option<Instant>,
    /// Use the bundle's reranker (default: `planner.rerank`).
    pub rerank: Option<bool>,
    /// Return the reranker features of the candidates.
    pub export_features: bool,
    /// Repair the planned query (default: `planner.repair`).
    pub repair: Option<bool>,
    /// Let the LLM planner fall through to the retrieval strategies
    /// (default: `planner.strategies.enabled`).
    pub strategies: Option<bool>,
}

impl Qa {
    /// Reads the bundle's planner sections and sets up the configured LLM.
    /// Fails on a damaged planner section, an endpoint the privacy policy
    /// refuses, or an audit log that cannot be opened.
    pub fn load(
        bundle: &LoadedBundle,
        encoder: Option<Arc<crate::dense::Encoder>>,
        cfg: &Config,
    ) -> Result<Qa, String> {
        // A planner this build cannot read is logged and left out: the
        // bundle still answers queries, and questions through an LLM.
        let learned = match (
            bundle.section(s::PLANNER_META),
            bundle.section(s::PLANNER_WEIGHTS),
        ) {
            (Some(m), Some(w)) => match LearnedPlanner::from_sections(m, w) {
                Ok(p) => Some(p),
                Err(e) => {
                    tracing::error!(error = %e, "cannot load the bundle's learned planner");
                    None
                }
            },
            (None, None) => None,
            _ => {
                tracing::error!("the bundle has only one of planner.meta and planner.weights: no learned planner");
                None
            }
        };
        let kg = bundle.kg().map_err(|e| e.to_string())?;
        let relvecs = bundle
            .section(s::PLANNER_RELVECS)
            .map(|b| RelationVectors::from_section(b, kg.relation_count()))
            .transpose()?;
        let embedder = embedder(encoder)?;
        let llm_cfg = &cfg.llm;
        let endpoint = llm_cfg.checked_endpoint().map_err(|e| e.to_string())?;
        let audit = match &endpoint {
            Some(_) => {
                let path = llm_cfg.audit_path(&cfg.data_dir);
                if let Some(dir) = path.parent() {
                    let _ = std::fs::create_dir_all(dir);
                }
                Arc::new(AuditLog::open(&path).map_err(|e| {
                    format!("{e} (no LLM call is made without its audit record; set llm.audit_log)")
                })?)
            }
            None => Arc::new(AuditLog::counters_only()),
        };
        let llm = endpoint.map(|e| {
            let key = std::env::var(&llm_cfg.api_key_env)
                .ok()
                .filter(|k| !k.is_empty());
            Arc::new(OpenAiClient::new(
                e,
                llm_cfg.model.clone(),
                key,
                Duration::from_millis(llm_cfg.timeout_ms),
                audit.clone(),
            )) as Arc<dyn ChatBackend>
        });
        let local = load_local(cfg)?;
        let reranker = load_reranker(bundle, cfg, embedder.is_some());
        Ok(Qa {
            learned,
            relvecs,
            embedder,
            llm,
            local,
            audit,
            reranker,
            strategies: crate::metrics::StrategyCounters,
            plans: crate::metrics::PlanCounters,
            store: Arc::new(crate::sparql_store::SparqlStore::for_bundle(
                &cfg.sparql_store,
                &bundle.manifest().name,
            )),
            steps: std::sync::OnceLock::new(),
        })
    }

    /// The path ranker's relation vectors, embedded on the first call (a
    /// graph's relations are few; start-up stays constant).
    fn step_vectors(&self, kg: &kgbox_bundle::Kg<'_>) -> Option<&StepVectors> {
        self.steps
            .get_or_init(|| {
                let embedder = self.embedder.as_deref()?;
                let start = Instant::now();
                let built = StepVectors::build(kg, embedder)
                    .map_err(|e| tracing::warn!(error = %e, "no path ranker: cannot embed the relations"))
                    .ok();
                if built.is_some() {
                    tracing::info!(
                        relations = kg.relation_count(),
                        ms = start.elapsed().as_millis() as u64,
                        "path ranker: relation texts embedded"
                    );
                }
                built
            })
            .as_ref()
    }

    /// A short description for the startup log.
    pub fn describe(&self) -> String {
        let planner = match (&self.learned, &self.relvecs) {
            (Some(l), _) => format!(
                "learned planner ({} templates, trained on {})",
                l.meta.templates.len(),
                l.meta.trained_on
            ),
            (None, Some(_)) => "zero-shot planner (relation descriptions)".into(),
            (None, None) => "no planner in the bundle".into(),
        };
        let llm = match (&self.llm, &self.local) {
            (Some(l), _) => format!("LLM at {}", l.endpoint()),
            (None, Some(l)) => format!("LLM {}", l.endpoint()),
            (None, None) => "no LLM".into(),
        };
        let rerank = match &self.reranker {
            Some(r) => format!(
                "reranker ({}, trained on {} questions)",
                r.meta.model, r.meta.trained_questions
            ),
            None => "no reranker".into(),
        };
        format!("{planner}; {rerank}; {llm}")
    }

    /// Answers a question.
    pub fn ask(
        &self,
        bundle: &LoadedBundle,
        encoder: Option<&crate::dense::Encoder>,
        model: Option<&UltraModel>,
        cfg: &Config,
        question: &str,
        params: &AskParams,
    ) -> Result<AskResult, AskError> {
        let kg = bundle
            .kg()
            .map_err(|e| AskError::NoPlanner(format!("the bundle cannot be read: {e}")))?;
        let planner = params.planner.unwrap_or(cfg.planner.kind);
        let chat: Option<&dyn ChatBackend> = match planner.chat() {
            Some(PlannerKind::Llm) => self.llm.as_deref(),
            Some(PlannerKind::Local) => self.local.as_deref(),
            _ if cfg.llm.arbitrate => self.llm.as_deref().or(self.local.as_deref()),
            _ => None,
        };
        let opts = AskOptions {
            planner,
            top_k: params.top_k.unwrap_or(cfg.planner.top_k),
            candidates: cfg.planner.candidates,
            llm_arbitrate: cfg.llm.arbitrate,
            share_context: cfg.llm.share_context,
            max_retries: cfg.planner.max_retries,
            samples: cfg.planner.samples,
            max_relations: cfg.planner.max_relations,
            fallback_below: cfg.planner.fallback_below,
            paths: cfg.planner.paths,
            rerank: params.rerank.unwrap_or(cfg.planner.rerank),
            export_features: params.export_features,
            repair: params.repair.unwrap_or(cfg.planner.repair),
            strategies: kgbox_qa::strategies::StrategyOptions {
                enabled: params.strategies.unwrap_or(cfg.planner.strategies.enabled),
                ..cfg.planner.strategies
            },
        };
        let stages = Served {
            bundle,
            kg: &kg,
            encoder,
            model,
            store: &self.store,
            cfg,
            params,
            link: LinkOptions::default(),
            limits: cfg.query.parse_limits(),
            executor: params.executor.unwrap_or(cfg.executor.mode),
            seppr: cfg
                .executor
                .seppr(params.seppr_k.unwrap_or(cfg.executor.seppr_k)),
        };
        let similarity = crate::dense::name_similarity(bundle, &kg);
        let ctx = Context {
            kg: &kg,
            learned: self.learned.as_ref(),
            relvecs: self.relvecs.as_ref(),
            embedder: self.embedder.as_deref(),
            // Embedded only for a bundle whose questions the ranker plans.
            steps: match cfg.planner.paths.mode(self.learned.as_ref()) {
                kgbox_qa::planner::PathMode::Off => None,
                _ => self.step_vectors(&kg),
            },
            chat,
            stages: &stages,
            reranker: self.reranker.as_ref(),
            name_similarity: similarity
                .as_ref()
                .map(|f| f as &kgbox_qa::pipeline::NameSimilarity),
        };
        let result = kgbox_qa::ask::ask(&ctx, question, &opts);
        if let Ok(r) = &result {
            self.strategies.record(r.planner, r);
            self.plans.record(planner, r);
            crate::metrics::record_ask(stages.executor.name(), r);
        }
        result
    }
}

/// The question pipeline's stages as served: linking with the dense stage
/// when the encoder is loaded, the configured executor with the request's
/// overrides.
struct Served<'a, 'k> {
    bundle: &'a LoadedBundle,
    kg: &'a kgbox_bundle::Kg<'k>,
    encoder: Option<&'a crate::dense::Encoder>,
    model: Option<&'a UltraModel>,
    store: &'a crate::sparql_store::SparqlStore,
    cfg: &'a Config,
    params: &'a AskParams,
    link: LinkOptions,
    limits: ParseLimits,
    executor: Executor,
    seppr: SepprParams,
}

impl Stages for Served<'_, '_> {
    fn link(&self, text: &str) -> Result<Vec<Mention>, String> {
        crate::dense::link_text(self.bundle, self.kg, self.encoder, text, &self.link)
    }

    fn execute(&self, spec: &ExecSpec<'_>) -> Result<Answers, QueryError> {
        let mut exec = self.cfg.query.exec_options();
        exec.top_k = spec.candidates;
        exec.max_paths = self.params.paths.unwrap_or(self.cfg.query.max_paths);
        exec.exclude_anchors = !spec.keep_anchors;
        exec.exclude = spec.exclude.to_vec();
        exec.executor = self.executor;
        exec.deadline = self.params.deadline;
        crate::neural::run_query(
            self.kg,
            self.model,
            Some(self.store),
            spec.query,
            &self.limits,
            &exec,
            self.seppr,
        )
        .map(|(a, _)| a)
    }
}

/// Loads the bundle's reranker into the configured engine; one that cannot
/// be loaded is logged and left out (questions are answered without it).
fn load_reranker(bundle: &LoadedBundle, cfg: &Config, has_encoder: bool) -> Option<Reranker> {
    let (meta, onnx) = match (
        bundle.section(s::RERANK_META),
        bundle.section(s::RERANK_ONNX),
    ) {
        (Some(m), Some(o)) => (m, o),
        (None, None) => return None,
        _ => {
            tracing::error!(
                "the bundle has only one of {} and {}: no reranker",
                s::RERANK_META,
                s::RERANK_ONNX
            );
            return None;
        }
    };
    match Reranker::load(meta, onnx, cfg.executor.engine, cfg.executor.device) {
        Ok(r) => {
            if r.meta.text_similarity && !has_encoder {
                tracing::warn!("the reranker was trained with text similarity, but the sentence encoder is not loaded: that feature is 0");
            }
            Some(r)
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot load the bundle's reranker: answers keep the executor's order");
            None
        }
    }
}

#[cfg(feature = "dense")]
fn embedder(
    encoder: Option<Arc<crate::dense::Encoder>>,
) -> Result<Option<Box<dyn Embedder>>, String> {
    encoder
        .map(|e| kgbox_qa::EncoderEmbedder::new(e).map(|e| Box::new(e) as Box<dyn Embedder>))
        .transpose()
}

#[cfg(not(feature = "dense"))]
fn embedder(
    _encoder: Option<Arc<crate::dense::Encoder>>,
) -> Result<Option<Box<dyn Embedder>>, String> {
    Ok(None)
}

#[cfg(feature = "local-llm")]
fn load_local(cfg: &Config) -> Result<Option<Arc<dyn ChatBackend>>, String> {
    use kgbox_qa::llm::local::{LocalModel, LocalOptions};
    let l = &cfg.llm;
    match (&l.local_model, l.mode) {
        (
            Some(path),
            kgbox_qa::llm::policy::LlmMode::Local | kgbox_qa::llm::policy::LlmMode::Remote,
        ) => {
            let model = LocalModel::load(&LocalOptions {
                model: path.clone(),
                threads: l.local_threads,
                context: l.local_context,
                seed: 0,
            })
            .map_err(|e| e.to_string())?;
            Ok(Some(Arc::new(model)))
        }
        _ => Ok(None),
    }
}

#[cfg(not(feature = "local-llm"))]
fn load_local(cfg: &Config) -> Result<Option<Arc<dyn ChatBackend>>, String> {
    match (&cfg.llm.local_model, cfg.llm.mode) {
        (Some(_), kgbox_qa::llm::policy::LlmMode::Local | kgbox_qa::llm::policy::LlmMode::Remote) => Err(
            "llm.local_model is set but this kgbox was built without the `local-llm` feature (cargo build --features local-llm)".into(),
        ),
        _ => Ok(None),
    }
}
