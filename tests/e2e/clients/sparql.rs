//! `/sparql`, the SPARQL 1.1 Protocol: the wire forms, SPARQLWrapper and
//! rdflib's SPARQLStore on the demo, pyoxigraph's answers over the same RDF
//! file, and MetaQA gold queries answered alike by `/sparql` and `/v1/query`.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use kgbox_testkit::clients::{client_passes, require_python_modules};
use kgbox_testkit::*;

const E: &str = "http://kgbox.local/e/";
const R: &str = "http://kgbox.local/r/";
const CLIENT_LIMIT: Duration = Duration::from_secs(120);

/// The answer column of a SPARQL JSON result.
fn column(v: &Value, var: &str) -> BTreeSet<String> {
    v["results"]["bindings"]
        .as_array()
        .unwrap_or_else(|| panic!("not a SELECT result: {v}"))
        .iter()
        .map(|b| b[var]["value"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn sparql_protocol_forms_and_errors() {
    let device = Device::new(&[], "");
    let server = device.serve();
    let q = format!("SELECT ?m WHERE {{ ?m <{R}directed_by> <{E}Spike%20Lee> }}");
    // GET with query=, POST form, POST application/sparql-query: one answer.
    let (status, get) = server.get(&format!("/sparql?query={}", encode(&q)));
    assert_eq!(status, 200, "{get}");
    let get: Value = serde_json::from_str(&get).unwrap();
    assert!(
        column(&get, "m").contains(&format!("{E}Malcolm%20X")),
        "{get}"
    );
    let (status, form) = server.post(
        "/sparql",
        "application/x-www-form-urlencoded",
        &format!("query={}", encode(&q)),
    );
    assert_eq!(status, 200, "{form}");
    assert_eq!(serde_json::from_str::<Value>(&form).unwrap(), get);
    let (status, body) = server.post("/sparql", "application/sparql-query", &q);
    assert_eq!(status, 200, "{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), get);

    // CSV and TSV by the format parameter, and by Accept.
    let (status, csv) = server.get(&format!("/sparql?format=csv&query={}", encode(&q)));
    assert_eq!(status, 200);
    assert!(
        csv.starts_with("m\r\n") && csv.contains(&format!("{E}Malcolm%20X")),
        "{csv}"
    );
    let url = format!(
        "http://127.0.0.1:{}/sparql?query={}",
        server.port,
        encode(&q)
    );
    let mut r = client(Duration::from_secs(30))
        .get(&url)
        .header("Accept", "text/html;q=0.9, text/tab-separated-values")
        .call()
        .unwrap();
    let media = r.body().mime_type().unwrap_or("").to_string();
    assert!(media.contains("tab-separated-values"), "{media}");
    let tsv = r.body_mut().read_to_string().unwrap();
    assert!(
        tsv.starts_with("?m\n") && tsv.contains(&format!("<{E}Malcolm%20X>")),
        "{tsv}"
    );

    // ASK, LIMIT, and a name through rdfs:label.
    let (_, ask) = server.post(
        "/sparql",
        "application/sparql-query",
        &format!("ASK {{ <{E}Malcolm%20X> <{R}directed_by> <{E}Spike%20Lee> }}"),
    );
    assert_eq!(
        serde_json::from_str::<Value>(&ask).unwrap()["boolean"],
        true,
        "{ask}"
    );
    let (_, named) = server.post(
        "/sparql",
        "application/sparql-query",
        &format!("PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> SELECT ?m ?name WHERE {{ ?m <{R}directed_by> <{E}Spike%20Lee> ; rdfs:label ?name FILTER(STRSTARTS(?name, \"Malcolm\")) }}"),
    );
    let named: Value = serde_json::from_str(&named).unwrap();
    assert_eq!(
        column(&named, "name"),
        BTreeSet::from(["Malcolm X".to_string()]),
        "{named}"
    );

    // Errors: a person-readable 400, never Debug output; 415 for other bodies.
    for (query, code, says) in [
        ("SELECT ?x WHERE { ?x", "sparql_syntax", "syntax"),
        ("SELECT ?b WHERE { ?a ?p ?b }", "unsupported_sparql", "variable predicate"),
        ("DESCRIBE <http://kgbox.local/e/Drama>", "unsupported_sparql", "DESCRIBE"),
        ("SELECT ?b WHERE { ?a <http://kgbox.local/r/directed_by> ?b OPTIONAL { ?b <http://kgbox.local/r/x> ?c } }", "unsupported_sparql", "OPTIONAL"),
    ] {
        let (status, v) = server.post("/sparql", "application/sparql-query", query);
        assert_eq!(status, 400, "{query}: {v}");
        let v: Value = serde_json::from_str(&v).unwrap();
        assert_eq!(v["error"]["code"], code, "{query}: {v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(says) && !message.contains("Word("), "{query}: {message}");
    }
    let (status, _) = server.get("/sparql");
    assert_eq!(status, 400);
    let (status, _) = server.post(
        "/sparql",
        "application/json",
        &json!({"query": q}).to_string(),
    );
    assert_eq!(status, 415);
}

#[test]
fn sparqlwrapper_and_rdflib_on_the_demo() {
    require_python_modules(&["SPARQLWrapper", "rdflib"]);
    let device = Device::new(&[], "");
    let server = device.serve();
    let url = format!("http://127.0.0.1:{}/sparql", server.port);
    let out = client_passes("sparql_clients.py", &["demo", &url], &[], CLIENT_LIMIT);
    assert!(
        out.contains("demo: SPARQLWrapper and rdflib passed"),
        "{out}"
    );
}

#[test]
fn rdf_bundle_answers_as_pyoxigraph_does() {
    require_python_modules(&["SPARQLWrapper", "pyoxigraph"]);
    let work = tempfile::tempdir().unwrap();
    let keys = Keys::new(work.path(), "operator", 1);
    for fixture in ["small.ttl", "small.nt"] {
        let src = repo_root().join("tests/fixtures").join(fixture);
        let bundle = work.path().join(format!("{fixture}.kgb"));
        pack(&src, "small-rdf", "1.0.0", &keys, &bundle, &[]);
        let device = Device::new(&[&keys.public], "");
        device.install_ok(&bundle);
        let server = device.serve();
        let url = format!("http://127.0.0.1:{}/sparql", server.port);
        let out = client_passes(
            "sparql_clients.py",
            &["rdf", &url, src.to_str().unwrap()],
            &[],
            CLIENT_LIMIT,
        );
        assert!(out.contains("equal to pyoxigraph's"), "{out}");
    }
}

/// 1,000 gold queries from MetaQA's dev questions (a third per hop count):
/// each rendered to SPARQL by `/v1/query`, then asked of `/sparql`, gives
/// the same answers.
#[test]
fn metaqa_gold_queries_agree_between_sparql_and_v1_query() {
    let kb = metaqa_kb();
    assert!(
        kb.exists(),
        "{} is missing: the MetaQA KB ships in ../shared beside the repository",
        kb.display()
    );
    let data = kb.parent().unwrap();
    let mut gold = Vec::new();
    for hops in ["1-hop", "2-hop", "3-hop"] {
        let o = run(Command::new("python3")
            .arg(repo_root().join("benches/metaqa/gold_queries.py"))
            .arg("--questions")
            .arg(data.join(hops).join("dev.txt"))
            .arg("--qtypes")
            .arg(data.join(hops).join("dev_qtype.txt"))
            .args(["--limit", "334"]));
        assert!(o.status.success(), "gold_queries.py: {}", stderr(&o));
        gold.extend(
            stdout(&o)
                .lines()
                .filter_map(|l| l.split('\t').next().map(str::to_string)),
        );
    }
    gold.truncate(1000);
    assert_eq!(gold.len(), 1000);
    let work = tempfile::tempdir().unwrap();
    let keys = Keys::new(work.path(), "operator", 1);
    let bundle = work.path().join("metaqa.kgb");
    pack(&kb, "metaqa-movies", "1.0.0", &keys, &bundle, &[]);
    let device = Device::new(&[&keys.public], "[query]\nmax_top_k = 50000");
    device.install_ok(&bundle);
    let server = device.serve();
    let mut answers_seen = 0;
    for dsl in &gold {
        let (status, v) = server.post_json(
            "/v1/query",
            &json!({"query": dsl, "render": "sparql", "top_k": 50000, "paths": false, "repair": "off"}),
        );
        assert_eq!(status, 200, "{dsl}: {v}");
        let want: BTreeSet<String> = v["answers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| format!("{E}{}", encode(a["name"].as_str().unwrap())))
            .collect();
        let sparql = v["rendered"]["text"].as_str().unwrap();
        let (status, body) = server.post("/sparql", "application/sparql-query", sparql);
        assert_eq!(status, 200, "{sparql}: {body}");
        let got = column(&serde_json::from_str(&body).unwrap(), "x");
        assert_eq!(got, want, "{dsl}\n{sparql}");
        answers_seen += want.len();
    }
    assert!(answers_seen > 1000, "{answers_seen} answers in all");
}
