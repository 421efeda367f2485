//! Multi-strategy retrieval end to end: real `kgbox serve` with the `llm`
//! planner against a local OpenAI-compatible server. The planned query
//! finds nothing; path following answers one question, triplet retrieval
//! (after the LLM picks no path) the other. The response lists the
//! strategies with their yields, `/metrics` counts them, and no request
//! body or audit line carries a triple of the graph.
#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};

use kgbox_testkit::openai_server::{last_user_message, response_schema, FakeLlm};
use kgbox_testkit::*;

/// Characters that no movie title of the questions may have.
const PLAIN: &[char] = &['"', '[', ':'];

/// The `enum` of the reply schema's array property `field`.
fn offered(body: &Value, field: &str) -> Vec<String> {
    response_schema(body)
        .and_then(|s| s["properties"][field]["items"]["enum"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|v| v.as_str().map(String::from))
        .collect()
}

fn schema_name(body: &Value) -> String {
    body.pointer("/response_format/json_schema/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// (name, llm_calls, candidates, answered) of each strategy in a response.
fn strategies(v: &Value) -> Vec<(String, u64, u64, bool)> {
    v["strategies"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["llm_calls"].as_u64().unwrap(),
                s["candidates"].as_u64().unwrap(),
                s["answered"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
fn an_empty_query_falls_through_to_paths_and_triplets() {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::new(dir.path(), "strategies", 41);
    let bundle = dir.path().join("movies.kgb");
    pack_demo("strategies-demo", &keys, &bundle, &[]);

    let (directed, director) = demo_facts("directed_by", PLAIN).into_iter().nth(3).unwrap();
    let (written, writer) = demo_facts("written_by", PLAIN)
        .into_iter()
        .find(|(m, _)| *m != directed)
        .unwrap();
    let (d_movie, w_movie) = (directed.clone(), written.clone());
    let (d_answer, w_answer) = (director.clone(), writer.clone());
    let llm = FakeLlm::start(move |body| {
        let user = last_user_message(body);
        let about_director = user.contains("who directed");
        match schema_name(body).as_str() {
            // A query that binds but reaches nothing: a film directs nothing.
            "kgbox_query" => {
                let movie = if about_director { &d_movie } else { &w_movie };
                Ok(json!({"query": format!("\"{movie}\" -> directed_by_inv")}).to_string())
            }
            "kgbox_paths" if about_director => {
                let choice = format!("{d_movie}: directed_by");
                if !offered(body, "paths").contains(&choice) {
                    return Err((400, format!("{choice} not offered")));
                }
                Ok(json!({"paths": [choice]}).to_string())
            }
            "kgbox_paths" => Ok(json!({"paths": []}).to_string()),
            "kgbox_relations" => {
                if !offered(body, "relations").contains(&"written_by".to_string()) {
                    return Err((400, "written_by not offered".into()));
                }
                Ok(json!({"relations": ["written_by"], "reached_answer": "yes"}).to_string())
            }
            "kgbox_final_answer" => {
                let want = if about_director { &d_answer } else { &w_answer };
                Ok(json!({"answers": [want]}).to_string())
            }
            other => Err((400, format!("unexpected schema {other:?}"))),
        }
    });
    let audit = dir.path().join("audit.jsonl");
    let config = LlmConfig {
        mode: "remote",
        endpoint: &llm.base_url(),
        audit_log: &audit,
        planner: "repair = false",
        llm: "",
    };
    let device = Device::new(&[&keys.public], &config.toml());
    device.install_ok(&bundle);
    let server = device.serve();

    // Path following answers.
    let (status, v) = server.post_json(
        "/v1/ask",
        &json!({"question": format!("who directed [{directed}]")}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(answer_names(&v), std::slice::from_ref(&director), "{v}");
    assert_eq!(v["query"], format!("\"{directed}\" -> directed_by_inv"));
    assert_eq!(v["arbitration"]["method"], "llm");
    let s = strategies(&v);
    assert_eq!(
        s.iter().map(|s| s.0.as_str()).collect::<Vec<_>>(),
        ["query", "paths", "final_answer"],
        "{v}"
    );
    assert_eq!(s[0], ("query".into(), 1, 0, false));
    assert_eq!(s[1], ("paths".into(), 1, 1, true));
    assert_eq!(s[2], ("final_answer".into(), 1, 1, true));
    assert_eq!(
        v["strategies"][1]["followed"][0],
        format!("\"{directed}\" -> directed_by")
    );
    assert_eq!(v["answers"][0]["paths"][0][0][1], "directed_by");
    assert!(v["timings_ms"]["strategies"].as_f64().unwrap() >= 0.0);

    // No path chosen: triplet retrieval answers.
    let (status, v) = server.post_json(
        "/v1/ask",
        &json!({"question": format!("who is the writer of [{written}]")}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(answer_names(&v), std::slice::from_ref(&writer), "{v}");
    let s = strategies(&v);
    assert_eq!(
        s.iter().map(|s| s.0.as_str()).collect::<Vec<_>>(),
        ["query", "paths", "triplets", "final_answer"],
        "{v}"
    );
    assert_eq!(s[1], ("paths".into(), 1, 0, false));
    assert_eq!(s[2], ("triplets".into(), 1, 1, true));
    assert_eq!(v["strategies"][2]["followed"][0], "written_by");

    // The metrics moved.
    let (_, metrics) = server.get("/metrics");
    for (series, n) in [
        ("kgbox_retrieval_strategy_uses_total{strategy=\"query\"}", 2),
        (
            "kgbox_retrieval_strategy_answers_total{strategy=\"query\"}",
            0,
        ),
        ("kgbox_retrieval_strategy_uses_total{strategy=\"paths\"}", 2),
        (
            "kgbox_retrieval_strategy_answers_total{strategy=\"paths\"}",
            1,
        ),
        (
            "kgbox_retrieval_strategy_uses_total{strategy=\"triplets\"}",
            1,
        ),
        (
            "kgbox_retrieval_strategy_answers_total{strategy=\"triplets\"}",
            1,
        ),
        (
            "kgbox_retrieval_strategy_uses_total{strategy=\"final_answer\"}",
            2,
        ),
        (
            "kgbox_retrieval_strategy_answers_total{strategy=\"final_answer\"}",
            2,
        ),
        ("kgbox_llm_calls_total{purpose=\"paths\"}", 2),
        ("kgbox_llm_calls_total{purpose=\"triplets\"}", 1),
        ("kgbox_llm_calls_total{purpose=\"final_answer\"}", 2),
    ] {
        assert_eq!(metric_in(&metrics, series), n, "{series}");
    }

    // Every call was audited, and no triple left the box.
    let calls = llm.calls();
    assert_eq!(
        calls.len(),
        7,
        "plan, paths, final; plan, paths, triplets, final"
    );
    let log = std::fs::read_to_string(&audit).unwrap();
    let requests: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["event"] == "request")
        .collect();
    let purposes: Vec<&str> = requests
        .iter()
        .map(|r| r["purpose"].as_str().unwrap())
        .collect();
    assert_eq!(
        purposes,
        [
            "plan",
            "paths",
            "final_answer",
            "plan",
            "paths",
            "triplets",
            "final_answer"
        ]
    );
    let mut bodies: Vec<String> = calls.iter().map(|c| c.raw_body.clone()).collect();
    bodies.push(log);
    assert_eq!(leaked(&bodies, &triple_forms()), Vec::<String>::new());

    // Off for one request: only the planner's call, the planned query's answer.
    let (status, v) = server.post_json(
        "/v1/ask",
        &json!({"question": format!("who directed [{directed}]"), "strategies": false}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["answers"], json!([]), "{v}");
    assert!(strategies(&v).iter().all(|s| s.0 == "query"), "{v}");
    assert_eq!(llm.calls().len(), 8, "one more call: the plan");
}
