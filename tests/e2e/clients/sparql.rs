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
    let (status, v) = server.post(
        "/sparql",
        "application/sparql-query",
        "SELECT ?x WHERE { ?x",
    );
    assert_eq!(status, 400, "{v}");
    let v: Value = serde_json::from_str(&v).unwrap();
    assert_eq!(v["error"]["code"], "sparql_syntax", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("syntax") && !message.contains("Word("),
        "{message}"
    );
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
fn queries_beyond_the_translator_are_evaluated_over_the_graph() {
    let device = Device::new(
        &[],
        "[query]\nmax_sparql_rows = 500\n[http]\nrequest_timeout_ms = 3000",
    );
    let server = device.serve();
    let sparql = |query: &str, accept: &str| {
        let mut r = client_any_status(Duration::from_secs(30))
            .post(&format!("http://127.0.0.1:{}/sparql", server.port))
            .header("Content-Type", "application/sparql-query");
        if !accept.is_empty() {
            r = r.header("Accept", accept);
        }
        let r = r.send(query).unwrap();
        let media = header(&r, "content-type");
        let (status, body) = status_and_text(r);
        (status, media, body)
    };
    let json = |query: &str| {
        let (status, _, body) = sparql(query, "");
        assert_eq!(status, 200, "{query}: {body}");
        serde_json::from_str::<Value>(&body).unwrap()
    };
    let count = |v: &Value| v["results"]["bindings"].as_array().unwrap().len();
    // YASGUI's first query, a variable predicate, two columns, OPTIONAL, COUNT.
    assert_eq!(count(&json("SELECT * WHERE { ?s ?p ?o } LIMIT 10")), 10);
    let about = json(&format!("SELECT ?p ?o WHERE {{ <{E}Malcolm%20X> ?p ?o }}"));
    assert!(
        column(&about, "p").contains(&format!("{R}directed_by")),
        "{about}"
    );
    assert!(
        column(&about, "o").contains(&format!("{E}Spike%20Lee")),
        "{about}"
    );
    let opt = json(&format!(
        "SELECT ?m ?w WHERE {{ ?m <{R}directed_by> <{E}Spike%20Lee> OPTIONAL {{ ?m <{R}written_by> ?w }} }}"
    ));
    assert!(
        column(&opt, "m").contains(&format!("{E}Malcolm%20X")),
        "{opt}"
    );
    let n = json(&format!(
        "SELECT (COUNT(?m) AS ?n) WHERE {{ ?m <{R}directed_by> <{E}Spike%20Lee> }}"
    ));
    let films = json(&format!(
        "SELECT ?m WHERE {{ ?m <{R}directed_by> <{E}Spike%20Lee> }}"
    ));
    assert_eq!(
        column(&n, "n"),
        BTreeSet::from([count(&films).to_string()]),
        "{n}"
    );
    // ASK over a multi-hop pattern equals "SELECT has a row".
    let (_, _, ask) = sparql(
        &format!("ASK {{ ?m <{R}directed_by> ?d . ?d ^<{R}directed_by> <{E}Malcolm%20X> }}"),
        "",
    );
    assert_eq!(
        serde_json::from_str::<Value>(&ask).unwrap()["boolean"],
        true,
        "{ask}"
    );
    // CONSTRUCT and DESCRIBE as Turtle or N-Triples, by Accept.
    let construct = format!(
        "CONSTRUCT {{ ?d <http://example.org/directed> ?m }} WHERE {{ ?m <{R}directed_by> <{E}Spike%20Lee> . ?m <{R}directed_by> ?d }}"
    );
    let (status, media, nt) = sparql(&construct, "application/n-triples");
    assert_eq!(status, 200, "{nt}");
    assert!(media.starts_with("application/n-triples"), "{media}");
    assert!(
        nt.contains(&format!(
            "<{E}Spike%20Lee> <http://example.org/directed> <{E}Malcolm%20X> ."
        )),
        "{nt}"
    );
    let (status, media, ttl) = sparql(&format!("DESCRIBE <{E}Malcolm%20X>"), "text/turtle");
    assert_eq!(status, 200, "{ttl}");
    assert!(media.starts_with("text/turtle"), "{media}");
    assert!(ttl.contains("directed_by"), "{ttl}");
    // Bounded: too many rows is a 422, a cartesian aggregate stops at the
    // request deadline with a 408.
    let (status, _, body) = sparql("SELECT * WHERE { ?a ?p ?b . ?c ?q ?d }", "");
    assert_eq!(status, 422, "{body}");
    assert!(
        body.contains("result_too_large") && body.contains("LIMIT"),
        "{body}"
    );
    let t = std::time::Instant::now();
    let (status, _, body) = sparql(
        "SELECT (COUNT(*) AS ?n) WHERE { ?a ?p ?b . ?c ?q ?d . ?e ?r ?f . ?g ?s ?h }",
        "",
    );
    assert_eq!(status, 408, "{body}");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    // The worst query fuzzing found (its parse took minutes): a quick 400.
    let worst = std::fs::read_to_string(
        repo_root().join("fuzz/regressions/sparql/nested-negations-parse-for-minutes"),
    )
    .unwrap();
    let t = std::time::Instant::now();
    let (status, _, body) = sparql(&worst, "");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("sparql_syntax"), "{body}");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    // The server still answers.
    assert_eq!(count(&json("SELECT * WHERE { ?s ?p ?o } LIMIT 3")), 3);
}

/// A reply's header (every line of it, joined), lower-cased; "" when absent.
fn header(r: &ureq::http::Response<ureq::Body>, name: &str) -> String {
    r.headers()
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(", ")
        .to_ascii_lowercase()
}

#[test]
fn accept_negotiation_vary_and_one_charset() {
    let device = Device::new(&[], "");
    let server = device.serve();
    let q = format!("SELECT ?m WHERE {{ ?m <{R}directed_by> <{E}Spike%20Lee> }}");
    let url = format!(
        "http://127.0.0.1:{}/sparql?query={}",
        server.port,
        encode(&q)
    );
    let agent = client_any_status(Duration::from_secs(30));
    let call = |accept: &str| {
        let mut r = agent.get(&url);
        if !accept.is_empty() {
            r = r.header("Accept", accept);
        }
        r.call().unwrap()
    };
    for (accept, status, media) in [
        ("", 200, "application/sparql-results+json"),
        ("*/*", 200, "application/sparql-results+json"),
        ("text/*", 200, "text/csv"),
        ("application/json", 200, "application/sparql-results+json"),
        ("image/png, text/csv;q=0.1", 200, "text/csv"),
        (
            "application/sparql-results+xml;q=0.5, text/tab-separated-values",
            200,
            "text/tab-separated-values",
        ),
        ("image/png", 406, "application/json"),
        ("text/html, application/xhtml+xml", 406, "application/json"),
    ] {
        let r = call(accept);
        let content_type = header(&r, "content-type");
        assert_eq!(r.status().as_u16(), status, "Accept: {accept}");
        assert!(
            content_type.starts_with(media),
            "Accept: {accept}: {content_type}"
        );
        assert!(
            content_type.matches("charset").count() <= 1,
            "Accept: {accept}: {content_type}"
        );
        assert_eq!(header(&r, "vary"), "accept", "Accept: {accept}");
        if status == 406 {
            let (_, body) = status_and_text(r);
            let v: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(v["error"]["code"], "not_acceptable", "{v}");
            assert!(
                v["error"]["message"].as_str().unwrap().contains("text/csv"),
                "{v}"
            );
        }
    }
    // The format parameter wins over Accept; errors vary by Accept too.
    let r = agent
        .get(&format!("{url}&format=tsv"))
        .header("Accept", "image/png")
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(header(&r, "content-type").starts_with("text/tab-separated-values"));
    let r = agent
        .get(&format!(
            "http://127.0.0.1:{}/sparql?query=SELECT",
            server.port
        ))
        .call()
        .unwrap();
    assert_eq!(
        (r.status().as_u16(), header(&r, "vary")),
        (400, "accept".to_string())
    );
}

#[test]
fn cors_is_off_by_default_and_covers_only_the_configured_origins() {
    let preflight = |server: &Server, path: &str, origin: &str| {
        client_any_status(Duration::from_secs(30))
            .options(&format!("http://127.0.0.1:{}{path}", server.port))
            .header("Origin", origin)
            .header("Access-Control-Request-Method", "POST")
            .header("Access-Control-Request-Headers", "content-type")
            .call()
            .unwrap()
    };
    let get_from = |server: &Server, path: &str, origin: &str| {
        client_any_status(Duration::from_secs(30))
            .get(&format!("http://127.0.0.1:{}{path}", server.port))
            .header("Origin", origin)
            .call()
            .unwrap()
    };
    let page = "http://localhost:8000";
    let ask = format!(
        "/sparql?query={}",
        encode(&format!("ASK {{ ?m <{R}directed_by> <{E}Spike%20Lee> }}"))
    );

    // Off by default: no CORS header, so a browser keeps the reply from the page.
    let device = Device::new(&[], "");
    let server = device.serve();
    let r = get_from(&server, &ask, page);
    assert_eq!(header(&r, "access-control-allow-origin"), "");
    let r = preflight(&server, "/sparql", page);
    assert_eq!(header(&r, "access-control-allow-origin"), "");
    drop(server);

    // One origin configured: it is allowed on /sparql, the API and the facade.
    let device = Device::new(&[], &format!("[http]\ncors_origins = [\"{page}\"]"));
    let server = device.serve();
    for path in ["/sparql", "/v1/query", "/v1/ask", "/v1/chat/completions"] {
        let r = preflight(&server, path, page);
        assert!(r.status().is_success(), "{path}: {}", r.status());
        assert_eq!(header(&r, "access-control-allow-origin"), page, "{path}");
        assert!(
            header(&r, "access-control-allow-methods").contains("post"),
            "{path}"
        );
        assert!(
            header(&r, "access-control-allow-headers").contains("content-type"),
            "{path}"
        );
    }
    let r = get_from(&server, &ask, page);
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(header(&r, "access-control-allow-origin"), page);
    assert!(
        header(&r, "vary").contains("origin"),
        "{}",
        header(&r, "vary")
    );
    // Another origin, and the admin endpoints, get no CORS.
    let r = get_from(&server, &ask, "http://evil.example");
    assert_eq!(header(&r, "access-control-allow-origin"), "");
    let r = preflight(&server, "/v1/bundles/rollback", page);
    assert_eq!(header(&r, "access-control-allow-origin"), "");
    drop(server);

    // A bad origin is a config error naming it.
    let device = Device::new(&[], "[http]\ncors_origins = [\"localhost:8000/\"]");
    let o = device.kgbox(&["config", "check"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("cors_origins") && stderr(&o).contains("localhost:8000/"),
        "{}",
        stderr(&o)
    );
    // So is a row limit of zero.
    let device = Device::new(&[], "[query]\nmax_sparql_rows = 0");
    let o = device.kgbox(&["config", "check"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("max_sparql_rows"), "{}", stderr(&o));
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
/// the same answers, and its ASK form is true exactly when it has a row.
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
    let (mut answers_seen, mut asks, mut empty) = (0, 0, 0);
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
        // ASK over the same pattern is true exactly when the SELECT has a row.
        let (head, pattern) = sparql.split_once(" WHERE ").unwrap();
        assert!(head.ends_with("SELECT DISTINCT ?x"), "{sparql}");
        let ask = format!("{} ASK WHERE {pattern}", &head[..head.len() - 18]);
        let (status, body) = server.post("/sparql", "application/sparql-query", &ask);
        assert_eq!(status, 200, "{ask}: {body}");
        let asked: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(asked["boolean"], json!(!got.is_empty()), "{ask}");
        asks += 1;
        empty += usize::from(got.is_empty());
    }
    assert!(answers_seen > 1000, "{answers_seen} answers in all");
    assert_eq!(asks, gold.len());
    eprintln!("{asks} ASK forms agree with their SELECT ({empty} without rows)");
}

/// A bundle with its RDF statements is bounded as the question-answering
/// graph is: too many rows is a 422, a cartesian aggregate a 408 at the
/// request deadline, and the worst query fuzzing found a quick 400.
#[test]
fn rdf_statement_queries_are_bounded() {
    let work = tempfile::tempdir().unwrap();
    let keys = Keys::new(work.path(), "operator", 1);
    let src = repo_root().join("benches/owngraph/starwars/graph.nt.gz");
    let bundle = work.path().join("starwars.kgb");
    pack(&src, "starwars", "1.0.0", &keys, &bundle, &[]);
    let device = Device::new(
        &[&keys.public],
        "[query]\nmax_sparql_rows = 500\n[http]\nrequest_timeout_ms = 2000",
    );
    device.install_ok(&bundle);
    let server = device.serve();
    let sparql = |q: &str| server.post("/sparql", "application/sparql-query", q);
    let (status, body) = sparql("SELECT * WHERE { ?s ?p ?o }");
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("result_too_large"), "{body}");
    let t = std::time::Instant::now();
    let (status, body) = sparql("SELECT (COUNT(*) AS ?n) WHERE { ?a ?p ?b . ?c ?q ?d . ?e ?r ?f }");
    assert_eq!(status, 408, "{body}");
    assert!(body.contains("timeout"), "{body}");
    assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());
    let worst = std::fs::read_to_string(
        repo_root().join("fuzz/regressions/sparql/nested-negations-parse-for-minutes"),
    )
    .unwrap();
    let t = std::time::Instant::now();
    let (status, body) = sparql(&worst);
    assert_eq!(status, 400, "{body}");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    // Still answering, from the file's own statements: 10,762 of them.
    let (status, body) = sparql("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }");
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["results"]["bindings"][0]["n"]["value"], "10762", "{v}");
}
