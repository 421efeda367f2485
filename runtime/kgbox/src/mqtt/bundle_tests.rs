//! Tests of the device's side of bundle push (no broker: messages go
//! straight to `on_message`; the deployer serves the demo bundle).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc::UnboundedReceiver;

use super::BundleReceiver;
use crate::config::Config;
use crate::deploy::Deployer;
use crate::mqtt::transfer::{part_path, record_path};
use crate::served::Served;
use crate::store::Health;

struct Rig {
    dir: tempfile::TempDir,
    cfg: Arc<Config>,
    deployer: Arc<Deployer>,
}

impl Rig {
    fn new() -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = Config {
            data_dir: dir.path().join("data"),
            ..Default::default()
        };
        cfg.admin.max_bundle_bytes = 1 << 20;
        cfg.mqtt.bundle_chunk_max_bytes = 4096;
        let cfg = Arc::new(cfg);
        let served = Served::load(crate::demo::load_demo().unwrap(), &cfg).unwrap();
        let deployer = Arc::new(Deployer::new(cfg.clone(), served, Health::Good));
        Rig { dir, cfg, deployer }
    }

    fn receiver(&self) -> (BundleReceiver, UnboundedReceiver<Vec<u8>>) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let r = BundleReceiver::new(self.cfg.clone(), "dev1".into(), self.deployer.clone(), tx);
        (r, rx)
    }

    fn incoming(&self) -> std::path::PathBuf {
        self.cfg.data_dir.join("incoming")
    }
}

fn drain(rx: &mut UnboundedReceiver<Vec<u8>>) -> Vec<Value> {
    let mut out = Vec::new();
    while let Ok(m) = rx.try_recv() {
        out.push(serde_json::from_slice(&m).unwrap());
    }
    out
}

/// Waits for a message in one of `states`; returns everything seen.
fn wait_for(rx: &mut UnboundedReceiver<Vec<u8>>, states: &[&str]) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    loop {
        seen.extend(drain(rx));
        if seen
            .iter()
            .any(|m| states.contains(&m["state"].as_str().unwrap_or("")))
        {
            return seen;
        }
        assert!(Instant::now() < deadline, "no {states:?} in {seen:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn manifest(id: &str, data: &[u8], chunk: usize) -> Vec<u8> {
    let sha = hex::encode(Sha256::digest(data));
    json!({"transfer": id, "size": data.len(), "sha256": sha, "chunk_bytes": chunk})
        .to_string()
        .into_bytes()
}

fn send_chunks(
    r: &BundleReceiver,
    id: &str,
    data: &[u8],
    chunk: usize,
    which: impl Fn(usize) -> bool,
) {
    for (i, c) in data.chunks(chunk).enumerate() {
        if which(i) {
            r.on_message(&format!("chunk/{id}/{i}"), c);
        }
    }
}

fn payload(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

#[test]
fn bad_begin_messages_fail() {
    let rig = Rig::new();
    let (r, mut rx) = rig.receiver();
    let data = payload(5000);
    let good = String::from_utf8(manifest("t1", &data, 1024)).unwrap();
    for (bad, why) in [
        ("{not json".to_string(), "not JSON"),
        (good.replace("\"t1\"", "\"t/1\""), "transfer id"),
        (good.replace("5000", "2000000"), "admin.max_bundle_bytes"),
        (good.replace("1024", "512"), "chunk_bytes"),
        (good.replace("1024", "8192"), "mqtt.bundle_chunk_max_bytes"),
        (good.replace("\"sha256\":\"", "\"sha256\":\"x"), "sha256"),
    ] {
        r.on_message("begin", bad.as_bytes());
        let msgs = drain(&mut rx);
        assert_eq!(msgs.len(), 1, "{bad}: {msgs:?}");
        assert_eq!(msgs[0]["state"], "failed");
        assert_eq!(msgs[0]["device_id"], "dev1");
        assert!(
            msgs[0]["error"].as_str().unwrap().contains(why),
            "{bad}: {}",
            msgs[0]
        );
    }
    r.on_message("nonsense", b"");
    r.on_message("chunk/t1", b"");
    assert!(drain(&mut rx).is_empty());
}

#[test]
fn bad_chunks_are_ignored_or_end_the_transfer() {
    let rig = Rig::new();
    let (r, mut rx) = rig.receiver();
    let data = payload(5000);
    // No transfer: ignored.
    r.on_message("chunk/t1/0", &data[..1024]);
    assert!(drain(&mut rx).is_empty());
    r.on_message("begin", &manifest("t1", &data, 1024));
    let m = drain(&mut rx);
    assert_eq!(m[0]["state"], "receiving");
    assert_eq!(m[0]["missing"], json!([[0, 4]]));
    assert_eq!(m[0]["total"], 5);
    // Another transfer's chunk: ignored.
    r.on_message("chunk/t2/0", &data[..1024]);
    assert!(drain(&mut rx).is_empty());
    for (topic, len, why) in [
        ("chunk/t1/x", 1024, "not a number"),
        ("chunk/t1/5", 1024, "out of range"),
        ("chunk/t1/4", 1024, "expected 904"),
        ("chunk/t1/0", 100, "expected 1024"),
    ] {
        r.on_message("begin", &manifest("t1", &data, 1024));
        assert_eq!(drain(&mut rx)[0]["state"], "receiving");
        r.on_message(topic, &data[..len]);
        let m = drain(&mut rx);
        assert_eq!(m.len(), 1, "{topic}: {m:?}");
        assert_eq!(m[0]["state"], "failed");
        assert_eq!(m[0]["transfer"], "t1");
        assert!(
            m[0]["error"].as_str().unwrap().contains(why),
            "{topic}: {}",
            m[0]
        );
        // The transfer is over: its next chunk is ignored.
        r.on_message("chunk/t1/1", &data[1024..2048]);
        assert!(drain(&mut rx).is_empty());
    }
}

#[test]
fn resumes_from_the_on_disk_record() {
    let rig = Rig::new();
    let data = payload(40 * 1024 + 100);
    let begin = manifest("abc", &data, 1024);
    {
        let (r, mut rx) = rig.receiver();
        r.on_message("begin", &begin);
        assert_eq!(drain(&mut rx)[0]["missing"], json!([[0, 40]]));
        // 0..10 and 20; a second later 21, which writes the record (at
        // most every second or 5 %).
        send_chunks(&r, "abc", &data, 1024, |i| i < 10 || i == 20);
        let progress = drain(&mut rx);
        assert!(progress.len() >= 2, "{progress:?}");
        assert!(progress.iter().all(|m| m["state"] == "receiving"));
        std::thread::sleep(Duration::from_millis(1100));
        send_chunks(&r, "abc", &data, 1024, |i| i == 21);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let rec = std::fs::read(record_path(&rig.incoming(), "abc")).unwrap_or_default();
            let rec: Value = serde_json::from_slice(&rec).unwrap_or_default();
            if rec["received"]
                .as_str()
                .is_some_and(|h| h.starts_with("ff0330000000"))
            {
                break;
            }
            assert!(Instant::now() < deadline, "no record: {rec}");
            std::thread::sleep(Duration::from_millis(20));
        }
        // The same manifest again: what is missing.
        r.on_message("begin", &begin);
        let m = drain(&mut rx);
        assert_eq!(m[0]["missing"], json!([[10, 19], [22, 40]]));
    }
    // A restart: a new receiver resumes from DATA_DIR/incoming.
    let (r, mut rx) = rig.receiver();
    r.on_message("begin", &begin);
    let m = drain(&mut rx);
    assert_eq!(m[0]["state"], "receiving");
    assert_eq!(m[0]["received"], 12);
    assert_eq!(m[0]["missing"], json!([[10, 19], [22, 40]]));
    send_chunks(&r, "abc", &data, 1024, |i| (10..20).contains(&i) || i > 21);
    // Random bytes: verified, then refused by the installer.
    let seen = wait_for(&mut rx, &["installed", "rolled_back", "failed"]);
    let states: Vec<&str> = seen.iter().map(|m| m["state"].as_str().unwrap()).collect();
    assert!(states.contains(&"verifying"), "{states:?}");
    let last = seen.last().unwrap();
    assert_eq!(last["state"], "failed", "{seen:?}");
    assert_eq!(last["received"], 41);
    assert!(!last["error"].as_str().unwrap().is_empty());
    assert!(!part_path(&rig.incoming(), "abc").exists());
    assert!(!record_path(&rig.incoming(), "abc").exists());
    // Asked again, the device repeats the final state.
    r.on_message("begin", &begin);
    assert_eq!(drain(&mut rx), vec![last.clone()]);
    drop(rig.dir);
}

#[test]
fn a_corrupted_bundle_fails_its_sha256() {
    let rig = Rig::new();
    let (r, mut rx) = rig.receiver();
    let data = payload(3000);
    r.on_message("begin", &manifest("s1", &data, 1024));
    let mut bad = data.clone();
    bad[5] ^= 1;
    send_chunks(&r, "s1", &bad, 1024, |_| true);
    let seen = wait_for(&mut rx, &["failed"]);
    let last = seen.last().unwrap();
    assert!(
        last["error"].as_str().unwrap().contains("sha256 mismatch"),
        "{last}"
    );
    assert!(!part_path(&rig.incoming(), "s1").exists());
}

#[test]
fn a_new_transfer_abandons_the_old_one() {
    let rig = Rig::new();
    let (r, mut rx) = rig.receiver();
    let data = payload(3000);
    r.on_message("begin", &manifest("old", &data, 1024));
    send_chunks(&r, "old", &data, 1024, |i| i == 0);
    assert!(part_path(&rig.incoming(), "old").exists());
    std::fs::write(
        part_path(&rig.incoming(), "older"),
        "left by an earlier run",
    )
    .unwrap();
    let other = payload(2000);
    r.on_message("begin", &manifest("new", &other, 1024));
    let m = drain(&mut rx);
    assert_eq!(m.last().unwrap()["transfer"], "new");
    assert_eq!(m.last().unwrap()["missing"], json!([[0, 1]]));
    let deadline = Instant::now() + Duration::from_secs(10);
    while part_path(&rig.incoming(), "old").exists() || part_path(&rig.incoming(), "older").exists()
    {
        assert!(Instant::now() < deadline, "old transfers not deleted");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(part_path(&rig.incoming(), "new").exists());
    // The old one's chunks are ignored now.
    send_chunks(&r, "old", &data, 1024, |_| true);
    assert!(drain(&mut rx).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn works_inside_a_runtime() {
    let rig = Rig::new();
    let (r, mut rx) = rig.receiver();
    let data = payload(2500);
    r.on_message("begin", &manifest("rt", &data, 1024));
    send_chunks(&r, "rt", &data, 1024, |_| true);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut states = Vec::new();
    while !states.iter().any(|s| s == "failed") {
        let m = tokio::time::timeout_at(deadline.into(), rx.recv())
            .await
            .unwrap()
            .unwrap();
        let m: Value = serde_json::from_slice(&m).unwrap();
        states.push(m["state"].as_str().unwrap().to_string());
    }
    assert_eq!(states[..2], ["receiving", "receiving"], "{states:?}");
    assert!(states.contains(&"verifying".to_string()), "{states:?}");
}
