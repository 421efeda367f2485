//! A request's options are checked once, for every service: `/v1/query`,
//! `/v1/ask`, `kgbox query` and `kgbox ask` refuse the same bad `top_k`,
//! `paths` and `seppr_k` with the same error.
#![allow(clippy::unwrap_used)]

use serde_json::json;

use kgbox_testkit::*;

const QUERY: &str = "\"Malcolm X\" -> directed_by";
const QUESTION: &str = "who directed [Malcolm X]";

#[test]
fn query_and_ask_refuse_the_same_bad_options_alike() {
    let device = Device::new(&[], "");
    let server = device.serve();
    let cases = [
        ("top_k", json!(0)),
        ("top_k", json!(1_000_000)),
        ("paths", json!(500)),
        ("seppr_k", json!(0)),
        ("seppr_k", json!(100_000_000)),
    ];
    for (field, value) in cases {
        let mut query = json!({ "query": QUERY });
        query[field] = value.clone();
        let mut ask = json!({ "question": QUESTION });
        ask[field] = value.clone();
        let (sq, q) = server.post_json("/v1/query", &query);
        let (sa, a) = server.post_json("/v1/ask", &ask);
        assert_eq!((sq, sa), (400, 400), "{field} = {value}: {q} / {a}");
        assert_eq!(q["error"], a["error"], "{field} = {value}");
        assert_eq!(q["error"]["code"], "bad_request", "{q}");
        let message = q["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(field), "{field}: {message}");
    }
    // At the limit, both answer.
    let (sq, q) = server.post_json("/v1/query", &json!({"query": QUERY, "paths": 100}));
    assert_eq!(sq, 200, "{q}");
    assert_eq!(answer_names(&q), ["Spike Lee"], "{q}");
    let (sa, a) = server.post_json("/v1/ask", &json!({"question": QUESTION, "paths": 100}));
    assert_eq!(sa, 200, "{a}");
    assert_eq!(answer_names(&a)[0], "Spike Lee", "{a}");
}

#[test]
fn the_commands_refuse_bad_options_as_the_routes_do() {
    let device = Device::new(&[], "");
    let server = device.serve();
    let (_, http) = server.post_json("/v1/query", &json!({"query": QUERY, "top_k": 0}));
    let message = http["error"]["message"].as_str().unwrap().to_string();
    for args in [
        vec!["query", QUERY, "--top-k", "0"],
        vec!["ask", QUESTION, "--top-k", "0"],
    ] {
        let out = device.kgbox(&args);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(
            stderr(&out).contains(&message),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let out = device.kgbox(&["query", QUERY, "--seppr-k", "0"]);
    assert!(
        stderr(&out).contains("seppr_k must be between 1 and"),
        "{}",
        stderr(&out)
    );
}
