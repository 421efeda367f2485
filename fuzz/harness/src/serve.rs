//! Requests over HTTP and MQTT, answered in-process by the router `serve`
//! builds, over the demo bundle. A bad request must get a 4xx: a 500
//! (kgbox's own failure, or a panic caught by the router) is a defect.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use axum::body::Body;
use axum::http::{header, Method, Request};
use bytes::Bytes;
use kgbox::deploy::Deployer;
use kgbox::http::{router, AppState};
use kgbox::metrics::Metrics;
use kgbox::served::Served;
use kgbox::Config;
use kgbox_protocol::topics::RequestKind;
use kgbox_protocol::Health;
use tower::ServiceExt;

use crate::{demo_key_line, split_at_byte};

/// The admin token of the harness's device.
const TOKEN: &str = "fuzz-admin-token-0123456789";

struct Device {
    _dir: tempfile::TempDir,
    runtime: tokio::runtime::Runtime,
    router: axum::Router,
    max_mqtt_request: usize,
}

fn device() -> &'static Device {
    static D: OnceLock<Device> = OnceLock::new();
    D.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a scratch folder");
        let bundle = kgbox::demo::load_demo().expect("the demo bundle loads");
        let mut cfg = Config {
            data_dir: dir.path().join("data"),
            compatible: bundle.manifest().compatible.clone(),
            ..Config::default()
        };
        cfg.trust.keys = vec![demo_key_line()];
        let served = Served::load(bundle, &cfg).expect("the demo serves");
        let max_mqtt_request = cfg.mqtt.max_request_bytes;
        let cfg = Arc::new(cfg);
        let deployer = Arc::new(Deployer::new(cfg.clone(), served, Health::Good));
        let state = Arc::new(AppState {
            bundles: kgbox::bundles::Bundles::new(deployer.clone(), Default::default()),
            deployer,
            metrics: Metrics::new(),
            ready: AtomicBool::new(true),
            started: Instant::now(),
            startup_seconds: 0.0,
            query: cfg.query.clone(),
            request_timeout: std::time::Duration::from_millis(cfg.http.request_timeout_ms),
            config: cfg.clone(),
            admin_token: Some(TOKEN.into()),
            auth: kgbox::http::auth::Auth::new(
                kgbox::keys::Keyring::open(&cfg.data_dir).expect("an empty key ring"),
                true,
                None,
            ),
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a tokio runtime");
        Device {
            router: router(state, &cfg.http),
            runtime,
            max_mqtt_request,
            _dir: dir,
        }
    })
}

/// The routes a request can go to: (method, path, content type).
const ROUTES: &[(Method, &str, &str)] = &[
    (Method::POST, "/v1/query", "application/json"),
    (Method::POST, "/v1/retrieve", "application/json"),
    (Method::POST, "/v1/link", "application/json"),
    (Method::POST, "/v1/ask", "application/json"),
    (Method::POST, "/v1/chat/completions", "application/json"),
    (Method::POST, "/sparql", "application/sparql-query"),
    (Method::POST, "/sparql", "application/x-www-form-urlencoded"),
    (Method::GET, "/sparql?", ""),
    (Method::GET, "/v1/entities/", ""),
    (Method::PUT, "/v1/bundles", "application/octet-stream"),
    (Method::POST, "/v1/bundles/rollback", ""),
    (Method::GET, "/", ""),
];

/// The input is `[route, token] line \n body`: `route` picks one of
/// [`ROUTES`], `line` is appended to its path, `token` picks no, a wrong
/// or the right admin token.
pub fn http_request(data: &[u8]) {
    if data.len() < 2 {
        return;
    }
    let (method, path, content_type) = &ROUTES[data[0] as usize % ROUTES.len()];
    let (line, body) = split_at_byte(&data[2..], b'\n');
    let Ok(line) = std::str::from_utf8(line) else {
        return;
    };
    let mut req = Request::builder()
        .method(method.clone())
        .uri(format!("{path}{line}"));
    if !content_type.is_empty() {
        req = req.header(header::CONTENT_TYPE, *content_type);
    }
    match data[1] % 3 {
        0 => {}
        1 => req = req.header(header::AUTHORIZATION, "Bearer wrong-token"),
        _ => req = req.header(header::AUTHORIZATION, format!("Bearer {TOKEN}")),
    }
    let Ok(req) = req.body(Body::from(body.to_vec())) else {
        return;
    };
    let d = device();
    let (status, body) = d.runtime.block_on(async {
        let resp = d
            .router
            .clone()
            .oneshot(req)
            .await
            .expect("the router answers");
        let status = resp.status();
        let body = axum::body::to_bytes(resp.into_body(), 64 << 20).await;
        (status, body)
    });
    assert!(
        status.as_u16() != 500,
        "{method} {path}{line}: 500 {:?}",
        body.map(|b| String::from_utf8_lossy(&b).into_owned())
    );
}

/// The input is `[kind] payload`: `kind` picks `ask` or `query` and the
/// MQTT 5 payload or the 3.1.1 envelope. The reply must be JSON and not a 500.
pub fn mqtt_request(data: &[u8]) {
    let Some((&first, payload)) = data.split_first() else {
        return;
    };
    let kind = if first & 1 == 0 {
        RequestKind::Ask
    } else {
        RequestKind::Query
    };
    let v311 = first & 2 != 0;
    let d = device();
    let payload = Bytes::copy_from_slice(payload);
    let (status, body, _reply_to) = d.runtime.block_on(kgbox::mqtt::answer_payload(
        &d.router,
        kind,
        payload,
        v311,
        d.max_mqtt_request,
    ));
    assert!(status != 500, "MQTT {}: 500 {:?}", kind.level(), body);
    assert!(
        serde_json_is_json(&body),
        "MQTT {}: a reply that is not JSON: {body:?}",
        kind.level()
    );
}

fn serde_json_is_json(b: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(b).is_ok()
}
