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
        let agent = ureq::AgentBuilder::new().timeout(timeout).build();
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
            Endpoint::Http { url, .. } => {
                let mut request = self
                    .agent
                    .post(&format!("{url}/chat/completions"))
                    .set("Content-Type", "application/json");
                if let Some(key) = &self.api_key {
                    request = request.set("Authorization", &format!("Bearer {key}"));
                }
                match request.send_bytes(body) {
                    Ok(resp) => read_limited(resp.into_reader(), &endpoint),
                    Err(ureq::Error::Status(status, resp)) => {
                        let body = resp.into_string().unwrap_or_default();
                        Err(LlmError::Status {
                            endpoint,
                            status,
                            body: body.chars().take(500).collect(),
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
                    })
                }
            }),
        }
    }
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

impl OpenAiClient {
    /// One exchange; a server that refuses the `json_schema` form is asked
    /// again (and from then on) with `json_object`.
    fn exchange(&self, req: &ChatRequest, sample: Option<u64>) -> Result<Vec<u8>, LlmError> {
        let mut result = self.call(req, sample);
        if let Err(LlmError::Status { body, .. }) = &result {
            let schema_refused = matches!(req.constraint, Constraint::JsonSchema { .. })
                && !self.json_object.load(Ordering::Relaxed)
                && body.contains("response_format");
            if schema_refused {
                self.json_object.store(true, Ordering::Relaxed);
                result = self.call(req, sample);
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
            let mut seen = Vec::new();
            let mut buf = [0u8; 4096];
            // The head, then the Content-Length body.
            loop {
                let n = conn.read(&mut buf).expect("read");
                seen.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&seen).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let len: usize = text
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    if seen.len() >= end + 4 + len || n == 0 {
                        break;
                    }
                }
            }
            conn.write_all(reply).expect("write");
            String::from_utf8_lossy(&seen).into_owned()
        });
        (dir, path, server)
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
        let request = server.join().expect("server");
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
