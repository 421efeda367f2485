//! The `sparql_store` executor against a real Oxigraph server loaded with
//! `kgbox-pack export`: `POST /v1/query` answers exactly as the local
//! symbolic executor (answers, scores, order, totals, paths), for a TSV
//! bundle and an RDF one (source IRIs, literals, a blank node); and a store
//! that hangs, fails, sends garbage or cannot be reached gives its own
//! error code and status, naming the endpoint.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use kgbox_testkit::sparql_store::{Behaviour, FakeStore, Oxigraph};
use kgbox_testkit::*;

/// `kgbox-pack export BUNDLE -o OUT`, checked.
fn export(bundle: &Path, out: &Path) {
    let o = run(Command::new(bin("kgbox-pack"))
        .arg("export")
        .arg(bundle)
        .arg("--ntriples")
        .arg("-o")
        .arg(out)
        .arg("--quiet"));
    assert!(o.status.success(), "kgbox-pack export: {}", stderr(&o));
}

/// `body` through `POST /v1/query` with the executor the config names
/// (the store) and with `symbolic`: both must answer 200 with the same
/// answers and total. Returns the store's reply.
fn same_as_symbolic(server: &Server, body: Value) -> Value {
    let (status, store) = server.post_json("/v1/query", &body);
    assert_eq!(status, 200, "{body}: {store}");
    assert_eq!(store["executor"], "sparql_store", "{store}");
    let mut local_body = body.clone();
    local_body["executor"] = json!("symbolic");
    let (status, local) = server.post_json("/v1/query", &local_body);
    assert_eq!(status, 200, "{local}");
    assert_eq!(store["answers"], local["answers"], "{body}");
    assert_eq!(store["total"], local["total"], "{body}");
    assert_eq!(store["edge_visits"], 0);
    store
}

fn code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or("")
}

#[test]
fn store_answers_as_the_symbolic_executor_on_the_demo() {
    let work = tempfile::tempdir().unwrap();
    let nt = work.path().join("demo.nt");
    export(&repo_root().join("demo/demo.kgb"), &nt);
    let graph = "urn:kgbox:demo-movies";
    let store = Oxigraph::start(&[&nt], Some(graph));
    let device = Device::new(
        &[],
        &format!(
            "[executor]\nmode = \"sparql_store\"\n[sparql_store]\nendpoint = {:?}\ndefault_graph = {graph:?}\n",
            store.endpoint()
        ),
    );
    let server = device.serve();
    let queries = [
        "\"Malcolm X\" -> directed_by -> directed_by_inv",
        "\"Blade Runner\" -> directed_by",
        "AND(Drama -> has_genre_inv, NOT(\"Blade Runner\" -> has_genre -> has_genre_inv))",
        "OR(\"Blade Runner\" -> directed_by, \"Malcolm X\" -> directed_by, \"Spike Lee\")",
        "AND(\"Spike Lee\" -> directed_by_inv, Drama -> has_genre_inv) -> release_year",
        "\"Spike Lee\" -> directed_by_inv -> has_genre -> has_genre_inv",
    ];
    let mut answered = 0;
    for q in queries {
        for body in [
            json!({"query": q}),
            json!({"query": q, "top_k": 1000, "paths": 5}),
            json!({"query": q, "paths": false, "top_k": 3}),
        ] {
            let v = same_as_symbolic(&server, body);
            answered += v["answers"].as_array().map_or(0, Vec::len);
        }
    }
    assert!(answered > 100, "{answered}");
    // Anchors kept: the executor's scores (anchors at half) come back too.
    let v = same_as_symbolic(
        &server,
        json!({"query": "\"Malcolm X\" -> directed_by -> directed_by_inv", "include_anchors": true}),
    );
    assert_eq!(v["answers"][1]["name"], "Malcolm X", "{v}");
    assert_eq!(v["answers"][1]["score"], 0.5, "{v}");
    same_as_symbolic(
        &server,
        json!({"query": "OR(\"Spike Lee\" -> directed_by_inv, Drama -> has_genre_inv) -> release_year", "include_anchors": true, "top_k": 1000}),
    );
    // SPARQL in: translated, then run on the store.
    let sparql = "SELECT ?m WHERE { ?m <http://kgbox.local/r/directed_by> <http://kgbox.local/e/Spike%20Lee> }";
    let v = same_as_symbolic(&server, json!({"query": sparql, "language": "sparql"}));
    assert_eq!(v["total"], 2, "{v}");
    // Anchors kept with a NOT: no SPARQL form with the executor's scores.
    let (status, v) = server.post_json(
        "/v1/query",
        &json!({"query": queries[2], "include_anchors": true}),
    );
    assert_eq!((status, code(&v)), (422, "unsupported_construct"), "{v}");
}

#[test]
fn rdf_bundle_answers_alike_through_its_own_endpoint() {
    let work = tempfile::tempdir().unwrap();
    let keys = Keys::new(work.path(), "operator", 1);
    let bundle = work.path().join("small.kgb");
    pack(
        &repo_root().join("tests/fixtures/small.ttl"),
        "small-rdf",
        "1.0.0",
        &keys,
        &bundle,
        &[],
    );
    let nt = work.path().join("small.nt.gz");
    export(&bundle, &nt);
    let store = Oxigraph::start(&[&nt], None);
    // The default endpoint is not reachable: the bundle's own one is used.
    let device = Device::new(
        &[&keys.public],
        &format!(
            "[executor]\nmode = \"sparql_store\"\n[sparql_store]\nendpoint = \"http://127.0.0.1:{}/nothing\"\n[sparql_store.bundles.small-rdf]\nendpoint = {:?}\n",
            free_port(),
            store.endpoint()
        ),
    );
    device.install_ok(&bundle);
    let server = device.serve();
    for (q, want) in [
        // A blank node with edges (written with a kgbox IRI).
        ("\"Blade Runner\" -> based_on -> written_by", 1),
        // Literal answers, then a literal as the anchor.
        (
            "\"Ridley Scott\" -> directed_by_inv -> http://example.org/ontology/release_year",
            2,
        ),
        ("1982 -> http://example.org/ontology/release_year_inv", 1),
        (
            "AND(\"Harrison Ford\" -> starred_actors_inv, NOT(\"Peter Weir\" -> directed_by_inv))",
            1,
        ),
    ] {
        let v = same_as_symbolic(&server, json!({"query": q, "top_k": 100}));
        assert_eq!(v["total"], want, "{q}: {v}");
    }
}

#[test]
fn store_failures_have_their_own_codes() {
    let fake = FakeStore::start(Behaviour::Hang);
    let endpoint = fake.endpoint();
    let device = Device::new(
        &[],
        &format!(
            "[sparql_store]\nendpoint = {endpoint:?}\ntimeout_ms = 300\nmax_rows = 2\ndefault_graph = \"urn:g\"\nauth_header_env = \"STORE_AUTH_FOR_TEST\"\n"
        ),
    );
    let server = device.serve_with_env(&[("STORE_AUTH_FOR_TEST", "Bearer t0ken")]);
    let ask = || {
        server.post_json(
            "/v1/query",
            &json!({"query": "\"Malcolm X\" -> directed_by", "executor": "sparql_store"}),
        )
    };
    let results = |rows: &[&str]| {
        let bindings: Vec<Value> = rows
            .iter()
            .map(|iri| json!({"x": {"type": "uri", "value": iri}}))
            .collect();
        json!({"head": {"vars": ["x"]}, "results": {"bindings": bindings}}).to_string()
    };
    const JSON: &str = "application/sparql-results+json";

    // A good reply; the request is the SPARQL 1.1 Protocol's.
    fake.set(Behaviour::Reply(
        200,
        JSON,
        results(&["http://kgbox.local/e/Spike%20Lee", "http://elsewhere/x"]),
    ));
    let (status, v) = server.post_json(
        "/v1/query",
        &json!({"query": "\"Malcolm X\" -> directed_by", "executor": "sparql_store", "paths": false}),
    );
    assert_eq!(status, 200, "{v}");
    // The IRI the bundle does not have is left out.
    assert_eq!(v["total"], 1, "{v}");
    assert_eq!(v["answers"][0]["name"], "Spike Lee", "{v}");
    let call = fake.calls().pop().unwrap();
    let header = |name: &str| {
        call.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    assert!(header("content-type").starts_with("application/sparql-query"));
    assert!(header("accept").starts_with(JSON), "{call:?}");
    assert_eq!(header("authorization"), "Bearer t0ken");
    assert!(
        call.target.contains("default-graph-uri=urn%3Ag"),
        "{call:?}"
    );
    assert!(
        call.body.starts_with("SELECT DISTINCT ?x WHERE"),
        "{call:?}"
    );

    let cases: Vec<(Behaviour, u16, &str)> = vec![
        (
            Behaviour::Reply(500, "text/plain", "store exploded".into()),
            502,
            "store_error",
        ),
        (
            Behaviour::Reply(200, JSON, "<html>not results</html>".into()),
            502,
            "store_error",
        ),
        (
            Behaviour::Reply(200, JSON, r#"{"head":{},"boolean":true}"#.into()),
            502,
            "store_error",
        ),
        (
            Behaviour::Reply(
                200,
                JSON,
                results(&["http://e/1", "http://e/2", "http://e/3"]),
            ),
            422,
            "query_too_expensive",
        ),
        (Behaviour::Hang, 504, "store_timeout"),
    ];
    for (behaviour, want_status, want_code) in cases {
        fake.set(behaviour.clone());
        let (status, v) = ask();
        assert_eq!(
            (status, code(&v)),
            (want_status, want_code),
            "{behaviour:?}: {v}"
        );
        let message = v["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains(&endpoint), "{message}");
    }
    // The local executors are not affected.
    let (status, _) = server.post_json(
        "/v1/query",
        &json!({"query": "\"Malcolm X\" -> directed_by"}),
    );
    assert_eq!(status, 200);

    drop(fake);
    let (status, v) = ask();
    assert_eq!((status, code(&v)), (503, "store_unavailable"), "{v}");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains(&endpoint));
}

#[test]
fn the_request_deadline_bounds_the_store() {
    let fake = FakeStore::start(Behaviour::Hang);
    let device = Device::new(
        &[],
        &format!(
            "[http]\nrequest_timeout_ms = 300\n[sparql_store]\nendpoint = {:?}\ntimeout_ms = 60000\n",
            fake.endpoint()
        ),
    );
    let server = device.serve();
    let (status, _) = server.post(
        "/v1/query",
        "application/json",
        &json!({"query": "\"Malcolm X\" -> directed_by", "executor": "sparql_store"}).to_string(),
    );
    assert_eq!(status, 408);
    // Without a store for the bundle, naming the executor is an error.
    let device = Device::new(&[], "");
    let server = device.serve();
    let (status, v) = server.post_json(
        "/v1/query",
        &json!({"query": "\"Malcolm X\" -> directed_by", "executor": "sparql_store"}),
    );
    assert_eq!((status, code(&v)), (422, "no_sparql_store"), "{v}");
}

/// The export writes what `/sparql` renders: every triple of the demo,
/// compressed alike.
#[test]
fn export_writes_every_triple_with_the_rendered_iris() {
    let work = tempfile::tempdir().unwrap();
    let demo: PathBuf = repo_root().join("demo/demo.kgb");
    let plain = work.path().join("demo.nt");
    let zst = work.path().join("demo.nt.zst");
    export(&demo, &plain);
    export(&demo, &zst);
    let text = std::fs::read_to_string(&plain).unwrap();
    let unpacked = zstd::decode_all(std::fs::File::open(&zst).unwrap()).unwrap();
    assert_eq!(text.as_bytes(), &unpacked[..]);
    let tsv = std::fs::read_to_string(demo_tsv()).unwrap();
    let triples = tsv
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    assert_eq!(text.lines().count(), triples);
    assert!(
        text.contains("<http://kgbox.local/e/Malcolm%20X> <http://kgbox.local/r/directed_by> <http://kgbox.local/e/Spike%20Lee> .\n"),
        "{}",
        &text[..300]
    );
    // A damaged bundle is refused, and nothing is left behind.
    let mut bytes = std::fs::read(&demo).unwrap();
    let at = bytes.len() - 10;
    bytes[at] ^= 0xff;
    let bad = work.path().join("bad.kgb");
    std::fs::write(&bad, &bytes).unwrap();
    let out = work.path().join("bad.nt");
    let o = run(Command::new(bin("kgbox-pack"))
        .arg("export")
        .arg(&bad)
        .arg("-o")
        .arg(&out));
    assert!(!o.status.success());
    assert!(!out.exists() && !work.path().join("bad.nt.partial").exists());
}
