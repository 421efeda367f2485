//! A client for the OpenAI-compatible chat-completions API (remote
//! providers, llama.cpp server, vLLM, Ollama), over HTTP(S) or HTTP on a
//! unix socket. Every call goes through the audit log first.
//!
//! A reply schema is sent as OpenAI's `response_format: {"type":
//! "json_schema", ...}`. Servers that know only `json_object` (e.g.
//! llama-cpp-python's, which takes the schema beside it) refuse that form
//! and name `response_format` in the error; the client then sends
//! `{"type": "json_object", "schema": ...}` instead, for that call and
//! every later one.

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::audit::AuditLog;
use super::policy::Endpoint;
use super::{
    enough_samples, ChatBackend, ChatRequest, Constraint, LlmError, Sample, SAMPLE_TEMPERATURE,
};

/// Replies larger than this are refused.
pub const MAX_REPLY_BYTES: u64 = 4 << 20;

pub struct OpenAiClient {
    endpoint: Endpoint,
    model: String,
    api_key: Option<String>,
    timeout: Duration,
    agent: ureq::Agent,
    audit: Arc<AuditLog>,
    /// The server refused `json_schema`: send `json_object` with the schema.
    json_object: AtomicBool,
}

impl OpenAiClient {
    pub fn new(
        endpoint: Endpoint,
        model: String,
        api_key: Option<String>,
        timeout: Duration,
        audit: Arc<AuditLog>,
    ) -> OpenAiClient {
        // The whole exchange (connect, send, reply) within `timeout`; error
        // statuses come back as replies (their body is read into
        // `LlmError::Status`); no proxy from the environment (as before: the
        // endpoint the policy checked is the one connected to).
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .proxy(None)
            .build()
            .new_agent();
        OpenAiClient {
            endpoint,
            model,
            api_key,
            timeout,
            agent,
            audit,
            json_object: AtomicBool::new(false),
        }
    }

    /// The request body for `req` (what the audit log records and the wire
    /// carries). With `sample`, the reply's token log-probabilities are
    /// asked for and the sample's number is the seed.
    pub fn body(&self, req: &ChatRequest, sample: Option<u64>) -> Value {
        let mut body = json!({
            "model": self.model,
            "messages": req.messages,
            "temperature": req.temperature,
            "max_tokens": req.max_tokens,
            "stream": false,
        });
        if let Constraint::JsonSchema { name, schema } = &req.constraint {
            body["response_format"] = if self.json_object.load(Ordering::Relaxed) {
                json!({"type": "json_object", "schema": schema})
            } else {
                json!({
                    "type": "json_schema",
                    "json_schema": {"name": name, "schema": schema, "strict": true},
                })
            };
        }
        if let Some(seed) = sample {
            body["logprobs"] = json!(true);
            body["seed"] = json!(seed);
        }
        body
    }

    /// One audited call with `req`'s body as it is now.
    fn call(&self, req: &ChatRequest, sample: Option<u64>) -> Result<Vec<u8>, LlmError> {
        let body = serde_json::to_vec(&self.body(req, sample))
            .map_err(|e| LlmError::BadReply(e.to_string()))?;
        let id = self
            .audit
            .before(&self.endpoint.to_string(), req.purpose, &body)?;
        let t = Instant::now();
        let result = self.post(&body);
        match &result {
            Ok(reply) => self
                .audit
                .after(id, req.purpose, Ok(reply.len()), t.elapsed()),
            Err(e) => self
                .audit
                .after(id, req.purpose, Err(&e.to_string()), t.elapsed()),
        }
        result
    }

    fn post(&self, body: &[u8]) -> Result<Vec<u8>, LlmError> {
        let endpoint = self.endpoint.to_string();
        match &self.endpoint {
            Endpoint::Http { url, host } => {
                let uri =
                    request_uri(&format!("{url}/chat/completions"), host).map_err(|message| {
                        LlmError::Transport {
                            endpoint: endpoint.clone(),
                            message,
                        }
                    })?;
                let mut request = self
                    .agent
                    .post(uri)
                    .header("Content-Type", "application/json");
                if let Some(key) = &self.api_key {
                    request = request.header("Authorization", format!("Bearer {key}"));
                }
                match request.send(body) {
                    Ok(resp) if resp.status().as_u16() < 400 => {
                        read_limited(resp.into_body().into_reader(), &endpoint)
                    }
                    Ok(resp) => {
                        let status = resp.status().as_u16();
                        let retry_after = resp
                            .headers()
                            .get("retry-after")
                            .and_then(|v| v.to_str().ok())
                            .and_then(|v| v.trim().parse::<u64>().ok())
                            .map(Duration::from_secs);
                        let mut text = Vec::new();
                        let _ = resp
                            .into_body()
                            .into_reader()
                            .take(ERROR_BODY_BYTES)
                            .read_to_end(&mut text);
                        Err(LlmError::Status {
                            endpoint,
                            status,
                            body: String::from_utf8_lossy(&text).chars().take(500).collect(),
                            retry_after,
                        })
                    }
                    Err(e) => Err(LlmError::Transport {
                        endpoint,
                        message: e.to_string(),
                    }),
                }
            }
            Endpoint::Unix { socket } => unix_post(
                socket,
                "/v1/chat/completions",
                body,
                self.timeout,
                self.api_key.as_deref(),
            )
            .map_err(|message| LlmError::Transport { endpoint, message })
            .and_then(|(status, reply)| {
                if (200..300).contains(&status) {
                    Ok(reply)
                } else {
                    Err(LlmError::Status {
                        endpoint: self.endpoint.to_string(),
                        status,
                        body: String::from_utf8_lossy(&reply).chars().take(500).collect(),
                        retry_after: None,
                    })
                }
            }),
        }
    }
}

/// The part of an error reply's body read (its first 500 characters are kept).
const ERROR_BODY_BYTES: u64 = 64 << 10;

/// `target` as the HTTP client reads it (`http::Uri`), refused unless it
/// names `host`, the host the LLM policy checked (read from the same
/// string by the `url` crate): a URL the two parsers read differently is
/// not sent anywhere.
fn request_uri(target: &str, host: &str) -> Result<ureq::http::Uri, String> {
    let uri: ureq::http::Uri = target
        .parse()
        .map_err(|e| format!("{target:?} is not a URI the HTTP client takes: {e}"))?;
    let called = uri.host().unwrap_or("");
    let bare = called.trim_start_matches('[').trim_end_matches(']');
    let same = match (
        bare.parse::<std::net::IpAddr>(),
        host.parse::<std::net::IpAddr>(),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => bare.eq_ignore_ascii_case(host),
    };
    if !same {
        return Err(format!(
            "the HTTP client reads the host of {target:?} as {called:?}, not {host:?} (the host the LLM policy checked)"
        ));
    }
    Ok(uri)
}

fn read_limited(reader: impl Read, endpoint: &str) -> Result<Vec<u8>, LlmError> {
    let mut out = Vec::new();
    reader
        .take(MAX_REPLY_BYTES + 1)
        .read_to_end(&mut out)
        .map_err(|e| LlmError::Transport {
            endpoint: endpoint.to_string(),
            message: e.to_string(),
        })?;
    if out.len() as u64 > MAX_REPLY_BYTES {
        return Err(LlmError::BadReply(format!(
            "the reply is larger than {MAX_REPLY_BYTES} bytes"
        )));
    }
    Ok(out)
}

/// The assistant's text in a chat.completion object.
pub fn reply_content(reply: &[u8]) -> Result<String, LlmError> {
    let v: Value =
        serde_json::from_slice(reply).map_err(|e| LlmError::BadReply(format!("not JSON: {e}")))?;
    v.pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .map(String::from)
        .ok_or_else(|| LlmError::BadReply("no choices[0].message.content".into()))
}

/// The summed log-probability of the reply's tokens, when the server gave
/// them (`choices[0].logprobs.content[].logprob`).
pub fn reply_logprob(reply: &[u8]) -> Option<f32> {
    let v: Value = serde_json::from_slice(reply).ok()?;
    let tokens = v.pointer("/choices/0/logprobs/content")?.as_array()?;
    let mut sum = 0.0f64;
    for t in tokens {
        sum += t.get("logprob")?.as_f64()?;
    }
    (!tokens.is_empty() && sum.is_finite()).then_some(sum as f32)
}

/// Calls tried again after a 429 or 5xx answer, at most.
const RETRIES: usize = 2;
/// The first wait before trying again; it doubles (with jitter) up to
/// [`RETRY_WAIT_MAX`].
const RETRY_WAIT: Duration = Duration::from_millis(250);
const RETRY_WAIT_MAX: Duration = Duration::from_secs(2);
/// A server that asks to wait longer than this (`Retry-After`) gets no
/// retry: the question fails now rather than in minutes.
const RETRY_AFTER_MAX: Duration = Duration::from_secs(10);

/// The wait before trying `error` again, as its `Retry-After` asks or as
/// the backoff gives: `None` when it is not worth trying again (not a 429
/// or 5xx, a refused `response_format`, a wait over [`RETRY_AFTER_MAX`],
/// or no retries left).
fn retry_wait(error: &LlmError, backoff: &mut impl Iterator<Item = Duration>) -> Option<Duration> {
    let LlmError::Status {
        status,
        retry_after,
        body,
        ..
    } = error
    else {
        return None;
    };
    // A server that refuses the `response_format` (some say so with a
    // 500) is answered by [`OpenAiClient::exchange`], not asked again.
    if (*status != 429 && *status < 500) || body.contains("response_format") {
        return None;
    }
    let wait = backoff.next()?;
    match retry_after {
        Some(asked) if *asked > RETRY_AFTER_MAX => None,
        Some(asked) => Some(*asked),
        None => Some(wait),
    }
}

impl OpenAiClient {
    /// One call, tried again (each try audited) while the server answers
    /// 429 or 5xx, at most [`RETRIES`] times.
    fn call_retrying(&self, req: &ChatRequest, sample: Option<u64>) -> Result<Vec<u8>, LlmError> {
        use backon::BackoffBuilder;
        let mut backoff = backon::ExponentialBuilder::default()
            .with_min_delay(RETRY_WAIT)
            .with_max_delay(RETRY_WAIT_MAX)
            .with_max_times(RETRIES)
            .with_jitter()
            .build();
        loop {
            let result = self.call(req, sample);
            match result
                .as_ref()
                .err()
                .and_then(|e| retry_wait(e, &mut backoff))
            {
                Some(wait) => std::thread::sleep(wait),
                None => return result,
            }
        }
    }

    /// One exchange; a server that refuses the `json_schema` form is asked
    /// again (and from then on) with `json_object`.
    fn exchange(&self, req: &ChatRequest, sample: Option<u64>) -> Result<Vec<u8>, LlmError> {
        let mut result = self.call_retrying(req, sample);
        if let Err(LlmError::Status { body, .. }) = &result {
            let schema_refused = matches!(req.constraint, Constraint::JsonSchema { .. })
                && !self.json_object.load(Ordering::Relaxed)
                && body.contains("response_format");
            if schema_refused {
                self.json_object.store(true, Ordering::Relaxed);
                result = self.call_retrying(req, sample);
            }
        }
        result
    }
}

impl ChatBackend for OpenAiClient {
    fn complete(&self, req: &ChatRequest) -> Result<String, LlmError> {
        reply_content(&self.exchange(req, None)?)
    }

    /// One call per reply (not every server honours `n`); a failure after
    /// the first reply ends the sampling with the replies had, and so does
    /// a first reply without log-probabilities (the replies could not be
    /// weighed, and each is a whole request). One reply is a plain call
    /// (no `logprobs`, which it would not use).
    fn sample(&self, req: &ChatRequest, n: usize) -> Result<Vec<Sample>, LlmError> {
        if n <= 1 {
            return Ok(vec![Sample {
                text: self.complete(req)?,
                logprob: None,
            }]);
        }
        let mut out: Vec<Sample> = Vec::new();
        for i in 0..n.max(1) {
            if enough_samples(&out) {
                break;
            }
            let mut r = req.clone();
            if i > 0 {
                r.temperature = SAMPLE_TEMPERATURE;
            }
            let reply = match self.exchange(&r, Some(i as u64)) {
                Ok(reply) => reply,
                Err(e) if out.is_empty() => return Err(e),
                Err(_) => break,
            };
            let logprob = reply_logprob(&reply);
            out.push(Sample {
                text: reply_content(&reply)?,
                logprob,
            });
            if logprob.is_none() {
                break;
            }
        }
        Ok(out)
    }

    fn endpoint(&self) -> String {
        self.endpoint.to_string()
    }
}

/// One HTTP/1.1 POST over a unix socket with hyper's client: the status and
/// the body (at most [`MAX_REPLY_BYTES`]). It runs on a thread of its own
/// with a current-thread runtime, so it works from any caller (a plain
/// thread or one of the server's blocking tasks).
fn unix_post(
    socket: &std::path::Path,
    path: &str,
    body: &[u8],
    timeout: Duration,
    api_key: Option<&str>,
) -> Result<(u16, Vec<u8>), String> {
    let mut request = hyper::Request::post(path)
        .header(hyper::header::HOST, "localhost")
        .header(hyper::header::CONTENT_TYPE, "application/json");
    if let Some(k) = api_key {
        request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {k}"));
    }
    let request = request
        .body(http_body_util::Full::new(bytes::Bytes::copy_from_slice(
            body,
        )))
        .map_err(|e| format!("building the request: {e}"))?;
    let socket = socket.to_path_buf();
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_io()
                    .enable_time()
                    .build()
                    .map_err(|e| format!("starting the client runtime: {e}"))?;
                runtime.block_on(async {
                    tokio::time::timeout(timeout, exchange(&socket, request))
                        .await
                        .map_err(|_| format!("no reply within {} ms", timeout.as_millis()))?
                })
            })
            .join()
            .map_err(|_| "the unix socket client panicked".to_string())?
    })
}

async fn exchange(
    socket: &std::path::Path,
    request: hyper::Request<http_body_util::Full<bytes::Bytes>>,
) -> Result<(u16, Vec<u8>), String> {
    use http_body_util::BodyExt as _;
    let stream = tokio::net::UnixStream::connect(socket)
        .await
        .map_err(|e| format!("connecting to {}: {e}", socket.display()))?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| format!("HTTP handshake: {e}"))?;
    let driver = tokio::spawn(connection);
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("sending: {e}"))?;
    let status = response.status().as_u16();
    let limit = usize::try_from(MAX_REPLY_BYTES).unwrap_or(usize::MAX);
    let body = http_body_util::Limited::new(response.into_body(), limit)
        .collect()
        .await
        .map_err(|e| format!("reading the reply: {e}"))?
        .to_bytes()
        .to_vec();
    driver.abort();
    Ok((status, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-connection HTTP/1.1 server on a unix socket that answers the
    /// first request with `reply` (raw bytes); the request it read.
    fn serve_once(
        reply: &'static [u8],
    ) -> (
        tempfile::TempDir,
        std::path::PathBuf,
        std::thread::JoinHandle<String>,
    ) {
        use std::io::Write as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("llm.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().expect("accept");
            let seen = kgbox_testkit::read_http_request(&mut conn);
            conn.write_all(reply).expect("write");
            seen
        });
        (dir, path, server)
    }

    /// A client for a one-connection HTTP server on 127.0.0.1 that answers
    /// the first request with `reply` (raw bytes; `None`: no answer, the
    /// connection held open a while); the request it read.
    fn http_once(
        reply: Option<Vec<u8>>,
        timeout: Duration,
    ) -> (OpenAiClient, std::thread::JoinHandle<String>) {
        use std::io::Write as _;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().expect("accept");
            let seen = kgbox_testkit::read_http_request(&mut conn);
            match reply {
                // The client may stop reading (and close) early.
                Some(r) => drop(conn.write_all(&r)),
                None => std::thread::sleep(Duration::from_secs(3)),
            }
            seen
        });
        let endpoint = Endpoint::Http {
            url: format!("http://127.0.0.1:{port}/v1"),
            host: "127.0.0.1".into(),
        };
        let client = OpenAiClient::new(
            endpoint,
            "m".into(),
            Some("k1".into()),
            timeout,
            Arc::new(AuditLog::counters_only()),
        );
        (client, server)
    }

    /// A client for an HTTP server on 127.0.0.1 that answers one request
    /// per connection with each of `replies` in turn (then stops); the
    /// requests it read.
    fn http_replies(replies: Vec<Vec<u8>>) -> (OpenAiClient, std::thread::JoinHandle<usize>) {
        use std::io::Write as _;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let server = std::thread::spawn(move || {
            let mut served = 0;
            for reply in replies {
                let (mut conn, _) = listener.accept().expect("accept");
                kgbox_testkit::read_http_request(&mut conn);
                drop(conn.write_all(&reply));
                served += 1;
            }
            served
        });
        let endpoint = Endpoint::Http {
            url: format!("http://127.0.0.1:{port}/v1"),
            host: "127.0.0.1".into(),
        };
        let audit = Arc::new(AuditLog::counters_only());
        let client = OpenAiClient::new(endpoint, "m".into(), None, Duration::from_secs(5), audit);
        (client, server)
    }

    /// A reply that closes its connection, with extra header lines.
    fn closing_reply(status: &str, headers: &str, body: &[u8]) -> Vec<u8> {
        let mut r = format!(
            "HTTP/1.1 {status}\r\nConnection: close\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        r.extend_from_slice(body);
        r
    }

    fn question() -> ChatRequest {
        ChatRequest {
            messages: vec![super::super::Message::user("q")],
            constraint: Constraint::None,
            max_tokens: 8,
            temperature: 0.0,
            purpose: "plan",
            draft: None,
        }
    }

    const ANSWER: &[u8] = br#"{"choices": [{"message": {"content": "ok"}}]}"#;

    #[test]
    fn busy_and_failing_servers_are_asked_again_as_they_ask() {
        // 429 with Retry-After, then a 503, then the answer: three calls,
        // each audited.
        let (client, server) = http_replies(vec![
            closing_reply("429 Too Many Requests", "Retry-After: 1\r\n", b"{}"),
            closing_reply("503 Service Unavailable", "", b"{}"),
            closing_reply("200 OK", "", ANSWER),
        ]);
        let t = Instant::now();
        assert_eq!(client.complete(&question()).expect("answered"), "ok");
        assert!(
            t.elapsed() >= Duration::from_secs(1),
            "Retry-After was not waited for"
        );
        assert_eq!(server.join().expect("server"), 3);
        assert_eq!(client.audit.stats()["plan"].calls, 3);

        // Still failing after the retries: the last error.
        let (client, server) =
            http_replies(vec![
                closing_reply("500 Internal Server Error", "", b"{}");
                RETRIES + 1
            ]);
        match client.complete(&question()) {
            Err(LlmError::Status { status: 500, .. }) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(server.join().expect("server"), RETRIES + 1);
    }

    #[test]
    fn a_refusal_or_a_long_wait_is_not_tried_again() {
        for reply in [
            closing_reply("400 Bad Request", "", b"{}"),
            closing_reply("429 Too Many Requests", "Retry-After: 3600\r\n", b"{}"),
        ] {
            let (client, server) = http_replies(vec![reply]);
            assert!(matches!(
                client.complete(&question()),
                Err(LlmError::Status { .. })
            ));
            assert_eq!(client.audit.stats()["plan"].calls, 1);
            server.join().expect("server");
        }
    }

    fn http_reply(status: &str, body: &[u8]) -> Vec<u8> {
        let mut r = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        r.extend_from_slice(body);
        r
    }

    #[test]
    fn posts_over_http_with_the_key_and_reads_the_reply() {
        let (client, server) = http_once(
            Some(http_reply("200 OK", br#"{"a": 1}"#)),
            Duration::from_secs(5),
        );
        assert_eq!(client.post(b"{\"q\": 1}").expect("reply"), br#"{"a": 1}"#);
        assert_chat_post(&server.join().expect("server"));
    }

    /// `request` is the chat POST of `{"q": 1}` with bearer key `k1`.
    fn assert_chat_post(request: &str) {
        assert!(
            request.starts_with("POST /v1/chat/completions HTTP/1.1\r\n"),
            "{request}"
        );
        let lower = request.to_ascii_lowercase();
        assert!(lower.contains("authorization: bearer k1\r\n"), "{request}");
        assert!(
            lower.contains("content-type: application/json\r\n"),
            "{request}"
        );
        assert!(request.ends_with("{\"q\": 1}"), "{request}");
    }

    #[test]
    fn http_error_statuses_keep_their_body() {
        let (client, server) = http_once(
            Some(http_reply(
                "400 Bad Request",
                br#"{"error": {"message": "response_format is not supported"}}"#,
            )),
            Duration::from_secs(5),
        );
        match client.post(b"{}") {
            Err(LlmError::Status { status, body, .. }) => {
                assert_eq!(status, 400);
                assert!(body.contains("response_format"), "{body}");
            }
            other => panic!("{other:?}"),
        }
        server.join().expect("server");
    }

    #[test]
    fn an_http_reply_over_the_bound_is_refused() {
        let big = vec![b' '; usize::try_from(MAX_REPLY_BYTES).expect("fits") + 1];
        let (client, server) = http_once(Some(http_reply("200 OK", &big)), Duration::from_secs(10));
        match client.post(b"{}") {
            Err(LlmError::BadReply(m)) => assert!(m.contains("larger than"), "{m}"),
            other => panic!("{:?}", other.map(|r| r.len())),
        }
        server.join().expect("server");
        // At the bound is fine.
        let (client, server) = http_once(
            Some(http_reply("200 OK", &big[1..])),
            Duration::from_secs(10),
        );
        assert_eq!(
            client.post(b"{}").map(|r| r.len()).ok(),
            Some(big.len() - 1)
        );
        server.join().expect("server");
    }

    #[test]
    fn a_silent_http_server_times_out() {
        let (client, server) = http_once(None, Duration::from_millis(300));
        let started = Instant::now();
        match client.post(b"{}") {
            Err(LlmError::Transport { message, .. }) => {
                assert!(message.contains("timeout"), "{message}")
            }
            other => panic!("{other:?}"),
        }
        assert!(started.elapsed() < Duration::from_secs(2));
        server.join().expect("server");
    }

    #[test]
    fn posts_over_a_unix_socket_and_reads_a_chunked_reply() {
        let (_dir, path, server) = serve_once(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n5;x=1\r\n\": 1}\r\n0\r\n\r\n",
        );
        let got = unix_post(
            &path,
            "/v1/chat/completions",
            b"{\"q\": 1}",
            Duration::from_secs(5),
            Some("k1"),
        );
        assert_eq!(got, Ok((200, br#"{"a": 1}"#.to_vec())));
        assert_chat_post(&server.join().expect("server"));
    }

    #[test]
    fn unix_socket_errors_name_the_problem() {
        let (_dir, path, server) =
            serve_once(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy");
        let got = unix_post(
            &path,
            "/v1/chat/completions",
            b"{}",
            Duration::from_secs(5),
            None,
        );
        assert_eq!(got, Ok((503, b"busy".to_vec())));
        server.join().expect("server");
        // Not HTTP at all.
        let (_dir, path, server) = serve_once(b"garbage\r\n\r\n");
        let e = unix_post(&path, "/", b"{}", Duration::from_secs(5), None).expect_err("not HTTP");
        assert!(e.contains("sending"), "{e}");
        server.join().expect("server");
        // Nobody there.
        let e = unix_post(
            std::path::Path::new("/nonexistent/llm.sock"),
            "/",
            b"{}",
            Duration::from_secs(1),
            None,
        )
        .expect_err("no socket");
        assert!(e.contains("connecting to /nonexistent/llm.sock"), "{e}");
    }

    #[test]
    fn a_silent_unix_socket_server_times_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("silent.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
        let e = unix_post(&path, "/", b"{}", Duration::from_millis(300), None).expect_err("silent");
        assert!(e.contains("no reply within 300 ms"), "{e}");
    }

    #[test]
    fn the_host_called_is_the_host_the_policy_checked() {
        let host = |endpoint: &str| match super::super::policy::parse_endpoint(endpoint) {
            Ok(Endpoint::Http { url, host }) => (format!("{url}/chat/completions"), host),
            other => panic!("{endpoint}: {other:?}"),
        };
        for endpoint in [
            "http://127.0.0.1:8080/v1",
            "http://LocalHost:8080/v1/",
            "https://api.example.com/v1",
            "http://[::1]:8080/v1",
            "http://[0:0:0:0:0:0:0:1]/v1",
        ] {
            let (target, checked) = host(endpoint);
            let uri = request_uri(&target, &checked).expect(endpoint);
            assert_eq!(uri.to_string(), target, "{endpoint}");
        }
        // The `url` crate reads these hosts as loopback; the HTTP client
        // would read them otherwise (or not at all): refused, not sent.
        for endpoint in [
            "http://127.0.0.1\\@evil.example/v1",
            "http://127.1:8080/v1",
            "http://0x7f000001/v1",
        ] {
            let (target, checked) = host(endpoint);
            assert!(
                super::super::policy::is_loopback(&checked),
                "{endpoint}: {checked}"
            );
            let e = request_uri(&target, &checked).expect_err(endpoint);
            assert!(e.contains(&format!("{target:?}")), "{e}");
        }
    }

    #[test]
    fn reply_content_names_what_is_missing() {
        let ok = br#"{"choices":[{"message":{"role":"assistant","content":"hi"}}]}"#;
        assert_eq!(reply_content(ok).expect("content"), "hi");
        let e = reply_content(br#"{"choices":[]}"#).expect_err("no content");
        assert!(e.to_string().contains("choices[0]"), "{e}");
    }

    #[test]
    fn reply_logprobs_are_summed_when_given() {
        let with = br#"{"choices":[{"message":{"content":"hi"},"logprobs":{"content":[{"token":"h","logprob":-0.5},{"token":"i","logprob":-0.25}]}}]}"#;
        assert_eq!(reply_logprob(with), Some(-0.75));
        let without = br#"{"choices":[{"message":{"content":"hi"},"logprobs":null}]}"#;
        assert_eq!(reply_logprob(without), None);
        let bad = br#"{"choices":[{"logprobs":{"content":[{"token":"h"}]}}]}"#;
        assert_eq!(reply_logprob(bad), None);
    }
}
