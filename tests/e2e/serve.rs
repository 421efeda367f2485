//! Packing, installing, serving and querying, end to end over real HTTP.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::Path;

use kgbox_testkit::*;

/// Facts of `head` in a TSV file, as (relation, tail), sorted.
fn facts_of(tsv: &Path, head: &str) -> BTreeSet<(String, String)> {
    std::fs::read_to_string(tsv)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f.len() == 3 && f[0] == head).then(|| (f[1].to_string(), f[2].to_string()))
        })
        .collect()
}

fn edges(page: &serde_json::Value) -> BTreeSet<(String, String)> {
    page["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["relation"].as_str().unwrap().to_string(),
                e["entity"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn metaqa_kb_packs_installs_and_serves_entities() {
    let kb = metaqa_kb();
    assert!(
        kb.exists(),
        "{} is missing: the MetaQA KB ships in ../shared beside the repository",
        kb.display()
    );
    let work = tempfile::tempdir().unwrap();
    let keys = Keys::new(work.path(), "operator", 1);
    let bundle = work.path().join("metaqa.kgb");
    pack(&kb, "metaqa-movies", "1.0.0", &keys, &bundle, &[]);

    let device = Device::new(&[&keys.public], "");
    device.install_ok(&bundle);
    assert_eq!(
        device.active(),
        Some(("a".into(), "metaqa-movies".into(), "1.0.0".into()))
    );
    let server = device.serve();

    let b = server.get_json("/v1/bundle");
    assert_eq!(b["manifest"]["name"], "metaqa-movies");
    assert_eq!(b["source"], "slot-a");
    assert_eq!(b["manifest"]["stats"]["triples"], 133_582);
    assert_eq!(b["manifest"]["stats"]["entities"], 43_234);

    // A movie: every fact in the KB, and nothing else, over two pages.
    let expected = facts_of(&kb, "Blade Runner");
    assert!(expected.len() > 10);
    let first = server.get_json("/v1/entities/Blade%20Runner?limit=10&direction=out");
    assert_eq!(first["name"], "Blade Runner");
    assert_eq!(first["outgoing"]["total"], expected.len());
    assert!(first.get("incoming").is_none());
    assert_eq!(first["outgoing"]["next_offset"], 10);
    let rest = server.get_json("/v1/entities/Blade%20Runner?limit=1000&offset=10&direction=out");
    let mut got = edges(&first["outgoing"]);
    got.extend(edges(&rest["outgoing"]));
    assert_eq!(got, expected);
    assert!(rest["outgoing"].get("next_offset").is_none());

    // A person: incoming edges include the films they directed.
    let scott = server.get_json(&format!(
        "/v1/entities/{}?limit=1000",
        encode("Ridley Scott")
    ));
    let directed: BTreeSet<String> = scott["incoming"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["relation"] == "directed_by")
        .map(|e| e["entity"].as_str().unwrap().to_string())
        .collect();
    assert!(directed.contains("Blade Runner"), "{directed:?}");
    assert!(directed.contains("Alien"), "{directed:?}");

    // Lookup by normalized name and by id.
    let by_norm = server.get_json("/v1/entities/blade%20RUNNER?limit=1");
    assert_eq!(by_norm["name"], "Blade Runner");
    let id = by_norm["id"].as_u64().unwrap();
    let by_id = server.get_json(&format!("/v1/entities/%23{id}?limit=1"));
    assert_eq!(by_id["name"], "Blade Runner");

    // Errors are JSON with a code.
    let (status, body) = server.get("/v1/entities/No%20Such%20Film%20Ever");
    assert_eq!(status, 404);
    let err: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(err["error"]["code"], "entity_not_found");
    let (status, body) = server.get("/v1/entities/Blade%20Runer");
    assert_eq!(status, 404);
    let err: serde_json::Value = serde_json::from_str(&body).unwrap();
    let suggestions = err["error"]["suggestions"].as_array().unwrap();
    assert!(suggestions.contains(&"Blade Runner".into()), "{body}");
    let (status, body) = server.get("/v1/entities/Blade%20Runner?limit=0");
    assert_eq!(status, 400, "{body}");
    let (status, body) = server.get("/v1/entities/Blade%20Runner?limit=abc");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("bad_request"), "{body}");
    let (status, _) = server.get("/v1/nothing-here");
    assert_eq!(status, 404);

    // Health, KServe v2 health, metrics.
    assert_eq!(server.get("/healthz").0, 200);
    assert_eq!(server.get("/readyz").0, 200);
    assert_eq!(server.get_json("/v2/health/live")["live"], true);
    assert_eq!(server.get_json("/v2/health/ready")["ready"], true);
    let (status, metrics) = server.get("/metrics");
    assert_eq!(status, 200);
    assert!(metrics.contains(
        "kgbox_bundle_info{name=\"metaqa-movies\",version=\"1.0.0\",source=\"slot-a\"} 1"
    ));
    assert!(metrics.contains("kgbox_graph_triples 133582"));
    assert!(metrics
        .contains("kgbox_http_requests_total{route=\"/v1/entities/{*name}\",status=\"404\"} 2"));
}

#[test]
fn ntriples_bundle_serves_labels_as_names() {
    let work = tempfile::tempdir().unwrap();
    let nt = work.path().join("films.nt");
    std::fs::write(
        &nt,
        "# a tiny film graph\n\
         <http://ex.org/film/BR> <http://ex.org/o/directed_by> <http://ex.org/person/RS> .\n\
         <http://ex.org/film/BR> <http://ex.org/o/release_year> \"1982\" .\n\
         <http://ex.org/film/BR> <http://www.w3.org/2000/01/rdf-schema#label> \"Blade Runner\"@en .\n\
         <http://ex.org/person/RS> <http://www.w3.org/2000/01/rdf-schema#label> \"Ridley Scott\" .\n\
         _:b1 <http://ex.org/o/directed_by> <http://ex.org/person/RS> .\n",
    )
    .unwrap();
    let keys = Keys::new(work.path(), "op", 2);
    let bundle = work.path().join("films.kgb");
    pack(
        &nt,
        "films",
        "0.1.0",
        &keys,
        &bundle,
        &["--format", "ntriples"],
    );
    let device = Device::new(&[&keys.public], "");
    device.install_ok(&bundle);
    let server = device.serve();
    let film = server.get_json("/v1/entities/Blade%20Runner");
    assert_eq!(film["name"], "Blade Runner");
    assert_eq!(film["aliases"], serde_json::json!([]));
    assert_eq!(
        edges(&film["outgoing"]),
        BTreeSet::from([
            ("directed_by".to_string(), "Ridley Scott".to_string()),
            ("release_year".to_string(), "1982".to_string()),
        ])
    );
    let rs = server.get_json("/v1/entities/Ridley%20Scott");
    assert_eq!(rs["incoming"]["total"], 2);
}

#[test]
fn install_status_rollback_cycle() {
    let work = tempfile::tempdir().unwrap();
    let keys = Keys::new(work.path(), "op", 3);
    let tsv = small_tsv(work.path());
    let v1 = work.path().join("v1.kgb");
    let v2 = work.path().join("v2.kgb");
    pack(&tsv, "films", "1.0.0", &keys, &v1, &[]);
    pack(&tsv, "films", "1.1.0", &keys, &v2, &[]);
    let device = Device::new(&[&keys.public], "");

    let empty = device.kgbox(&["status"]);
    assert!(
        stdout(&empty).contains("no bundle installed"),
        "{}",
        stdout(&empty)
    );
    let o = device.kgbox(&["rollback"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("no bundle is installed"),
        "{}",
        stderr(&o)
    );

    device.install_ok(&v1);
    let o = device.kgbox(&["rollback"]);
    assert!(stderr(&o).contains("no previous bundle"), "{}", stderr(&o));
    device.install_ok(&v2);
    assert_eq!(
        device.active(),
        Some(("b".into(), "films".into(), "1.1.0".into()))
    );
    let s = device.status();
    assert_eq!(s["state"]["previous"], "a");
    let text = stdout(&device.kgbox(&["status"]));
    assert!(
        text.contains("slot a: films 1.0.0") && text.contains("[previous]"),
        "{text}"
    );
    assert!(
        text.contains("slot b: films 1.1.0") && text.contains("[active]"),
        "{text}"
    );

    let o = device.kgbox(&["rollback"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        device.active(),
        Some(("a".into(), "films".into(), "1.0.0".into()))
    );
    let server = device.serve();
    assert_eq!(
        server.get_json("/v1/bundle")["manifest"]["version"],
        "1.0.0"
    );
    drop(server);

    // Rolling back again returns to 1.1.0; reinstalling the same version is allowed.
    assert!(device.kgbox(&["rollback"]).status.success());
    assert_eq!(device.active().unwrap().2, "1.1.0");
    device.install_ok(&v2);
    assert_eq!(
        device.active(),
        Some(("a".into(), "films".into(), "1.1.0".into()))
    );
    let o = device.kgbox(&["status", "--verify"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("active image verified"));

    // `kgbox entity` answers from the active slot; duplicates were removed at pack time.
    let o = device.kgbox(&["entity", "Harrison Ford"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["incoming"]["total"], 2);
}

#[test]
fn serves_the_demo_when_nothing_is_installed() {
    let device = Device::new(&[], "");
    let server = device.serve();
    let b = server.get_json("/v1/bundle");
    assert_eq!(b["source"], "demo");
    assert_eq!(b["manifest"]["name"], "demo-movies");
    let film = server.get_json("/v1/entities/Blade%20Runner?limit=100");
    assert_eq!(film["outgoing"]["total"], 29);
    assert!(server.log().contains("DEMO"), "{}", server.log());

    // With the demo disabled and nothing installed, serve refuses to start.
    let off = Device::new(&[], "demo = false");
    let o = off.kgbox(&["serve", "--listen", "127.0.0.1:0"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("no bundle is installed"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn config_errors_and_env_overrides() {
    let device = Device::new(&[], "");
    // A typo in the config file is named.
    std::fs::write(&device.config, "data_dirr = \"/tmp/x\"\n").unwrap();
    let o = device.kgbox(&["status"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("data_dirr"), "{}", stderr(&o));
    // A missing config file is named.
    let o = run(std::process::Command::new(bin("kgbox")).args([
        "--config",
        "/nonexistent/kgbox.toml",
        "status",
    ]));
    assert!(
        stderr(&o).contains("/nonexistent/kgbox.toml"),
        "{}",
        stderr(&o)
    );

    // KGBOX_CONFIG names the config file.
    std::fs::write(&device.config, "demo = false\n").unwrap();
    let o = run(std::process::Command::new(bin("kgbox"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("KGBOX_CONFIG", &device.config)
        .env("KGBOX_DATA_DIR", &device.data_dir));
    assert!(stderr(&o).contains("demo is disabled"), "{}", stderr(&o));

    // KGBOX_* variables override the file.
    std::fs::write(&device.config, "").unwrap();
    let port = free_port();
    let mut cmd = std::process::Command::new(bin("kgbox"));
    cmd.arg("--config")
        .arg(&device.config)
        .arg("serve")
        .env("KGBOX_DATA_DIR", &device.data_dir)
        .env("KGBOX_HTTP__LISTEN", format!("127.0.0.1:{port}"));
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut ok = false;
    while std::time::Instant::now() < deadline {
        if let Ok(r) = client(std::time::Duration::from_secs(30))
            .get(&format!("http://127.0.0.1:{port}/readyz"))
            .call()
        {
            ok = r.status() == 200;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        ok,
        "server did not listen on the port from KGBOX_HTTP__LISTEN"
    );
}
