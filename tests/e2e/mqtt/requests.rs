//! MQTT end to end (docs/mqtt.md): real `mosquitto`, real `kgbox serve`
//! processes serving the built-in demo bundle, and rumqttc test clients.
//! Requests and replies over MQTT 5 (response topic, correlation data, status
//! property) and 3.1.1 (envelope), shared subscriptions, redelivery, bad
//! payloads, a broker restart, the last will and a clean shutdown.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};

use kgbox_testkit::mosquitto::{wait_status, wait_until, Client, Client311, Mosquitto, TestPki};
use kgbox_testkit::*;

/// Generous: CI machines are small and busy.
const T: Duration = Duration::from_secs(30);

const ASK: &str = r#"{"question": "who directed [Blade Runner]"}"#;
const QUERY: &str = r#"{"query": "\"Blade Runner\" -> directed_by"}"#;

/// A device whose `[mqtt]` table points at `broker`, with `extra` keys in it.
pub(crate) fn device(broker: &Mosquitto, id: &str, extra: &str) -> Device {
    Device::new(
        &[],
        &format!(
            "[mqtt]\nenabled = true\nbroker = {:?}\ndevice_id = {id:?}\n\
             reconnect_min_ms = 100\nreconnect_max_ms = 1000\n{extra}\n",
            broker.url()
        ),
    )
}

/// Waits until `id` says it is online (subscriptions are in place by then).
pub(crate) fn online(broker: &Mosquitto, id: &str) -> Value {
    wait_status(broker.port, id, T, |v| v["online"] == true)
}

fn answered(server: &Server) -> u64 {
    server.metric("kgbox_mqtt_requests_total{outcome=\"answered\"}")
}

/// Checks a reply that should name Ridley Scott.
fn assert_ridley(reply: &kgbox_testkit::mosquitto::Msg, server: &Server) {
    assert_eq!(
        reply.property("status"),
        Some("200"),
        "{}; log: {}",
        String::from_utf8_lossy(&reply.payload),
        server.log()
    );
    assert_eq!(reply.content_type.as_deref(), Some("application/json"));
    assert!(!reply.retain);
    let names = answer_names(&reply.json());
    assert!(names.contains(&"Ridley Scott".to_string()), "{names:?}");
}

#[test]
fn ask_and_query_over_mqtt5() {
    let broker = Mosquitto::start();
    let d = device(&broker, "edge-1", "");
    let server = d.serve();
    let status = online(&broker, "edge-1");
    assert_eq!(status["device_id"], "edge-1");
    assert_eq!(status["bundle"]["name"], "demo-movies", "{status}");
    assert_eq!(status["health"], "good", "{status}");
    assert_eq!(status["source"], "demo", "{status}");
    // The same status as HTTP's.
    let http = server.get_json("/v1/status");
    assert_eq!(status["bundle"], http["bundle"]);

    let c = Client::connect(broker.port);
    let reply = c.request("kgbox/edge-1/ask", ASK.as_bytes(), T);
    assert_ridley(&reply, &server);
    let reply = c.request("kgbox/edge-1/query", QUERY.as_bytes(), T);
    assert_ridley(&reply, &server);
    assert_eq!(reply.json()["total"], 1);

    // Without a response topic there is nowhere to answer: dropped, counted.
    c.publish("kgbox/edge-1/ask", ASK.as_bytes(), None, Some(b"x"));
    let no_topic = "kgbox_mqtt_requests_total{outcome=\"no_response_topic\"}";
    wait_until(T, "the dropped request to be counted", || {
        server.metric(no_topic) == 1
    });
    assert_eq!(answered(&server), 2);
    // Counted once the client took the reply, which may be a moment after it arrived.
    let sent = "kgbox_mqtt_replies_total{outcome=\"sent\"}";
    wait_until(T, "the replies to be counted", || server.metric(sent) == 2);
    let failed = "kgbox_mqtt_replies_total{outcome=\"failed\"}";
    assert_eq!(server.metric(failed), 0);
    assert_eq!(server.metric("kgbox_mqtt_connected"), 1);
    assert!(server.metric("kgbox_mqtt_connects_total") >= 1);
}

#[test]
fn shared_subscription_answers_each_request_once() {
    let broker = Mosquitto::start();
    let extra = "group = \"fleet\"";
    let (da, db) = (
        device(&broker, "fleet-a", extra),
        device(&broker, "fleet-b", extra),
    );
    let (sa, sb) = (da.serve(), db.serve());
    online(&broker, "fleet-a");
    online(&broker, "fleet-b");

    let c = Client::connect(broker.port);
    let reply_to = "test/shared/replies";
    c.subscribe(reply_to);
    let n = 40;
    for i in 0..n {
        let body = if i % 2 == 0 { ASK } else { QUERY };
        let topic = if i % 2 == 0 {
            "kgbox/ask"
        } else {
            "kgbox/query"
        };
        c.publish(
            topic,
            body.as_bytes(),
            Some(reply_to),
            Some(format!("req-{i}").as_bytes()),
        );
    }
    let mut replies: BTreeMap<String, usize> = BTreeMap::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while replies.len() < n && std::time::Instant::now() < deadline {
        if let Some(m) = c.recv(Duration::from_secs(1)) {
            assert_eq!(m.property("status"), Some("200"));
            let corr = String::from_utf8(m.correlation.clone().unwrap()).unwrap();
            *replies.entry(corr).or_default() += 1;
        }
    }
    // Late duplicates would show up now.
    for m in c.drain(Duration::from_secs(2)) {
        let corr = String::from_utf8(m.correlation.clone().unwrap()).unwrap();
        *replies.entry(corr).or_default() += 1;
    }
    assert_eq!(replies.len(), n, "replies: {replies:?}");
    assert!(replies.values().all(|&k| k == 1), "{replies:?}");
    let (a, b) = (answered(&sa), answered(&sb));
    assert_eq!(a + b, n as u64, "fleet-a {a}, fleet-b {b}");
    assert!(
        a > 0 && b > 0,
        "one device answered all: fleet-a {a}, fleet-b {b}"
    );
}

#[test]
fn duplicates_are_answered_once_and_bad_payloads_get_errors() {
    let broker = Mosquitto::start();
    let d = device(&broker, "edge-3", "max_request_bytes = 2048");
    let server = d.serve();
    online(&broker, "edge-3");
    let c = Client::connect(broker.port);

    // A redelivered request (same response topic and correlation data).
    let reply_to = "test/dup/replies";
    c.subscribe(reply_to);
    c.publish(
        "kgbox/edge-3/ask",
        ASK.as_bytes(),
        Some(reply_to),
        Some(b"dup-1"),
    );
    c.publish(
        "kgbox/edge-3/ask",
        ASK.as_bytes(),
        Some(reply_to),
        Some(b"dup-1"),
    );
    let first = c
        .recv_matching(T, |m| m.topic == reply_to)
        .expect("a reply to the duplicated request");
    assert_ridley(&first, &server);
    let late = c.drain(Duration::from_secs(3));
    assert!(late.is_empty(), "answered twice: {late:?}");
    let dup = "kgbox_mqtt_requests_total{outcome=\"duplicate\"}";
    wait_until(T, "the duplicate to be counted", || server.metric(dup) == 1);

    // The same correlation data with another response topic is another request.
    let reply = c.request("kgbox/edge-3/ask", ASK.as_bytes(), T);
    assert_ridley(&reply, &server);

    // Bad payloads: the error the HTTP handlers give, or the MQTT layer's own.
    let big = format!(r#"{{"question": "{}"}}"#, "a".repeat(3000));
    let cases: [(&str, &[u8], &str, &str); 5] = [
        ("not JSON", b"not json", "400", "bad_json"),
        ("wrong fields", br#"{"colour": "red"}"#, "422", "bad_json"),
        ("wrong type", br#"{"question": 5}"#, "422", "bad_json"),
        ("not UTF-8", &[0xff, 0xfe, 0xfd, 0x7b], "400", "bad_request"),
        ("too large", big.as_bytes(), "413", "too_large"),
    ];
    for (what, payload, status, code) in cases {
        let reply = c.request("kgbox/edge-3/ask", payload, T);
        let v = reply.json();
        assert_eq!(reply.property("status"), Some(status), "{what}: {v}");
        assert_eq!(v["error"]["code"], code, "{what}: {v}");
        assert!(v["error"]["message"].is_string(), "{what}: {v}");
    }
    let reply = c.request("kgbox/edge-3/query", b"{", T);
    assert_eq!(reply.property("status"), Some("400"));

    // Still answering.
    let reply = c.request("kgbox/edge-3/query", QUERY.as_bytes(), T);
    assert_ridley(&reply, &server);
    let too_large = "kgbox_mqtt_requests_total{outcome=\"too_large\"}";
    assert_eq!(server.metric(too_large), 1);
}

/// The access lines (target `kgbox::access`) of a JSON log.
fn access_lines(log: &str) -> Vec<Value> {
    log.lines()
        .map(|l| {
            serde_json::from_str::<Value>(l)
                .unwrap_or_else(|e| panic!("a log line that is not JSON ({e}): {l:?}"))
        })
        .filter(|v| v["target"] == "kgbox::access")
        .collect()
}

fn is_request_id(id: &str) -> bool {
    id.len() == 32
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[test]
fn replies_carry_a_request_id_and_each_request_has_one_access_line() {
    let broker = Mosquitto::start();
    let d = device(&broker, "edge-8", "");
    let server = d.serve_with_env(&[("KGBOX_LOG__FORMAT", "json")]);
    online(&broker, "edge-8");
    let c = Client::connect(broker.port);
    let cases: [(&str, &[u8], &str, &str); 4] = [
        ("ask", ASK.as_bytes(), "200", "mqtt ask"),
        ("query", QUERY.as_bytes(), "200", "mqtt query"),
        ("ask", br#"{"colour": "red"}"#, "422", "mqtt ask"),
        // Refused before the handlers (not UTF-8).
        ("query", &[0xff, 0xfe], "400", "mqtt query"),
    ];
    let mut ids = Vec::new();
    for (kind, payload, status, route) in cases {
        let reply = c.request(&format!("kgbox/edge-8/{kind}"), payload, T);
        let v = reply.json();
        assert_eq!(reply.property("status"), Some(status), "{kind}: {v}");
        let id = reply
            .property("request-id")
            .unwrap_or_else(|| panic!("{kind}: no request-id property: {v}"))
            .to_string();
        assert!(is_request_id(&id), "{kind}: {id:?}");
        assert_eq!(v["request_id"], id.as_str(), "{kind}: {v}");
        // The correlation data is the requester's, not the request id.
        assert_ne!(reply.correlation.as_deref(), Some(id.as_bytes()));
        ids.push((id, status, route));
    }
    let answer = c.request("kgbox/edge-8/query", QUERY.as_bytes(), T).json();
    assert_eq!(answer_names(&answer), vec!["Ridley Scott".to_string()]);
    assert!(!ids
        .iter()
        .any(|(id, _, _)| answer["request_id"] == id.as_str()));

    wait_until(T, "the access lines", || {
        let lines = access_lines(&server.log());
        ids.iter()
            .all(|(id, _, _)| lines.iter().any(|l| l["request_id"] == id.as_str()))
    });
    let log = server.log();
    let lines = access_lines(&log);
    for (id, status, route) in &ids {
        let mine: Vec<&Value> = lines
            .iter()
            .filter(|l| l["request_id"] == id.as_str())
            .collect();
        // One line: the trip through the HTTP router is not logged again.
        assert_eq!(mine.len(), 1, "{route}: {mine:?}\n{log}");
        let l = mine[0];
        assert_eq!(l["method"], "MQTT", "{l}");
        assert_eq!(l["route"], *route, "{l}");
        assert_eq!(l["status"].to_string(), *status, "{l}");
        assert_eq!(l["bundle_version"], "1.0.0", "{l}");
        assert!(l["duration_ms"].as_f64().is_some_and(|d| d >= 0.0), "{l}");
    }
    let mqtt = lines.iter().filter(|l| l["method"] == "MQTT").count();
    assert_eq!(mqtt, ids.len() + 1, "{log}");
    assert!(
        !lines.iter().any(|l| l["route"] == "/v1/ask"),
        "MQTT requests logged as HTTP: {log}"
    );
}

#[test]
fn reconnects_after_a_broker_restart() {
    let mut broker = Mosquitto::start();
    let d = device(&broker, "edge-4", "");
    let server = d.serve();
    online(&broker, "edge-4");
    {
        let c = Client::connect(broker.port);
        assert_ridley(&c.request("kgbox/edge-4/ask", ASK.as_bytes(), T), &server);
    }

    // A client that keeps publishing into the outage.
    let early = Client::connect(broker.port);
    broker.stop();
    wait_until(T, "the device to notice the outage", || {
        server.metric("kgbox_mqtt_connected") == 0
    });
    // Queued by the client while the broker is down: answered later or
    // lost with the client's session; either way nothing may crash.
    early.publish(
        "kgbox/edge-4/ask",
        ASK.as_bytes(),
        Some("test/outage/replies"),
        Some(b"outage"),
    );
    std::thread::sleep(Duration::from_secs(2));
    broker.restart();

    // Resubscribed and the status republished (the broker kept no state).
    let status = online(&broker, "edge-4");
    assert_eq!(status["bundle"]["name"], "demo-movies");
    assert!(server.metric("kgbox_mqtt_connects_total") >= 2);
    let c = Client::connect(broker.port);
    assert_ridley(&c.request("kgbox/edge-4/ask", ASK.as_bytes(), T), &server);
    assert_ridley(
        &c.request("kgbox/edge-4/query", QUERY.as_bytes(), T),
        &server,
    );
    assert_eq!(server.get("/healthz").0, 200);
    drop(early);
}

#[test]
fn last_will_says_offline_when_the_process_dies() {
    let broker = Mosquitto::start();
    let d = device(&broker, "edge-5", "keep_alive_s = 5");
    let server = d.serve();
    online(&broker, "edge-5");
    // SIGKILL: no goodbye, the broker publishes the will.
    drop(server);
    let v = wait_status(broker.port, "edge-5", T, |v| v["online"] == false);
    assert_eq!(v, json!({"device_id": "edge-5", "online": false}));
}

/// A child process killed on drop (when a test fails half-way).
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn clean_shutdown_publishes_offline() {
    let broker = Mosquitto::start();
    let d = device(&broker, "edge-7", "");
    let port = free_port();
    let log = d.dir.path().join("serve.log");
    let mut child = Child(
        d.command(&["serve", "--listen", &format!("127.0.0.1:{port}")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    online(&broker, "edge-7");
    // SIGTERM: the device says goodbye itself (no will), then exits.
    // SAFETY: kill(2) on our own child's pid.
    let rc = unsafe { libc::kill(child.0.id() as i32, libc::SIGTERM) };
    assert_eq!(rc, 0);
    let v = wait_status(broker.port, "edge-7", T, |v| v["online"] == false);
    assert_eq!(v, json!({"device_id": "edge-7", "online": false}));
    let mut exited = None;
    wait_until(T, "kgbox serve to exit", || {
        exited = child.0.try_wait().unwrap();
        exited.is_some()
    });
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(exited.unwrap().success(), "{exited:?}: {log}");
    assert!(log.contains("MQTT stopped"), "{log}");
    assert!(!log.contains("goodbye"), "{log}");
}

#[test]
fn mqtt311_fallback_uses_the_envelope() {
    let broker = Mosquitto::start();
    let d = device(&broker, "edge-6", "protocol = \"v3.1.1\"");
    let server = d.serve();
    let status = online(&broker, "edge-6");
    assert_eq!(status["bundle"]["name"], "demo-movies");

    let c = Client311::connect(broker.port);
    let reply_to = "test/v311/replies";
    c.subscribe(reply_to);
    for (topic, body, corr) in [
        ("kgbox/edge-6/ask", ASK, "abc"),
        ("kgbox/edge-6/query", QUERY, "def"),
    ] {
        let req = json!({
            "reply_to": reply_to,
            "correlation_id": corr,
            "body": serde_json::from_str::<Value>(body).unwrap(),
        });
        c.publish(topic, req.to_string().as_bytes());
        let payload = c
            .recv_on(reply_to, T)
            .unwrap_or_else(|| panic!("no reply on {topic}; log: {}", server.log()));
        let v: Value = serde_json::from_slice(&payload).unwrap();
        assert_eq!(v["correlation_id"], corr, "{v}");
        assert_eq!(v["status"], 200, "{v}");
        // A request id of the device's own, in the envelope and the body.
        let id = v["request_id"].as_str().unwrap_or_default();
        assert!(is_request_id(id), "{v}");
        assert_eq!(v["body"]["request_id"], id, "{v}");
        let names = answer_names(&v["body"]);
        assert!(names.contains(&"Ridley Scott".to_string()), "{v}");
    }

    // A bad body is answered in the envelope too.
    let req = json!({"reply_to": reply_to, "correlation_id": "bad", "body": {"colour": 1}});
    c.publish("kgbox/edge-6/ask", req.to_string().as_bytes());
    let v: Value = serde_json::from_slice(&c.recv_on(reply_to, T).expect("a reply")).unwrap();
    assert_eq!(v["correlation_id"], "bad");
    assert_eq!(v["status"], 422, "{v}");
    assert_eq!(v["body"]["error"]["code"], "bad_json", "{v}");

    // Unreadable envelopes cannot be answered: counted, and the device goes on.
    c.publish("kgbox/edge-6/ask", b"not an envelope");
    let no_topic = "kgbox_mqtt_requests_total{outcome=\"no_response_topic\"}";
    wait_until(T, "the dropped request to be counted", || {
        server.metric(no_topic) == 1
    });
    let req = json!({"reply_to": reply_to, "correlation_id": "again", "body": {"question": "who directed [Blade Runner]"}});
    c.publish("kgbox/edge-6/ask", req.to_string().as_bytes());
    let v: Value = serde_json::from_slice(&c.recv_on(reply_to, T).expect("a reply")).unwrap();
    assert_eq!(v["correlation_id"], "again");
    assert_eq!(v["status"], 200);
}

#[test]
fn connects_over_tls_with_the_configured_ca() {
    let pki = TestPki::new();
    let broker = Mosquitto::start_tls(&pki);
    let tls_device = |id: &str, ca: &std::path::Path| {
        Device::new(
            &[],
            &format!(
                "[mqtt]\nenabled = true\nbroker = \"mqtts://127.0.0.1:{}\"\n\
                 device_id = {id:?}\nca_file = {:?}\n\
                 reconnect_min_ms = 100\nreconnect_max_ms = 1000\n",
                broker.port,
                ca.display().to_string()
            ),
        )
    };
    let d = tls_device("edge-tls", &pki.ca);
    let server = d.serve();
    wait_until(T, "a TLS connection to the broker", || {
        server.metric("kgbox_mqtt_connected") == 1
    });

    // A CA that did not sign the broker's certificate: no connection, but
    // the device keeps serving HTTP and keeps trying.
    let other = TestPki::new();
    let d2 = tls_device("edge-untrusted", &other.ca);
    let s2 = d2.serve();
    wait_until(T, "a failed TLS attempt", || {
        s2.log().contains("cannot connect to the MQTT broker")
    });
    assert_eq!(s2.metric("kgbox_mqtt_connected"), 0);
    assert_eq!(s2.metric("kgbox_mqtt_connects_total"), 0);
    assert_eq!(s2.get("/healthz").0, 200);
    assert_eq!(server.metric("kgbox_mqtt_connected"), 1);
}

#[test]
fn logs_in_with_username_and_password_from_the_environment() {
    let broker = Mosquitto::start_with_password("edge-auth", "s3cret-pw");
    let device = |id: &str| {
        Device::new(
            &[],
            &format!(
                "[mqtt]\nenabled = true\nbroker = {:?}\ndevice_id = {id:?}\n\
                 username = \"edge-auth\"\npassword_env = \"EDGE_MQTT_PW\"\n\
                 reconnect_min_ms = 100\nreconnect_max_ms = 1000\n",
                broker.url()
            ),
        )
    };
    let good = device("edge-auth");
    let server = good.serve_with_env(&[("EDGE_MQTT_PW", "s3cret-pw")]);
    wait_until(T, "a password login to the broker", || {
        server.metric("kgbox_mqtt_connected") == 1
    });

    let bad = device("edge-auth-2");
    let s2 = bad.serve_with_env(&[("EDGE_MQTT_PW", "wrong")]);
    wait_until(T, "a refused login", || {
        s2.log().contains("cannot connect to the MQTT broker")
    });
    assert_eq!(s2.metric("kgbox_mqtt_connected"), 0);
    assert!(!s2.log().contains("s3cret-pw") && !s2.log().contains("wrong\""));
    assert_eq!(server.metric("kgbox_mqtt_connected"), 1);
}
