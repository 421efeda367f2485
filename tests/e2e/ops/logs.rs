//! The log of `kgbox serve` (docs/operations.md, "Logs"): with
//! `log.format = "json"` every stderr line is one JSON object; no line is
//! coloured when stderr is not a terminal, in either format; every HTTP
//! request has exactly one access line (target `kgbox::access`) naming its
//! route template, status and request id; the id a client sends in
//! `x-request-id` is echoed and logged when it is sane, else a new one is.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use kgbox_testkit::*;

const ASK: &str = r#"{"question": "who directed [Blade Runner]"}"#;
const QUERY: &str = r#"{"query": "\"Blade Runner\" -> directed_by"}"#;

/// One request, and the route and status its access line must name.
struct Case {
    method: &'static str,
    path: &'static str,
    body: Option<&'static str>,
    route: &'static str,
    status: u16,
}

const fn case(
    method: &'static str,
    path: &'static str,
    body: Option<&'static str>,
    route: &'static str,
    status: u16,
) -> Case {
    Case {
        method,
        path,
        body,
        route,
        status,
    }
}

/// Several routes, with 400s, 403s, 404s (matched and not), 405s and 422s.
static CASES: [Case; 26] = [
    case("GET", "/healthz", None, "/healthz", 200),
    case("GET", "/v2/health/live", None, "/v2/health/live", 200),
    case("GET", "/v2/health/ready", None, "/v2/health/ready", 200),
    case("GET", "/v1/status", None, "/v1/status", 200),
    case("GET", "/metrics", None, "/metrics", 200),
    case("GET", "/openapi.json", None, "/openapi.json", 200),
    case("GET", "/v1/models", None, "/v1/models", 200),
    case("GET", "/", None, "/", 200),
    case(
        "GET",
        "/v1/entities/Blade%20Runner",
        None,
        "/v1/entities/{*name}",
        200,
    ),
    case(
        "GET",
        "/v1/entities/No%20Such%20Film%20Ever",
        None,
        "/v1/entities/{*name}",
        404,
    ),
    case(
        "GET",
        "/v1/entities/Blade%20Runner?limit=abc",
        None,
        "/v1/entities/{*name}",
        400,
    ),
    // An ESC in the path: the access line names the route, not the path.
    case(
        "GET",
        "/v1/entities/%1B%5B31mred%1B%5B0m",
        None,
        "/v1/entities/{*name}",
        404,
    ),
    case("GET", "/v1/nothing-here", None, "unmatched", 404),
    case("GET", "/v1/%1B%5B31m", None, "unmatched", 404),
    case("DELETE", "/healthz", None, "/healthz", 405),
    case("GET", "/v1/query", None, "/v1/query", 405),
    case("POST", "/v1/query", Some(QUERY), "/v1/query", 200),
    case("POST", "/v1/query", Some("not json"), "/v1/query", 400),
    case(
        "POST",
        "/v1/query",
        Some(r#"{"colour": "red"}"#),
        "/v1/query",
        422,
    ),
    case(
        "POST",
        "/v1/link",
        Some(r#"{"text": "who directed [Blade Runner]"}"#),
        "/v1/link",
        200,
    ),
    case("POST", "/v1/ask", Some(ASK), "/v1/ask", 200),
    case(
        "POST",
        "/v1/ask",
        Some(r#"{"question": 5}"#),
        "/v1/ask",
        422,
    ),
    case("GET", "/sparql", None, "/sparql", 400),
    case("PUT", "/v1/bundles", Some("{}"), "/v1/bundles", 403),
    case(
        "POST",
        "/v1/bundles/rollback",
        None,
        "/v1/bundles/rollback",
        403,
    ),
    case("GET", "/v1/bundle", None, "/v1/bundle", 200),
];

/// The `x-request-id` a request sends.
enum Sent {
    /// Sane: echoed and logged as it is.
    Sane(String),
    Missing,
    /// Not sane: replaced by a new id.
    Insane(String),
}

/// A request's id as sent (varied over the cases) and as echoed.
struct Done {
    case: &'static Case,
    sent: Sent,
    id: String,
}

fn is_generated(id: &str) -> bool {
    id.len() == 32
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Sends every case once, `x-request-id` sane (one 128 bytes long), missing
/// or not sane (a space, 129 bytes), checking the status and the echo.
fn send_all(server: &Server, tag: &str) -> Vec<Done> {
    let mut done = Vec::new();
    for (i, case) in CASES.iter().enumerate() {
        let sent = match i % 5 {
            0 | 1 => Sent::Sane(format!("{tag}-{i}")),
            2 => Sent::Sane(format!("{:x<128}", format!("{tag}/{i}:"))),
            3 if i % 2 == 0 => Sent::Missing,
            3 => Sent::Insane(format!("{tag} {i}")),
            _ => Sent::Insane(format!("{:x<129}", format!("{tag}-{i}-"))),
        };
        let headers: Vec<(&str, &str)> = match &sent {
            Sent::Sane(id) | Sent::Insane(id) => vec![("x-request-id", id.as_str())],
            Sent::Missing => vec![],
        };
        let what = format!("{} {}", case.method, case.path);
        let reply = server.send(case.method, case.path, &headers, case.body);
        assert_eq!(reply.status, case.status, "{what}: {}", reply.body);
        let id = reply
            .header("x-request-id")
            .unwrap_or_else(|| panic!("{what}: no x-request-id in {:?}", reply.headers))
            .to_string();
        match &sent {
            Sent::Sane(mine) => assert_eq!(&id, mine, "{what}"),
            Sent::Missing | Sent::Insane(_) => assert!(is_generated(&id), "{what}: {id:?}"),
        }
        done.push(Done { case, sent, id });
    }
    done
}

/// An access line's fields as text.
type Fields = BTreeMap<String, String>;

/// The access lines of a JSON log (every line must be JSON).
fn json_access_lines(log: &str) -> Vec<Fields> {
    let mut out = Vec::new();
    for line in log.lines() {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("a log line that is not JSON ({e}): {line:?}"));
        assert!(v.is_object(), "{line}");
        for key in ["timestamp", "level", "target"] {
            assert!(v[key].is_string(), "no {key}: {line}");
        }
        if v["target"] != "kgbox::access" {
            continue;
        }
        assert!(v["status"].is_u64(), "{line}");
        assert!(
            v["duration_ms"].as_f64().is_some_and(|d| d >= 0.0),
            "{line}"
        );
        let fields = v
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| {
                let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                (k.clone(), text)
            })
            .collect();
        out.push(fields);
    }
    out
}

/// The access lines of a text log: `... kgbox::access: key=value ...`.
fn text_access_lines(log: &str) -> Vec<Fields> {
    log.lines()
        .filter_map(|line| line.split_once(" kgbox::access: "))
        .map(|(_, fields)| {
            fields
                .split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// Waits until the log has an access line for every id in `done`.
fn wait_for_lines(server: &Server, done: &[Done], parse: fn(&str) -> Vec<Fields>) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let log = server.log();
        let lines = parse(&log);
        let logged = |id: &str| {
            lines
                .iter()
                .any(|f| f.get("request_id").map(String::as_str) == Some(id))
        };
        if done.iter().all(|d| logged(&d.id)) {
            return log;
        }
        assert!(
            Instant::now() < deadline,
            "access lines missing after 30 s: {log}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One access line per request, naming its method, route, status, id and
/// the served bundle's version, and no other access line but /readyz's.
fn check_access_lines(done: &[Done], lines: &[Fields], log: &str) {
    let version = "1.0.0"; // the built-in demo bundle's
    for d in done {
        let what = format!("{} {}", d.case.method, d.case.path);
        let mine: Vec<&Fields> = lines
            .iter()
            .filter(|f| f.get("request_id") == Some(&d.id))
            .collect();
        assert_eq!(mine.len(), 1, "{what}: access lines {mine:?}\n{log}");
        let f = mine[0];
        let field = |k: &str| f.get(k).map(String::as_str);
        assert_eq!(field("method"), Some(d.case.method), "{what}: {f:?}");
        assert_eq!(field("route"), Some(d.case.route), "{what}: {f:?}");
        assert_eq!(
            field("status"),
            Some(d.case.status.to_string().as_str()),
            "{what}: {f:?}"
        );
        assert_eq!(field("bundle_version"), Some(version), "{what}: {f:?}");
        let ms: f64 = field("duration_ms").unwrap_or("x").parse().unwrap_or(-1.0);
        assert!(ms >= 0.0, "{what}: {f:?}");
        if let Sent::Insane(bad) = &d.sent {
            assert!(
                !log.contains(bad.as_str()),
                "{what}: an insane id was logged"
            );
        }
    }
    let others: Vec<&Fields> = lines
        .iter()
        .filter(|f| f.get("route").map(String::as_str) != Some("/readyz"))
        .collect();
    assert_eq!(others.len(), done.len(), "{others:#?}");
    let mut ids: Vec<&str> = done.iter().map(|d| d.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), done.len(), "request ids repeat: {ids:?}");
}

fn assert_no_escape(log: &str) {
    for line in log.lines() {
        assert!(!line.contains('\u{1b}'), "a line with ESC: {line:?}");
    }
}

#[test]
fn json_log_has_one_access_line_per_request() {
    let device = Device::new(&[], "");
    let server = device.serve_with_env(&[("KGBOX_LOG__FORMAT", "json")]);
    let done = send_all(&server, "json");
    let log = wait_for_lines(&server, &done, json_access_lines);
    assert_no_escape(&log);
    // Start-up lines too are JSON, with their message and fields.
    let listening = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| {
            v["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("listening on"))
        })
        .unwrap_or_else(|| panic!("no start-up line: {log}"));
    assert_eq!(listening["level"], "INFO", "{listening}");
    assert!(listening["addr"].is_string(), "{listening}");
    check_access_lines(&done, &json_access_lines(&log), &log);
}

#[test]
fn text_log_is_not_coloured_and_has_one_access_line_per_request() {
    let device = Device::new(&[], "[log]\nformat = \"text\"\n");
    let server = device.serve();
    let done = send_all(&server, "text");
    let log = wait_for_lines(&server, &done, text_access_lines);
    assert_no_escape(&log);
    assert!(log.contains("listening on http://"), "{log}");
    assert!(
        log.lines().all(|l| !l.trim_start().starts_with('{')),
        "JSON lines in a text log: {log}"
    );
    check_access_lines(&done, &text_access_lines(&log), &log);
}

#[test]
fn log_level_filters_access_lines_and_rust_log_wins() {
    // `warn`: no access lines (they are `info`).
    let device = Device::new(&[], "[log]\nlevel = \"warn\"\nformat = \"json\"\n");
    // The log hides the "listening on" line: the port is given.
    let server = Server::start_on(device.command(&["serve"]), free_port());
    assert_eq!(server.get("/healthz").0, 200);
    std::thread::sleep(Duration::from_millis(500));
    let log = server.log();
    assert!(json_access_lines(&log).is_empty(), "{log}");
    drop(server);
    // RUST_LOG wins over log.level.
    let mut cmd = device.command(&["serve"]);
    cmd.env("RUST_LOG", "warn,kgbox::access=info");
    let server = Server::start_on(cmd, free_port());
    let reply = server.send("GET", "/healthz", &[("x-request-id", "rust-log-1")], None);
    assert_eq!(reply.header("x-request-id"), Some("rust-log-1"));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !server.log().contains("rust-log-1") {
        assert!(Instant::now() < deadline, "{}", server.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    let lines = json_access_lines(&server.log());
    assert!(
        lines
            .iter()
            .any(|f| f.get("request_id").map(String::as_str) == Some("rust-log-1")),
        "{lines:?}"
    );
}

#[test]
fn config_check_shows_the_log_table() {
    let device = Device::new(&[], "");
    let o = run(device
        .command(&["config", "check"])
        .env("KGBOX_LOG__FORMAT", "json"));
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("\n[log]\nlevel = \"info\"\nformat = \"json\"  # from KGBOX_LOG__FORMAT\n"),
        "{out}"
    );
    let o = device.kgbox(&["config", "defaults"]);
    assert!(stdout(&o).contains("\n[log]\nlevel = \"info\"\nformat = \"text\"\n"));

    let o = run(device
        .command(&["config", "check"])
        .env("KGBOX_LOG__FORMAT", "xml"));
    assert!(!o.status.success(), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains("log.format") && err.contains("KGBOX_LOG__FORMAT"),
        "{err}"
    );
}
