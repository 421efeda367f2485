//! The messages on the wire, byte for byte: each typed message is written
//! with `to_wire` and compared with the JSON the device and the packager
//! have always sent (keys in alphabetical order, optional fields left out),
//! then read back.

use kgbox_protocol::http::{ErrorBody, ErrorDetail, HEALTH_CHECK_FAILED};
use kgbox_protocol::push::{BadManifest, MAX_CHUNKS};
use kgbox_protocol::{
    to_wire, BundleRef, DeployOutcome, DeployReport, DeployTimings, DeviceStatus, Health, Manifest,
    ProbeOutcome, Progress, ServingStats, Slot, StatusMessage, TransferState,
};
use serde::de::DeserializeOwned;
use serde::Serialize;

const SHA: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

/// `msg` is written as `wire` and `wire` reads back as `msg`.
fn same<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(msg: &T, wire: &str) {
    assert_eq!(to_wire(msg), wire);
    let back: T = serde_json::from_str(wire).unwrap_or_else(|e| panic!("{wire}: {e}"));
    assert_eq!(&back, msg);
}

fn films(version: &str) -> BundleRef {
    BundleRef {
        name: "films".into(),
        version: version.into(),
    }
}

fn probes() -> Vec<ProbeOutcome> {
    vec![
        ProbeOutcome {
            query: "[Blade Runner] directed_by".into(),
            passed: true,
            answers: 1,
            missing: vec![],
            error: None,
            ms: 1.5,
        },
        ProbeOutcome {
            query: "[Alien] starred_actors".into(),
            passed: false,
            answers: 2,
            missing: vec!["Sigourney Weaver".into()],
            error: None,
            ms: 0.25,
        },
        ProbeOutcome {
            query: "[Nope] x".into(),
            passed: false,
            answers: 0,
            missing: vec![],
            error: Some("unknown entity".into()),
            ms: 0.0,
        },
    ]
}

const PROBES: &str = concat!(
    r#"[{"answers":1,"ms":1.5,"passed":true,"query":"[Blade Runner] directed_by"},"#,
    r#"{"answers":2,"missing":["Sigourney Weaver"],"ms":0.25,"passed":false,"query":"[Alien] starred_actors"},"#,
    r#"{"answers":0,"error":"unknown entity","ms":0.0,"passed":false,"query":"[Nope] x"}]"#
);

fn report(outcome: DeployOutcome) -> DeployReport {
    DeployReport {
        outcome,
        bundle: films("1.1.0"),
        slot: Slot::B,
        reason: (outcome == DeployOutcome::RolledBack)
            .then(|| "1 of 3 probe queries failed".into()),
        probes: probes(),
        serving: films(if outcome == DeployOutcome::RolledBack {
            "1.0.0"
        } else {
            "1.1.0"
        }),
        timings_ms: DeployTimings {
            install: 12.5,
            load: 3.0,
            probes: 1.75,
            swap: 0.0,
            settle: 0.0,
            total: 17.25,
        },
    }
}

const TIMINGS: &str =
    r#"{"install":12.5,"load":3.0,"probes":1.75,"settle":0.0,"swap":0.0,"total":17.25}"#;

#[test]
fn the_transfer_manifest() {
    // What `kgbox-pack push` publishes to `.../bundle/begin`.
    let m = Manifest {
        transfer: SHA[..16].into(),
        size: 123_456,
        sha256: SHA.into(),
        chunk_bytes: 262_144,
        allow_downgrade: false,
    };
    let wire = format!(
        r#"{{"allow_downgrade":false,"chunk_bytes":262144,"sha256":"{SHA}","size":123456,"transfer":"ba7816bf8f01cfea"}}"#
    );
    same(&m, &wire);
    assert_eq!(
        Manifest::parse(wire.as_bytes(), 1 << 20, 1 << 20),
        Ok(m.clone())
    );
    assert_eq!(m.chunks(), 1);
    // `allow_downgrade` may be left out; the digest is taken in any case.
    let upper = format!(
        r#"{{"transfer":"t1","size":5000,"sha256":"{}","chunk_bytes":1024}}"#,
        SHA.to_uppercase()
    );
    let m = Manifest::parse(upper.as_bytes(), 1 << 20, 4096).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (m.sha256.as_str(), m.allow_downgrade, m.chunks()),
        (SHA, false, 5)
    );
    assert_eq!((m.chunk_len(4), m.chunk_len(5)), (Some(904), None));
}

#[test]
fn manifests_a_device_refuses() {
    let parse = |j: &str| Manifest::parse(j.as_bytes(), 1 << 20, 4096);
    let e = parse("{").err();
    assert!(e.is_some_and(|e| e.transfer.is_empty() && e.error.contains("not JSON")));
    let cases = [
        (
            r#"{"transfer":"a/b","size":1,"sha256":"x","chunk_bytes":1024}"#,
            "transfer id",
        ),
        (
            r#"{"transfer":"t","size":0,"sha256":"x","chunk_bytes":1024}"#,
            "admin.max_bundle_bytes",
        ),
        (
            r#"{"transfer":"t","size":9,"sha256":"x","chunk_bytes":9000}"#,
            "mqtt.bundle_chunk_max_bytes",
        ),
        (
            r#"{"transfer":"t","size":9,"sha256":"x","chunk_bytes":1024}"#,
            "64 hex digits",
        ),
        (r#"{"transfer":"t","size":9}"#, "bad transfer manifest"),
    ];
    for (j, why) in cases {
        match parse(j) {
            Err(BadManifest { transfer, error }) => {
                assert!(error.contains(why), "{j}: {error}");
                assert!(!transfer.is_empty(), "{j}: the id is named");
            }
            Ok(m) => panic!("{j}: accepted {m:?}"),
        }
    }
    let huge = format!(
        r#"{{"transfer":"t","size":{},"sha256":"{SHA}","chunk_bytes":1024}}"#,
        (MAX_CHUNKS + 1) * 1024
    );
    let e = Manifest::parse(huge.as_bytes(), u64::MAX, 4096).err();
    assert!(e.is_some_and(|e| e.error.contains("too many")));
}

#[test]
fn progress_while_receiving_and_installing() {
    let mut p = Progress::new("edge-7", "t1", TransferState::Receiving, 10, 40);
    p.missing = Some(vec![[10, 39]]);
    same(
        &p,
        r#"{"device_id":"edge-7","missing":[[10,39]],"received":10,"state":"receiving","total":40,"transfer":"t1"}"#,
    );
    p.missing = Some(vec![]);
    same(
        &p,
        r#"{"device_id":"edge-7","missing":[],"received":10,"state":"receiving","total":40,"transfer":"t1"}"#,
    );
    for (state, name) in [
        (TransferState::Verifying, "verifying"),
        (TransferState::Installing, "installing"),
        (TransferState::HealthCheck, "health_check"),
        (TransferState::Settling, "settling"),
    ] {
        let p = Progress::new("edge-7", "t1", state, 40, 40);
        let wire = format!(
            r#"{{"device_id":"edge-7","received":40,"state":"{name}","total":40,"transfer":"t1"}}"#
        );
        same(&p, &wire);
        assert_eq!(state.to_string(), name);
        assert!(!state.is_terminal());
    }
}

#[test]
fn final_progress() {
    let p = Progress::failed(
        "dev1",
        "t1",
        0,
        0,
        "busy: transfer t0 is being installed".into(),
    );
    same(
        &p,
        r#"{"device_id":"dev1","error":"busy: transfer t0 is being installed","received":0,"state":"failed","total":0,"transfer":"t1"}"#,
    );
    // What a device sends when a deployment ends.
    for outcome in [DeployOutcome::Installed, DeployOutcome::RolledBack] {
        let r = report(outcome);
        let p = Progress {
            reason: r.reason.clone(),
            bundle: Some(r.bundle.clone()),
            slot: Some(r.slot),
            serving: Some(r.serving.clone()),
            probes: Some(r.probes.clone()),
            ..Progress::new("dev1", "t1", outcome.into(), 5, 5)
        };
        let wire = match outcome {
            DeployOutcome::Installed => format!(
                r#"{{"bundle":{{"name":"films","version":"1.1.0"}},"device_id":"dev1","probes":{PROBES},"received":5,"serving":{{"name":"films","version":"1.1.0"}},"slot":"b","state":"installed","total":5,"transfer":"t1"}}"#
            ),
            DeployOutcome::RolledBack => format!(
                r#"{{"bundle":{{"name":"films","version":"1.1.0"}},"device_id":"dev1","probes":{PROBES},"reason":"1 of 3 probe queries failed","received":5,"serving":{{"name":"films","version":"1.0.0"}},"slot":"b","state":"rolled_back","total":5,"transfer":"t1"}}"#
            ),
        };
        same(&p, &wire);
        assert!(p.state.is_terminal());
    }
}

#[test]
fn deploy_report_is_the_bundles_body() {
    let r = report(DeployOutcome::Installed);
    same(
        &r,
        &format!(
            r#"{{"bundle":{{"name":"films","version":"1.1.0"}},"outcome":"installed","probes":{PROBES},"serving":{{"name":"films","version":"1.1.0"}},"slot":"b","timings_ms":{TIMINGS}}}"#
        ),
    );
    let r = report(DeployOutcome::RolledBack);
    let report_wire = format!(
        r#"{{"bundle":{{"name":"films","version":"1.1.0"}},"outcome":"rolled_back","probes":{PROBES},"reason":"1 of 3 probe queries failed","serving":{{"name":"films","version":"1.0.0"}},"slot":"b","timings_ms":{TIMINGS}}}"#
    );
    same(&r, &report_wire);
    // The 422 a rollback gets from `PUT /v1/bundles`.
    let e = ErrorBody {
        error: ErrorDetail {
            code: HEALTH_CHECK_FAILED.into(),
            message: "films 1.1.0 failed its health check and was rolled back; films 1.0.0 keeps serving: 1 of 3 probe queries failed".into(),
            report: Some(r),
        },
    };
    same(
        &e,
        &format!(
            r#"{{"error":{{"code":"health_check_failed","message":"films 1.1.0 failed its health check and was rolled back; films 1.0.0 keeps serving: 1 of 3 probe queries failed","report":{report_wire}}}}}"#
        ),
    );
    // Any other error, with the fields other endpoints add.
    let other: ErrorBody = serde_json::from_str(
        r#"{"error":{"code":"unknown_entity","message":"no entity","suggestions":["a"]}}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (other.error.code.as_str(), other.error.report),
        ("unknown_entity", None)
    );
}

fn device_status(slot: Option<Slot>, last_deploy: Option<DeployReport>) -> DeviceStatus {
    DeviceStatus {
        bundle: films("1.1.0"),
        digest: None,
        source: match slot {
            Some(s) => format!("slot-{s}"),
            None => "demo".into(),
        },
        slot,
        health: Health::Good,
        uptime_s: 3600,
        kgbox_version: "0.1.0".into(),
        last_deploy,
        since_deploy: None,
        golden: None,
    }
}

#[test]
fn status_bodies() {
    same(
        &device_status(None, None),
        r#"{"bundle":{"name":"films","version":"1.1.0"},"health":"good","kgbox_version":"0.1.0","slot":null,"source":"demo","uptime_s":3600}"#,
    );
    let s = device_status(Some(Slot::B), Some(report(DeployOutcome::Installed)));
    same(
        &s,
        &format!(
            r#"{{"bundle":{{"name":"films","version":"1.1.0"}},"health":"good","kgbox_version":"0.1.0","last_deploy":{{"bundle":{{"name":"films","version":"1.1.0"}},"outcome":"installed","probes":{PROBES},"serving":{{"name":"films","version":"1.1.0"}},"slot":"b","timings_ms":{TIMINGS}}},"slot":"b","source":"slot-b","uptime_s":3600}}"#
        ),
    );
    for (h, name) in [
        (Health::Pending, "pending"),
        (Health::Trial, "trial"),
        (Health::Good, "good"),
        (Health::Bad, "bad"),
    ] {
        assert_eq!(to_wire(&h), format!("\"{name}\""));
        assert_eq!(h.to_string(), name);
    }
}

#[test]
fn serving_stats_in_the_status() {
    let mut status = device_status(Some(Slot::A), None);
    status.since_deploy = Some(ServingStats {
        since_unix: 1_767_225_600,
        requests: 120,
        errors: 1,
        client_errors: 3,
        p99_ms: Some(2.5),
    });
    same(
        &status,
        r#"{"bundle":{"name":"films","version":"1.1.0"},"health":"good","kgbox_version":"0.1.0","since_deploy":{"client_errors":3,"errors":1,"p99_ms":2.5,"requests":120,"since_unix":1767225600},"slot":"a","source":"slot-a","uptime_s":3600}"#,
    );
}

#[test]
fn the_retained_status_and_the_last_will() {
    same(
        &StatusMessage::offline("edge-7"),
        r#"{"device_id":"edge-7","online":false}"#,
    );
    same(
        &StatusMessage::online("edge-7", device_status(Some(Slot::A), None)),
        r#"{"bundle":{"name":"films","version":"1.1.0"},"device_id":"edge-7","health":"good","kgbox_version":"0.1.0","online":true,"slot":"a","source":"slot-a","uptime_s":3600}"#,
    );
    // A device that reports its bundle's digest (the base of delta updates).
    let mut status = device_status(Some(Slot::A), None);
    status.digest = Some("be3b6854".into());
    same(
        &StatusMessage::online("edge-7", status),
        r#"{"bundle":{"name":"films","version":"1.1.0"},"device_id":"edge-7","digest":"be3b6854","health":"good","kgbox_version":"0.1.0","online":true,"slot":"a","source":"slot-a","uptime_s":3600}"#,
    );
}

#[test]
fn typed_messages_equal_the_hand_built_ones() {
    // The device built its progress messages as `serde_json::Value`s.
    let r = report(DeployOutcome::RolledBack);
    let mut old = serde_json::json!({"device_id": "d", "transfer": "t1", "state": "failed",
                                     "received": 5, "total": 5});
    old["state"] = serde_json::json!("rolled_back");
    old["reason"] = serde_json::json!(r.reason);
    old["bundle"] = serde_json::json!(r.bundle);
    old["slot"] = serde_json::json!(r.slot);
    old["serving"] = serde_json::json!(r.serving);
    old["probes"] = serde_json::json!(r.probes);
    let new = Progress {
        reason: r.reason.clone(),
        bundle: Some(r.bundle.clone()),
        slot: Some(r.slot),
        serving: Some(r.serving.clone()),
        probes: Some(r.probes.clone()),
        ..Progress::new("d", "t1", TransferState::RolledBack, 5, 5)
    };
    assert_eq!(to_wire(&new), old.to_string());
}

#[test]
fn a_rollouts_check_and_rollback_requests() {
    use kgbox_protocol::{CheckRequest, GoldenQuestion, RollbackRequest};
    same(
        &CheckRequest {
            check: "3f2a-w1-1767225600".into(),
            questions: vec![
                GoldenQuestion {
                    question: Some("who directed Alien".into()),
                    query: None,
                    expect: vec!["Ridley Scott".into()],
                },
                GoldenQuestion {
                    question: None,
                    query: Some("\"Alien\" -> release_year".into()),
                    expect: vec!["1979".into()],
                },
            ],
        },
        concat!(
            r#"{"check":"3f2a-w1-1767225600","questions":["#,
            r#"{"expect":["Ridley Scott"],"question":"who directed Alien"},"#,
            r#"{"expect":["1979"],"query":"\"Alien\" -> release_year"}]}"#
        ),
    );
    same(
        &RollbackRequest {
            from: SHA.into(),
            by: Some("3f2a".into()),
        },
        &format!(r#"{{"by":"3f2a","from":"{SHA}"}}"#),
    );
    let bare: CheckRequest = serde_json::from_str(r#"{"check":"c1"}"#).unwrap();
    assert!(bare.questions.is_empty());
}

#[test]
fn golden_results_and_the_group_in_the_status() {
    use kgbox_protocol::{GoldenFailure, GoldenResults};
    let mut status = device_status(Some(Slot::A), None);
    status.golden = Some(GoldenResults {
        check: "c1".into(),
        digest: Some(SHA.into()),
        total: 2,
        passed: 1,
        failed: vec![GoldenFailure {
            question: "[Witness] starred_actors".into(),
            missing: vec!["Harrison Ford".into()],
            got: vec![],
            from: "device".into(),
            error: None,
        }],
        checked_unix: 1767225600,
        ms: 2.5,
    });
    let v: serde_json::Value = serde_json::from_str(&to_wire(&status)).unwrap();
    assert_eq!(
        v["golden"],
        serde_json::json!({"check": "c1", "checked_unix": 1767225600u64, "digest": SHA,
            "failed": [{"from": "device", "got": [], "missing": ["Harrison Ford"],
                        "question": "[Witness] starred_actors"}],
            "ms": 2.5, "passed": 1, "total": 2})
    );
    let back: DeviceStatus = serde_json::from_value(v).unwrap();
    assert_eq!(back, status);
    let mut m = StatusMessage::offline("edge-7");
    m.group = Some("plant".into());
    same(
        &m,
        r#"{"device_id":"edge-7","group":"plant","online":false}"#,
    );
}
