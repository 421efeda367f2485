//! Question answering over the served bundle: its planner sections
//! (`planner.*`), the configured LLM (`[llm]`, behind the privacy policy and
//! the audit log) and the executor, put together for `/v1/ask`, `kgbox ask`
//! and `kgbox eval qa`.
//!
//! [`Qa::ask`] builds a `kgbox_qa::Context` and the stages that depend on
//! serving (`BundleStages`, the `kgbox_qa::Stages` of the served bundle:
//! `link` through [`crate::dense::link_text`], `execute` through
//! [`Executors::run`]) and calls `kgbox_qa::ask::ask`: link → choose the
//! topic → plan → execute (and repair) → strategies → rerank → arbitrate.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kgbox_bundle::sections as s;
use kgbox_qa::llm::audit::AuditLog;
use kgbox_qa::llm::openai::OpenAiClient;
use kgbox_qa::llm::ChatBackend;
use kgbox_qa::planner::StepVectors;
use kgbox_qa::rerank::Reranker;
use kgbox_qa::RelationVectors;
use kgbox_qa::{
    AskError, AskOptions, AskResult, Context, ExecSpec, LearnedPlanner, PlannerKind, Stages,
};
use kgbox_query::dense::TextEncoder;
use kgbox_query::link::{LinkOptions, Mention};
use kgbox_query::{Answers, ParseLimits, QueryError};

use crate::config::Config;
use crate::loaded::LoadedBundle;
use crate::service::executors::{Executors, RunOptions};

/// What a loaded bundle and the configuration offer for questions.
pub struct Qa {
    pub learned: Option<LearnedPlanner>,
    pub relvecs: Option<RelationVectors>,
    pub embedder: Option<Arc<dyn TextEncoder>>,
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
    /// The path ranker's relation vectors, made on the first question
    /// (`None` without an encoder, or when embedding them failed).
    steps: std::sync::OnceLock<Option<StepVectors>>,
}

/// One question's settings (request fields over the configuration).
#[derive(Debug, Clone)]
pub struct AskParams {
    pub planner: Option<PlannerKind>,
    /// Final answers at most (default: `planner.top_k`).
    pub top_k: Option<usize>,
    /// The executor's options (from
    /// [`Executors::options`](crate::service::executors::Executors::options)):
    /// its `top_k` is replaced by each stage's number of candidates.
    pub run: RunOptions,
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

impl AskParams {
    /// Every setting at its configured default, with the executor's `run`.
    pub fn new(run: RunOptions) -> AskParams {
        AskParams {
            planner: None,
            top_k: None,
            run,
            rerank: None,
            export_features: false,
            repair: None,
            strategies: None,
        }
    }
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
        let embedder = embedder(encoder);
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
        executors: &Executors,
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
            paths_below: cfg.planner.paths_below,
            paths: cfg.planner.paths,
            rerank: params.rerank.unwrap_or(cfg.planner.rerank),
            export_features: params.export_features,
            repair: params.repair.unwrap_or(cfg.planner.repair),
            strategies: kgbox_qa::strategies::StrategyOptions {
                enabled: params.strategies.unwrap_or(cfg.planner.strategies.enabled),
                ..cfg.planner.strategies
            },
        };
        let stages = BundleStages {
            bundle,
            kg: &kg,
            encoder,
            executors,
            run: &params.run,
            link: LinkOptions::default(),
            limits: cfg.query.parse_limits(),
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
            crate::metrics::record_ask(params.run.exec.executor.name(), r);
        }
        result
    }
}

/// The question pipeline's stages over the served bundle: linking with the
/// dense stage when the encoder is loaded, the request's executor.
struct BundleStages<'a, 'k> {
    bundle: &'a LoadedBundle,
    kg: &'a kgbox_bundle::Kg<'k>,
    encoder: Option<&'a crate::dense::Encoder>,
    executors: &'a Executors,
    run: &'a RunOptions,
    link: LinkOptions,
    limits: ParseLimits,
}

impl Stages for BundleStages<'_, '_> {
    fn link(&self, text: &str) -> Result<Vec<Mention>, String> {
        crate::dense::link_text(self.bundle, self.kg, self.encoder, text, &self.link)
    }

    fn execute(&self, spec: &ExecSpec<'_>) -> Result<Answers, QueryError> {
        let mut run = self.run.clone();
        run.exec.top_k = spec.candidates;
        run.exec.exclude_anchors = !spec.keep_anchors;
        run.exec.exclude = spec.exclude.to_vec();
        self.executors
            .run(self.kg, spec.query, &self.limits, &run)
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
fn embedder(encoder: Option<Arc<crate::dense::Encoder>>) -> Option<Arc<dyn TextEncoder>> {
    encoder.map(|e| e as Arc<dyn TextEncoder>)
}

#[cfg(not(feature = "dense"))]
fn embedder(_encoder: Option<Arc<crate::dense::Encoder>>) -> Option<Arc<dyn TextEncoder>> {
    None
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
                prompt_cache: l.local_prompt_cache,
                prompt_cache_entries: l.local_prompt_cache_entries,
                choice_decoding: l.local_choice_decoding,
                draft: l.local_draft,
                requantize: l.local_requantize,
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
