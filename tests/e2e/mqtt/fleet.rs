//! `kgbox-pack fleet status` against a real mosquitto: three devices
//! report, one of them dies (its last will says offline); the table and the
//! JSON say which device runs what, and who is online.
#![allow(clippy::unwrap_used)]

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use kgbox_testkit::mosquitto::{wait_status, Mosquitto};
use kgbox_testkit::*;

use super::requests::{device, online};

const T: Duration = Duration::from_secs(30);

fn fleet_status(broker: &Mosquitto, extra: &[&str]) -> std::process::Output {
    run(Command::new(bin("kgbox-pack"))
        .args([
            "fleet",
            "status",
            "--broker",
            &broker.url(),
            "--timeout",
            "20s",
        ])
        .args(extra))
}

#[test]
fn fleet_status_shows_each_device_its_bundle_and_who_is_online() {
    let broker = Mosquitto::start();
    let devices: Vec<Device> = ["edge-a", "edge-b", "edge-c"]
        .iter()
        .map(|id| device(&broker, id, "keep_alive_s = 5"))
        .collect();
    let mut servers: Vec<Server> = devices.iter().map(Device::serve).collect();
    for id in ["edge-a", "edge-b", "edge-c"] {
        online(&broker, id);
    }
    // edge-c dies without a goodbye: the broker publishes its last will.
    servers.pop().unwrap().kill_now();
    wait_status(broker.port, "edge-c", T, |v| v["online"] == false);

    let o = fleet_status(&broker, &["--json", "--expect", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = v["devices"].as_array().unwrap();
    let ids: Vec<&str> = rows
        .iter()
        .map(|r| r["device_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["edge-a", "edge-b", "edge-c"], "{v}");
    for r in &rows[..2] {
        assert_eq!(r["online"], true, "{r}");
        assert_eq!(r["bundle"], "demo-movies", "{r}");
        assert_eq!(r["version"], "1.0.0", "{r}");
        assert_eq!(r["health"], "good", "{r}");
        assert!(r["seconds_since_report"].as_u64().unwrap() < 60, "{r}");
    }
    assert_eq!(rows[2]["online"], false, "{}", rows[2]);
    assert!(rows[2]["bundle"].is_null(), "{}", rows[2]);

    let o = fleet_status(&broker, &[]);
    let table = stdout(&o);
    assert!(
        table.contains("3 devices, 2 online; 2 on demo-movies 1.0.0"),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("edge-c") && l.contains("offline")),
        "{table}"
    );

    // A broker nobody listens on: a clear error, not a hang.
    let o = run(Command::new(bin("kgbox-pack")).args([
        "fleet",
        "status",
        "--broker",
        &format!("mqtt://127.0.0.1:{}", free_port()),
        "--timeout",
        "5s",
    ]));
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("cannot reach the broker"),
        "{}",
        stderr(&o)
    );
}
