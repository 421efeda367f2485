//! The HTTP front end: health (plain and KServe v2), metrics, the bundle
//! manifest and entity lookup, and the services ([`crate::service`]) as
//! routes. Handlers extract, call a service or the library, and map errors
//! ([`errors`]): the only module that knows the wire format.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Path, Query, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde_json::json;
use tower::limit::GlobalConcurrencyLimitLayer;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::timeout::TimeoutLayer;

pub(crate) mod access_log;
pub mod admin;
pub mod ask;
pub mod auth;
mod console;
mod cors;
pub mod errors;
mod openai;
mod openapi;
pub mod query;
mod schema;
mod sparql;
mod sparql_eval;
pub mod tls;

pub use errors::{diagnostic_error, ApiJson};

use crate::config::{HttpConfig, QueryConfig};
use crate::entity::{self, LookupError, Page};
use crate::metrics::{Metrics, Scrape};
use crate::served::Served;

pub struct AppState {
    /// The served bundle (hot-swappable) and the way to change it.
    pub deployer: Arc<crate::deploy::Deployer>,
    pub metrics: Metrics,
    pub ready: AtomicBool,
    pub started: Instant,
    /// Process start to ready, seconds.
    pub startup_seconds: f64,
    pub query: QueryConfig,
    /// Queries stop at this age (the HTTP timeout).
    pub request_timeout: Duration,
    /// The configuration (planner and LLM settings for `/v1/ask`).
    pub config: Arc<crate::config::Config>,
    /// The admin bearer token; `None`: only admin keys administer.
    pub admin_token: Option<String>,
    /// API keys and who may read without one ([`auth`]).
    pub auth: auth::Auth,
    /// Every bundle served: the default (`deployer`) and those beside it.
    pub bundles: crate::bundles::Bundles,
}

impl AppState {
    /// The default bundle (see [`crate::deploy::Deployer::served`]).
    pub fn served(&self) -> Arc<Served> {
        self.deployer.served()
    }
}

/// The bundle `/b/NAME/...` chose for a request (a request extension).
#[derive(Clone)]
pub struct Selected(pub Arc<crate::deploy::Deployer>);

/// The bundle a request is answered from: the one `/b/NAME/` chose, else
/// the default; as it is served now (a hot swap changes the next request's).
pub struct Chosen(pub Arc<Served>);

/// The deployer of the bundle `/b/NAME/` chose, else the default's.
pub struct ChosenDeployer(pub Arc<crate::deploy::Deployer>);

impl axum::extract::FromRequestParts<Arc<AppState>> for ChosenDeployer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        Ok(ChosenDeployer(match parts.extensions.get::<Selected>() {
            Some(s) => s.0.clone(),
            None => state.deployer.clone(),
        }))
    }
}

impl axum::extract::FromRequestParts<Arc<AppState>> for Chosen {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        Ok(Chosen(match parts.extensions.get::<Selected>() {
            Some(s) => s.0.served(),
            None => state.served(),
        }))
    }
}

/// A JSON error: `{"error": {"code": ..., "message": ...}}`.
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    /// Extra fields merged into the error object.
    extra: Option<serde_json::Value>,
    /// The long form for a terminal (e.g. a query diagnostic with its caret
    /// line), when it says more than `message`.
    detail: Option<String>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            extra: None,
            detail: None,
        }
    }

    /// The long form of the message, for [`std::fmt::Display`].
    pub fn with_detail(mut self, detail: String) -> Self {
        self.detail = Some(detail);
        self
    }

    /// The machine-readable error code, e.g. `unknown_entity`.
    pub fn code(&self) -> &'static str {
        self.code
    }

    /// Adds the fields of `extra` (an object) to the error object.
    pub fn with_extra(mut self, extra: serde_json::Value) -> Self {
        self.extra = Some(extra);
        self
    }
}

/// The message (or its long form), as a command-line tool shows it.
impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.detail.as_deref().unwrap_or(&self.message))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(serde_json::Value::Object(extra)) = self.extra {
            for (k, v) in extra {
                error[k] = v;
            }
        }
        let mut resp = (self.status, Json(json!({ "error": error }))).into_response();
        resp.extensions_mut().insert(ErrorCode(self.code));
        resp
    }
}

/// The error code of an error answer, for the metrics.
#[derive(Debug, Clone, Copy)]
pub struct ErrorCode(pub &'static str);

impl From<LookupError> for ApiError {
    fn from(e: LookupError) -> Self {
        let message = e.to_string();
        match e {
            LookupError::NotFound { suggestions, .. } => ApiError {
                extra: Some(json!({ "suggestions": suggestions })),
                ..ApiError::new(StatusCode::NOT_FOUND, "entity_not_found", message)
            },
            LookupError::Ambiguous { candidates, .. } => ApiError {
                extra: Some(json!({ "candidates": candidates })),
                ..ApiError::new(StatusCode::CONFLICT, "ambiguous_entity", message)
            },
            LookupError::BadLimit => ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message),
        }
    }
}

pub fn router(state: Arc<AppState>, cfg: &HttpConfig) -> Router {
    // Open to anyone: liveness, readiness, the API's description and the
    // console page (whose calls need a key where reads do).
    let open = Router::new()
        .route("/", get(console::page))
        .route("/healthz", get(health))
        .route("/readyz", get(readyz))
        .route("/v2/health/live", get(live_v2))
        .route("/openapi.json", get(openapi::openapi_json))
        .route("/v2/health/ready", get(v2_ready));
    let read = read_routes(&state);
    // `/b/NAME/...`: the same read routes, answered from the bundle NAME.
    let chosen = read_routes(&state)
        .layer(axum::extract::DefaultBodyLimit::max(cfg.body_limit_bytes))
        .with_state(state.clone());
    let beside = move |State(state): State<Arc<AppState>>,
                       Path((name, rest)): Path<(String, String)>,
                       req: Request| {
        let chosen = chosen.clone();
        async move { choose(&state, &name, &rest, req, chosen).await }
    };
    let read = read.route("/b/{bundle}/{*rest}", axum::routing::any(beside));
    let public = open
        .merge(read)
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            Duration::from_millis(cfg.request_timeout_ms),
        ))
        .layer(axum::extract::DefaultBodyLimit::max(cfg.body_limit_bytes));
    let public = match cors::layer(&cfg.cors_origins) {
        Some(cors) => public.layer(cors),
        None => public,
    };
    // Uploads are large and slow: their own body limit (checked while
    // streaming) and timeout.
    let admin_inner = admin_routes().with_state(state.clone());
    let beside_admin = move |rest: &'static str| {
        let inner = admin_inner.clone();
        move |State(state): State<Arc<AppState>>, Path(name): Path<String>, req: Request| {
            let inner = inner.clone();
            async move { choose(&state, &name, rest, req, inner).await }
        }
    };
    let admin = admin_routes()
        .route("/b/{bundle}/v1/bundles", put(beside_admin("v1/bundles")))
        .route(
            "/b/{bundle}/v1/bundles/rollback",
            post(beside_admin("v1/bundles/rollback")),
        )
        .layer(middleware::from_fn_with_state(
            state.clone(),
            admin::require_token,
        ))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            Duration::from_millis(state.config.admin.upload_timeout_ms),
        ))
        .layer(axum::extract::DefaultBodyLimit::disable());
    public
        .merge(admin)
        .fallback(|| async {
            ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such endpoint")
        })
        .layer(CatchPanicLayer::custom(|_| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "the request failed inside kgbox (see the log)",
            )
            .into_response()
        }))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            record_metrics,
        ))
        // One semaphore for the whole router (a plain ConcurrencyLimitLayer
        // would give each route its own).
        .layer(GlobalConcurrencyLimitLayer::new(cfg.max_concurrency))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            access_log::access_log,
        ))
        .with_state(state)
}

/// The routes that change a bundle's slots (behind [`admin::require_token`],
/// which the caller adds).
fn admin_routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/v1/bundles", put(admin::put_bundle))
        .route("/v1/bundles/rollback", post(admin::rollback))
}

/// The routes that read a bundle, behind API keys ([`auth`]).
fn read_routes(state: &Arc<AppState>) -> Router<Arc<AppState>> {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/v1/status", get(admin::status))
        .route("/v1/bundle", get(bundle))
        .route("/v1/entities/{*name}", get(entity))
        .route("/v1/query", post(query::query))
        .route("/v1/retrieve", post(query::retrieve_subgraph))
        .route("/v1/link", post(query::link))
        .route("/v1/ask", post(ask::ask))
        .route("/sparql", get(sparql::get).post(sparql::post))
        .route("/v1/chat/completions", post(openai::chat_completions))
        .route("/v1/models", get(openai::models))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            count_for_bundle,
        ))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            auth::require_read,
        ))
}

/// Marks a request the device makes of itself (a rollout's golden
/// question): not counted in the bundle's "since deploy" figures, which
/// are its clients'.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SelfCheck;

/// Counts an admitted read request for the bundle that answers it (its
/// "since deploy" figures in the status). MQTT requests count too; a
/// [`SelfCheck`] does not.
async fn count_for_bundle(
    State(state): State<Arc<AppState>>,
    req: Request,
    next: Next,
) -> Response {
    if req.extensions().get::<SelfCheck>().is_some() {
        return next.run(req).await;
    }
    let served = match req.extensions().get::<Selected>() {
        Some(s) => s.0.served(),
        None => state.served(),
    };
    let t = Instant::now();
    let resp = next.run(req).await;
    served.stats.record(resp.status().as_u16(), t.elapsed());
    resp
}

/// Answers `req` to `/b/NAME/REST` as `/REST` on the bundle NAME, or 404
/// `bundle_not_found`.
async fn choose(
    state: &AppState,
    name: &str,
    rest: &str,
    req: Request,
    chosen: Router,
) -> Response {
    use tower::ServiceExt;
    let Some(deployer) = state.bundles.get(name) else {
        return ApiError::new(
            StatusCode::NOT_FOUND,
            "bundle_not_found",
            format!("no bundle named {name:?} is served here (GET /v1/models lists them)"),
        )
        .into_response();
    };
    // The rest of the path as sent (still percent-encoded: `rest` is
    // decoded, and the inner routes decode it once more).
    let raw = req
        .uri()
        .path()
        .splitn(4, '/')
        .nth(3)
        .unwrap_or(rest)
        .to_string();
    let path_and_query = match req.uri().query() {
        Some(q) => format!("/{raw}?{q}"),
        None => format!("/{raw}"),
    };
    let Ok(uri) = path_and_query.parse::<axum::http::Uri>() else {
        return ApiError::new(StatusCode::BAD_REQUEST, "bad_request", "a bad path").into_response();
    };
    // A new request for the inner routes: the outer route's path captures
    // (request extensions) must not reach their handlers.
    let (parts, body) = req.into_parts();
    let mut inner = Request::new(body);
    *inner.method_mut() = parts.method;
    *inner.uri_mut() = uri;
    *inner.version_mut() = parts.version;
    *inner.headers_mut() = parts.headers;
    if let Some(id) = parts.extensions.get::<crate::request_id::RequestId>() {
        inner.extensions_mut().insert(id.clone());
    }
    if parts.extensions.get::<access_log::InProcess>().is_some() {
        inner.extensions_mut().insert(access_log::InProcess);
    }
    if parts.extensions.get::<SelfCheck>().is_some() {
        inner.extensions_mut().insert(SelfCheck);
    }
    inner.extensions_mut().insert(Selected(deployer.clone()));
    match chosen.oneshot(inner).await {
        Ok(resp) => resp,
        Err(never) => match never {},
    }
}

async fn record_metrics(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".into());
    let t = Instant::now();
    let resp = next.run(req).await;
    let code = resp.extensions().get::<ErrorCode>().map(|c| c.0);
    state
        .metrics
        .record(&route, resp.status().as_u16(), code, t.elapsed());
    resp
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "`ok`", content_type = "text/plain", body = String)))]
async fn health() -> &'static str {
    "ok\n"
}

/// Liveness, KServe v2 form.
#[utoipa::path(get, path = "/v2/health/live", tag = "operations",
    responses((status = 200, description = "`{\"live\": true}`", body = Object)))]
async fn live_v2() -> Json<serde_json::Value> {
    Json(json!({"live": true}))
}

/// Readiness: a bundle is loaded and answering.
#[utoipa::path(get, path = "/readyz", tag = "operations", responses(
    (status = 200, description = "`ready`", content_type = "text/plain", body = String),
    (status = 503, description = "`not ready`", content_type = "text/plain", body = String)))]
async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    if state.ready.load(Ordering::Acquire) {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready\n").into_response()
    }
}

/// Readiness, KServe v2 form.
#[utoipa::path(get, path = "/v2/health/ready", tag = "operations", responses(
    (status = 200, description = "`{\"ready\": true}`", body = Object),
    (status = 503, description = "`{\"ready\": false}`", body = Object)))]
async fn v2_ready(State(state): State<Arc<AppState>>) -> Response {
    let ready = state.ready.load(Ordering::Acquire);
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(json!({ "ready": ready }))).into_response()
}

/// Prometheus metrics (text exposition format).
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses((status = 200, description = "Metrics", content_type = "text/plain", body = String)))]
async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let served = state.served();
    let m = served.bundle.manifest();
    let llm = served.qa.audit.stats();
    let scrape = Scrape {
        bundle: (&m.name, m.version.to_string(), served.bundle.source.label()),
        graph: (m.stats.entities, m.stats.relations, m.stats.triples),
        image_bytes: served.bundle.image_len() as u64,
        startup_seconds: state.startup_seconds,
        llm: &llm,
    };
    match state.metrics.render(&scrape) {
        Ok(out) => ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out).into_response(),
        Err(e) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "metrics_unavailable", e)
            .into_response(),
    }
}

/// The served bundle: manifest, source slot, signing key and sections.
#[utoipa::path(get, path = "/v1/bundle", tag = "graph",
    responses((status = 200, description = "The bundle", body = Object)))]
async fn bundle(Chosen(served): Chosen) -> Json<serde_json::Value> {
    let b = &served.bundle;
    let sections: Vec<_> = b
        .view()
        .prefix
        .sections
        .iter()
        .map(|s| json!({"name": s.name, "required": s.required(), "raw_bytes": s.raw_len, "stored_bytes": s.stored_len}))
        .collect();
    Json(json!({
        "manifest": b.manifest(),
        "source": b.source.label(),
        "key_id": b.view().prefix.header.key_id.to_string(),
        "image_bytes": b.image_len(),
        "sections": sections,
    }))
}

/// An entity (by name, alias or `#id`) and a page of its edges.
#[utoipa::path(get, path = "/v1/entities/{name}", tag = "graph",
    params(
        ("name" = String, Path, description = "A name, an alias or `#id`"),
        ("offset" = Option<usize>, Query, description = "First edge of the page"),
        ("limit" = Option<usize>, Query, description = "Edges per page"),
        ("direction" = Option<String>, Query, description = "both, out or in"),
    ),
    responses(
        (status = 200, description = "The entity and its edges", body = Object),
        (status = 400, description = "A bad page", body = schema::ErrorBody),
        (status = 404, description = "No such entity (with suggestions)", body = schema::ErrorBody),
        (status = 409, description = "An ambiguous alias (with candidates)", body = schema::ErrorBody),
        (status = 500, description = "The bundle is damaged", body = schema::ErrorBody),
    ))]
async fn entity(
    Chosen(served): Chosen,
    Path(name): Path<String>,
    page: Result<Query<Page>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<entity::EntityView>, ApiError> {
    let Query(page) =
        page.map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "bad_request", e.body_text()))?;
    let kg = served.bundle.kg().map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "bundle_corrupt",
            e.to_string(),
        )
    })?;
    Ok(Json(entity::describe(&kg, &name, &page)?))
}

/// Serves `app` on `listener` (TCP, or [`tls::TlsListener`]) until
/// `shutdown` resolves.
pub async fn serve<L>(
    listener: L,
    app: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()>
where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down");
}
