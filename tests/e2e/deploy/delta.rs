//! Delta updates end to end (docs/bundle-format.md section 13,
//! docs/operations.md "Ship a delta update"): a delta made by the real
//! `kgbox-pack delta` installs with `kgbox install`, over `PUT /v1/bundles`
//! and by an MQTT push, and the device then serves the new bundle (its
//! answers, its digest in `/v1/status`); a delta for another base, a
//! flipped byte, or one whose result is not the new bundle is refused
//! with a clear error while the old bundle keeps answering, and nothing
//! is left behind; the pusher sends a delta only to a device on its base.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use kgbox_testkit::delta::*;
use kgbox_testkit::mosquitto::{wait_status, Mosquitto};
use kgbox_testkit::*;
use serde_json::Value;

const TOKEN: &str = "delta-test-admin-token-0123456789";
const T: Duration = Duration::from_secs(60);

/// Answers only the old bundle has, and only the new one.
const OLD_ONLY: (&str, &str) = ("\"Blade Runner\" -> starred_actors", "Rutger Hauer");
const NEW_ONLY: (&str, &str) = ("\"Dune\" -> directed_by", "Denis Villeneuve");

fn serves_old(server: &Server, f: &Deltas) {
    let s = server.get_json("/v1/status");
    assert_eq!(s["digest"], bundle_digest(&f.old), "{s}");
    assert_eq!(s["bundle"]["version"], "1.0.0", "{s}");
    assert!(server
        .query_names(OLD_ONLY.0)
        .contains(&OLD_ONLY.1.to_string()));
}

fn serves_new(server: &Server, f: &Deltas) {
    let s = server.get_json("/v1/status");
    assert_eq!(s["digest"], bundle_digest(&f.new), "{s}");
    assert_eq!(s["bundle"]["version"], "1.1.0", "{s}");
    assert_eq!(server.query_names(NEW_ONLY.0), vec![NEW_ONLY.1.to_string()]);
    assert!(!server
        .query_names(OLD_ONLY.0)
        .contains(&OLD_ONLY.1.to_string()));
    // The index was rebuilt from a prediction: names and aliases resolve.
    let (code, v) = server.post_json(
        "/v1/link",
        &serde_json::json!({"text": "who directed [Dune Part One]"}),
    );
    assert_eq!(code, 200, "{v}");
    assert!(v.to_string().contains("\"Dune\""), "{v}");
}

/// What the data dir holds: each of `incoming`, `slots/a`, `slots/b`
/// with its sorted file names, or `None` when the folder is missing.
type Listing = Vec<(&'static str, Option<Vec<String>>)>;

fn listing(device: &Device) -> Listing {
    ["incoming", "slots/a", "slots/b"]
        .into_iter()
        .map(|dir| {
            let names = std::fs::read_dir(device.data_dir.join(dir)).ok().map(|d| {
                let mut names: Vec<String> = d
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect();
                names.sort();
                names
            });
            (dir, names)
        })
        .collect()
}

/// Nothing of a refused (or installed) delta stays: no upload, no
/// half-written or temporary image; the active slot holds its image.
/// With `before` (taken before a refused delta), the slots hold exactly
/// what they held, images included.
fn nothing_left(device: &Device, before: Option<&Listing>) {
    let now = listing(device);
    let (slot, _, _) = device.active().expect("a bundle is active");
    let image = device.status()["state"][&slot]["image"]
        .as_str()
        .expect("the active record names its image")
        .to_string();
    let active_dir = format!("slots/{slot}");
    for (dir, names) in &now {
        let names = names.as_deref().unwrap_or_default();
        if *dir == "incoming" {
            assert!(names.is_empty(), "{dir}: {names:?}");
        } else {
            let stray: Vec<_> = names.iter().filter(|n| !n.ends_with(".kgbi")).collect();
            assert!(stray.is_empty(), "{dir}: {stray:?}");
        }
        if *dir == active_dir {
            assert!(names.contains(&image), "{dir} lacks {image}: {names:?}");
        }
    }
    assert!(
        now.iter().any(|(dir, n)| *dir == active_dir && n.is_some()),
        "{active_dir} is missing: {now:?}"
    );
    if let Some(before) = before {
        // `incoming` may have been made for the upload: missing = empty.
        let slots = |l: &Listing| -> Listing {
            l.iter()
                .filter(|(d, _)| *d != "incoming")
                .cloned()
                .collect()
        };
        assert_eq!(slots(&now), slots(before));
    }
}

/// The three refused deltas: (file, what the error must say).
fn bad_deltas(f: &Deltas) -> Vec<(std::path::PathBuf, &'static str)> {
    let (table, payloads) = delta_layout(&f.delta);
    let wrong_base = f.path("wrong-base.kgbd");
    make_delta(&f.other, &f.new, &f.keys, &wrong_base);
    vec![
        (wrong_base, "this delta update is for movies 1.0.1"),
        // A byte of the signed part (in the new bundle's signature), and
        // one of a payload.
        (
            flipped(&f.delta, table - 10, &f.path("flip-signed.kgbd")),
            "bad delta signature",
        ),
        (
            flipped(&f.delta, payloads + 20, &f.path("flip-payload.kgbd")),
            "delta payload",
        ),
        (
            with_wrong_result(
                &f.delta,
                &f.keys,
                "kg.entities.names",
                &f.path("wrong-result.kgbd"),
            ),
            "does not rebuild the new bundle: section `kg.entities.names`",
        ),
    ]
}

#[test]
fn kgbox_install_and_verify_take_a_delta() {
    let f = Deltas::new();
    let device = Device::new(&[&f.keys.public], "");
    // Nothing installed: there is no base.
    let o = device.install(&f.delta);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("no bundle is installed here"),
        "{}",
        stderr(&o)
    );
    device.install_ok(&f.old);
    let o = device.kgbox(&["verify", f.delta.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("OK: movies 1.1.0"), "{}", stdout(&o));
    assert!(stdout(&o).contains("a delta update"), "{}", stdout(&o));
    for (bad, why) in bad_deltas(&f) {
        let o = device.install(&bad);
        assert!(!o.status.success(), "{} was installed", bad.display());
        assert!(
            stderr(&o).contains(why),
            "{}: {}",
            bad.display(),
            stderr(&o)
        );
        assert_eq!(device.active().unwrap().2, "1.0.0");
    }
    let o = device.install(&f.delta);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("from a delta update"), "{}", stdout(&o));
    let s = device.status();
    let slot = s["state"]["active"].as_str().unwrap().to_string();
    assert_eq!(s["state"][&slot]["bundle_digest"], bundle_digest(&f.new));
    let o = device.kgbox(&["status", "--verify"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let server = device.serve();
    serves_new(&server, &f);
}

/// A delta that fails to apply (or to verify) keeps the rollback image:
/// the slots, their records and `incoming` are as they were, and
/// `kgbox rollback` still returns to the bundle before.
#[test]
fn a_refused_delta_keeps_the_rollback_image() {
    let f = Deltas::new();
    let device = Device::new(&[&f.keys.public], "");
    device.install_ok(&f.other);
    let o = device.kgbox(&["install", "--allow-downgrade", f.old.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (active, _, version) = device.active().unwrap();
    assert_eq!(version, "1.0.0");
    let state = device.status()["state"].clone();
    let inactive = if active == "a" { "b" } else { "a" };
    assert_eq!(state["previous"], inactive, "{state}");
    let rollback_image = device
        .data_dir
        .join("slots")
        .join(inactive)
        .join(state[inactive]["image"].as_str().unwrap());
    assert!(rollback_image.is_file(), "{}", rollback_image.display());
    for (bad, why) in bad_deltas(&f) {
        let before = listing(&device);
        let o = device.install(&bad);
        assert!(!o.status.success(), "{} was installed", bad.display());
        assert!(
            stderr(&o).contains(why),
            "{}: {}",
            bad.display(),
            stderr(&o)
        );
        assert_eq!(device.status()["state"], state, "{}", bad.display());
        assert_eq!(listing(&device), before, "{}", bad.display());
        assert!(rollback_image.is_file(), "{}", bad.display());
        nothing_left(&device, Some(&before));
    }
    let o = device.kgbox(&["rollback"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (slot, name, version) = device.active().unwrap();
    assert_eq!(
        (slot.as_str(), name.as_str(), version.as_str()),
        (inactive, "movies", "1.0.1")
    );
    let server = device.serve();
    let s = server.get_json("/v1/status");
    assert_eq!(s["digest"], bundle_digest(&f.other), "{s}");
    assert!(server
        .query_names(OLD_ONLY.0)
        .contains(&OLD_ONLY.1.to_string()));
}

#[test]
fn put_v1_bundles_takes_a_delta_and_refuses_bad_ones() {
    let f = Deltas::new();
    let device = Device::new(&[&f.keys.public], "");
    device.install_ok(&f.old);
    let server = device.serve_with_env(&[("KGBOX_ADMIN_TOKEN", TOKEN)]);
    serves_old(&server, &f);
    for (bad, why) in bad_deltas(&f) {
        let before = listing(&device);
        let (code, v) = server.put_bytes("/v1/bundles", Some(TOKEN), &read(&bad));
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(why), "{}: {v}", bad.display());
        if why.starts_with("this delta update is for") {
            assert_eq!(
                (code, &v["error"]["code"]),
                (409, &Value::from("delta_base_mismatch"))
            );
            // Both bundles are named, with their digests.
            assert!(
                message.contains("the active bundle is movies 1.0.0 (digest "),
                "{message}"
            );
            assert!(message.contains(&bundle_digest(&f.old)[..16]), "{message}");
            assert!(
                message.contains(&bundle_digest(&f.other)[..16]),
                "{message}"
            );
        } else {
            assert_eq!(
                (code, &v["error"]["code"]),
                (422, &Value::from("bundle_rejected"))
            );
        }
        serves_old(&server, &f);
        nothing_left(&device, Some(&before));
    }
    let (code, v) = server.put_bytes("/v1/bundles", Some(TOKEN), &read(&f.delta));
    assert_eq!(code, 200, "{v}\n{}", server.log());
    assert_eq!(v["outcome"], "installed", "{v}");
    serves_new(&server, &f);
    assert_eq!(server.get_json("/v1/status")["health"], "good");
}

fn push(bundle: &Path, args: &[&str]) -> Output {
    pack_push(
        bundle,
        &[&["--timeout", "120s"], args].concat(),
        &[("PUSH_TOKEN", TOKEN)],
    )
}

#[test]
fn the_pusher_sends_a_delta_only_to_a_device_on_its_base() {
    let f = Deltas::new();
    let key = f.keys.secret.to_str().unwrap().to_string();
    let old = f.old.to_str().unwrap().to_string();
    for (base, expect) in [
        (&f.old, "the delta's base: sending the delta update"),
        (&f.other, "not the delta's base movies 1.0.0"),
    ] {
        let device = Device::new(&[&f.keys.public], "");
        device.install_ok(base);
        let server = device.serve_with_env(&[("KGBOX_ADMIN_TOKEN", TOKEN)]);
        let url = format!("http://127.0.0.1:{}", server.port);
        // The delta is made in a temporary file, gone when the push is done.
        let scratch = tempfile::tempdir().unwrap();
        let o = pack_push(
            &f.new,
            &[
                "--timeout",
                "120s",
                "--http",
                &url,
                "--token-env",
                "PUSH_TOKEN",
                "--delta-from",
                &old,
                "--key",
                &key,
            ],
            &[
                ("PUSH_TOKEN", TOKEN),
                ("TMPDIR", scratch.path().to_str().unwrap()),
            ],
        );
        assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).contains(expect), "{}", stdout(&o));
        let left: Vec<_> = std::fs::read_dir(scratch.path()).unwrap().collect();
        assert!(left.is_empty(), "left behind: {left:?}");
        serves_new(&server, &f);
    }
}

#[test]
fn an_mqtt_push_carries_a_delta_and_bad_ones_are_refused() {
    let f = Deltas::new();
    let broker = Mosquitto::start();
    let device = Device::new(
        &[&f.keys.public],
        &format!(
            "[mqtt]\nenabled = true\nbroker = {:?}\ndevice_id = \"edge-1\"\n\
             reconnect_min_ms = 100\nreconnect_max_ms = 1000\n",
            broker.url()
        ),
    );
    device.install_ok(&f.old);
    let server = device.serve_with_env(&[("KGBOX_ADMIN_TOKEN", TOKEN)]);
    let old_digest = bundle_digest(&f.old);
    wait_status(broker.port, "edge-1", T, |v| {
        v["online"] == true && v["digest"] == old_digest.as_str()
    });
    let url = broker.url();
    let to_device = ["--broker", url.as_str(), "--device", "edge-1"];
    for (bad, why) in bad_deltas(&f) {
        let before = listing(&device);
        let o = push(&bad, &to_device);
        assert!(!o.status.success(), "{} was installed", bad.display());
        assert!(stdout(&o).contains("edge-1: failed: "), "{}", stdout(&o));
        assert!(
            stdout(&o).contains(why),
            "{}: {}",
            bad.display(),
            stdout(&o)
        );
        serves_old(&server, &f);
        nothing_left(&device, Some(&before));
    }
    let key = f.keys.secret.to_str().unwrap();
    let old = f.old.to_str().unwrap();
    let o = push(
        &f.new,
        &[&to_device[..], &["--delta-from", old, "--key", key]].concat(),
    );
    assert!(
        o.status.success(),
        "{}{}\n{}",
        stdout(&o),
        stderr(&o),
        server.log()
    );
    assert!(
        stdout(&o).contains("sending the delta update"),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains("edge-1: installed movies 1.1.0"),
        "{}",
        stdout(&o)
    );
    serves_new(&server, &f);
    let new_digest = bundle_digest(&f.new);
    wait_status(broker.port, "edge-1", T, |v| {
        v["digest"] == new_digest.as_str()
    });
    nothing_left(&device, None);
}
