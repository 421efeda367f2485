//! MQTT abuse: a flood of good, malformed and wrongly typed requests with
//! replayed correlation ids, retained requests waiting on the request
//! topic, and a broker restart in the middle of a flood. The device answers
//! what it can, refuses the rest with an error reply, answers each request
//! once, and never stops. (Single bad payloads, duplicates and a broker
//! restart between requests: `requests.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kgbox_testkit::mosquitto::{wait_status, Client, Mosquitto};
use kgbox_testkit::*;

const T: Duration = Duration::from_secs(30);
const QUERY: &str = r#"{"query": "\"Blade Runner\" -> directed_by"}"#;

fn device(broker: &Mosquitto, id: &str) -> Device {
    Device::new(
        &[],
        &format!(
            "[mqtt]\nenabled = true\nbroker = {:?}\ndevice_id = {id:?}\n\
             reconnect_min_ms = 100\nreconnect_max_ms = 1000\n",
            broker.url()
        ),
    )
}

fn ridley(reply: &kgbox_testkit::mosquitto::Msg) -> bool {
    reply.property("status") == Some("200")
        && answer_names(&reply.json()).contains(&"Ridley Scott".to_string())
}

/// What request `i` of the flood is: (payload, content type, expected status).
fn flood_request(i: usize) -> (&'static [u8], Option<&'static str>, &'static str) {
    match i % 4 {
        0 => (QUERY.as_bytes(), None, "200"),
        1 => (b"{\"query\": ", None, "400"),
        // A content type the device does not look at: the payload decides.
        2 => (QUERY.as_bytes(), Some("text/plain"), "200"),
        _ => (&[0xff, 0x00, 0xfe], Some("application/octet-stream"), "400"),
    }
}

#[test]
fn a_flood_is_answered_once_per_request_and_replays_are_ignored() {
    const N: usize = 600;
    let broker = Mosquitto::start();
    let d = device(&broker, "edge-flood");
    let server = d.serve();
    wait_status(broker.port, "edge-flood", T, |v| v["online"] == true);
    let c = Client::connect(broker.port);
    c.subscribe("test/flood/#");

    let started = Instant::now();
    for i in 0..N {
        let (payload, content_type, _) = flood_request(i);
        let reply_to = format!("test/flood/{i}");
        let correlation = i.to_string();
        c.publish_with(
            "kgbox/edge-flood/query",
            payload,
            Some(&reply_to),
            Some(correlation.as_bytes()),
            false,
            content_type,
        );
    }
    // Replays of the first 100, same response topic and correlation data.
    for i in 0..100 {
        let (payload, content_type, _) = flood_request(i);
        let reply_to = format!("test/flood/{i}");
        c.publish_with(
            "kgbox/edge-flood/query",
            payload,
            Some(&reply_to),
            Some(i.to_string().as_bytes()),
            false,
            content_type,
        );
    }
    let mut replies: BTreeMap<usize, Vec<kgbox_testkit::mosquitto::Msg>> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(180);
    while replies.len() < N && Instant::now() < deadline {
        if let Some(m) = c.recv(Duration::from_secs(1)) {
            let i: usize = m.topic.rsplit('/').next().unwrap().parse().unwrap();
            replies.entry(i).or_default().push(m);
        }
    }
    let took = started.elapsed();
    for m in c.drain(Duration::from_secs(3)) {
        let i: usize = m.topic.rsplit('/').next().unwrap().parse().unwrap();
        replies.entry(i).or_default().push(m);
    }
    let lost = N - replies.len();
    let twice = replies.values().filter(|r| r.len() > 1).count();
    eprintln!(
        "MQTT flood: {N} requests and 100 replays in {took:?}; {} answered, {lost} lost, {twice} answered twice",
        replies.len()
    );
    assert_eq!(lost, 0, "requests without a reply; log: {}", server.log());
    assert_eq!(twice, 0, "replayed requests were answered again");
    for (i, r) in &replies {
        let (_, _, status) = flood_request(*i);
        let m = &r[0];
        assert_eq!(
            m.property("status"),
            Some(status),
            "request {i}: {:?}",
            m.json()
        );
        assert_eq!(m.correlation.as_deref(), Some(i.to_string().as_bytes()));
        if status == "200" {
            assert!(ridley(m), "request {i}: {:?}", m.json());
        } else {
            assert!(
                m.json()["error"]["code"].is_string(),
                "request {i}: {:?}",
                m.json()
            );
        }
    }
    // Still answering, over MQTT and HTTP.
    assert!(ridley(&c.request(
        "kgbox/edge-flood/query",
        QUERY.as_bytes(),
        T
    )));
    assert_eq!(server.get("/readyz").0, 200);
}

#[test]
fn retained_requests_and_a_broker_restart_mid_flood_do_not_stop_the_device() {
    let mut broker = Mosquitto::start();
    // Retained requests wait on the request topic before the device is up
    // (the broker keeps the last one).
    let early = Client::connect(broker.port);
    for i in 0..100 {
        early.publish_with(
            "kgbox/edge-ret/query",
            QUERY.as_bytes(),
            Some(&format!("test/ret/{i}")),
            Some(b"retained"),
            true,
            None,
        );
    }
    early.subscribe("test/ret/#");
    let d = device(&broker, "edge-ret");
    let server = d.serve();
    wait_status(broker.port, "edge-ret", T, |v| v["online"] == true);
    let stale = early.drain(Duration::from_secs(3));
    assert!(
        stale.len() <= 1,
        "answered {} retained requests",
        stale.len()
    );
    assert!(stale.iter().all(ridley));

    // A flood, with the broker restarted in its middle.
    let c = Client::connect(broker.port);
    for i in 0..200 {
        c.publish(
            "kgbox/edge-ret/query",
            QUERY.as_bytes(),
            Some("test/mid/replies"),
            Some(i.to_string().as_bytes()),
        );
    }
    broker.restart();
    wait_status(broker.port, "edge-ret", T, |v| v["online"] == true);
    let after = Client::connect(broker.port);
    assert!(ridley(&after.request(
        "kgbox/edge-ret/query",
        QUERY.as_bytes(),
        T
    )));
    assert_eq!(server.get("/readyz").0, 200);
    // The retained request is gone with the broker's memory; clear it anyway.
    after.publish_with("kgbox/edge-ret/query", b"", None, None, true, None);
}
