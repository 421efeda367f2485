//! Requests over MQTT: run through the HTTP router in-process, answered on
//! the response topic. Also the MQTT 3.1.1 request envelope.
//!
//! Each request gets a request id (a new one: the correlation data is the
//! requester's, not an id of ours), carried in the reply (a `request_id`
//! field of the JSON body, and see [`Publisher::reply`]) and in its
//! access-log line (route `mqtt ask` or `mqtt query`).

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use bytes::Bytes;
use serde_json::json;
use tokio::sync::Semaphore;
use tower::ServiceExt;
use tracing::Instrument;

use super::publisher::Publisher;
use super::stats::{MqttStats, Outcome};
use crate::deploy::Deployer;
use crate::http::access_log::{self, InProcess, REQUEST_ID};
use crate::request_id::RequestId;

/// Largest response body collected from the router.
const MAX_REPLY_BYTES: usize = 64 << 20;

/// A message as either transport delivers it.
#[derive(Debug, Clone)]
pub(crate) struct Incoming {
    pub topic: String,
    pub payload: Bytes,
    /// Where to answer (MQTT 5 property, or the 3.1.1 envelope's `reply_to`).
    pub response_topic: Option<String>,
    /// Echoed in the reply; with the response topic, the dedupe key.
    pub correlation: Option<Bytes>,
}

/// Which endpoint answers a request.
pub(crate) use kgbox_protocol::topics::RequestKind as Kind;

/// Unwraps an MQTT 3.1.1 request
/// (`{"reply_to": ..., "correlation_id": ..., "body": {...}}`): the payload
/// becomes the body, `reply_to` the response topic. Leaves no response topic
/// when the envelope is unreadable (the request cannot be answered); a
/// missing `body` leaves an empty payload, which the handler refuses (400).
pub(crate) fn unwrap_envelope(msg: &mut Incoming) {
    msg.response_topic = None;
    msg.correlation = None;
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&msg.payload) else {
        msg.payload = Bytes::new();
        return;
    };
    msg.response_topic = v
        .get("reply_to")
        .and_then(|r| r.as_str())
        .map(str::to_string);
    msg.correlation = match v.get("correlation_id") {
        Some(serde_json::Value::String(s)) => Some(Bytes::copy_from_slice(s.as_bytes())),
        Some(n @ serde_json::Value::Number(_)) => Some(Bytes::from(n.to_string())),
        _ => None,
    };
    msg.payload = match v.get("body") {
        Some(body) => Bytes::from(body.to_string()),
        None => Bytes::new(),
    };
}

/// An error body in the HTTP envelope.
pub(crate) fn error_body(code: &str, message: &str) -> Bytes {
    Bytes::from(json!({"error": {"code": code, "message": message}}).to_string())
}

/// What a request task needs; shared by all of them.
pub(crate) struct Answerer {
    pub router: axum::Router,
    pub publisher: Publisher,
    pub stats: Arc<MqttStats>,
    pub permits: Arc<Semaphore>,
    pub max_request_bytes: usize,
    /// The served bundle's version goes into each access-log line.
    pub deployer: Arc<Deployer>,
}

/// One request to answer.
pub(crate) struct Job {
    pub kind: Kind,
    /// The bundle beside the default it is for (`kgbox/{id}/b/{bundle}/...`).
    pub bundle: Option<String>,
    pub reply_to: String,
    pub correlation: Option<Bytes>,
    pub payload: Bytes,
}

impl Answerer {
    /// Answers `job` (at most `max_concurrency` at once), publishes the
    /// reply and logs the access line.
    pub(crate) async fn answer(self: Arc<Self>, job: Job) {
        let started = Instant::now();
        let id = RequestId::generate();
        let span = tracing::info_span!("request", request_id = %id);
        let Some(status) = self.answer_as(&job, &id).instrument(span).await else {
            return;
        };
        let version = self.deployer.served().bundle.manifest().version.to_string();
        let route = match &job.bundle {
            Some(b) => format!("mqtt b/{b}/{}", job.kind.level()),
            None => format!("mqtt {}", job.kind.level()),
        };
        access_log::emit(
            "MQTT",
            &route,
            status,
            started.elapsed(),
            &id,
            &version,
            "-",
        );
    }

    /// The reply's status; `None` when the request was not run (shutting down).
    async fn answer_as(&self, job: &Job, id: &RequestId) -> Option<u16> {
        let Ok(_permit) = self.permits.clone().acquire_owned().await else {
            return None;
        };
        let (status, body) = self.response(job, id).await;
        let result = self
            .publisher
            .reply(&job.reply_to, job.correlation.as_ref(), id, status, body)
            .await;
        match result {
            Ok(()) => self.stats.reply(true),
            Err(e) => {
                tracing::warn!(reply_to = %job.reply_to, error = %e, "cannot publish an MQTT reply");
                self.stats.reply(false);
            }
        }
        Some(status)
    }

    async fn response(&self, job: &Job, id: &RequestId) -> (u16, Bytes) {
        let checked = precheck(&job.payload, self.max_request_bytes);
        self.stats.request(match &checked {
            Err((413, _)) => Outcome::TooLarge,
            _ => Outcome::Answered,
        });
        let (status, body) = match checked {
            Ok(()) => {
                let path = http_path(job.kind, job.bundle.as_deref());
                call(&self.router, &path, job.payload.clone(), id).await
            }
            Err(refused) => refused,
        };
        (status, with_request_id(body, id))
    }
}

/// What is refused before the router sees it: a payload over
/// `mqtt.max_request_bytes` (413) or not UTF-8 (400).
fn precheck(payload: &[u8], max_request_bytes: usize) -> Result<(), (u16, Bytes)> {
    if payload.len() > max_request_bytes {
        let msg = format!(
            "the request is {} bytes; the limit is {max_request_bytes} (mqtt.max_request_bytes)",
            payload.len(),
        );
        return Err((413, error_body("too_large", &msg)));
    }
    if std::str::from_utf8(payload).is_err() {
        return Err((400, error_body("bad_request", "the payload is not UTF-8")));
    }
    Ok(())
}

/// One request answered as the MQTT front end answers it, without a
/// broker: a 3.1.1 payload (`v311`) is unwrapped from its envelope, then
/// checked and run through `router`. Gives the reply's status and body
/// (with its `request_id`) and the response topic it would go to (`None`:
/// the request is dropped). For the fuzz harness.
#[doc(hidden)]
pub async fn answer_payload(
    router: &axum::Router,
    kind: Kind,
    payload: Bytes,
    v311: bool,
    max_request_bytes: usize,
) -> (u16, Bytes, Option<String>) {
    let mut msg = Incoming {
        topic: String::new(),
        payload,
        response_topic: Some("reply".into()),
        correlation: None,
    };
    if v311 {
        unwrap_envelope(&mut msg);
    }
    let id = RequestId::generate();
    let (status, body) = match precheck(&msg.payload, max_request_bytes) {
        Ok(()) => call(router, kind.http_path(), msg.payload, &id).await,
        Err(refused) => refused,
    };
    (status, with_request_id(body, &id), msg.response_topic)
}

/// The HTTP path a request of `kind` to `bundle` (none: the default) runs as.
pub(crate) fn http_path(kind: Kind, bundle: Option<&str>) -> String {
    match bundle {
        Some(b) => format!("/b/{b}{}", kind.http_path()),
        None => kind.http_path().to_string(),
    }
}

/// Runs one request through the router at `path`: (status, JSON body).
pub(crate) async fn call(
    router: &axum::Router,
    path: &str,
    payload: Bytes,
    id: &RequestId,
) -> (u16, Bytes) {
    call_as(router, path, payload, id, false).await
}

/// [`call`]; with `self_check`, a request the device makes of itself
/// (not counted in the bundle's since-deploy figures).
pub(crate) async fn call_as(
    router: &axum::Router,
    path: &str,
    payload: Bytes,
    id: &RequestId,
    self_check: bool,
) -> (u16, Bytes) {
    let mut req = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header(header::CONTENT_TYPE, "application/json")
        .header(REQUEST_ID, id.as_str())
        .extension(InProcess);
    if self_check {
        req = req.extension(crate::http::SelfCheck);
    }
    let req = req.body(Body::from(payload));
    let req = match req {
        Ok(r) => r,
        Err(e) => return (500, error_body("internal", &e.to_string())),
    };
    let resp = match router.clone().oneshot(req).await {
        Ok(r) => r,
        Err(e) => return (500, error_body("internal", &e.to_string())),
    };
    let status = resp.status();
    let body = match axum::body::to_bytes(resp.into_body(), MAX_REPLY_BYTES).await {
        Ok(b) => b,
        Err(e) => {
            let msg = format!("cannot read the response: {e}");
            return (500, error_body("internal", &msg));
        }
    };
    (status.as_u16(), json_body(status, body))
}

/// `body` (JSON) with `"request_id": ID` first in it when it is an object;
/// anything else as it is. The rest of the text is kept byte for byte.
pub(crate) fn with_request_id(body: Bytes, id: &RequestId) -> Bytes {
    let is_space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let Some(open) = body.iter().position(|b| !is_space(b)) else {
        return body;
    };
    if body[open] != b'{' {
        return body;
    }
    let rest = &body[open + 1..];
    let empty = rest.iter().find(|b| !is_space(b)) == Some(&b'}');
    let field = format!("\"request_id\":{}", json!(id.as_str()));
    let mut out = Vec::with_capacity(body.len() + field.len() + 2);
    out.extend_from_slice(&body[..=open]);
    out.extend_from_slice(field.as_bytes());
    if !empty {
        out.push(b',');
    }
    out.extend_from_slice(rest);
    Bytes::from(out)
}

/// Gives bodies that are not JSON (a timeout's empty body) the error envelope.
fn json_body(status: StatusCode, body: Bytes) -> Bytes {
    if serde_json::from_slice::<serde::de::IgnoredAny>(&body).is_ok() {
        return body;
    }
    let code = match status {
        StatusCode::REQUEST_TIMEOUT => "timeout",
        StatusCode::PAYLOAD_TOO_LARGE => "too_large",
        s if s.is_client_error() => "bad_request",
        _ => "internal",
    };
    let reason = status.canonical_reason().unwrap_or("error");
    error_body(
        code,
        &format!("{reason}: {}", String::from_utf8_lossy(&body)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(payload: &[u8]) -> Incoming {
        Incoming {
            topic: "kgbox/d/ask".into(),
            payload: Bytes::copy_from_slice(payload),
            response_topic: None,
            correlation: None,
        }
    }

    #[test]
    fn envelope_is_unwrapped() {
        let mut m = msg(
            br#"{"reply_to": "app/replies/42", "correlation_id": "abc", "body": {"question": "who"}}"#,
        );
        unwrap_envelope(&mut m);
        assert_eq!(m.response_topic.as_deref(), Some("app/replies/42"));
        assert_eq!(m.correlation.as_deref(), Some(&b"abc"[..]));
        let body: serde_json::Value = serde_json::from_slice(&m.payload).unwrap_or_default();
        assert_eq!(body, json!({"question": "who"}));
    }

    #[test]
    fn envelope_without_correlation_or_body() {
        let mut m = msg(br#"{"reply_to": "r", "correlation_id": 7}"#);
        unwrap_envelope(&mut m);
        assert_eq!(m.response_topic.as_deref(), Some("r"));
        assert_eq!(m.correlation.as_deref(), Some(&b"7"[..]));
        assert!(m.payload.is_empty());

        let mut m = msg(br#"{"reply_to": "r", "correlation_id": [1], "body": "x"}"#);
        unwrap_envelope(&mut m);
        assert_eq!(m.correlation, None);
        assert_eq!(&m.payload[..], br#""x""#);
    }

    #[test]
    fn unreadable_envelopes_have_no_response_topic() {
        for payload in [
            &b"not json"[..],
            &[0xff, 0xfe, 0x00][..],
            br#"{"reply_to": 5, "body": {}}"#,
            br#"[1, 2]"#,
            br#"{"body": {}}"#,
        ] {
            let mut m = msg(payload);
            m.response_topic = Some("stale".into());
            unwrap_envelope(&mut m);
            assert_eq!(m.response_topic, None, "{payload:?}");
        }
    }

    #[test]
    fn the_request_id_goes_first_into_object_bodies() {
        let id = RequestId::from_client(b"r-1").unwrap_or_else(RequestId::generate);
        let cases: [(&[u8], &[u8]); 6] = [
            (
                br#"{"answers": [], "total": 0}"#,
                br#"{"request_id":"r-1","answers": [], "total": 0}"#,
            ),
            (b"{}", br#"{"request_id":"r-1"}"#),
            (b" \n{ \t}\n", b" \n{\"request_id\":\"r-1\" \t}\n"),
            (br#"[1, 2]"#, br#"[1, 2]"#),
            (br#""text""#, br#""text""#),
            (b"", b""),
        ];
        for (body, want) in cases {
            let got = with_request_id(Bytes::copy_from_slice(body), &id);
            assert_eq!(
                got,
                Bytes::copy_from_slice(want),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        let v: serde_json::Value =
            serde_json::from_slice(&with_request_id(error_body("x", "y"), &id)).unwrap_or_default();
        assert_eq!(v["request_id"], "r-1");
        assert_eq!(v["error"]["code"], "x");
    }

    #[tokio::test]
    async fn payloads_answered_without_a_broker_carry_a_request_id() {
        let router = axum::Router::new();
        for v311 in [false, true] {
            let (status, body, _) =
                answer_payload(&router, Kind::Ask, Bytes::from_static(&[0xff]), v311, 1024).await;
            // Not UTF-8 (5), or (3.1.1) no envelope: an empty body for a router without routes.
            assert_eq!(status, if v311 { 404 } else { 400 });
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let id = v["request_id"].as_str().unwrap_or_default();
            assert_eq!(id.len(), 32, "{v}");
        }
    }

    #[test]
    fn non_json_bodies_get_the_error_envelope() {
        let b = json_body(StatusCode::REQUEST_TIMEOUT, Bytes::new());
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap_or_default();
        assert_eq!(v["error"]["code"], "timeout");
        let ok = Bytes::from_static(br#"{"answers": []}"#);
        assert_eq!(json_body(StatusCode::OK, ok.clone()), ok);
    }
}
