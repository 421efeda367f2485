//! Admin endpoints, behind the admin token (`[admin]`) or an admin key: `PUT /v1/bundles`
//! (upload, install, health check, hot swap or rollback) and
//! `POST /v1/bundles/rollback`. Also the public `GET /v1/status`.
//!
//! [`require_token`] compares the token and keys in constant time
//! ([`super::auth`]);
//! [`put_bundle`] streams the body to a file in `DATA_DIR/incoming/`, then
//! hands it to `Deployer::deploy_file` on a blocking thread (install,
//! health check, hot swap or rollback: see [`crate::deploy`]); [`rollback`]
//! calls `Deployer::rollback`. [`deploy_error`] maps a failed deployment to
//! its status and error code.

use std::io::Write;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Query, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::StreamExt;
use kgbox_protocol::http::HEALTH_CHECK_FAILED;
use serde::Deserialize;
use serde_json::json;

use super::access_log::KeyId;
use super::auth::{self, Caller};
use super::{ApiError, AppState, ChosenDeployer, Selected};
use crate::deploy::{DeployError, DeployOutcome};

/// Refuses a request without the admin token or an admin key
/// (`Authorization: Bearer`): 401 `unauthorized` (403 `forbidden` for a key
/// without the admin scope, 403 `admin_disabled` when there is neither a
/// token nor an admin key).
pub async fn require_token(
    State(state): State<Arc<AppState>>,
    req: Request,
    next: Next,
) -> Response {
    let admin_keys = state
        .auth
        .ring
        .keys()
        .iter()
        .any(|k| k.revoked.is_none() && k.is_admin());
    if state.admin_token.is_none() && !admin_keys {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "admin_disabled",
            "the admin API is off: set the token in the environment variable named by admin.token_env, or admin.token_file, or add a key with `kgbox keys add --scope admin`",
        )
        .into_response();
    }
    let unauthorized = |message: &str| {
        let mut resp =
            ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message).into_response();
        resp.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer"),
        );
        resp
    };
    match auth::identify(
        &state.auth,
        state.admin_token.as_deref(),
        false,
        req.headers(),
    ) {
        Ok(Caller::AdminToken) => next.run(req).await,
        Ok(Caller::Key(key)) if key.is_admin() => {
            let mut resp = next.run(req).await;
            resp.extensions_mut().insert(KeyId(key.id));
            resp
        }
        Ok(Caller::Key(key)) => {
            let mut resp = ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                format!("key {} has no admin scope", key.id),
            )
            .into_response();
            resp.extensions_mut().insert(KeyId(key.id));
            resp
        }
        Ok(Caller::Anonymous) => {
            unauthorized("this endpoint needs `Authorization: Bearer <admin token or admin key>`")
        }
        Err(refusal) if refusal.status == StatusCode::UNAUTHORIZED => {
            if req.headers().contains_key(header::AUTHORIZATION) {
                unauthorized("wrong admin token or key")
            } else {
                unauthorized(
                    "this endpoint needs `Authorization: Bearer <admin token or admin key>`",
                )
            }
        }
        Err(refusal) => refusal.into_response(),
    }
}

/// The device's slots, versions and health decisions.
#[utoipa::path(get, path = "/v1/status", tag = "operations",
    responses((status = 200, description = "The status", body = Object)))]
pub async fn status(ChosenDeployer(deployer): ChosenDeployer) -> Json<serde_json::Value> {
    Json(json!(deployer.status()))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PutParams {
    #[serde(default)]
    pub allow_downgrade: bool,
}

/// Maps a deployment error to an API error.
pub fn deploy_error(e: DeployError) -> ApiError {
    match e {
        DeployError::Busy => ApiError::new(StatusCode::CONFLICT, "busy", e.to_string()),
        DeployError::Install(inner) => {
            use crate::error::Error;
            let code = match &inner {
                Error::Bundle(_) => "bundle_rejected",
                Error::Incompatible { .. } => "incompatible",
                Error::RuntimeTooOld { .. } => "runtime_too_old",
                Error::Downgrade { .. } => "downgrade",
                Error::Busy(_) => "busy",
                Error::NoTrustedKeys => "no_trusted_keys",
                Error::DeltaBase { .. } | Error::DeltaNoBase { .. } => "delta_base_mismatch",
                _ => "install_failed",
            };
            let status = match code {
                "busy" | "delta_base_mismatch" => StatusCode::CONFLICT,
                "install_failed" | "no_trusted_keys" => StatusCode::INTERNAL_SERVER_ERROR,
                _ => StatusCode::UNPROCESSABLE_ENTITY,
            };
            let mut message = inner.to_string();
            let mut src = std::error::Error::source(&inner);
            while let Some(s) = src {
                message.push_str(": ");
                message.push_str(&s.to_string());
                src = s.source();
            }
            ApiError::new(status, code, message)
        }
    }
}

/// Streams the body (a bundle or a delta update) to `DATA_DIR/incoming/`,
/// then deploys it.
#[utoipa::path(put, path = "/v1/bundles", tag = "operations",
    security(("admin_token" = [])),
    params(("allow_downgrade" = Option<bool>, Query, description = "Install an older version")),
    request_body(content = Vec<u8>, content_type = "application/octet-stream", description = "A signed bundle file, or a delta update made against the active bundle"),
    responses(
        (status = 200, description = "Installed, health-checked and serving", body = Object),
        (status = 400, description = "A bad request", body = super::schema::ErrorBody),
        (status = 401, description = "No or a wrong bearer token", body = super::schema::ErrorBody),
        (status = 403, description = "The admin API is off", body = super::schema::ErrorBody),
        (status = 408, description = "The upload ran past its timeout", body = super::schema::ErrorBody),
        (status = 409, description = "Another deployment is running, or a delta update is for another base than the active bundle", body = super::schema::ErrorBody),
        (status = 413, description = "Over the upload limit", body = super::schema::ErrorBody),
        (status = 422, description = "The bundle was refused, or failed its health check and was rolled back", body = super::schema::ErrorBody),
        (status = 500, description = "The device could not install it", body = super::schema::ErrorBody),
    ))]
pub async fn put_bundle(
    ChosenDeployer(deployer): ChosenDeployer,
    selected: Option<axum::Extension<Selected>>,
    params: Result<Query<PutParams>, axum::extract::rejection::QueryRejection>,
    body: Body,
) -> Result<Response, ApiError> {
    let Query(params) =
        params.map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "bad_request", e.body_text()))?;
    // Under /b/NAME/ only a bundle named NAME: it answers at that name.
    // (`PUT /v1/bundles` replaces the default with any, as it always did.)
    let named = selected.is_some();
    let cfg = deployer.config().clone();
    let incoming = incoming_dir(&cfg.data_dir)?;
    let file = tempfile::Builder::new()
        .prefix("upload-")
        .suffix(".kgb")
        .tempfile_in(&incoming)
        .map_err(|e| {
            internal(format!(
                "cannot create a file in {}: {e}",
                incoming.display()
            ))
        })?;
    let limit = cfg.admin.max_bundle_bytes;
    let mut stream = body.into_data_stream();
    let mut written: u64 = 0;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_request",
                format!("reading the upload: {e}"),
            )
        })?;
        written += chunk.len() as u64;
        if written > limit {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                format!("the bundle is larger than admin.max_bundle_bytes ({limit} bytes)"),
            ));
        }
        w.write_all(&chunk)
            .map_err(|e| internal(format!("writing the upload: {e}")))?;
    }
    if written == 0 {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "the request body is empty: send the bundle file",
        ));
    }
    let file = w
        .into_inner()
        .map_err(|e| internal(format!("writing the upload: {}", e.error())))?;
    if named {
        let name = deployer.served().bundle.manifest().name.clone();
        check_name(file.path(), &name)?;
    }
    let report = tokio::task::spawn_blocking(move || {
        let r = deployer.deploy_file(file.path(), params.allow_downgrade, &|stage| {
            tracing::info!(?stage, "deploying an uploaded bundle");
        });
        drop(file);
        r
    })
    .await
    .map_err(|e| internal(format!("the deployment failed inside kgbox: {e}")))?
    .map_err(deploy_error)?;
    let status = match report.outcome {
        DeployOutcome::Installed => StatusCode::OK,
        DeployOutcome::RolledBack => {
            let reason = report.reason.clone().unwrap_or_default();
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                HEALTH_CHECK_FAILED,
                format!(
                    "{} {} failed its health check and was rolled back; {} {} keeps serving: {reason}",
                    report.bundle.name, report.bundle.version, report.serving.name, report.serving.version
                ),
            )
            .with_extra(json!({ "report": report })));
        }
    };
    Ok((status, Json(json!(report))).into_response())
}

/// Makes the previous bundle active again.
#[utoipa::path(post, path = "/v1/bundles/rollback", tag = "operations",
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "The device status after the rollback", body = Object),
        (status = 401, description = "No or a wrong bearer token", body = super::schema::ErrorBody),
        (status = 403, description = "The admin API is off", body = super::schema::ErrorBody),
        (status = 409, description = "Nothing to roll back to, or a deployment is running", body = super::schema::ErrorBody),
        (status = 500, description = "The rollback failed", body = super::schema::ErrorBody),
    ))]
pub async fn rollback(
    ChosenDeployer(deployer): ChosenDeployer,
) -> Result<Json<serde_json::Value>, ApiError> {
    let status = tokio::task::spawn_blocking(move || deployer.rollback())
        .await
        .map_err(|e| internal(e.to_string()))?
        .map_err(|e| match e {
            DeployError::Install(crate::error::Error::Rollback(m)) => {
                ApiError::new(StatusCode::CONFLICT, "cannot_roll_back", m)
            }
            // A device serving the demo has nothing to roll back to.
            DeployError::Install(e @ crate::error::Error::NothingInstalled(_)) => {
                ApiError::new(StatusCode::CONFLICT, "cannot_roll_back", e.to_string())
            }
            other => deploy_error(other),
        })?;
    Ok(Json(json!(status)))
}

fn internal(message: String) -> ApiError {
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
}

/// `DATA_DIR/incoming`, where uploads and MQTT transfers are assembled.
/// Refuses an upload for the bundle `name` (by `/b/NAME/`) whose
/// manifest names another: it would answer at the wrong name. A delta
/// update is refused when the bundle it makes is named otherwise. (What is
/// neither is refused by the install itself.)
fn check_name(path: &std::path::Path, name: &str) -> Result<(), ApiError> {
    let open = || std::fs::File::open(path).map(std::io::BufReader::new);
    let named = match open().ok().map(kgbox_bundle::BundleReader::open) {
        Some(Ok(reader)) => reader.prefix().manifest.name.clone(),
        _ => match open().ok().map(kgbox_bundle::delta::DeltaReader::open) {
            Some(Ok(delta)) => delta.prefix().info.target.name.clone(),
            _ => return Ok(()),
        },
    };
    if named == name {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "bundle_name_mismatch",
        format!("this is the bundle {named:?}; /b/{name}/ takes only bundles named {name:?}"),
    ))
}

pub fn incoming_dir(data_dir: &std::path::Path) -> Result<std::path::PathBuf, ApiError> {
    let dir = data_dir.join("incoming");
    std::fs::create_dir_all(&dir)
        .map_err(|e| internal(format!("cannot create {}: {e}", dir.display())))?;
    Ok(dir)
}
