//! Bundle push end to end (docs/mqtt.md, "Bundle push"): the real
//! `kgbox-pack push` sends bundles through a real `mosquitto` to a real
//! `kgbox serve`, which verifies, installs, health-checks and hot-swaps them
//! (or rolls back); a resumed push sends only what is missing; the same
//! push over HTTP (`PUT /v1/bundles`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use kgbox_testkit::mosquitto::{wait_status, Client, Mosquitto};
use kgbox_testkit::*;

/// Generous: CI machines are small and busy.
const T: Duration = Duration::from_secs(60);
const TOKEN: &str = "push-test-admin-token-0123456789";
mod secured;

/// A broker and a device serving `films` 1.0.0 over HTTP and MQTT.
struct Rig {
    work: tempfile::TempDir,
    keys: Keys,
    tsv: PathBuf,
    broker: Mosquitto,
    device: Device,
    server: Server,
}

/// A device in `group` trusting `keys`, with `v1` installed, serving.
fn start_device(
    broker: &Mosquitto,
    keys: &Keys,
    v1: &Path,
    id: &str,
    group: &str,
) -> (Device, Server) {
    let device = Device::new(
        &[&keys.public],
        &format!(
            "[mqtt]\nenabled = true\nbroker = {:?}\ndevice_id = {id:?}\ngroup = {group:?}\n\
             reconnect_min_ms = 100\nreconnect_max_ms = 1000\n",
            broker.url()
        ),
    );
    device.install_ok(v1);
    let server = device.serve_with_env(&[("KGBOX_ADMIN_TOKEN", TOKEN)]);
    wait_status(broker.port, id, T, |v| v["online"] == true);
    (device, server)
}

impl Rig {
    fn new(id: &str) -> Rig {
        let broker = Mosquitto::start();
        let work = tempfile::tempdir().unwrap();
        let keys = Keys::new(work.path(), "op", 7);
        let tsv = small_tsv(work.path());
        let v1 = work.path().join("v1.kgb");
        pack(&tsv, "films", "1.0.0", &keys, &v1, &[]);
        let (device, server) = start_device(&broker, &keys, &v1, id, "fleet");
        Rig {
            work,
            keys,
            tsv,
            broker,
            device,
            server,
        }
    }

    /// Packs `films` at `version` from the small KG.
    fn bundle(&self, file: &str, version: &str, extra: &[&str]) -> PathBuf {
        let out = self.work.path().join(file);
        pack(&self.tsv, "films", version, &self.keys, &out, extra);
        out
    }

    /// `kgbox-pack push BUNDLE ARGS...` (quiet, by default a 120 s timeout).
    fn push(&self, bundle: &Path, args: &[&str]) -> Output {
        let timeout: &[&str] = if args.contains(&"--timeout") {
            &[]
        } else {
            &["--timeout", "120s"]
        };
        pack_push(bundle, &[timeout, args].concat(), &[("PUSH_TOKEN", TOKEN)])
    }

    fn push_mqtt(&self, bundle: &Path, device: &str, extra: &[&str]) -> Output {
        let url = self.broker.url();
        let mut args = vec!["--broker", &url, "--device", device];
        args.extend_from_slice(extra);
        self.push(bundle, &args)
    }

    fn status(&self) -> Value {
        self.server.get_json("/v1/status")
    }

    /// The directors of Blade Runner, as the device answers now.
    fn directors(&self) -> Vec<String> {
        self.server.query_names("\"Blade Runner\" -> directed_by")
    }

    /// Transfer files left in DATA_DIR/incoming.
    fn leftovers(&self) -> Vec<String> {
        std::fs::read_dir(self.device.data_dir.join("incoming"))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.ends_with(".part") || n.ends_with(".json"))
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[test]
fn push_installs_a_newer_bundle_over_mqtt() {
    let rig = Rig::new("dev1");
    let v2 = rig.bundle("v2.kgb", "1.1.0", &["--probe", PROBE_OK]);
    let o = rig.push_mqtt(&v2, "dev1", &["--chunk-bytes", "1024"]);
    assert!(
        o.status.success(),
        "{}{}\n{}",
        stdout(&o),
        stderr(&o),
        rig.server.log()
    );
    assert!(
        stdout(&o).contains("dev1: installed films 1.1.0 (slot b)"),
        "{}",
        stdout(&o)
    );
    let s = rig.status();
    assert_eq!(s["bundle"]["version"], "1.1.0", "{s}");
    assert_eq!(s["health"], "good", "{s}");
    assert_eq!(s["slot"], "b", "{s}");
    assert_eq!(s["last_deploy"]["outcome"], "installed", "{s}");
    assert_eq!(rig.directors(), ["Ridley Scott"]);
    assert!(rig.leftovers().is_empty(), "{:?}", rig.leftovers());
    // The MQTT status says so too.
    wait_status(rig.broker.port, "dev1", T, |v| {
        v["bundle"]["version"] == "1.1.0"
    });
    // Pushing it again right away: the device repeats the outcome.
    let o = rig.push_mqtt(&v2, "dev1", &["--chunk-bytes", "1024"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("sent 0 of"), "{}", stdout(&o));
}

#[test]
fn a_failing_bundle_is_rolled_back_and_reported() {
    let rig = Rig::new("dev2");
    let bad = rig.bundle(
        "bad.kgb",
        "1.2.0",
        &["--probe", PROBE_BAD, "--allow-failing-probes"],
    );
    let o = rig.push_mqtt(&bad, "dev2", &[]);
    assert!(!o.status.success());
    let out = stdout(&o);
    assert!(out.contains("dev2: rolled_back: "), "{out}");
    assert!(out.contains("Steven Spielberg"), "{out}");
    assert!(out.contains("films 1.0.0 keeps serving"), "{out}");
    assert!(
        stderr(&o).contains("1 of 1 devices did not install the bundle"),
        "{}",
        stderr(&o)
    );
    let s = rig.status();
    assert_eq!(s["bundle"]["version"], "1.0.0", "{s}");
    assert_eq!(s["health"], "good", "{s}");
    assert_eq!(s["last_deploy"]["outcome"], "rolled_back", "{s}");
    assert_eq!(rig.directors(), ["Ridley Scott"]);

    // Signed by a key the device does not trust: failed, with the reason.
    let stranger = Keys::new(rig.work.path(), "stranger", 99);
    let untrusted = rig.work.path().join("untrusted.kgb");
    pack(&rig.tsv, "films", "1.3.0", &stranger, &untrusted, &[]);
    let o = rig.push_mqtt(&untrusted, "dev2", &[]);
    assert!(!o.status.success());
    let out = stdout(&o);
    assert!(out.contains("dev2: failed: "), "{out}");
    assert!(out.to_lowercase().contains("key"), "{out}");
    assert_eq!(rig.status()["bundle"]["version"], "1.0.0");
    assert!(rig.leftovers().is_empty(), "{:?}", rig.leftovers());

    // Nobody there: a timeout, not a hang.
    let o = rig.push_mqtt(&untrusted, "nobody", &["--timeout", "3s"]);
    assert!(!o.status.success());
    assert!(
        stdout(&o).contains("nobody: timeout (no answer"),
        "{}",
        stdout(&o)
    );
}

/// A KG of `n` random triples (compresses badly: many chunks).
fn random_tsv(dir: &Path, n: usize) -> PathBuf {
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let mut word = |len: usize| -> String {
        (0..len)
            .map(|_| rng.random_range(b'a'..=b'z') as char)
            .collect()
    };
    let mut text = String::from("Blade Runner\tdirected_by\tRidley Scott\n");
    for _ in 0..n {
        text.push_str(&format!("{}\trelated_to\t{}\n", word(12), word(12)));
    }
    let p = dir.join("random.tsv");
    std::fs::write(&p, text).unwrap();
    p
}

fn sha256_hex(path: &Path) -> String {
    let o = run(Command::new("sha256sum").arg(path));
    assert!(o.status.success(), "sha256sum: {}", stderr(&o));
    stdout(&o).split_whitespace().next().unwrap().to_string()
}

#[test]
fn an_interrupted_push_resumes_with_the_missing_chunks() {
    let rig = Rig::new("dev3");
    let tsv = random_tsv(rig.work.path(), 8000);
    let v2 = rig.work.path().join("big.kgb");
    pack(&tsv, "films", "2.0.0", &rig.keys, &v2, &[]);
    let data = read(&v2);
    let chunk = 4096;
    let chunks = data.len().div_ceil(chunk);
    assert!(chunks > 20, "{} bytes", data.len());
    let sha = sha256_hex(&v2);
    let transfer = &sha[..16];

    // An earlier push that stopped after part of the chunks.
    let c = Client::connect(rig.broker.port);
    c.subscribe("kgbox/dev3/bundle/progress");
    let begin = json!({"transfer": transfer, "size": data.len(), "sha256": sha,
                       "chunk_bytes": chunk, "allow_downgrade": false})
    .to_string();
    c.publish("kgbox/dev3/bundle/begin", begin.as_bytes(), None, None);
    let first = c.recv(T).expect("no progress after begin").json();
    assert_eq!(first["state"], "receiving", "{first}");
    assert_eq!(first["missing"], json!([[0, chunks - 1]]));
    let sent_before: Vec<usize> = (0..chunks).filter(|i| i % 3 != 1).collect();
    for &i in &sent_before {
        let part = &data[i * chunk..((i + 1) * chunk).min(data.len())];
        c.publish(
            &format!("kgbox/dev3/bundle/chunk/{transfer}/{i}"),
            part,
            None,
            None,
        );
    }
    // Ask until every one of them is in.
    let mut last = Value::Null;
    for _ in 0..50 {
        c.publish("kgbox/dev3/bundle/begin", begin.as_bytes(), None, None);
        if let Some(m) = c.recv_matching(Duration::from_secs(2), |m| {
            m.json()["received"] == sent_before.len()
        }) {
            last = m.json();
            break;
        }
    }
    assert_eq!(last["received"], sent_before.len(), "{last}");
    assert_eq!(last["missing"][0], json!([1, 1]), "{last}");

    // The real pusher sends only the rest.
    let o = rig.push_mqtt(&v2, "dev3", &["--chunk-bytes", "4096"]);
    assert!(o.status.success(), "{}\n{}", stderr(&o), rig.server.log());
    let missing = chunks - sent_before.len();
    assert!(
        stdout(&o).contains(&format!("sent {missing} of {chunks} chunks")),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains("dev3: installed films 2.0.0"),
        "{}",
        stdout(&o)
    );
    assert_eq!(rig.status()["bundle"]["version"], "2.0.0");
    assert_eq!(rig.directors(), ["Ridley Scott"]);
    assert!(rig.leftovers().is_empty(), "{:?}", rig.leftovers());
}

#[test]
fn push_over_http_with_the_admin_token() {
    let rig = Rig::new("dev4");
    let url = format!("http://127.0.0.1:{}", rig.server.port);
    let v2 = rig.bundle("v2.kgb", "1.1.0", &["--probe", PROBE_OK]);

    let o = rig.push(
        &v2,
        &["--http", &url, "--token-env", "NO_SUCH_VARIABLE_SET"],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("NO_SUCH_VARIABLE_SET"),
        "{}",
        stderr(&o)
    );
    let o = run(Command::new(bin("kgbox-pack"))
        .args([
            "push",
            "--quiet",
            "--http",
            &url,
            "--token-env",
            "PUSH_TOKEN",
        ])
        .arg(&v2)
        .env("PUSH_TOKEN", "wrong-token-wrong-token"));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("401 unauthorized"), "{}", stderr(&o));

    let o = rig.push(&v2, &["--http", &url, "--token-env", "PUSH_TOKEN"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains(&format!(
            "127.0.0.1:{}: installed films 1.1.0 (slot b)",
            rig.server.port
        )),
        "{}",
        stdout(&o)
    );
    assert_eq!(rig.status()["bundle"]["version"], "1.1.0");

    let bad = rig.bundle(
        "bad.kgb",
        "1.2.0",
        &["--probe", PROBE_BAD, "--allow-failing-probes"],
    );
    let o = rig.push(&bad, &["--http", &url, "--token-env", "PUSH_TOKEN"]);
    assert!(!o.status.success());
    assert!(stdout(&o).contains(": rolled_back: "), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("films 1.1.0 keeps serving"),
        "{}",
        stdout(&o)
    );
    assert_eq!(rig.status()["bundle"]["version"], "1.1.0");

    // Errors name what is wrong.
    let o = rig.push(&rig.work.path().join("nope.kgb"), &["--http", &url]);
    assert!(
        stderr(&o).contains("cannot open the bundle"),
        "{}",
        stderr(&o)
    );
    let port = free_port().to_string();
    let o = rig.push(
        &v2,
        &[
            "--broker",
            &format!("mqtt://127.0.0.1:{port}"),
            "--device",
            "x",
        ],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains(&format!(
            "cannot connect to the broker at mqtt://127.0.0.1:{port}"
        )),
        "{}",
        stderr(&o)
    );
}

#[test]
fn push_to_a_group_installs_on_every_device() {
    let rig = Rig::new("g1");
    let v1 = rig.work.path().join("v1.kgb");
    let (_d2, s2) = start_device(&rig.broker, &rig.keys, &v1, "g2", "fleet");
    let (_d3, s3) = start_device(&rig.broker, &rig.keys, &v1, "other", "elsewhere");
    let v2 = rig.bundle("v2.kgb", "1.1.0", &["--probe", PROBE_OK]);
    let url = rig.broker.url();
    let o = rig.push(
        &v2,
        &[
            "--broker",
            &url,
            "--group",
            "fleet",
            "--expect",
            "2",
            "--chunk-bytes",
            "1024",
        ],
    );
    assert!(o.status.success(), "{}\n{}", stderr(&o), rig.server.log());
    let out = stdout(&o);
    assert!(out.contains("g1: installed films 1.1.0 (slot b)"), "{out}");
    assert!(out.contains("g2: installed films 1.1.0 (slot b)"), "{out}");
    assert!(!out.contains("other"), "{out}");
    assert_eq!(rig.status()["bundle"]["version"], "1.1.0");
    assert_eq!(s2.get_json("/v1/status")["bundle"]["version"], "1.1.0");
    assert_eq!(s3.get_json("/v1/status")["bundle"]["version"], "1.0.0");

    // Expecting more devices than answer: a timeout, reported.
    let v3 = rig.bundle("v3.kgb", "1.2.0", &[]);
    let o = rig.push(
        &v3,
        &[
            "--broker",
            &url,
            "--group",
            "fleet",
            "--expect",
            "3",
            "--timeout",
            "8s",
        ],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("only 2 of 3 expected devices answered"),
        "{}",
        stderr(&o)
    );
}
