//! Power loss during install: `kgbox install` is killed with SIGKILL at random
//! moments; afterwards the device always has a valid active bundle that loads
//! and answers.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use kgbox_testkit::*;
use rand::{Rng, SeedableRng};

const TRIALS: usize = 32;

/// A random graph big enough that an install takes a while; `extra` adds
/// edges from the probe entity `e0` so versions can be told apart.
fn synthetic_tsv(path: &Path, triples: usize, extra: usize) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for _ in 0..triples {
        let h = rng.random_range(0..60_000u32);
        let r = rng.random_range(0..24u32);
        let t = rng.random_range(0..60_000u32);
        writeln!(w, "e{h}\tr{r}\te{t}").unwrap();
    }
    for i in 0..extra {
        writeln!(w, "e0\tprobe\tp{i}").unwrap();
    }
}

/// Outgoing edge count of `e0` according to `kgbox entity`.
fn probe(device: &Device) -> u64 {
    let o = device.kgbox(&["entity", "e0", "--limit", "1"]);
    assert!(o.status.success(), "entity lookup failed: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["outgoing"]["total"].as_u64().unwrap()
}

#[test]
fn sigkill_during_install_leaves_a_valid_active_bundle() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let keys = Keys::new(dir, "operator", 21);
    let (tsv_a, tsv_b) = (dir.join("a.tsv"), dir.join("b.tsv"));
    synthetic_tsv(&tsv_a, 400_000, 0);
    synthetic_tsv(&tsv_b, 400_000, 5);
    let (v1, v2, v3) = (dir.join("v1.kgb"), dir.join("v2.kgb"), dir.join("v3.kgb"));
    pack(&tsv_a, "synthetic", "1.0.0", &keys, &v1, &["--level", "1"]);
    pack(&tsv_a, "synthetic", "2.0.0", &keys, &v2, &["--level", "1"]);
    pack(&tsv_b, "synthetic", "3.0.0", &keys, &v3, &["--level", "1"]);

    let device = Device::new(&[&keys.public], "");
    let t = Instant::now();
    device.install_ok(&v1);
    let full = t.elapsed();
    let base = probe(&device);
    let expected = |version: &str| if version == "3.0.0" { base + 5 } else { base };

    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let (mut interrupted, mut completed) = (0, 0);
    for trial in 0..TRIALS {
        let before = device.active().unwrap();
        let bundle = if trial % 2 == 0 { &v3 } else { &v2 };
        let mut child = device
            .command(&["install", "--allow-downgrade", bundle.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let delay = full.mul_f64(rng.random_range(0.0..1.1));
        std::thread::sleep(delay);
        let finished_first = child.try_wait().unwrap().is_some();
        child.kill().unwrap_or(()); // SIGKILL
        child.wait().unwrap();

        // The device has a valid active bundle that loads, verifies and answers.
        let (slot, name, version) = device
            .active()
            .unwrap_or_else(|| panic!("trial {trial}: no active bundle after kill at {delay:?}"));
        assert_eq!(name, "synthetic");
        let status = device.status();
        assert_eq!(
            status["state"][&slot]["status"], "ready",
            "trial {trial}: {status}"
        );
        let o = device.kgbox(&["status", "--verify"]);
        assert!(o.status.success(), "trial {trial}: {}", stderr(&o));
        assert_eq!(
            probe(&device),
            expected(&version),
            "trial {trial}, version {version}"
        );
        if !finished_first && version == before.2 && slot == before.0 {
            interrupted += 1;
        } else {
            completed += 1;
        }
        // Interrupted installs leave at most one stray file per slot behind.
        for s in ["a", "b"] {
            let n = std::fs::read_dir(device.data_dir.join("slots").join(s))
                .map(|d| d.count())
                .unwrap_or(0);
            assert!(n <= 2, "trial {trial}: {n} files in slot {s}");
        }
    }
    eprintln!(
        "{TRIALS} kills: {interrupted} interrupted an install, {completed} came after it completed (install takes ~{full:?})"
    );
    assert!(
        interrupted >= TRIALS / 3,
        "only {interrupted} of {TRIALS} kills interrupted an install; the test did not test much"
    );

    // After all that, a normal install still works and the server answers.
    let o = device.kgbox(&["install", "--allow-downgrade", v3.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let server = device.serve();
    let e0 = server.get_json("/v1/entities/e0?limit=1");
    assert_eq!(e0["outgoing"]["total"].as_u64().unwrap(), base + 5);
    assert_eq!(server.get("/readyz").0, 200);
    let _ = Duration::ZERO;
}
