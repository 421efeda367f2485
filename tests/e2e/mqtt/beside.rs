//! MQTT requests to a bundle beside the default one:
//! `kgbox/{id}/b/{bundle}/query` is answered from that bundle's graph, an
//! unknown bundle gets a 404, the default's topics answer as before, and the
//! retained status reports every bundle.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use kgbox_testkit::mosquitto::{Client, Mosquitto};
use kgbox_testkit::*;

use super::requests::online;

const T: Duration = Duration::from_secs(30);

#[test]
fn requests_reach_the_bundle_their_topic_names() {
    let broker = Mosquitto::start();
    let work = tempfile::tempdir().unwrap();
    let keys = Keys::new(work.path(), "operator", 6);
    let d = Device::new(
        &[&keys.public],
        &format!(
            "[mqtt]\nenabled = true\nbroker = {:?}\ndevice_id = \"edge-9\"\n\
             reconnect_min_ms = 100\nreconnect_max_ms = 1000\n",
            broker.url()
        ),
    );
    let tsv = work.path().join("plant.tsv");
    std::fs::write(&tsv, "Bo\tleads\tLine 7\n").unwrap();
    let bundle = work.path().join("plant.kgb");
    pack(&tsv, "plant", "1.0.0", &keys, &bundle, &[]);
    let o = d.kgbox(&["install", bundle.to_str().unwrap(), "--beside"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let server = d.serve();
    // The retained status reports each bundle: the default's at the top,
    // the others under `beside`.
    let status = online(&broker, "edge-9");
    assert_eq!(status["bundle"]["name"], "demo-movies", "{status}");
    assert_eq!(
        status["beside"]["plant"]["bundle"]["name"], "plant",
        "{status}"
    );
    assert_eq!(status["beside"]["plant"]["health"], "good", "{status}");
    let c = Client::connect(broker.port);

    let reply = c.request(
        "kgbox/edge-9/b/plant/query",
        br#"{"query": "\"Line 7\" -> leads_inv"}"#,
        T,
    );
    assert_eq!(
        reply.property("status"),
        Some("200"),
        "{}",
        String::from_utf8_lossy(&reply.payload)
    );
    assert_eq!(answer_names(&reply.json()), ["Bo"]);
    // Nothing crosses: each topic answers from its own bundle only, and an
    // unknown bundle is a 404 of its own.
    let line7 = r#"{"query": "\"Line 7\" -> leads_inv"}"#;
    let blade = r#"{"query": "\"Blade Runner\" -> directed_by"}"#;
    for (topic, query, status, code) in [
        ("kgbox/edge-9/query", line7, "404", ""),
        ("kgbox/edge-9/b/plant/query", blade, "404", ""),
        ("kgbox/edge-9/query", blade, "200", ""),
        (
            "kgbox/edge-9/b/warehouse/query",
            line7,
            "404",
            "bundle_not_found",
        ),
    ] {
        let reply = c.request(topic, query.as_bytes(), T);
        let body = reply.json();
        assert_eq!(reply.property("status"), Some(status), "{topic}: {body}");
        if !code.is_empty() {
            assert_eq!(body["error"]["code"], code, "{topic}: {body}");
        }
    }
    assert!(
        server.log().contains("mqtt b/plant/query"),
        "{}",
        server.log()
    );
}
