//! The Python client package (`clients/python`, module `kgbox_client`)
//! against real devices: its pytest suite (`clients/python/tests`) runs
//! against a `kgbox serve` of the built-in demo bundle answering over HTTP
//! and over MQTT 5 through a real mosquitto (in a shared-subscription group),
//! and a second device behind a TLS-only broker. Every test must run and
//! pass: the suite is told to fail, not skip, what lacks its settings, and
//! the summary must count exactly the expected tests, so it cannot pass
//! vacuously.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::Duration;

use kgbox_testkit::clients::{require_python_modules, run_python};
use kgbox_testkit::mosquitto::{wait_status, wait_until, Mosquitto, TestPki};
use kgbox_testkit::*;

/// The tests in `clients/python/tests`; update it when adding one.
const EXPECTED_PASSED: usize = 35;
/// Generous: CI machines are small and busy.
const T: Duration = Duration::from_secs(30);
const SUITE_LIMIT: Duration = Duration::from_secs(600);
/// From the repository root; no cache written into the tree.
const PYTEST_ARGS: [&str; 6] = [
    "-m",
    "pytest",
    "-q",
    "-p",
    "no:cacheprovider",
    "clients/python/tests",
];

/// `kgbox serve` of the demo with its `[mqtt]` settings given as
/// `KGBOX_MQTT__*` variables (the configuration's environment layer).
fn serve_over_mqtt(device: &Device, broker: &str, id: &str, extra: &[(&str, &str)]) -> Server {
    let mut env = vec![
        ("KGBOX_MQTT__ENABLED", "true"),
        ("KGBOX_MQTT__BROKER", broker),
        ("KGBOX_MQTT__DEVICE_ID", id),
        ("KGBOX_MQTT__RECONNECT_MIN_MS", "100"),
        ("KGBOX_MQTT__RECONNECT_MAX_MS", "1000"),
    ];
    env.extend_from_slice(extra);
    device.serve_with_env(&env)
}

/// Runs `python3 -m pytest` on the suite with `env`, killed after
/// `SUITE_LIMIT`: (exit code, stdout and stderr).
fn run_suite(env: &[(String, String)]) -> (Option<i32>, String) {
    let root = repo_root();
    let mut cmd = Command::new("python3");
    cmd.args(PYTEST_ARGS)
        .current_dir(&root)
        .env("PYTHONPATH", root.join("clients/python/src"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        // The suite needs no plugin; installed ones (hypothesis, schemathesis) stay out.
        .env("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let run = run_python(cmd, "-m pytest", SUITE_LIMIT);
    (run.code, run.output)
}

#[test]
fn python_client_suite_passes_against_live_devices() {
    // Never skipped: a missing python3 or package fails, naming scripts/setup.sh --dev.
    require_python_modules(&["pytest", "paho.mqtt.client"]);

    let broker = Mosquitto::start();
    let device = Device::new(&[], "");
    let server = serve_over_mqtt(
        &device,
        &broker.url(),
        "edge-py",
        &[("KGBOX_MQTT__GROUP", "py-clients")],
    );
    let status = wait_status(broker.port, "edge-py", T, |v| v["online"] == true);
    assert_eq!(status["bundle"]["name"], "demo-movies", "{status}");

    let pki = TestPki::new();
    let tls_broker = Mosquitto::start_tls(&pki);
    let tls_device = Device::new(&[], "");
    let ca = pki.ca.display().to_string();
    let tls_server = serve_over_mqtt(
        &tls_device,
        &format!("mqtts://127.0.0.1:{}", tls_broker.port),
        "edge-py-tls",
        &[("KGBOX_MQTT__CA_FILE", &ca)],
    );
    wait_until(T, "the TLS device to connect", || {
        tls_server.metric("kgbox_mqtt_connected") == 1
    });

    let var = |name: &str, value: String| (format!("KGBOXCLIENT_TEST_{name}"), value);
    let env = [
        var("URL", format!("http://127.0.0.1:{}", server.port)),
        var("MQTT_HOST", "127.0.0.1".into()),
        var("MQTT_PORT", broker.port.to_string()),
        var("DEVICE", "edge-py".into()),
        var("GROUP", "1".into()),
        var("MQTTS_PORT", tls_broker.port.to_string()),
        var("MQTTS_CA", ca.clone()),
        var("MQTTS_DEVICE", "edge-py-tls".into()),
        var("REQUIRE", "1".into()),
    ];
    let (code, output) = run_suite(&env);
    assert_eq!(
        code,
        Some(0),
        "pytest clients/python/tests failed (None: killed after {SUITE_LIMIT:?}):\n{output}\n\
         device log:\n{}\nTLS device log:\n{}\nbroker log:\n{}",
        server.log(),
        tls_server.log(),
        broker.log()
    );
    // `N passed in 1.23s`: nothing skipped, failed or deselected, and all of them ran.
    let summary = output
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    assert!(
        summary.starts_with(&format!("{EXPECTED_PASSED} passed in ")),
        "expected exactly {EXPECTED_PASSED} passed tests and nothing else; summary: {summary:?}\n{output}"
    );

    // The MQTT tests went through the device's MQTT front end, and some
    // of them got error replies: all were answered and sent.
    let answered = server.metric("kgbox_mqtt_requests_total{outcome=\"answered\"}");
    assert!(answered >= 60, "{answered} MQTT requests answered");
    assert_eq!(
        server.metric("kgbox_mqtt_replies_total{outcome=\"failed\"}"),
        0
    );
    assert!(tls_server.metric("kgbox_mqtt_requests_total{outcome=\"answered\"}") >= 2);
}

/// The package builds as a wheel (setuptools, from a copy of
/// `clients/python`) whose only requirement is paho-mqtt behind the extra
/// `mqtt`; installed alone, HTTP works and `KgboxMqtt` names the extra.
#[test]
fn the_client_builds_as_a_wheel_with_mqtt_an_extra() {
    require_python_modules(&["setuptools", "wheel"]);
    let work = tempfile::tempdir().unwrap();
    let copy = work.path().join("kgbox-client");
    let o = run(Command::new("cp")
        .arg("-r")
        .arg(repo_root().join("clients/python"))
        .arg(&copy));
    assert!(o.status.success(), "{}", stderr(&o));
    let dist = work.path().join("dist");
    let o = run(Command::new("python3")
        .args([
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
        ])
        .arg(&dist)
        .arg(&copy));
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let wheel = std::fs::read_dir(&dist)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .expect("a wheel");
    let site = work.path().join("site");
    let o = run(Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--target",
        ])
        .arg(&site)
        .arg(&wheel));
    assert!(o.status.success(), "{}", stderr(&o));
    // Without site-packages (-S): the wheel alone, no paho-mqtt.
    let script = r#"
import sys, importlib.metadata as md
sys.path.insert(0, sys.argv[1])
print("requires:", md.distribution("kgbox-client").requires)
import kgbox_client
print("http:", kgbox_client.KgboxHttp.__name__)
try:
    kgbox_client.KgboxMqtt
except ModuleNotFoundError as e:
    print("mqtt:", e)
"#;
    let o = run(Command::new("python3")
        .args(["-S", "-c", script])
        .arg(&site)
        .env_remove("PYTHONPATH"));
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(
        out.contains(
            r#"requires: ['paho-mqtt>=2; extra == "mqtt"', 'pytest>=7; extra == "test"']"#
        ),
        "{out}"
    );
    assert!(out.contains("http: KgboxHttp"), "{out}");
    assert!(
        out.contains("mqtt: KgboxMqtt needs paho-mqtt 2: pip install 'kgbox-client[mqtt]'"),
        "{out}"
    );
}
