//! Live deployment over HTTP: `PUT /v1/bundles` with the admin token, the
//! health check with the manifest's probe queries, mark-good, automatic
//! rollback (at once, and at the next start after a crash), and hot swaps
//! under load with zero failed requests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kgbox_testkit::*;

const TOKEN: &str = "test-admin-token-0123456789";

struct Fixture {
    work: tempfile::TempDir,
    keys: Keys,
    tsv: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let work = tempfile::tempdir().unwrap();
        let keys = Keys::new(work.path(), "operator", 7);
        let tsv = small_tsv(work.path());
        Fixture { work, keys, tsv }
    }

    /// A bundle of the small KG at `version`, with one probe.
    fn bundle(&self, version: &str, probe: &str) -> PathBuf {
        let out = self.work.path().join(format!("movies-{version}.kgb"));
        let mut extra = vec!["--probe", probe];
        if probe == PROBE_BAD {
            extra.push("--allow-failing-probes");
        }
        pack(&self.tsv, "movies", version, &self.keys, &out, &extra);
        out
    }

    fn device(&self, extra_config: &str) -> Device {
        Device::new(&[&self.keys.public], extra_config)
    }
}

fn serve_with_token(device: &Device) -> Server {
    device.serve_with_env(&[("KGBOX_ADMIN_TOKEN", TOKEN)])
}

fn put(server: &Server, bundle: &Path) -> (u16, serde_json::Value) {
    server.put_bytes("/v1/bundles", Some(TOKEN), &read(bundle))
}

fn serving(server: &Server) -> (String, String, String) {
    let s = server.get_json("/v1/status");
    (
        s["bundle"]["version"].as_str().unwrap().to_string(),
        s["source"].as_str().unwrap().to_string(),
        s["health"].as_str().unwrap().to_string(),
    )
}

fn directed_blade_runner(server: &Server) -> Vec<String> {
    server.query_names("\"Blade Runner\" -> directed_by")
}

/// The slot record of `slot` from `kgbox status --json`.
fn slot_record(device: &Device, slot: &str) -> serde_json::Value {
    device.status()["state"][slot].clone()
}

#[test]
fn a_good_bundle_is_installed_checked_swapped_in_and_marked_good() {
    let f = Fixture::new();
    let device = f.device("");
    device.install_ok(&f.bundle("1.0.0", PROBE_OK));
    let v2 = f.bundle("2.0.0", PROBE_OK);
    let server = serve_with_token(&device);
    assert_eq!(
        serving(&server),
        ("1.0.0".into(), "slot-a".into(), "good".into())
    );
    // The first start checked the CLI-installed bundle and marked it good.
    assert_eq!(slot_record(&device, "a")["health"], "good");

    let (code, report) = put(&server, &v2);
    assert_eq!(code, 200, "{report}");
    assert_eq!(report["outcome"], "installed");
    assert_eq!(report["bundle"]["version"], "2.0.0");
    assert_eq!(report["slot"], "b");
    assert_eq!(report["probes"][0]["passed"], true);
    assert_eq!(
        serving(&server),
        ("2.0.0".into(), "slot-b".into(), "good".into())
    );
    assert_eq!(directed_blade_runner(&server), vec!["Ridley Scott"]);
    assert_eq!(slot_record(&device, "b")["health"], "good");
    assert_eq!(device.active().unwrap().2, "2.0.0");

    // The same version again is accepted (not a downgrade), an older one is not.
    let (code, err) = put(&server, &f.bundle("1.5.0", PROBE_OK));
    assert_eq!(code, 422, "{err}");
    assert_eq!(err["error"]["code"], "downgrade");
    assert_eq!(serving(&server).0, "2.0.0");

    // A live rollback returns to 1.0.0 and serves it.
    let (code, st) = server.post_admin("/v1/bundles/rollback", Some(TOKEN));
    assert_eq!(code, 200, "{st}");
    assert_eq!(st["bundle"]["version"], "1.0.0");
    assert_eq!(serving(&server).0, "1.0.0");
}

#[test]
fn a_bundle_whose_probes_fail_is_rolled_back_and_the_old_one_keeps_answering() {
    let f = Fixture::new();
    let device = f.device("");
    device.install_ok(&f.bundle("1.0.0", PROBE_OK));
    let bad = f.bundle("2.0.0", PROBE_BAD);
    let server = serve_with_token(&device);

    let (code, err) = put(&server, &bad);
    assert_eq!(code, 422, "{err}");
    assert_eq!(err["error"]["code"], "health_check_failed");
    let report = &err["error"]["report"];
    assert_eq!(report["outcome"], "rolled_back");
    assert_eq!(report["serving"]["version"], "1.0.0");
    assert_eq!(report["probes"][0]["passed"], false);
    assert_eq!(report["probes"][0]["missing"][0], "Steven Spielberg");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Steven Spielberg"),
        "{err}"
    );

    assert_eq!(
        serving(&server),
        ("1.0.0".into(), "slot-a".into(), "good".into())
    );
    assert_eq!(directed_blade_runner(&server), vec!["Ridley Scott"]);
    let st = device.status();
    assert_eq!(st["state"]["active"], "a");
    assert_eq!(st["state"]["b"]["health"], "bad");
    // A bad bundle is never a rollback target.
    let (code, err) = server.post_admin("/v1/bundles/rollback", Some(TOKEN));
    assert_eq!(code, 409, "{err}");

    // After a restart the old bundle still serves.
    drop(server);
    let server = device.serve();
    assert_eq!(serving(&server).0, "1.0.0");
}

#[test]
fn a_crash_between_switch_and_mark_good_rolls_back_at_the_next_start() {
    let f = Fixture::new();
    let device = f.device("");
    device.install_ok(&f.bundle("1.0.0", PROBE_OK));
    let v2 = f.bundle("2.0.0", PROBE_OK);
    // A first start checks 1.0.0 and marks it good.
    drop(device.serve());
    assert_eq!(slot_record(&device, "a")["health"], "good");
    // Now a new bundle serves for a minute before it is marked good.
    let mut server = device.serve_with_env(&[
        ("KGBOX_ADMIN_TOKEN", TOKEN),
        ("KGBOX_HEALTH__SETTLE_MS", "60000"),
    ]);
    let port = server.port;
    let body = read(&v2);
    let pusher = std::thread::spawn(move || {
        let url = format!("http://127.0.0.1:{port}/v1/bundles");
        // The connection dies with the server.
        let _ = client(Duration::from_secs(120))
            .put(&url)
            .header("Authorization", format!("Bearer {TOKEN}"))
            .send(&body[..]);
    });
    // Switched and serving 2.0.0, not yet marked good.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (version, _, health) = serving(&server);
        if version == "2.0.0" && health == "trial" {
            break;
        }
        assert!(Instant::now() < deadline, "2.0.0 never reached its trial");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(device.active().unwrap().2, "2.0.0");
    assert_eq!(slot_record(&device, "b")["health"], "trial");
    server.kill_now();
    pusher.join().unwrap();

    let server = device.serve();
    assert_eq!(serving(&server).0, "1.0.0");
    assert!(
        server.log().contains("before the bundle was marked good"),
        "{}",
        server.log()
    );
    let st = device.status();
    assert_eq!(st["state"]["active"], "a");
    assert_eq!(st["state"]["b"]["health"], "bad");
    assert_eq!(directed_blade_runner(&server), vec!["Ridley Scott"]);
}

#[test]
fn a_cli_install_that_fails_its_probes_is_rolled_back_when_serve_starts() {
    let f = Fixture::new();
    let device = f.device("");
    device.install_ok(&f.bundle("1.0.0", PROBE_OK));
    device.install_ok(&f.bundle("2.0.0", PROBE_BAD));
    assert_eq!(slot_record(&device, "b")["health"], "pending");
    let server = device.serve();
    assert_eq!(serving(&server).0, "1.0.0");
    assert!(
        server.log().contains("health check failed"),
        "{}",
        server.log()
    );
    assert_eq!(device.status()["state"]["b"]["health"], "bad");
}

#[test]
fn admin_endpoints_refuse_a_missing_or_wrong_token() {
    let f = Fixture::new();
    let device = f.device("");
    let v1 = f.bundle("1.0.0", PROBE_OK);
    let body = read(&v1);

    // No token configured: the admin API is off.
    let server = device.serve();
    let (code, err) = server.put_bytes("/v1/bundles", Some(TOKEN), &body);
    assert_eq!(code, 403, "{err}");
    assert_eq!(err["error"]["code"], "admin_disabled");
    drop(server);

    let server = serve_with_token(&device);
    for token in [None, Some("wrong-token"), Some("")] {
        let (code, err) = server.put_bytes("/v1/bundles", token, &body);
        assert_eq!(code, 401, "{token:?}: {err}");
        assert_eq!(err["error"]["code"], "unauthorized");
        let (code, _) = server.post_admin("/v1/bundles/rollback", token);
        assert_eq!(code, 401);
    }
    // Nothing was installed by the refused requests: the demo still serves.
    assert_eq!(serving(&server).1, "demo");
    let (code, err) = server.put_bytes("/v1/bundles", Some(TOKEN), b"not a bundle");
    assert_eq!(code, 422, "{err}");
    assert_eq!(err["error"]["code"], "bundle_rejected");
    let (code, err) = server.put_bytes("/v1/bundles", Some(TOKEN), b"");
    assert_eq!(code, 400, "{err}");
    let (code, report) = server.put_bytes("/v1/bundles", Some(TOKEN), &body);
    assert_eq!(code, 200, "{report}");
    assert_eq!(serving(&server).1, "slot-a");
}

#[test]
fn five_hot_swaps_under_load_fail_no_request() {
    let f = Fixture::new();
    let device = f.device("");
    device.install_ok(&f.bundle("1.0.0", PROBE_OK));
    let bundles: Vec<PathBuf> = (2..=6)
        .map(|v| f.bundle(&format!("{v}.0.0"), PROBE_OK))
        .collect();
    let server = serve_with_token(&device);
    let port = server.port;

    const MIN_REQUESTS: usize = 3000;
    let done = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let swapping = Arc::new(AtomicBool::new(true));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (done, failed, swapping) = (done.clone(), failed.clone(), swapping.clone());
            std::thread::spawn(move || {
                let agent = client(Duration::from_secs(30));
                let url = format!("http://127.0.0.1:{port}/v1/query");
                let body = serde_json::json!({"query": "\"Blade Runner\" -> directed_by"});
                let mut errors = Vec::new();
                while swapping.load(Ordering::Acquire)
                    || done.load(Ordering::Acquire) < MIN_REQUESTS
                {
                    let ok = match agent.post(&url).send_json(&body) {
                        Ok(mut r) => r
                            .body_mut()
                            .read_json::<serde_json::Value>()
                            .map(|v| answer_names(&v) == ["Ridley Scott"])
                            .unwrap_or(false),
                        Err(e) => {
                            errors.push(e.to_string());
                            false
                        }
                    };
                    if !ok {
                        failed.fetch_add(1, Ordering::AcqRel);
                    }
                    done.fetch_add(1, Ordering::AcqRel);
                }
                errors
            })
        })
        .collect();
    let mut swap_ms = Vec::new();
    for (i, b) in bundles.iter().enumerate() {
        // Spread the swaps over the load.
        while done.load(Ordering::Acquire) < i * MIN_REQUESTS / 6 {
            std::thread::sleep(Duration::from_millis(5));
        }
        let (code, report) = put(&server, b);
        assert_eq!(code, 200, "{report}");
        assert_eq!(report["outcome"], "installed");
        swap_ms.push(report["timings_ms"]["swap"].as_f64().unwrap());
    }
    swapping.store(false, Ordering::Release);
    let errors: Vec<String> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    let total = done.load(Ordering::Acquire);
    assert!(total >= MIN_REQUESTS);
    assert_eq!(
        failed.load(Ordering::Acquire),
        0,
        "{} of {total} requests failed during 5 swaps: {errors:?}",
        failed.load(Ordering::Acquire)
    );
    assert_eq!(serving(&server).0, "6.0.0");
    eprintln!("{total} requests, 5 swaps, swap ms {swap_ms:?}");
}
