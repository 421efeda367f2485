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
    let ids: Vec<&str> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
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
    // Its model list shows only its bundle.
    let r = server.send(
        "GET",
        "/b/plant/v1/models",
        &[("Authorization", auth.as_str())],
        None,
    );
    let v: Value = serde_json::from_str(&r.body).unwrap();
    let ids: Vec<&str> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["plant"], "{v}");
}
