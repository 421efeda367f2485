//! Requests over MQTT: run through the HTTP router in-process, answered on
//! the response topic. Also the MQTT 3.1.1 request envelope.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use bytes::Bytes;
use serde_json::json;
use tokio::sync::Semaphore;
use tower::ServiceExt;

use super::publisher::Publisher;
use super::stats::{MqttStats, Outcome};

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
}

/// One request to answer.
pub(crate) struct Job {
    pub kind: Kind,
    pub reply_to: String,
    pub correlation: Option<Bytes>,
    pub payload: Bytes,
}

impl Answerer {
    /// Answers `job` (at most `max_concurrency` at once) and publishes the reply.
    pub(crate) async fn answer(self: Arc<Self>, job: Job) {
        let Ok(_permit) = self.permits.clone().acquire_owned().await else {
            return;
        };
        let (status, body) = self.response(&job).await;
        let result = self
            .publisher
            .reply(&job.reply_to, job.correlation.as_ref(), status, body)
            .await;
        match result {
            Ok(()) => self.stats.reply(true),
            Err(e) => {
                tracing::warn!(reply_to = %job.reply_to, error = %e, "cannot publish an MQTT reply");
                self.stats.reply(false);
            }
        }
    }

    async fn response(&self, job: &Job) -> (u16, Bytes) {
        let checked = precheck(&job.payload, self.max_request_bytes);
        self.stats.request(match &checked {
            Err((413, _)) => Outcome::TooLarge,
            _ => Outcome::Answered,
        });
        match checked {
            Ok(()) => call(&self.router, job.kind, job.payload.clone()).await,
            Err(refused) => refused,
        }
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
/// checked and run through `router`. Gives the reply's status and body and
/// the response topic it would go to (`None`: the request is dropped).
/// For the fuzz harness.
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
    let (status, body) = match precheck(&msg.payload, max_request_bytes) {
        Ok(()) => call(router, kind, msg.payload).await,
        Err(refused) => refused,
    };
    (status, body, msg.response_topic)
}

/// Runs one request through the router: (status, JSON body).
pub(crate) async fn call(router: &axum::Router, kind: Kind, payload: Bytes) -> (u16, Bytes) {
    let req = Request::builder()
        .method(Method::POST)
        .uri(kind.http_path())
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(payload));
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
    fn non_json_bodies_get_the_error_envelope() {
        let b = json_body(StatusCode::REQUEST_TIMEOUT, Bytes::new());
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap_or_default();
        assert_eq!(v["error"]["code"], "timeout");
        let ok = Bytes::from_static(br#"{"answers": []}"#);
        assert_eq!(json_body(StatusCode::OK, ok.clone()), ok);
    }
}
