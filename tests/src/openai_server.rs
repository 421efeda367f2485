//! A small local HTTP/1.1 server that speaks the OpenAI chat-completions
//! protocol, for end-to-end tests of the LLM planner.
//!
//! The product talks to OpenAI-compatible endpoints (llama.cpp server, vLLM,
//! Ollama, remote providers). This test double speaks the same wire protocol
//! over a real socket: `POST …/chat/completions` (plain JSON or SSE when the
//! request asks for `"stream": true`), `GET /v1/models`, OpenAI-style JSON
//! errors, keep-alive and `Connection: close`. Only std is used.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

/// Longest accepted request head (request line plus headers).
const MAX_HEAD_BYTES: u64 = 64 * 1024;
/// Largest accepted request body.
const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// One chat-completions request received by [`FakeLlm`].
#[derive(Debug, Clone)]
pub struct ChatCall {
    /// Request target, e.g. `/v1/chat/completions` (query string included).
    pub path: String,
    /// Headers in arrival order; names as sent (compare case-insensitively).
    pub headers: Vec<(String, String)>,
    /// The request body, parsed.
    pub body: Value,
    /// The request body as received.
    pub raw_body: String,
}

type ReplyFn = dyn Fn(&Value) -> Result<String, (u16, String)> + Send + Sync + 'static;

struct Shared {
    reply: Box<ReplyFn>,
    calls: Mutex<Vec<ChatCall>>,
    stop: AtomicBool,
    /// Completion ids (`chatcmpl-N`).
    next_id: AtomicU64,
    /// Connections accepted so far (lets the tests check keep-alive).
    connections: AtomicUsize,
    /// Open connections, so that `Drop` can shut them down.
    open: Mutex<HashMap<u64, TcpStream>>,
    /// Connection threads, joined on `Drop`.
    workers: Mutex<Vec<JoinHandle<()>>>,
}

/// A fake OpenAI-compatible LLM server on `127.0.0.1`, stopped when dropped.
pub struct FakeLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl FakeLlm {
    /// Starts on 127.0.0.1:0 (a free port) in a background thread. `reply`
    /// gets each request body (parsed JSON) and returns the assistant message
    /// content (a String) to send back, or Err((status, body)) to answer with
    /// that HTTP status and body.
    pub fn start(
        reply: impl Fn(&Value) -> Result<String, (u16, String)> + Send + Sync + 'static,
    ) -> FakeLlm {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind fake LLM server");
        let addr = listener.local_addr().expect("fake LLM server address");
        let shared = Arc::new(Shared {
            reply: Box::new(reply),
            calls: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            next_id: AtomicU64::new(1),
            connections: AtomicUsize::new(0),
            open: Mutex::new(HashMap::new()),
            workers: Mutex::new(Vec::new()),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("fake-llm-accept".into())
                .spawn(move || accept_loop(&listener, &shared))
                .expect("spawn fake LLM acceptor")
        };
        FakeLlm {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// "http://127.0.0.1:PORT/v1" (the base URL a client appends
    /// "/chat/completions" to).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.addr.port())
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Every request received so far, in order.
    pub fn calls(&self) -> Vec<ChatCall> {
        lock(&self.shared.calls).clone()
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Unblock `accept` so that the acceptor sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(2));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        // Wake connection threads blocked reading an idle keep-alive
        // connection; one still inside `reply` finishes and then fails to
        // write, which ends it too.
        for stream in lock(&self.shared.open).values() {
            let _ = stream.shutdown(Shutdown::Both);
        }
        let workers = std::mem::take(&mut *lock(&self.shared.workers));
        for worker in workers {
            let _ = worker.join();
        }
    }
}

/// Locks, ignoring poisoning (a panicking `reply` must not wedge the server).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    let mut next_conn = 0u64;
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let stream = match stream {
            Ok(s) => s,
            Err(_) => {
                // E.g. out of file descriptors: do not spin.
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        shared.connections.fetch_add(1, Ordering::SeqCst);
        let id = next_conn;
        next_conn += 1;
        if let Ok(clone) = stream.try_clone() {
            lock(&shared.open).insert(id, clone);
        }
        let worker = {
            let shared = Arc::clone(shared);
            std::thread::Builder::new()
                .name("fake-llm-conn".into())
                .spawn(move || {
                    serve_connection(stream, &shared);
                    lock(&shared.open).remove(&id);
                })
        };
        let mut workers = lock(&shared.workers);
        workers.retain(|w| !w.is_finished());
        match worker {
            Ok(w) => workers.push(w),
            Err(_) => {
                if let Some(s) = lock(&shared.open).remove(&id) {
                    let _ = s.shutdown(Shutdown::Both);
                }
            }
        }
    }
}

/// A parsed HTTP request.
struct Request {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// Whether the connection stays open after the response.
    keep_alive: bool,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Why a request could not be read.
enum ReadError {
    /// Malformed: answer with this status and message, then close.
    Bad(u16, String),
    /// The socket failed or closed mid-request: just close.
    Io,
}

/// Reads one request. `Ok(None)`: the peer closed cleanly between requests.
fn read_request(reader: &mut BufReader<TcpStream>) -> Result<Option<Request>, ReadError> {
    let mut budget = MAX_HEAD_BYTES;
    let mut read_line = |reader: &mut BufReader<TcpStream>| -> Result<Option<String>, ReadError> {
        let mut line = Vec::new();
        let n = reader
            .by_ref()
            .take(budget)
            .read_until(b'\n', &mut line)
            .map_err(|_| ReadError::Io)?;
        if n == 0 {
            return Ok(None);
        }
        budget -= n as u64;
        if line.last() != Some(&b'\n') {
            if budget == 0 {
                return Err(ReadError::Bad(431, "request head too large".into()));
            }
            return Err(ReadError::Io); // EOF mid-line
        }
        while matches!(line.last(), Some(b'\n' | b'\r')) {
            line.pop();
        }
        String::from_utf8(line)
            .map(Some)
            .map_err(|_| ReadError::Bad(400, "request head is not UTF-8".into()))
    };

    // Request line; tolerate empty lines before it (RFC 9112 §2.2).
    let request_line = loop {
        match read_line(reader)? {
            None => return Ok(None),
            Some(l) if l.is_empty() => continue,
            Some(l) => break l,
        }
    };
    let mut parts = request_line.split_whitespace();
    let (method, target, version) = match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v), None) if v.starts_with("HTTP/1.") => (m, t, v),
        _ => {
            return Err(ReadError::Bad(
                400,
                format!("malformed request line: {request_line:?}"),
            ))
        }
    };
    let (method, target, http10) = (
        method.to_string(),
        target.to_string(),
        version == "HTTP/1.0",
    );

    let mut headers = Vec::new();
    loop {
        let line = match read_line(reader)? {
            None => return Err(ReadError::Io),
            Some(l) => l,
        };
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(ReadError::Bad(
                400,
                format!("malformed header line: {line:?}"),
            ));
        };
        let name = name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(ReadError::Bad(
                400,
                format!("malformed header name: {name:?}"),
            ));
        }
        headers.push((name.to_string(), value.trim().to_string()));
    }

    let mut req = Request {
        method,
        target,
        headers,
        body: Vec::new(),
        keep_alive: false,
    };
    let connection = req.header("connection").unwrap_or("").to_ascii_lowercase();
    let has_token = |t: &str| connection.split(',').any(|c| c.trim() == t);
    req.keep_alive = if http10 {
        has_token("keep-alive")
    } else {
        !has_token("close")
    };

    if req.header("transfer-encoding").is_some() {
        return Err(ReadError::Bad(
            411,
            "chunked request bodies are not supported; send Content-Length".into(),
        ));
    }
    let mut length: Option<usize> = None;
    for (name, value) in &req.headers {
        if !name.eq_ignore_ascii_case("content-length") {
            continue;
        }
        let n: usize = value
            .parse()
            .map_err(|_| ReadError::Bad(400, format!("bad Content-Length: {value:?}")))?;
        if length.is_some_and(|l| l != n) {
            return Err(ReadError::Bad(
                400,
                "conflicting Content-Length headers".into(),
            ));
        }
        length = Some(n);
    }
    let length = length.unwrap_or(0);
    if length > MAX_BODY_BYTES {
        return Err(ReadError::Bad(413, "request body too large".into()));
    }
    if length > 0
        && req
            .header("expect")
            .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"))
    {
        let _ = reader.get_mut().write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    req.body = vec![0; length];
    reader
        .read_exact(&mut req.body)
        .map_err(|_| ReadError::Io)?;
    Ok(Some(req))
}

/// A response to write.
struct Response {
    status: u16,
    content_type: &'static str,
    body: Vec<u8>,
}

impl Response {
    fn json(status: u16, value: &Value) -> Response {
        Response {
            status,
            content_type: "application/json",
            body: value.to_string().into_bytes(),
        }
    }

    fn error(status: u16, message: &str) -> Response {
        let kind = match status {
            401 => "authentication_error",
            404 => "not_found_error",
            429 => "rate_limit_error",
            s if s >= 500 => "server_error",
            _ => "invalid_request_error",
        };
        Response::json(
            status,
            &json!({"error": {"message": message, "type": kind, "param": null, "code": null}}),
        )
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

fn write_response(stream: &mut TcpStream, resp: &Response, keep_alive: bool) -> bool {
    let mut out = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: {}\r\n",
        resp.status,
        reason(resp.status),
        resp.content_type,
        resp.body.len(),
        if keep_alive { "keep-alive" } else { "close" },
    );
    if resp.content_type == "text/event-stream" {
        out.push_str("Cache-Control: no-cache\r\n");
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&resp.body);
    stream.write_all(&bytes).is_ok() && stream.flush().is_ok()
}

fn serve_connection(stream: TcpStream, shared: &Shared) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let req = match read_request(&mut reader) {
            Ok(Some(req)) => req,
            Ok(None) | Err(ReadError::Io) => break,
            Err(ReadError::Bad(status, message)) => {
                write_response(&mut writer, &Response::error(status, &message), false);
                // Lingering close: unread input at close time would make the
                // kernel send a reset, which can destroy the response.
                let _ = writer.shutdown(Shutdown::Write);
                let _ = writer.set_read_timeout(Some(Duration::from_millis(500)));
                let _ = std::io::copy(&mut reader.by_ref().take(1 << 20), &mut std::io::sink());
                break;
            }
        };
        let keep_alive = req.keep_alive && !shared.stop.load(Ordering::SeqCst);
        let resp = route(&req, shared);
        if !write_response(&mut writer, &resp, keep_alive) || !keep_alive {
            break;
        }
    }
    let _ = writer.shutdown(Shutdown::Both);
}

fn route(req: &Request, shared: &Shared) -> Response {
    let path = req.target.split('?').next().unwrap_or("");
    let path = path.trim_end_matches('/');
    match (req.method.as_str(), path) {
        ("POST", p) if p.ends_with("/chat/completions") => chat(req, shared),
        ("GET", "/v1/models" | "/models") => Response::json(
            200,
            &json!({"object": "list", "data": [
                {"id": "fake", "object": "model", "created": 0, "owned_by": "kgbox-testkit"}
            ]}),
        ),
        (method, _) => Response::error(404, &format!("no route for {method} {}", req.target)),
    }
}

fn chat(req: &Request, shared: &Shared) -> Response {
    let Ok(raw_body) = String::from_utf8(req.body.clone()) else {
        return Response::error(400, "request body is not UTF-8");
    };
    let body: Value = match serde_json::from_str(&raw_body) {
        Ok(v) => v,
        Err(e) => return Response::error(400, &format!("request body is not valid JSON: {e}")),
    };
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Response::error(400, "'messages' is required and must be an array");
    };
    let prompt_tokens: usize = messages
        .iter()
        .map(|m| word_count(&content_text(m.get("content"))))
        .sum();
    lock(&shared.calls).push(ChatCall {
        path: req.target.clone(),
        headers: req.headers.clone(),
        body: body.clone(),
        raw_body,
    });

    let reply = catch_unwind(AssertUnwindSafe(|| (shared.reply)(&body)));
    let content = match reply {
        Ok(Ok(content)) => content,
        Ok(Err((status, err_body))) => {
            let is_json = serde_json::from_str::<Value>(&err_body).is_ok();
            return Response {
                status,
                content_type: if is_json {
                    "application/json"
                } else {
                    "text/plain; charset=utf-8"
                },
                body: err_body.into_bytes(),
            };
        }
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "reply panicked".into());
            return Response::error(500, &format!("fake LLM reply panicked: {msg}"));
        }
    };

    let id = format!("chatcmpl-{}", shared.next_id.fetch_add(1, Ordering::SeqCst));
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("fake")
        .to_string();
    let completion_tokens = word_count(&content);
    let usage = json!({
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    });

    if body.get("stream").and_then(Value::as_bool) == Some(true) {
        let include_usage = body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            == Some(true);
        let chunk = |delta: Value, finish: Value| {
            json!({
                "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            })
        };
        let mut events = vec![chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        )];
        for piece in split_pieces(&content) {
            events.push(chunk(json!({"content": piece}), Value::Null));
        }
        events.push(chunk(json!({}), json!("stop")));
        if include_usage {
            events.push(json!({
                "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [], "usage": usage,
            }));
        }
        let mut sse = String::new();
        for event in events {
            sse.push_str(&format!("data: {event}\n\n"));
        }
        sse.push_str("data: [DONE]\n\n");
        return Response {
            status: 200,
            content_type: "text/event-stream",
            body: sse.into_bytes(),
        };
    }

    Response::json(
        200,
        &json!({
            "id": id,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }],
            "usage": usage,
        }),
    )
}

/// Splits streamed content into word-sized pieces (each keeps its trailing
/// whitespace), so that clients must reassemble several deltas.
fn split_pieces(content: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut current = String::new();
    let mut in_space = false;
    for c in content.chars() {
        if in_space && !c.is_whitespace() {
            pieces.push(std::mem::take(&mut current));
        }
        in_space = c.is_whitespace();
        current.push(c);
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

/// The text of a message `content`: a string, or an array of parts whose
/// `text` fields are concatenated.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.as_str()),
                _ => p.get("text").and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Helper: the text of the last `user` message of a chat request body
/// (empty if there is none).
pub fn last_user_message(body: &Value) -> String {
    body.get("messages")
        .and_then(Value::as_array)
        .and_then(|msgs| {
            msgs.iter()
                .rev()
                .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        })
        .map(|m| content_text(m.get("content")))
        .unwrap_or_default()
}

/// Helper: the JSON schema asked for in `response_format`
/// (`{"type":"json_schema","json_schema":{"name":..,"schema":..}}`), if any.
pub fn response_schema(body: &Value) -> Option<Value> {
    let format = body.get("response_format")?;
    if format.get("type").and_then(Value::as_str) != Some("json_schema") {
        return None;
    }
    format.pointer("/json_schema/schema").cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn echo() -> FakeLlm {
        FakeLlm::start(|body| Ok(format!("echo: {}", last_user_message(body))))
    }

    fn chat_body(user: &str) -> String {
        json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "You are a planner."},
                {"role": "user", "content": user},
            ],
        })
        .to_string()
    }

    /// Sends raw bytes and reads until the server closes.
    fn raw(server: &FakeLlm, request: &[u8]) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(request).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    /// The test client: every status a reply, no proxy from the environment.
    fn http() -> ureq::Agent {
        crate::client_any_status(Duration::from_secs(30))
    }

    #[test]
    fn chat_completion_shape() {
        let server = echo();
        assert!(server.base_url().starts_with("http://127.0.0.1:"));
        assert!(server.base_url().ends_with("/v1"));
        let mut resp = http()
            .post(&format!("{}/chat/completions", server.base_url()))
            .header("Content-Type", "application/json")
            .send(&chat_body("find the capital of France"))
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.body().mime_type(), Some("application/json"));
        let v: Value = resp.body_mut().read_json().unwrap();
        assert_eq!(v["object"], "chat.completion");
        assert!(v["id"].as_str().unwrap().starts_with("chatcmpl-"));
        assert!(v["created"].as_u64().unwrap() > 1_600_000_000);
        assert_eq!(v["model"], "test-model");
        assert_eq!(v["choices"][0]["index"], 0);
        assert_eq!(v["choices"][0]["message"]["role"], "assistant");
        assert_eq!(
            v["choices"][0]["message"]["content"],
            "echo: find the capital of France"
        );
        assert_eq!(v["choices"][0]["finish_reason"], "stop");
        let usage = &v["usage"];
        assert_eq!(usage["prompt_tokens"], 9);
        assert_eq!(usage["completion_tokens"], 6);
        assert_eq!(usage["total_tokens"], 15);
    }

    #[test]
    fn keep_alive_and_calls_recorded() {
        let server = echo();
        let agent = http();
        let url = format!("{}/chat/completions", server.base_url());
        for q in ["first", "second"] {
            let v: Value = agent
                .post(&url)
                .header("Content-Type", "application/json")
                .header("Authorization", "Bearer sk-test")
                .send(&chat_body(q))
                .unwrap()
                .body_mut()
                .read_json()
                .unwrap();
            assert_eq!(v["choices"][0]["message"]["content"], format!("echo: {q}"));
        }
        assert_eq!(server.shared.connections.load(Ordering::SeqCst), 1);
        let calls = server.calls();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].path, "/v1/chat/completions");
        assert_eq!(last_user_message(&calls[0].body), "first");
        assert_eq!(last_user_message(&calls[1].body), "second");
        assert_eq!(calls[1].raw_body, chat_body("second"));
        assert!(calls[0]
            .headers
            .iter()
            .any(|(n, v)| n.eq_ignore_ascii_case("authorization") && v == "Bearer sk-test"));
    }

    #[test]
    fn malformed_bodies_give_400() {
        let server = echo();
        let url = format!("{}/chat/completions", server.base_url());
        for body in ["{not json", r#"{"model":"x"}"#, r#"{"messages":"hi"}"#] {
            match http()
                .post(&url)
                .header("Content-Type", "application/json")
                .send(body)
            {
                Ok(mut resp) if resp.status() == 400 => {
                    let v: Value = resp.body_mut().read_json().unwrap();
                    assert_eq!(v["error"]["type"], "invalid_request_error");
                    assert!(v["error"]["message"].is_string());
                }
                other => panic!("expected 400 for {body:?}, got {other:?}"),
            }
        }
        assert!(server.calls().is_empty());
    }

    #[test]
    fn malformed_requests_give_400_and_close() {
        let server = echo();
        let out = raw(&server, b"GARBAGE\r\n\r\n");
        assert!(out.starts_with("HTTP/1.1 400 "), "{out}");
        assert!(out.contains("Connection: close"), "{out}");
        let out = raw(
            &server,
            b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
        );
        assert!(out.starts_with("HTTP/1.1 400 "), "{out}");
        let out = raw(
            &server,
            b"POST /v1/chat/completions HTTP/1.1\r\nno colon here\r\n\r\n",
        );
        assert!(out.starts_with("HTTP/1.1 400 "), "{out}");
        let out = raw(
            &server,
            b"POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        );
        assert!(out.starts_with("HTTP/1.1 411 "), "{out}");
        // The server survives all of that.
        let resp = http()
            .post(&format!("{}/chat/completions", server.base_url()))
            .send(&chat_body("still alive?"))
            .unwrap();
        assert_eq!(resp.status(), 200);
    }

    #[test]
    fn pipelined_requests_and_connection_close() {
        let server = echo();
        let body = chat_body("x");
        let one = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let last = format!(
            "POST /openai/chat/completions HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let out = raw(&server, format!("{one}{one}{last}").as_bytes());
        assert_eq!(out.matches("HTTP/1.1 200 OK").count(), 3, "{out}");
        assert_eq!(out.matches("Connection: keep-alive").count(), 2, "{out}");
        assert!(out.ends_with("}"), "{out}");
        let calls = server.calls();
        assert_eq!(calls.len(), 3);
        assert_eq!(calls[2].path, "/openai/chat/completions");
    }

    #[test]
    fn reply_errors_models_and_404() {
        let server = FakeLlm::start(|body| match last_user_message(body).as_str() {
            "limit" => Err((429, r#"{"error":{"message":"slow down"}}"#.into())),
            "boom" => panic!("reply exploded"),
            _ => Ok("ok".into()),
        });
        let url = format!("{}/chat/completions", server.base_url());
        match http().post(&url).send(&chat_body("limit")) {
            Ok(mut resp) if resp.status() == 429 => {
                assert_eq!(resp.body().mime_type(), Some("application/json"));
                let v: Value = resp.body_mut().read_json().unwrap();
                assert_eq!(v["error"]["message"], "slow down");
            }
            other => panic!("expected 429, got {other:?}"),
        }
        match http().post(&url).send(&chat_body("boom")) {
            Ok(mut resp) if resp.status() == 500 => {
                assert!(resp
                    .body_mut()
                    .read_to_string()
                    .unwrap()
                    .contains("reply exploded"));
            }
            other => panic!("expected 500, got {other:?}"),
        }
        let v: Value = http()
            .get(&format!("{}/models", server.base_url()))
            .call()
            .unwrap()
            .body_mut()
            .read_json()
            .unwrap();
        assert_eq!(v["object"], "list");
        assert_eq!(v["data"][0]["id"], "fake");
        match http().get(&format!("{}/nope", server.base_url())).call() {
            Ok(mut resp) if resp.status() == 404 => {
                let v: Value = resp.body_mut().read_json().unwrap();
                assert!(v["error"]["message"].is_string());
            }
            other => panic!("expected 404, got {other:?}"),
        }
        assert_eq!(server.calls().len(), 2);
    }

    #[test]
    fn streaming_sse() {
        let server = FakeLlm::start(|_| Ok("hello streaming world".into()));
        let body = json!({
            "messages": [{"role": "user", "content": "hi"}],
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        let mut resp = http()
            .post(&format!("{}/chat/completions", server.base_url()))
            .send_json(body)
            .unwrap();
        assert_eq!(resp.body().mime_type(), Some("text/event-stream"));
        let text = resp.body_mut().read_to_string().unwrap();
        let data: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .collect();
        assert_eq!(*data.last().unwrap(), "[DONE]");
        let mut content = String::new();
        let mut finish = None;
        let mut usage = None;
        for d in &data[..data.len() - 1] {
            let v: Value = serde_json::from_str(d).unwrap();
            assert_eq!(v["object"], "chat.completion.chunk");
            assert_eq!(v["model"], "fake");
            if let Some(c) = v["choices"][0]["delta"]["content"].as_str() {
                content.push_str(c);
            }
            if let Some(f) = v["choices"][0]["finish_reason"].as_str() {
                finish = Some(f.to_string());
            }
            if v["usage"].is_object() {
                usage = Some(v["usage"].clone());
            }
        }
        assert!(data.len() > 4, "several deltas: {text}");
        assert_eq!(content, "hello streaming world");
        assert_eq!(finish.as_deref(), Some("stop"));
        assert_eq!(usage.unwrap()["completion_tokens"], 3);
    }

    #[test]
    fn helpers() {
        let body = json!({
            "messages": [
                {"role": "user", "content": "old"},
                {"role": "assistant", "content": "answer"},
                {"role": "user", "content": [{"type": "text", "text": "new "}, {"type": "text", "text": "question"}]},
                {"role": "tool", "content": "result"},
            ],
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "plan", "strict": true, "schema": {"type": "object"}
            }},
        });
        assert_eq!(last_user_message(&body), "new question");
        assert_eq!(response_schema(&body), Some(json!({"type": "object"})));
        assert_eq!(last_user_message(&json!({})), "");
        assert_eq!(
            response_schema(&json!({"response_format": {"type": "json_object"}})),
            None
        );
        assert_eq!(response_schema(&json!({"messages": []})), None);
        assert_eq!(split_pieces("a bc  d"), vec!["a ", "bc  ", "d"]);
    }

    #[test]
    fn drop_with_idle_keep_alive_connection() {
        let server = echo();
        let agent = http();
        agent
            .post(&format!("{}/chat/completions", server.base_url()))
            .send(&chat_body("x"))
            .unwrap()
            .body_mut()
            .read_to_string()
            .unwrap();
        // The pooled connection is idle in the server's read: drop must not hang.
        drop(server);
    }
}
