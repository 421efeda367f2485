//! Home Assistant MQTT discovery end to end (docs/mqtt.md, "Home
//! Assistant"): real `mosquitto`, real `kgbox serve` processes, the retained
//! discovery configs read back from the broker, and every template in them
//! rendered with Python's jinja2 (Home Assistant's template engine) against
//! the device's actual retained status.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use kgbox_testkit::mosquitto::{Client, Mosquitto, Msg};
use kgbox_testkit::*;

/// How long retained messages get to arrive after a subscription.
const SETTLE: Duration = Duration::from_secs(3);

use super::requests::{device, online};

/// What a fresh subscriber to `filter` gets within [`SETTLE`].
fn subscribe_and_collect(broker: &Mosquitto, filter: &str) -> Vec<Msg> {
    let c = Client::connect(broker.port);
    c.subscribe(filter);
    c.drain(SETTLE)
}

/// The discovery configs a fresh subscriber to `homeassistant/#` gets:
/// exactly the six, all retained, parsed; by entity (the topic's 4th level).
fn discovery_configs(broker: &Mosquitto, node: &str) -> BTreeMap<String, Value> {
    let msgs = subscribe_and_collect(broker, "homeassistant/#");
    let topics: Vec<&str> = msgs.iter().map(|m| m.topic.as_str()).collect();
    let want: BTreeSet<String> = [
        ("binary_sensor", "online"),
        ("sensor", "bundle"),
        ("sensor", "bundle_version"),
        ("sensor", "health"),
        ("sensor", "source"),
        ("sensor", "uptime"),
    ]
    .iter()
    .map(|(component, entity)| format!("homeassistant/{component}/{node}/{entity}/config"))
    .collect();
    assert_eq!(msgs.len(), 6, "{topics:?}");
    assert_eq!(
        topics
            .iter()
            .map(|t| t.to_string())
            .collect::<BTreeSet<_>>(),
        want
    );
    msgs.iter()
        .map(|m| {
            assert!(m.retain, "{} is not retained", m.topic);
            (m.topic.split('/').nth(3).unwrap().to_string(), m.json())
        })
        .collect()
}

/// Renders each template with jinja2 (`value_json`: `status`; `value`: its
/// text, as Home Assistant does). Undefined names are errors: a template
/// must test what may be missing.
fn render(templates: &BTreeMap<String, String>, status: &Value) -> BTreeMap<String, String> {
    const SCRIPT: &str = r#"
import json, sys
import jinja2
req = json.load(sys.stdin)
env = jinja2.Environment(undefined=jinja2.StrictUndefined)
out = {}
for name, template in req["templates"].items():
    out[name] = env.from_string(template).render(
        value_json=json.loads(req["payload"]), value=req["payload"])
json.dump(out, sys.stdout)
"#;
    let mut child = Command::new("python3")
        .args(["-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("python3 cannot be started ({e}): run scripts/setup.sh --dev"));
    let req = json!({"templates": templates, "payload": status.to_string()});
    child
        .stdin
        .take()
        .unwrap()
        .write_all(req.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "rendering with jinja2 failed (python3 with jinja2 is needed: scripts/setup.sh --dev): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every template of `configs`: `{entity}` (the state) and
/// `{entity}/availability/{i}`.
fn templates(configs: &BTreeMap<String, Value>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (entity, c) in configs {
        let t = c["value_template"].as_str();
        out.insert(entity.clone(), t.unwrap_or_else(|| panic!("{c}")).into());
        for (i, a) in c["availability"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            assert_eq!(a["topic"], c["state_topic"], "{c}");
            let t = a["value_template"]
                .as_str()
                .unwrap_or_else(|| panic!("{c}"));
            out.insert(format!("{entity}/availability/{i}"), t.into());
        }
    }
    out
}

#[test]
fn discovery_configs_describe_the_status_and_render_against_it() {
    let mut broker = Mosquitto::start();
    // A dot in the device id: not allowed in a discovery topic's node id.
    let id = "edge.ha";
    let node = "kgbox_edge_ha";
    let d = device(&broker, id, "");
    // Turned on through the environment.
    let server = d.serve_with_env(&[("KGBOX_MQTT__HOMEASSISTANT_DISCOVERY", "true")]);
    let status = online(&broker, id);
    assert_eq!(status["bundle"]["version"], "1.0.0", "{status}");

    let configs = discovery_configs(&broker, node);
    let mut unique_ids = BTreeSet::new();
    for (entity, c) in &configs {
        assert_eq!(c["state_topic"], format!("kgbox/{id}/status"), "{c}");
        assert_eq!(c["unique_id"], format!("{node}_{entity}"), "{c}");
        assert!(unique_ids.insert(c["unique_id"].to_string()), "{c}");
        assert!(c["name"].as_str().is_some_and(|n| !n.is_empty()), "{c}");
        assert_eq!(c["device"]["identifiers"], json!([node]), "{c}");
        assert_eq!(c["device"]["name"], format!("kgbox {id}"), "{c}");
        assert_eq!(c["device"]["sw_version"], status["kgbox_version"], "{c}");
        assert_eq!(c["origin"]["name"], "kgbox", "{c}");
        // Only the connectivity sensor stays available when the device is
        // offline (it then says "disconnected").
        assert_eq!(c["availability"].is_array(), entity != "online", "{c}");
    }
    assert_eq!(configs["online"]["device_class"], "connectivity");
    assert_eq!(configs["uptime"]["device_class"], "duration");
    assert_eq!(configs["uptime"]["unit_of_measurement"], "s");

    // The templates against the device's own retained status.
    let templates = templates(&configs);
    assert_eq!(templates.len(), 6 + 5, "{templates:?}");
    let rendered = render(&templates, &status);
    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    let mut want: BTreeMap<String, String> = [
        ("online", "ON".to_string()),
        ("bundle", text(&status["bundle"]["name"])),
        ("bundle_version", "1.0.0".to_string()),
        ("health", "good".to_string()),
        ("source", text(&status["source"])),
        ("uptime", text(&status["uptime_s"])),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(want["bundle"], "demo-movies");
    assert_eq!(want["source"], "demo");
    assert!(want["uptime"].parse::<u64>().is_ok(), "{status}");
    for k in templates.keys().filter(|k| k.contains("/availability/")) {
        want.insert(k.clone(), "online".into());
    }
    assert_eq!(rendered, want, "status: {status}");

    // The last will: no bundle, health, ...: the sensors render None (Home
    // Assistant's "unknown") and are unavailable; the device is off.
    let will = json!({"device_id": id, "online": false});
    let rendered = render(&templates, &will);
    for (k, v) in &rendered {
        let want = match k.as_str() {
            "online" => "OFF",
            k if k.contains("/availability/") => "offline",
            _ => "None",
        };
        assert_eq!(v, want, "{k}: {rendered:?}");
    }

    // A broker that lost everything gets them again on the reconnect.
    broker.restart();
    online(&broker, id);
    let again = discovery_configs(&broker, node);
    assert_eq!(again, configs);
    assert_eq!(server.get("/healthz").0, 200);
}

#[test]
fn discovery_off_publishes_nothing_and_the_prefix_is_configurable() {
    let broker = Mosquitto::start();
    let off = device(&broker, "edge-off", "");
    let site = device(
        &broker,
        "edge-site",
        "homeassistant_discovery = true\nhomeassistant_prefix = \"site/ha\"",
    );
    let (_s1, _s2) = (off.serve(), site.serve());
    online(&broker, "edge-off");
    online(&broker, "edge-site");

    let msgs = subscribe_and_collect(&broker, "#");
    let outside: BTreeSet<&str> = msgs
        .iter()
        .map(|m| m.topic.as_str())
        .filter(|t| !t.starts_with("kgbox/"))
        .collect();
    let want: BTreeSet<String> = [
        "binary_sensor/kgbox_edge-site/online",
        "sensor/kgbox_edge-site/bundle",
        "sensor/kgbox_edge-site/bundle_version",
        "sensor/kgbox_edge-site/health",
        "sensor/kgbox_edge-site/source",
        "sensor/kgbox_edge-site/uptime",
    ]
    .iter()
    .map(|t| format!("site/ha/{t}/config"))
    .collect();
    assert_eq!(
        outside,
        want.iter().map(String::as_str).collect::<BTreeSet<_>>()
    );
    for m in msgs.iter().filter(|m| m.topic.starts_with("site/")) {
        assert_eq!(m.json()["state_topic"], "kgbox/edge-site/status");
    }
}

/// `kgbox config check FILE` with no `KGBOX_*` variables but `env`.
fn config_check(text: &str, env: &[(&str, &str)]) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kgbox.toml");
    std::fs::write(&path, text).unwrap();
    let mut cmd = Command::new(bin("kgbox"));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy()
            .to_ascii_uppercase()
            .starts_with("KGBOX_")
        {
            cmd.env_remove(&k);
        }
    }
    cmd.env_remove("RUST_LOG").envs(env.iter().copied()).args([
        "config",
        "check",
        path.to_str().unwrap(),
    ]);
    run(&mut cmd)
}

#[test]
fn discovery_settings_are_checked_and_taken_from_the_environment() {
    let o = config_check(
        "",
        &[
            ("KGBOX_MQTT__HOMEASSISTANT_DISCOVERY", "true"),
            ("KGBOX_MQTT__HOMEASSISTANT_PREFIX", "site/ha"),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(
            "\nhomeassistant_discovery = true  # from KGBOX_MQTT__HOMEASSISTANT_DISCOVERY\n"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "\nhomeassistant_prefix = \"site/ha\"  # from KGBOX_MQTT__HOMEASSISTANT_PREFIX\n"
        ),
        "{out}"
    );
    for bad in ["", "ha/", "/ha", "a//b", "ha/+", "ha/#"] {
        let o = config_check(&format!("[mqtt]\nhomeassistant_prefix = {bad:?}\n"), &[]);
        assert!(!o.status.success(), "{bad:?} passed: {}", stdout(&o));
        assert!(
            stderr(&o).contains("mqtt.homeassistant_prefix"),
            "{bad:?}: {}",
            stderr(&o)
        );
    }
    let o = config_check("[mqtt]\nhomeassistant_discovery = \"yes\"\n", &[]);
    assert!(!o.status.success(), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("mqtt.homeassistant_discovery"),
        "{}",
        stderr(&o)
    );
}
