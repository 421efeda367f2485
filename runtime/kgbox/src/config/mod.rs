//! Runtime configuration: a TOML file, then `KGBOX_*` environment variables
//! (`__` separates nesting: `KGBOX_HTTP__LISTEN=0.0.0.0:8080`), then flags.

use std::path::{Path, PathBuf};

use figment::providers::{Env, Format, Serialized, Toml};
use figment::{Figment, Provider};
use kgbox_bundle::{Limits, PublicKey, TrustedKeys};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

mod deploy;
mod http;
mod logging;
mod mqtt;
mod qa;
mod sparql_store;

pub use deploy::{AdminConfig, HealthConfig};
pub use http::{HttpConfig, TlsConfig};
pub use logging::{LogConfig, LogFormat};
pub use mqtt::{valid_topic_level, MqttConfig, MqttProtocol};
pub use qa::{LlmConfig, PlannerConfig};
pub use sparql_store::{SparqlStoreConfig, StoreOverride, StoreSettings};

/// Used when no `--config` is given and this file exists.
pub const DEFAULT_CONFIG_PATH: &str = "/etc/kgbox/config.toml";
/// Most replies `planner.samples` may ask the LLM for.
pub const MAX_SAMPLES: usize = 16;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Slots and the state database live here.
    pub data_dir: PathBuf,
    /// Bundles must carry this `compatible` string.
    pub compatible: String,
    /// Serve the built-in demo bundle when nothing is installed.
    pub demo: bool,
    pub trust: TrustConfig,
    pub limits: LimitsConfig,
    pub http: HttpConfig,
    pub query: QueryConfig,
    pub executor: ExecutorConfig,
    pub planner: PlannerConfig,
    pub llm: LlmConfig,
    pub admin: AdminConfig,
    pub health: HealthConfig,
    pub mqtt: MqttConfig,
    /// The external graph store of the `sparql_store` executor.
    pub sparql_store: SparqlStoreConfig,
    pub log: LogConfig,
}

/// The neural query executor (see docs/query-language.md, "Executors").
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExecutorConfig {
    /// Used when a request does not say: symbolic, neural, hybrid or
    /// sparql_store (the `[sparql_store]` endpoint).
    pub mode: kgbox_query::Executor,
    /// Engine for the bundle's models: native (the entity model in Rust;
    /// other models on ort when built, else tract), tract (built in) or ort
    /// (cargo feature `ort`, library from `ORT_DYLIB_PATH`).
    pub engine: kgbox_neural::EngineKind,
    /// auto, cpu or cuda (cuda needs ONNX Runtime built with `cuda`).
    pub device: kgbox_neural::Device,
    /// SEPPR subgraph size: nodes the entity model sees per projection.
    pub seppr_k: usize,
    /// Largest `seppr_k` a request may ask for.
    pub max_seppr_k: usize,
    /// SEPPR's diffusion steps T: how far from the input set the kept
    /// nodes may lie, and how long SEPPR takes.
    pub seppr_steps: usize,
    /// Projections (or batches of them) running at once; the others queue
    /// in arrival order. 0: one per CPU core.
    pub parallel: usize,
    /// Run the queued projections as one batch (native engine).
    pub batch: bool,
    /// A batch takes queued projections up to this many subgraph nodes.
    pub batch_max_nodes: usize,
    /// Sentence-encoder vectors of recent texts kept (0: none).
    pub encoder_cache: usize,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        ExecutorConfig {
            mode: kgbox_query::Executor::Symbolic,
            engine: kgbox_neural::EngineKind::Native,
            device: kgbox_neural::Device::Auto,
            seppr_k: kgbox_neural::seppr::DEFAULT_K,
            max_seppr_k: 50_000,
            seppr_steps: kgbox_neural::seppr::DEFAULT_STEPS,
            parallel: 0,
            batch: true,
            batch_max_nodes: 16_384,
            encoder_cache: kgbox_neural::encoder::CACHE_TEXTS,
        }
    }
}

impl ExecutorConfig {
    /// The admission and batching of projections.
    pub fn batching(&self) -> kgbox_neural::batcher::BatchConfig {
        let default = kgbox_neural::batcher::BatchConfig::default();
        kgbox_neural::batcher::BatchConfig {
            batch: self.batch,
            max_nodes: self.batch_max_nodes.max(1),
            parallel: match self.parallel {
                0 => default.parallel,
                n => n,
            },
        }
    }

    pub fn seppr(&self, k: usize) -> kgbox_neural::seppr::SepprParams {
        kgbox_neural::seppr::SepprParams {
            k,
            iterations: self.seppr_steps,
            ..Default::default()
        }
    }
}

/// Query execution defaults and limits (see docs/query-language.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QueryConfig {
    /// Answers returned when a request does not say.
    pub top_k: usize,
    /// Largest `top_k` a request may ask for.
    pub max_top_k: usize,
    /// Provenance paths per answer.
    pub max_paths: usize,
    /// Projections never return the anchors of their own input.
    pub exclude_anchors: bool,
    /// Inside AND, operands expanding to more edges than this are probed.
    pub fanout_limit: usize,
    /// Edge visits allowed per query.
    pub max_edge_visits: u64,
    /// Longest query text, bytes.
    pub max_query_bytes: usize,
    /// Deepest nesting.
    pub max_depth: usize,
    /// Most nodes in a query.
    pub max_nodes: usize,
    /// Most rows (or triples) one `/sparql` reply evaluated in full SPARQL
    /// may hold; more is a 422 `result_too_large`.
    pub max_sparql_rows: usize,
}

impl Default for QueryConfig {
    fn default() -> Self {
        let limits = kgbox_query::ParseLimits::default();
        let exec = kgbox_query::ExecOptions::default();
        QueryConfig {
            top_k: exec.top_k,
            max_top_k: 1000,
            max_paths: exec.max_paths,
            exclude_anchors: exec.exclude_anchors,
            fanout_limit: exec.fanout_limit,
            max_edge_visits: exec.max_edge_visits,
            max_query_bytes: limits.max_len,
            max_depth: limits.max_depth,
            max_nodes: limits.max_nodes,
            max_sparql_rows: 10_000,
        }
    }
}

impl QueryConfig {
    pub fn parse_limits(&self) -> kgbox_query::ParseLimits {
        kgbox_query::ParseLimits {
            max_len: self.max_query_bytes,
            max_depth: self.max_depth,
            max_nodes: self.max_nodes,
        }
    }

    pub fn exec_options(&self) -> kgbox_query::ExecOptions {
        kgbox_query::ExecOptions {
            top_k: self.top_k,
            max_paths: self.max_paths,
            exclude_anchors: self.exclude_anchors,
            fanout_limit: self.fanout_limit,
            max_edge_visits: self.max_edge_visits,
            deadline: None,
            executor: kgbox_query::Executor::Symbolic,
            exclude: Vec::new(),
        }
    }

    /// Every answer, without provenance paths: for the commands that score
    /// or compare whole answer sets (`eval`, `render`), where a request's
    /// `top_k` limit does not apply.
    pub fn every_answer(&self) -> kgbox_query::ExecOptions {
        kgbox_query::ExecOptions {
            top_k: usize::MAX,
            max_paths: 0,
            ..self.exec_options()
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrustConfig {
    /// Public keys: paths to `.pub` files, or inline `kgbox-ed25519-public ...` lines.
    pub keys: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// Largest decompressed section, bytes.
    pub max_section_bytes: u64,
    /// Largest decompressed bundle, bytes.
    pub max_image_bytes: u64,
    /// zstd window limit, log2 bytes (bounds decoder memory).
    pub zstd_window_log_max: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data_dir: PathBuf::from("/var/lib/kgbox"),
            compatible: "kgbox-generic".into(),
            demo: true,
            trust: TrustConfig::default(),
            limits: LimitsConfig::default(),
            http: HttpConfig::default(),
            query: QueryConfig::default(),
            executor: ExecutorConfig::default(),
            planner: PlannerConfig::default(),
            llm: LlmConfig::default(),
            admin: AdminConfig::default(),
            health: HealthConfig::default(),
            mqtt: MqttConfig::default(),
            sparql_store: SparqlStoreConfig::default(),
            log: LogConfig::default(),
        }
    }
}

impl Default for LimitsConfig {
    fn default() -> Self {
        let l = Limits::default();
        LimitsConfig {
            max_section_bytes: l.max_section_bytes,
            max_image_bytes: l.max_total_bytes,
            zstd_window_log_max: l.window_log_max,
        }
    }
}

impl Config {
    /// Defaults, then the file (if any), then `KGBOX_*` variables.
    pub fn load(file: Option<&Path>) -> Result<Config> {
        Config::from_figment(&Config::figment(file)?)
    }

    /// The file [`Config::load`] reads: `file`, else [`DEFAULT_CONFIG_PATH`]
    /// when it exists, else none (defaults and variables only).
    pub fn file_path(file: Option<&Path>) -> Option<PathBuf> {
        file.map(Path::to_path_buf).or_else(|| {
            let p = PathBuf::from(DEFAULT_CONFIG_PATH);
            p.exists().then_some(p)
        })
    }

    /// What [`Config::load`] extracts: the defaults, then the file (see
    /// [`Config::file_path`]), then the `KGBOX_*` variables except
    /// `KGBOX_CONFIG` and the variables that hold secrets (those named by
    /// `admin.token_env`, `mqtt.password_env`, `llm.api_key_env` and
    /// `sparql_store.auth_header_env`, and their defaults), which are not
    /// configuration keys.
    pub fn figment(file: Option<&Path>) -> Result<Figment> {
        let mut fig = Figment::from(Serialized::defaults(Config::default()));
        if let Some(path) = Config::file_path(file) {
            if !path.is_file() {
                return Err(Error::Config(format!(
                    "config file {} does not exist",
                    path.display()
                )));
            }
            fig = fig.merge(Toml::file_exact(&path));
        }
        let secrets = secret_vars(&fig.clone().merge(config_env(Vec::new())));
        if let Some(problem) = unreadable_env(&secrets) {
            return Err(Error::Config(problem));
        }
        Ok(fig.merge(config_env(secrets)))
    }

    /// Extracts the configuration from `fig` and checks it.
    pub fn from_figment(fig: &Figment) -> Result<Config> {
        let cfg: Config = fig.extract().map_err(figment_error)?;
        cfg.check()?;
        Ok(cfg)
    }

    fn check(&self) -> Result<()> {
        if self.compatible.trim().is_empty() {
            return Err(Error::Config("`compatible` must not be empty".into()));
        }
        if self.limits.zstd_window_log_max < 10 || self.limits.zstd_window_log_max > 31 {
            return Err(Error::Config(
                "limits.zstd_window_log_max must be between 10 and 31".into(),
            ));
        }
        self.http.check()?;
        if self.query.max_sparql_rows == 0 {
            return Err(Error::Config(
                "query.max_sparql_rows must be at least 1".into(),
            ));
        }
        let e = &self.executor;
        if e.seppr_k == 0 || e.seppr_k > e.max_seppr_k {
            return Err(Error::Config(format!(
                "executor.seppr_k must be between 1 and executor.max_seppr_k ({}), got {}",
                e.max_seppr_k, e.seppr_k
            )));
        }
        if e.seppr_steps == 0 || e.seppr_steps > 50 {
            return Err(Error::Config(format!(
                "executor.seppr_steps must be between 1 and 50, got {}",
                e.seppr_steps
            )));
        }
        if e.encoder_cache > 1_000_000 {
            return Err(Error::Config(format!(
                "executor.encoder_cache must be at most 1000000 texts, got {}",
                e.encoder_cache
            )));
        }
        if e.batch_max_nodes == 0 || e.parallel > 1024 {
            return Err(Error::Config(format!(
                "executor.batch_max_nodes must be at least 1 and executor.parallel at most 1024, got {} and {}",
                e.batch_max_nodes, e.parallel
            )));
        }
        if self.admin.max_bundle_bytes == 0 || self.admin.upload_timeout_ms == 0 {
            return Err(Error::Config(
                "admin.max_bundle_bytes and admin.upload_timeout_ms must be at least 1".into(),
            ));
        }
        self.admin.token()?;
        if self.health.probe_timeout_ms == 0 {
            return Err(Error::Config(
                "health.probe_timeout_ms must be at least 1".into(),
            ));
        }
        self.mqtt.check()?;
        self.sparql_store.check(self.executor.mode)?;
        self.check_llm()
    }

    fn check_llm(&self) -> Result<()> {
        use kgbox_qa::llm::policy::LlmMode;
        use kgbox_qa::PlannerKind;
        let (p, l) = (&self.planner, &self.llm);
        if p.top_k == 0 || p.candidates == 0 {
            return Err(Error::Config(
                "planner.top_k and planner.candidates must be at least 1".into(),
            ));
        }
        p.strategies.check().map_err(Error::Config)?;
        if l.mode != LlmMode::Off && l.endpoint.is_none() && l.local_model.is_none() {
            return Err(Error::Config(format!(
                "llm.mode = \"{}\" needs llm.endpoint or llm.local_model",
                l.mode
            )));
        }
        // Refuses a non-loopback endpoint in local mode.
        l.checked_endpoint()?;
        if l.timeout_ms == 0 {
            return Err(Error::Config("llm.timeout_ms must be at least 1".into()));
        }
        if !(1..=MAX_SAMPLES).contains(&p.samples) {
            return Err(Error::Config(format!(
                "planner.samples = {} is outside 1..{MAX_SAMPLES}",
                p.samples
            )));
        }
        for (key, value) in [
            ("fallback_below", p.fallback_below),
            ("paths_below", p.paths_below),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(Error::Config(format!(
                    "planner.{key} = {value} is outside 0..1"
                )));
            }
        }
        match p.kind.chat() {
            Some(PlannerKind::Llm) if l.mode == LlmMode::Off || l.endpoint.is_none() => {
                Err(Error::Config(format!(
                    "planner.kind = \"{}\" needs llm.mode = \"local\" or \"remote\" and llm.endpoint",
                    p.kind
                )))
            }
            Some(PlannerKind::Local) if l.mode == LlmMode::Off || l.local_model.is_none() => {
                Err(Error::Config(format!(
                    "planner.kind = \"{}\" needs llm.mode = \"local\" and llm.local_model (a GGUF file)",
                    p.kind
                )))
            }
            _ if p.kind == PlannerKind::Zeroshot => Err(Error::Config(
                "planner.kind = \"zeroshot\" is not a setting: the learned planner falls back to it by itself".into(),
            )),
            _ => Ok(()),
        }
    }

    pub fn limits(&self) -> Limits {
        Limits {
            max_section_bytes: self.limits.max_section_bytes,
            max_total_bytes: self.limits.max_image_bytes,
            window_log_max: self.limits.zstd_window_log_max,
        }
    }

    /// Loads the trusted keys; each entry is an inline key or a file path.
    pub fn trusted_keys(&self) -> Result<TrustedKeys> {
        self.trust
            .keys
            .iter()
            .map(|k| parse_key_ref(k))
            .collect::<Result<Vec<_>>>()
            .map(TrustedKeys::new)
    }
}

/// The `KGBOX_*` variables as configuration keys (`__` separates nesting),
/// leaving out `KGBOX_CONFIG`, the variables named in `skip`, and the
/// values figment cannot read ([`unreadable_value`]; [`Config::figment`]
/// refuses those by name).
pub fn config_env(skip: Vec<String>) -> Env {
    let skip = env_keys(&skip);
    let unreadable: Vec<String> = std::env::vars_os()
        .filter_map(|(k, v)| {
            let name = k.into_string().ok()?;
            let rest = kgbox_key(&name)?;
            unreadable_value(&v.to_string_lossy()).then(|| rest.to_string())
        })
        .collect();
    Env::prefixed("KGBOX_")
        .filter(move |k| {
            !k.as_str().eq_ignore_ascii_case("config")
                && !skip.iter().any(|s| k.as_str().eq_ignore_ascii_case(s))
                && !unreadable
                    .iter()
                    .any(|s| k.as_str().eq_ignore_ascii_case(s))
        })
        .split("__")
}

/// The part of `KGBOX_NAME` after the prefix (any case), if it has it.
fn kgbox_key(name: &str) -> Option<&str> {
    let (prefix, rest) = (name.get(..6)?, name.get(6..)?);
    prefix.eq_ignore_ascii_case("KGBOX_").then_some(rest)
}

fn env_keys(names: &[String]) -> Vec<String> {
    names
        .iter()
        .filter_map(|n| kgbox_key(n).map(str::to_string))
        .collect()
}

/// A value figment's environment parser cannot read: a quoted string with a
/// backslash escape and a non-ASCII character (figment 0.10 slices it at a
/// character count as if it were a byte offset: it panics or reads the
/// wrong text).
pub fn unreadable_value(value: &str) -> bool {
    value.contains('"') && value.contains('\\') && !value.is_ascii()
}

/// The first `KGBOX_*` configuration variable (not `KGBOX_CONFIG`, not one
/// of `skip`) whose value figment cannot read, with why.
fn unreadable_env(skip: &[String]) -> Option<String> {
    let skip = env_keys(skip);
    std::env::vars_os().find_map(|(k, v)| {
        let name = k.into_string().ok()?;
        let rest = kgbox_key(&name)?;
        let config = !rest.eq_ignore_ascii_case("config")
            && !skip.iter().any(|s| rest.eq_ignore_ascii_case(s));
        (config && unreadable_value(&v.to_string_lossy())).then(|| {
            format!(
                "{name}: a quoted value with a backslash escape and a non-ASCII character cannot be read; write it without quotes, or without the escape"
            )
        })
    })
}

/// `key: problem (in FILE)` or `key: problem (from KGBOX_VAR)` for each
/// error figment found.
fn figment_error(e: figment::Error) -> Error {
    let env = Provider::metadata(&config_env(Vec::new())).name;
    let msgs: Vec<String> = e
        .into_iter()
        .map(|e| {
            let origin = match &e.metadata {
                Some(m) if m.name == env => {
                    let var: Vec<String> = e.path.iter().map(|p| p.to_ascii_uppercase()).collect();
                    format!(" (from KGBOX_{})", var.join("__"))
                }
                Some(m) => match &m.source {
                    Some(figment::Source::File(p)) => format!(" (in {})", p.display()),
                    _ => format!(" (in {})", m.name),
                },
                None => String::new(),
            };
            match e.path.join(".") {
                key if key.is_empty() => format!("{}{origin}", e.kind),
                key => format!("{key}: {}{origin}", e.kind),
            }
        })
        .collect();
    Error::Config(msgs.join("; "))
}

/// The variables holding secrets: the defaults of `admin.token_env`,
/// `mqtt.password_env`, `llm.api_key_env` and `sparql_store.auth_header_env`
/// (and its per-bundle forms), and their values in `fig`.
fn secret_vars(fig: &Figment) -> Vec<String> {
    let mut names = vec![
        AdminConfig::default().token_env,
        MqttConfig::default().password_env,
        LlmConfig::default().api_key_env,
    ];
    for key in ["admin.token_env", "mqtt.password_env", "llm.api_key_env"] {
        if let Ok(name) = fig.extract_inner::<String>(key) {
            names.push(name);
        }
    }
    names.extend(SparqlStoreConfig::default().secret_vars());
    if let Ok(store) = fig.extract_inner::<SparqlStoreConfig>("sparql_store") {
        names.extend(store.secret_vars());
    }
    names
}

/// An inline `kgbox-ed25519-public ...` key or a path to a key file.
pub fn parse_key_ref(k: &str) -> Result<PublicKey> {
    let parsed = if k.trim_start().starts_with(kgbox_bundle::keys::PUBLIC_TAG) {
        PublicKey::parse(k)
    } else {
        PublicKey::read(Path::new(k))
    };
    parsed.map_err(|e| Error::Config(format!("trusted key {k:?}: {e}")))
}
