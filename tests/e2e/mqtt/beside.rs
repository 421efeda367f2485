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
    // The default bundle (the demo) does not know it; the plant's topic does not know the demo's.
    let reply = c.request(
        "kgbox/edge-9/query",
        br#"{"query": "\"Line 7\" -> leads_inv"}"#,
        T,
    );
    assert_eq!(reply.property("status"), Some("404"));
    let reply = c.request(
        "kgbox/edge-9/b/plant/query",
        br#"{"query": "\"Blade Runner\" -> directed_by"}"#,
        T,
    );
    assert_eq!(reply.property("status"), Some("404"));
    let reply = c.request(
        "kgbox/edge-9/query",
        br#"{"query": "\"Blade Runner\" -> directed_by"}"#,
        T,
    );
    assert_eq!(reply.property("status"), Some("200"));
    // No such bundle.
    let reply = c.request(
        "kgbox/edge-9/b/warehouse/query",
        br#"{"query": "\"Line 7\" -> leads_inv"}"#,
        T,
    );
    assert_eq!(reply.property("status"), Some("404"));
    assert_eq!(
        reply.json()["error"]["code"],
        "bundle_not_found",
        "{}",
        reply.json()
    );
    assert!(
        server.log().contains("mqtt b/plant/query"),
        "{}",
        server.log()
    );
}
