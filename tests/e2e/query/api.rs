//! `/v1/query` and `/v1/retrieve` over a real socket, on the demo bundle.
#![allow(clippy::unwrap_used)]

use serde_json::json;

use kgbox_testkit::*;

/// Spike Lee directed two films of the demo slice.
const FILM: &str = "Malcolm X";
const OTHER_FILM: &str = "Red Hook Summer";

fn demo_server() -> (Device, Server) {
    let device = Device::new(&[], "[http]\nbody_limit_bytes = 4096");
    let server = device.serve();
    (device, server)
}

#[test]
fn query_answers_with_scores_and_paths() {
    let (_d, server) = demo_server();
    let (status, v) = server.post_json(
        "/v1/query",
        &json!({"query": format!("\"{FILM}\" -> directed_by -> directed_by_inv"), "top_k": 5}),
    );
    assert_eq!(status, 200, "{v}");
    // Spike Lee's other film in the demo, never the anchor itself.
    let got = answer_names(&v);
    assert_eq!(got, [OTHER_FILM], "{v}");
    let a = &v["answers"][0];
    assert_eq!(a["score"], 1.0);
    let path = &a["paths"][0];
    assert_eq!(path[0], json!([FILM, "directed_by", "Spike Lee"]));
    assert_eq!(path[1], json!([OTHER_FILM, "directed_by", "Spike Lee"]));
    for k in ["parse", "bind", "execute", "total"] {
        assert!(v["timings_ms"][k].is_number(), "{v}");
    }

    // Paths off, anchors included.
    let (_, v) = server.post_json(
        "/v1/query",
        &json!({"query": format!("\"{FILM}\" -> directed_by -> directed_by_inv"), "paths": false, "include_anchors": true, "top_k": 100}),
    );
    assert!(answer_names(&v).contains(&FILM.to_string()), "{v}");
    assert!(v["answers"][0].get("paths").is_none());

    // AND with a hub and a NOT.
    let (status, v) = server.post_json(
        "/v1/query",
        &json!({"query": "AND(Drama -> has_genre_inv, NOT(\"Blade Runner\" -> has_genre -> has_genre_inv))", "top_k": 1000}),
    );
    assert_eq!(status, 200, "{v}");
    assert!(v["total"].as_u64().unwrap() > 10);
}

#[test]
fn query_errors_name_the_problem() {
    let (_d, server) = demo_server();
    let cases: Vec<(serde_json::Value, u16, &str)> = vec![
        (
            json!({"query": "\"Blade Runner\" -> "}),
            400,
            "syntax_error",
        ),
        (
            json!({"query": "\"Blade Runer\" -> directed_by"}),
            404,
            "unknown_entity",
        ),
        (
            json!({"query": "\"Blade Runner\" -> directed"}),
            404,
            "unknown_relation",
        ),
        (
            json!({"query": "\"Blade Runner\" -> directed_by", "top_k": 0}),
            400,
            "bad_request",
        ),
        (
            json!({"query": "\"Blade Runner\" -> directed_by", "colour": "red"}),
            422,
            "bad_json",
        ),
        (json!({"querry": "x"}), 422, "bad_json"),
    ];
    for (body, status, code) in cases {
        let (s, v) = server.post_json("/v1/query", &body);
        assert_eq!(
            (s, v["error"]["code"].as_str().unwrap()),
            (status, code),
            "{body}: {v}"
        );
    }
    let (_, v) = server.post_json(
        "/v1/query",
        &json!({"query": "\"Blade Runer\" -> directed_by"}),
    );
    assert_eq!(v["error"]["suggestions"], json!(["Blade Runner"]));
    assert_eq!(
        (v["error"]["line"].as_u64(), v["error"]["column"].as_u64()),
        (Some(1), Some(1))
    );
    let (_, v) = server.post_json(
        "/v1/query",
        &json!({"query": "\"Blade Runner\" -> directed"}),
    );
    assert_eq!(v["error"]["column"], 19);
    assert!(
        v["error"]["snippet"]
            .as_str()
            .unwrap()
            .ends_with("^^^^^^^^"),
        "{v}"
    );

    // Too deep: rejected before any work.
    let deep = format!(
        "{}\"Blade Runner\"{}",
        "OR(".repeat(40),
        ", \"Alien\")".repeat(40)
    );
    let (s, v) = server.post_json("/v1/query", &json!({ "query": deep }));
    assert_eq!(
        (s, v["error"]["code"].as_str().unwrap()),
        (400, "query_too_large"),
        "{v}"
    );

    // Bad JSON, wrong content type, oversize body (the limit is 4096 bytes here).
    let (s, body) = server.post("/v1/query", "application/json", "{\"query\": ");
    assert_eq!(s, 400, "{body}");
    assert!(body.contains("bad_json"), "{body}");
    let (s, body) = server.post("/v1/query", "text/plain", "{\"query\": \"x\"}");
    assert_eq!(s, 415, "{body}");
    assert!(body.contains("unsupported_media_type"), "{body}");
    let big = json!({ "query": "x".repeat(10_000) }).to_string();
    let (s, body) = server.post("/v1/query", "application/json", &big);
    assert_eq!(s, 413, "{body}");
    assert!(body.contains("payload_too_large"), "{body}");

    // The server is still fine.
    let (s, _) = server.post_json(
        "/v1/query",
        &json!({"query": "\"Blade Runner\" -> directed_by"}),
    );
    assert_eq!(s, 200);
}

#[test]
fn retrieve_returns_a_bounded_subgraph() {
    let (_d, server) = demo_server();
    let (s, v) = server.post_json(
        "/v1/retrieve",
        &json!({"entities": ["Blade Runner"], "hops": 1, "max_triples": 1000}),
    );
    assert_eq!(s, 200, "{v}");
    let triples = v["triples"].as_array().unwrap();
    assert_eq!(triples.len(), 29, "{v}");
    assert!(triples.contains(&json!(["Blade Runner", "directed_by", "Ridley Scott"])));
    assert_eq!(v["truncated"], false);

    let (_, v) = server.post_json(
        "/v1/retrieve",
        &json!({"entities": ["Blade Runner"], "hops": 2, "max_triples": 40}),
    );
    assert_eq!(v["triples"].as_array().unwrap().len(), 40);
    assert_eq!(v["truncated"], true);

    let (s, v) = server.post_json("/v1/retrieve", &json!({"entities": ["Blade Runer"]}));
    assert_eq!(
        (s, v["error"]["code"].as_str().unwrap()),
        (404, "unknown_entity"),
        "{v}"
    );
    assert_eq!(v["error"]["suggestions"], json!(["Blade Runner"]));
    for bad in [
        json!({"entities": []}),
        json!({"entities": ["Alien"], "hops": 9}),
        json!({"entities": ["Alien"], "max_triples": 0}),
    ] {
        let (s, v) = server.post_json("/v1/retrieve", &bad);
        assert_eq!(
            (s, v["error"]["code"].as_str().unwrap()),
            (400, "bad_request"),
            "{bad}: {v}"
        );
    }
}

#[test]
fn link_finds_mentions_with_probabilities() {
    let (_d, server) = demo_server();
    let (s, v) = server.post_json(
        "/v1/link",
        &json!({"text": "who directed [Blade Runer] and what did Ridley Scott make"}),
    );
    assert_eq!(s, 200, "{v}");
    let mentions = v["mentions"].as_array().unwrap();
    assert_eq!(mentions.len(), 2, "{v}");
    assert_eq!(mentions[0]["text"], "Blade Runer");
    assert_eq!(mentions[0]["bracketed"], true);
    assert_eq!(mentions[0]["candidates"][0]["name"], "Blade Runner");
    assert_eq!(mentions[0]["candidates"][0]["method"], "fuzzy");
    assert!(
        (mentions[0]["candidates"][0]["probability"]
            .as_f64()
            .unwrap()
            - 1.0)
            .abs()
            < 1e-6
    );
    assert_eq!(mentions[1]["text"], "Ridley Scott");
    assert_eq!(mentions[1]["bracketed"], false);
    assert_eq!(mentions[1]["candidates"][0]["method"], "exact");
    let text = "who directed [Blade Runer] and what did Ridley Scott make";
    let (a, b) = (
        mentions[1]["start"].as_u64().unwrap() as usize,
        mentions[1]["end"].as_u64().unwrap() as usize,
    );
    assert_eq!(&text[a..b], "Ridley Scott");

    let (s, v) = server.post_json("/v1/link", &json!({"text": "x", "top_m": 0}));
    assert_eq!(
        (s, v["error"]["code"].as_str().unwrap()),
        (400, "bad_request"),
        "{v}"
    );
    let (s, v) = server.post_json("/v1/link", &json!({"txt": "x"}));
    assert_eq!(
        (s, v["error"]["code"].as_str().unwrap()),
        (422, "bad_json"),
        "{v}"
    );
    let (s, v) = server.post_json("/v1/link", &json!({"text": "y".repeat(3000)}));
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["mentions"], json!([]));
}

#[test]
fn query_renders_as_cypher_or_sparql_on_request() {
    let (_d, server) = demo_server();
    let q = format!("\"{FILM}\" -> directed_by -> directed_by_inv");
    let (status, v) = server.post_json("/v1/query", &json!({"query": q, "render": "sparql"}));
    assert_eq!(status, 200, "{v}");
    assert_eq!(answer_names(&v), [OTHER_FILM]);
    assert_eq!(v["rendered"]["language"], "sparql");
    let text = v["rendered"]["text"].as_str().unwrap();
    assert!(text.starts_with("SELECT DISTINCT ?x WHERE {"), "{text}");
    let (_, v) = server.post_json("/v1/query", &json!({"query": q, "render": "cypher"}));
    assert!(
        v["rendered"]["text"]
            .as_str()
            .unwrap()
            .starts_with("MATCH "),
        "{v}"
    );
    // Without `render`, no rendering.
    let (_, v) = server.post_json("/v1/query", &json!({"query": q}));
    assert!(v.get("rendered").is_none(), "{v}");
    // OR below the top: SPARQL only.
    let nested = format!("OR(\"Spike Lee\" -> directed_by_inv, \"{FILM}\") -> release_year");
    let (status, v) = server.post_json("/v1/query", &json!({"query": nested, "render": "cypher"}));
    assert_eq!(status, 422, "{v}");
    assert_eq!(v["error"]["code"], "cannot_render");
    let (status, v) = server.post_json("/v1/query", &json!({"query": q, "render": "gremlin"}));
    assert_eq!(status, 422, "{v}");
}

#[test]
fn cypher_and_sparql_input_is_translated_or_refused_by_name() {
    let (_d, server) = demo_server();
    let cypher = format!(
        "MATCH (f:Entity {{name: '{FILM}'}})-[:directed_by]->(d)<-[:directed_by]-(m) RETURN DISTINCT m.name"
    );
    let (status, v) =
        server.post_json("/v1/query", &json!({"query": cypher, "language": "cypher"}));
    assert_eq!(status, 200, "{v}");
    assert_eq!(answer_names(&v), [OTHER_FILM]);
    assert_eq!(
        v["translated"],
        format!("\"{FILM}\" -> directed_by -> directed_by_inv")
    );
    let sparql = "SELECT ?x WHERE { <http://kgbox.local/e/Malcolm%20X> <http://kgbox.local/r/directed_by> ?d . \
                  ?x <http://kgbox.local/r/directed_by> ?d }";
    let (status, v) =
        server.post_json("/v1/query", &json!({"query": sparql, "language": "sparql"}));
    assert_eq!(status, 200, "{v}");
    // SPARQL's semantics: the anchor film is an answer too.
    let mut got = answer_names(&v);
    got.sort();
    assert_eq!(got, [FILM, OTHER_FILM], "{v}");
    // Round trip: a rendering reads back as the same query.
    let (_, r) = server.post_json(
        "/v1/query",
        &json!({"query": format!("\"{FILM}\" -> directed_by -> directed_by_inv"), "render": "sparql"}),
    );
    let (status, v) = server.post_json(
        "/v1/query",
        &json!({"query": r["rendered"]["text"], "language": "sparql"}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(answer_names(&v), [OTHER_FILM], "{v}");
    let (_, r) = server.post_json(
        "/v1/query",
        &json!({"query": format!("AND(\"{FILM}\" -> directed_by -> directed_by_inv, NOT(Drama -> has_genre_inv))"), "render": "cypher"}),
    );
    let (status, v) = server.post_json(
        "/v1/query",
        &json!({"query": r["rendered"]["text"], "language": "cypher"}),
    );
    assert_eq!(status, 200, "{r} {v}");

    for (language, query, code) in [
        (
            "cypher",
            "MATCH (a {name: 'Malcolm X'})-[:directed_by*1..3]->(b) RETURN b",
            "unsupported_construct",
        ),
        (
            "cypher",
            "MATCH (a {name: 'Malcolm X'})-[:directed_by]->(b) WHERE b.born = 1 RETURN b",
            "unsupported_construct",
        ),
        (
            "cypher",
            "MATCH (a)-[:directed_by]->(b) RETURN b",
            "unsupported_shape",
        ),
        (
            "cypher",
            "MATCH (a {name: 'Malcolm X'})-[:directed_by]->(b) RETURN c",
            "syntax_error",
        ),
        (
            "sparql",
            "SELECT ?b WHERE { ?a ?p ?b }",
            "unsupported_construct",
        ),
        (
            "sparql",
            "SELECT ?b WHERE { ?a <http://kgbox.local/r/directed_by> ?b",
            "syntax_error",
        ),
    ] {
        let (status, v) =
            server.post_json("/v1/query", &json!({"query": query, "language": language}));
        assert_ne!(status, 200, "{query}: {v}");
        assert_eq!(v["error"]["code"], code, "{query}: {v}");
    }
}

#[test]
fn query_repair_relaxes_empty_queries_and_tightens_on_request() {
    let (_d, server) = demo_server();
    // Ridley Scott directed no comedy in the demo slice.
    let empty = "AND(\"Ridley Scott\" -> directed_by_inv, \"Comedy\" -> has_genre_inv)";
    let (status, v) = server.post_json("/v1/query", &json!({"query": empty, "repair": "off"}));
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["total"], 0, "{v}");
    assert!(v.get("repair").is_none(), "{v}");

    // By default the query is relaxed and the repaired query answers.
    let (status, v) = server.post_json("/v1/query", &json!({"query": empty}));
    assert_eq!(status, 200, "{v}");
    let r = &v["repair"];
    assert_eq!(r["kind"], "relax", "{v}");
    assert_eq!(r["original"], empty);
    assert_eq!(r["repaired"], "\"Ridley Scott\" -> directed_by_inv");
    assert_eq!(
        r["edits"],
        json!(["dropped AND operand 2: \"Comedy\" -> has_genre_inv"])
    );
    assert_eq!(
        (r["answers_before"].as_u64(), r["answers_after"].as_u64()),
        (Some(0), Some(1))
    );
    assert!(r["candidates"].as_u64().unwrap() >= 2, "{v}");
    assert_eq!(answer_names(&v), ["Blade Runner"]);
    assert_eq!(v["total"], 1);
    assert!(v["timings_ms"]["repair"].is_number(), "{v}");

    // A query with answers is left alone; tightening only when asked.
    let many = "\"Drama\" -> has_genre_inv";
    let (_, v) = server.post_json("/v1/query", &json!({"query": many}));
    assert!(v.get("repair").is_none(), "{v}");
    assert!(v["total"].as_u64().unwrap() > 50, "{v}");
    let (status, v) = server.post_json(
        "/v1/query",
        &json!({"query": many, "max_answers": 5, "tighten_with": ["Spike Lee"]}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["repair"]["kind"], "tighten", "{v}");
    assert_eq!(
        v["repair"]["repaired"],
        "AND(\"Drama\" -> has_genre_inv, \"Spike Lee\" -> directed_by_inv)"
    );
    assert_eq!(answer_names(&v), ["Malcolm X"]);
    let (status, v) = server.post_json("/v1/query", &json!({"query": many, "tighten": true}));
    assert_eq!(status, 200, "{v}");
    assert!(v["repair"]["answers_after"].as_u64().unwrap() <= 50, "{v}");
    assert_eq!(v["total"], v["repair"]["answers_after"], "{v}");

    // Bad repair fields.
    for body in [
        json!({"query": many, "repair": "always"}),
        json!({"query": many, "max_answers": 0}),
        json!({"query": many, "tighten_with": ["Nobody At All"]}),
    ] {
        let (s, v) = server.post_json("/v1/query", &body);
        assert!(s == 400 || s == 404 || s == 422, "{body}: {s} {v}");
    }
}

/// `kgbox query --json` answers through the same query service as
/// `POST /v1/query`: the same JSON for the same query (timings aside),
/// with repair and tightening, and the same error for a bad query.
#[test]
fn cli_query_json_equals_http() {
    let (device, server) = demo_server();
    let without_timings = |mut v: serde_json::Value| {
        assert!(v["timings_ms"]["total"].is_number(), "{v}");
        v.as_object_mut().unwrap().remove("timings_ms");
        if let Some(r) = v["repair"].as_object_mut() {
            r.remove("ms");
        }
        v
    };
    let cases: Vec<(Vec<&str>, serde_json::Value)> = vec![
        (
            vec!["--top-k", "5", "--paths", "2"],
            json!({"query": format!("\"{FILM}\" -> directed_by -> directed_by_inv"), "top_k": 5, "paths": 2}),
        ),
        (
            vec!["--top-k", "100", "--paths", "0", "--include-anchors"],
            json!({"query": format!("\"{FILM}\" -> directed_by -> directed_by_inv"), "top_k": 100, "paths": 0, "include_anchors": true}),
        ),
        // An empty query, relaxed by repair.
        (
            vec!["--top-k", "10", "--paths", "3"],
            json!({"query": format!("AND(\"{FILM}\" -> directed_by -> directed_by_inv, \"Blade Runner\" -> directed_by -> directed_by_inv)"), "top_k": 10, "paths": 3}),
        ),
        // Tightened by an entity.
        (
            vec![
                "--top-k",
                "10",
                "--paths",
                "3",
                "--tighten-with",
                "Spike Lee",
                "--max-answers",
                "5",
            ],
            json!({"query": "Drama -> has_genre_inv", "top_k": 10, "paths": 3, "tighten_with": ["Spike Lee"], "max_answers": 5}),
        ),
    ];
    for (flags, body) in cases {
        let query = body["query"].as_str().unwrap();
        let mut args = vec!["query", "--json"];
        args.extend_from_slice(&flags);
        args.push(query);
        let o = device.kgbox(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let cli: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let (status, http) = server.post_json("/v1/query", &body);
        assert_eq!(status, 200, "{http}");
        assert_eq!(without_timings(cli), without_timings(http), "{query}");
    }
    let o = device.kgbox(&["query", "--json", "\"Blade Runner\" -> directed_bye"]);
    assert!(!o.status.success());
    let (status, http) = server.post_json(
        "/v1/query",
        &json!({"query": "\"Blade Runner\" -> directed_bye"}),
    );
    assert_eq!(status, 404, "{http}");
    let message = http["error"]["message"].as_str().unwrap();
    assert!(stderr(&o).contains(message), "{}\n{http}", stderr(&o));
}
