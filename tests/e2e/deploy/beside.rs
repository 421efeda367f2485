//! Several bundles on one device: a default and two installed beside it
//! (`kgbox install --beside`), each answering its own graph at `/b/NAME/`
//! and as the OpenAI model NAME; an unknown name is a 404, never another
//! bundle's answer; a key for one bundle reads no other.
#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};

use kgbox_testkit::*;

/// A small graph whose only facts are `who -> leads -> team`.
fn graph(dir: &std::path::Path, name: &str, who: &str, team: &str) -> std::path::PathBuf {
    let path = dir.join(format!("{name}.tsv"));
    std::fs::write(
        &path,
        format!("{who}\tleads\t{team}\n{team}\tpart_of\t{name} works\n"),
    )
    .unwrap();
    path
}

/// The bundles installed beside the default one.
fn kgbox_bundle_count(device: &Device) -> usize {
    std::fs::read_dir(device.data_dir.join("bundles"))
        .unwrap()
        .count()
}

/// Packs `name`'s graph with planner examples, so questions can be asked.
fn pack_graph(
    dir: &std::path::Path,
    keys: &Keys,
    name: &str,
    who: &str,
    team: &str,
) -> std::path::PathBuf {
    let examples = dir.join(format!("{name}-examples.tsv"));
    std::fs::write(
        &examples,
        format!("who leads [{team}]\t\"{team}\" -> leads_inv\nwhat is [{team}] part of\t\"{team}\" -> part_of\n"),
    )
    .unwrap();
    let bundle = dir.join(format!("{name}.kgb"));
    let src = graph(dir, name, who, team);
    pack(
        &src,
        name,
        "1.0.0",
        keys,
        &bundle,
        &["--planner-examples", examples.to_str().unwrap()],
    );
    bundle
}

fn leader(server: &Server, prefix: &str, team: &str, key: Option<&str>) -> Reply {
    let auth = key.map(|k| format!("Bearer {k}"));
    let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", a.as_str())).collect();
    let body = format!(r#"{{"query": "\"{team}\" -> leads_inv"}}"#);
    server.send("POST", &format!("{prefix}/v1/query"), &headers, Some(&body))
}

fn names(reply: &Reply) -> Vec<String> {
    let v: Value = serde_json::from_str(&reply.body).unwrap();
    v["answers"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|x| x["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn bundles_beside_the_default_answer_their_own_graphs() {
    let work = tempfile::tempdir().unwrap();
    let keys = Keys::new(work.path(), "operator", 3);
    let device = Device::new(&[&keys.public], "");
    for (name, who, team) in [
        ("main", "Ada", "Core"),
        ("plant", "Bo", "Line 7"),
        ("office", "Cy", "Payroll"),
    ] {
        let bundle = pack_graph(work.path(), &keys, name, who, team);
        let args: Vec<&str> = if name == "main" {
            vec!["install", bundle.to_str().unwrap()]
        } else {
            vec!["install", bundle.to_str().unwrap(), "--beside"]
        };
        let o = device.kgbox(&args);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
    }
    assert!(device.data_dir.join("bundles/plant").is_dir());
    let o = device.kgbox(&["status"]);
    assert!(
        stdout(&o).contains("beside the default: office, plant"),
        "{}",
        stdout(&o)
    );
    let o = device.kgbox(&["status", "--beside", "plant", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["state"].to_string().contains("\"plant\""), "{v}");
    let o = device.kgbox(&["status", "--beside", "warehouse"]);
    assert!(
        !o.status.success() && stderr(&o).contains("office, plant"),
        "{}",
        stderr(&o)
    );
    // A bundle named like a path out of bundles/ is refused before installing.
    let odd = work.path().join("odd.kgb");
    pack(
        &graph(work.path(), "odd", "X", "Y"),
        "..",
        "1.0.0",
        &keys,
        &odd,
        &[],
    );
    let o = device.kgbox(&["install", odd.to_str().unwrap(), "--beside"]);
    assert!(!o.status.success(), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("not starting with '.'"),
        "{}",
        stderr(&o)
    );
    assert_eq!(kgbox_bundle_count(&device), 2);
    let server = device.serve();

    // Each bundle answers from its own graph, by prefix; the default without one.
    assert_eq!(names(&leader(&server, "", "Core", None)), ["Ada"]);
    assert_eq!(names(&leader(&server, "/b/main", "Core", None)), ["Ada"]);
    assert_eq!(names(&leader(&server, "/b/plant", "Line 7", None)), ["Bo"]);
    assert_eq!(
        names(&leader(&server, "/b/office", "Payroll", None)),
        ["Cy"]
    );
    // Nothing crosses: another bundle's entity is unknown here.
    let r = leader(&server, "/b/plant", "Payroll", None);
    assert_eq!(r.status, 404, "{}", r.body);
    assert!(!r.body.contains("Cy"), "{}", r.body);
    // An unknown bundle.
    let r = leader(&server, "/b/warehouse", "Core", None);
    assert_eq!(r.status, 404, "{}", r.body);
    assert!(r.body.contains("bundle_not_found"), "{}", r.body);
    // Other read routes under the prefix: SPARQL and entities.
    let (status, body) = server.get("/b/office/v1/entities/Cy");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Payroll"), "{body}");
    let r = server.send(
        "GET",
        "/b/plant/sparql?query=SELECT%20(COUNT(*)%20AS%20%3Fn)%20WHERE%20%7B%3Fs%20%3Fp%20%3Fo%7D",
        &[],
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);

    // The OpenAI facade: `model` chooses; unknown is 404 model_not_found.
    let ask = |model: &str, q: &str| {
        server.post_json(
            "/v1/chat/completions",
            &json!({"model": model, "messages": [{"role": "user", "content": q}]}),
        )
    };
    let (status, v) = ask("office", "who leads [Payroll]");
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["model"], "office");
    assert_eq!(v["kgbox"]["answers"][0]["name"], "Cy", "{v}");
    let (status, v) = ask("warehouse", "who leads [Payroll]");
    assert_eq!(status, 404, "{v}");
    assert_eq!(v["error"]["code"], "model_not_found", "{v}");
    let models = server.get_json("/v1/models");
    let ids = model_ids(&models);
    assert_eq!(ids, ["main", "office", "plant"], "{models}");
}

#[test]
fn a_key_for_one_bundle_reads_no_other() {
    let work = tempfile::tempdir().unwrap();
    let keys = Keys::new(work.path(), "operator", 4);
    let device = Device::new(&[&keys.public], "[http]\nallow_anonymous = false");
    for (name, who, team) in [("main", "Ada", "Core"), ("plant", "Bo", "Line 7")] {
        let bundle = pack_graph(work.path(), &keys, name, who, team);
        let mut args = vec!["install", bundle.to_str().unwrap()];
        if name != "main" {
            args.push("--beside");
        }
        assert!(device.kgbox(&args).status.success());
    }
    let o = device.kgbox(&[
        "keys",
        "add",
        "--name",
        "plant-floor",
        "--scope",
        "read:plant",
        "--quiet",
    ]);
    let plant_key = stdout(&o).trim().to_string();
    let server = device.serve();
    assert_eq!(
        names(&leader(&server, "/b/plant", "Line 7", Some(&plant_key))),
        ["Bo"]
    );
    for prefix in ["", "/b/main"] {
        let r = leader(&server, prefix, "Core", Some(&plant_key));
        assert_eq!(r.status, 403, "{prefix}: {}", r.body);
        assert!(!r.body.contains("Ada"), "{}", r.body);
    }
    // Through the facade, naming the other bundle as the model: refused.
    let auth = format!("Bearer {plant_key}");
    let r = server.send(
        "POST",
        "/v1/chat/completions",
        &[("Authorization", auth.as_str())],
        Some(r#"{"model": "main", "messages": [{"role": "user", "content": "who leads [Core]"}]}"#),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(!r.body.contains("Ada"), "{}", r.body);
    // Naming its own bundle, at the root as under /b/plant/: answered.
    for prefix in ["", "/b/plant"] {
        let r = server.send(
            "POST",
            &format!("{prefix}/v1/chat/completions"),
            &[("Authorization", auth.as_str())],
            Some(r#"{"model": "plant", "messages": [{"role": "user", "content": "who leads [Line 7]"}]}"#),
        );
        assert_eq!(r.status, 200, "{prefix}: {}", r.body);
        assert!(r.body.contains("Bo"), "{prefix}: {}", r.body);
    }
    // A name with a space in the path, under /b/plant/ (decoded once).
    let r = server.send(
        "GET",
        "/b/plant/v1/entities/Line%207",
        &[("Authorization", auth.as_str())],
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("Bo"), "{}", r.body);
    // The model list at the root shows only its bundle too.
    let r = server.send(
        "GET",
        "/v1/models",
        &[("Authorization", auth.as_str())],
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(model_ids(&v), ["plant"], "{v}");
    // Its model list shows only its bundle.
    let r = server.send(
        "GET",
        "/b/plant/v1/models",
        &[("Authorization", auth.as_str())],
        None,
    );
    let v: Value = serde_json::from_str(&r.body).unwrap();
    let ids = model_ids(&v);
    assert_eq!(ids, ["plant"], "{v}");
}

/// Three bundles served at once, each hot-swapped (`PUT /b/NAME/v1/bundles`,
/// then `POST /b/NAME/v1/bundles/rollback`) while clients ask all three
/// without pause: every answer succeeds and comes from the bundle asked
/// (the version before or after its swap), never from another.
#[test]
fn each_bundle_is_hot_swapped_under_load_while_the_others_answer() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    const TOKEN: &str = "beside-admin-token";
    // name, team asked about, its leader in 1.0.0, in 2.0.0
    let bundles = [
        ("main", "Core", "Ada", "Ann"),
        ("plant", "Line 7", "Bo", "Ben"),
        ("office", "Payroll", "Cy", "Cat"),
    ];
    let work = tempfile::tempdir().unwrap();
    let keys = Keys::new(work.path(), "operator", 5);
    let device = Device::new(&[&keys.public], "");
    let mut v2 = Vec::new();
    for (name, team, old, new) in bundles {
        let bundle = pack_graph(work.path(), &keys, name, old, team);
        let mut args = vec!["install", bundle.to_str().unwrap()];
        if name != "main" {
            args.push("--beside");
        }
        assert!(device.kgbox(&args).status.success());
        let dir = work.path().join("v2");
        std::fs::create_dir_all(&dir).unwrap();
        let src = graph(&dir, name, new, team);
        let out = dir.join(format!("{name}-2.kgb"));
        pack(
            &src,
            name,
            "2.0.0",
            &keys,
            &out,
            &["--probe", &format!("\"{team}\" -> leads_inv\t{new}")],
        );
        v2.push(out);
    }
    let server = Arc::new(device.serve_with_env(&[("KGBOX_ADMIN_TOKEN", TOKEN)]));
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = bundles
        .iter()
        .map(|&(name, team, old, new)| {
            let (server, stop) = (server.clone(), stop.clone());
            std::thread::spawn(move || {
                let (mut answered, mut bad) = (0usize, Vec::new());
                while !stop.load(Ordering::Relaxed) {
                    let r = leader(&server, &format!("/b/{name}"), team, None);
                    let got = if r.status == 200 {
                        names(&r)
                    } else {
                        Vec::new()
                    };
                    if r.status != 200 || !(got == [old] || got == [new]) {
                        bad.push(format!("{name}: {} {}", r.status, r.body));
                    }
                    answered += 1;
                }
                (name, answered, bad)
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(300));
    for ((name, ..), bundle) in bundles.iter().zip(&v2) {
        // The wrong bundle for this name is refused, nothing changes.
        let other = v2
            .iter()
            .find(|b| !b.ends_with(format!("{name}-2.kgb")))
            .unwrap();
        let (status, v) = server.put_bytes(
            &format!("/b/{name}/v1/bundles"),
            Some(TOKEN),
            &std::fs::read(other).unwrap(),
        );
        assert_eq!(status, 422, "{v}");
        assert_eq!(v["error"]["code"], "bundle_name_mismatch", "{v}");
        let (status, v) = server.put_bytes(
            &format!("/b/{name}/v1/bundles"),
            Some(TOKEN),
            &std::fs::read(bundle).unwrap(),
        );
        assert_eq!(status, 200, "{name}: {v}");
        assert_eq!(v["serving"]["version"], "2.0.0", "{v}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // And back, one at a time.
    for (name, ..) in bundles {
        let (status, v) = server.post_admin(&format!("/b/{name}/v1/bundles/rollback"), Some(TOKEN));
        assert_eq!(status, 200, "{name}: {v}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        let (name, answered, bad) = client.join().unwrap();
        assert!(answered > 20, "{name}: only {answered} answers");
        assert!(
            bad.is_empty(),
            "{} failed or crossed answers of {answered}, e.g. {:?}",
            bad.len(),
            &bad[..bad.len().min(3)]
        );
        eprintln!("{name}: {answered} answers, none failed or crossed");
    }
    // Each serves its 1.0.0 again; a status per bundle says so.
    for (name, team, old, _) in bundles {
        assert_eq!(
            names(&leader(&server, &format!("/b/{name}"), team, None)),
            [old]
        );
        let status = server.get_json(&format!("/b/{name}/v1/status"));
        assert_eq!(status["bundle"]["version"], "1.0.0", "{name}: {status}");
        // What it answered since it came back (counted afresh at each swap).
        let since = &status["since_deploy"];
        let requests = since["requests"].as_u64().unwrap();
        assert!((1..2000).contains(&requests), "{name}: {status}");
        assert_eq!(since["errors"], 0, "{name}: {status}");
        assert!(since["p99_ms"].as_f64().unwrap() > 0.0, "{name}: {status}");
    }
}
