//! The access log: one `tracing` event per request (target
//! `kgbox::access`: method, route, status, duration_ms, request_id,
//! bundle_version, key: the API key's id, `-` for none), and the request id, taken from the client's
//! `x-request-id` when it is sane, else made, and echoed in an
//! `x-request-id` header on every response (errors and 404s included).
//!
//! MQTT requests, which run through the same router in process, are logged
//! by the MQTT front end (route `mqtt ask`, ...) with [`emit`]; their trip
//! through the router is marked [`InProcess`] and not logged twice.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

use super::AppState;
use crate::request_id::RequestId;

/// The `tracing` target of access lines.
pub const TARGET: &str = "kgbox::access";

/// The route of a request that matched none (a 404 from the fallback).
pub const UNMATCHED: &str = "unmatched";

/// `x-request-id`, both ways.
pub const REQUEST_ID: HeaderName = HeaderName::from_static(crate::request_id::HEADER);

/// The API key a request was answered for, by id (`-`: none), set on the
/// response by [`super::auth`].
#[derive(Debug, Clone)]
pub struct KeyId(pub String);

/// Marks a request that the MQTT front end sends through the router: it
/// logs the request itself.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InProcess;

/// The middleware (registered on the whole router, outermost).
pub async fn access_log(
    State(state): State<Arc<AppState>>,
    mut req: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let id =
        RequestId::from_client_or_new(req.headers().get(&REQUEST_ID).map(HeaderValue::as_bytes));
    let method = req.method().clone();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| UNMATCHED.to_string());
    let in_process = req.extensions().get::<InProcess>().is_some();
    req.extensions_mut().insert(id.clone());
    let mut resp = if in_process {
        // Already inside the MQTT request's span.
        next.run(req).await
    } else {
        let span = tracing::info_span!("request", request_id = %id);
        next.run(req).instrument(span).await
    };
    if let Ok(value) = HeaderValue::from_str(id.as_str()) {
        resp.headers_mut().insert(REQUEST_ID, value);
    }
    if !in_process {
        let version = state.served().bundle.manifest().version.to_string();
        let key = resp
            .extensions()
            .get::<KeyId>()
            .map_or("-", |k| k.0.as_str());
        emit(
            method.as_str(),
            &route,
            resp.status().as_u16(),
            started.elapsed(),
            &id,
            &version,
            key,
        );
    }
    resp
}

/// Logs one access line.
pub(crate) fn emit(
    method: &str,
    route: &str,
    status: u16,
    elapsed: Duration,
    request_id: &RequestId,
    bundle_version: &str,
    key: &str,
) {
    tracing::info!(
        target: TARGET,
        method = %method,
        route = %route,
        status,
        duration_ms = millis(elapsed),
        request_id = %request_id,
        bundle_version = %bundle_version,
        key = %key,
    );
}

/// Milliseconds, to the microsecond.
fn millis(d: Duration) -> f64 {
    d.as_micros() as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_milliseconds_to_the_microsecond() {
        assert_eq!(millis(Duration::from_micros(1_234_567)), 1234.567);
        assert_eq!(millis(Duration::from_nanos(999)), 0.0);
    }
}
