//! Bundle push through a TLS broker and a broker with passwords.

use std::path::{Path, PathBuf};
use std::process::Output;

use kgbox_testkit::mosquitto::{wait_until, Mosquitto, TestPki};
use kgbox_testkit::*;

use super::T;

/// `kgbox_mqtt_connected` from the device's `/metrics`.
fn mqtt_connected(server: &Server) -> bool {
    let (_, text) = server.get("/metrics");
    text.lines().any(|l| l.trim() == "kgbox_mqtt_connected 1")
}

/// Keys, `films` 1.0.0 and 1.1.0, and a device with 1.0.0 and `mqtt_extra`
/// in its `[mqtt]` table, serving (with `env` set) and connected.
fn secured_device(
    mqtt_extra: &str,
    env: &[(&str, &str)],
) -> (tempfile::TempDir, Device, Server, PathBuf) {
    let work = tempfile::tempdir().unwrap();
    let keys = Keys::new(work.path(), "op", 8);
    let tsv = small_tsv(work.path());
    let (v1, v2) = (work.path().join("v1.kgb"), work.path().join("v2.kgb"));
    pack(&tsv, "films", "1.0.0", &keys, &v1, &[]);
    pack(&tsv, "films", "1.1.0", &keys, &v2, &[]);
    let device = Device::new(
        &[&keys.public],
        &format!(
            "[mqtt]\nenabled = true\nreconnect_min_ms = 100\nreconnect_max_ms = 1000\n{mqtt_extra}\n"
        ),
    );
    device.install_ok(&v1);
    let server = device.serve_with_env(env);
    wait_until(T, "the device's MQTT connection", || {
        mqtt_connected(&server)
    });
    (work, device, server, v2)
}

/// `kgbox-pack push BUNDLE ARGS...` with a 60 s timeout.
fn push_cmd(bundle: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    pack_push(bundle, &[&["--timeout", "60s"], args].concat(), env)
}

#[test]
fn push_through_a_tls_broker() {
    let pki = TestPki::new();
    let broker = Mosquitto::start_tls(&pki);
    let url = format!("mqtts://127.0.0.1:{}", broker.port);
    let (_work, _device, server, v2) = secured_device(
        &format!(
            "broker = {url:?}\ndevice_id = \"tls1\"\nca_file = {:?}",
            pki.ca.display().to_string()
        ),
        &[],
    );
    let ca = pki.ca.to_str().unwrap();
    let o = push_cmd(
        &v2,
        &["--broker", &url, "--device", "tls1", "--ca-file", ca],
        &[],
    );
    assert!(o.status.success(), "{}\n{}", stderr(&o), server.log());
    assert!(
        stdout(&o).contains("tls1: installed films 1.1.0"),
        "{}",
        stdout(&o)
    );
    assert_eq!(server.get_json("/v1/status")["bundle"]["version"], "1.1.0");

    // A CA that did not sign the broker's certificate.
    let other = TestPki::new();
    let o = push_cmd(
        &v2,
        &[
            "--broker",
            &url,
            "--device",
            "tls1",
            "--ca-file",
            other.ca.to_str().unwrap(),
        ],
        &[],
    );
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains(&format!("cannot connect to the broker at {url}")),
        "{err}"
    );
    let o = push_cmd(&v2, &["--broker", &url, "--device", "tls1"], &[]);
    assert!(stderr(&o).contains("--ca-file"), "{}", stderr(&o));
}

#[test]
fn push_with_a_broker_password() {
    let broker = Mosquitto::start_with_password("operator", "s3cret-pw");
    let url = broker.url();
    let (_work, _device, server, v2) = secured_device(
        &format!(
            "broker = {url:?}\ndevice_id = \"pw1\"\nusername = \"operator\"\npassword_env = \"DEV_PW\""
        ),
        &[("DEV_PW", "s3cret-pw")],
    );
    let args = [
        "--broker",
        &url,
        "--device",
        "pw1",
        "--username",
        "operator",
        "--password-env",
        "PUSH_PW",
    ];
    let o = push_cmd(&v2, &args, &[("PUSH_PW", "wrong")]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains(&format!("cannot connect to the broker at {url}")),
        "{err}"
    );
    let o = push_cmd(&v2, &args, &[("PUSH_PW", "s3cret-pw")]);
    assert!(o.status.success(), "{}\n{}", stderr(&o), server.log());
    assert!(
        stdout(&o).contains("pw1: installed films 1.1.0"),
        "{}",
        stdout(&o)
    );
}
