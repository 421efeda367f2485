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

use std::io::{Read, Write};
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

/// One HTTP/1.1 POST over a unix socket (`Connection: close`); the status
/// and the body (plain or chunked).
fn unix_post(
    socket: &std::path::Path,
    path: &str,
    body: &[u8],
    timeout: Duration,
    api_key: Option<&str>,
) -> Result<(u16, Vec<u8>), String> {
    let mut stream = std::os::unix::net::UnixStream::connect(socket)
        .map_err(|e| format!("connecting to {}: {e}", socket.display()))?;
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    stream
        .set_write_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    let auth = api_key
        .map(|k| format!("Authorization: Bearer {k}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{auth}Connection: close\r\n\r\n",
        body.len()
    );
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body))
        .map_err(|e| format!("sending: {e}"))?;
    let mut raw = Vec::new();
    (&stream)
        .take(MAX_REPLY_BYTES + 64 * 1024)
        .read_to_end(&mut raw)
        .map_err(|e| format!("reading: {e}"))?;
    parse_response(&raw)
}

/// Splits a raw HTTP/1.1 response into status and body.
fn parse_response(raw: &[u8]) -> Result<(u16, Vec<u8>), String> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("the reply has no header end")?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let body = &raw[split + 4..];
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or("the reply has no status")?;
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    if !chunked {
        return Ok((status, body.to_vec()));
    }
    let mut out = Vec::new();
    let mut rest = body;
    loop {
        let eol = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("a chunk has no size line")?;
        let size_text = String::from_utf8_lossy(&rest[..eol]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| format!("bad chunk size {size_text:?}"))?;
        rest = &rest[eol + 2..];
        if size == 0 {
            return Ok((status, out));
        }
        let chunk = rest.get(..size).ok_or("a chunk is cut short")?;
        out.extend_from_slice(chunk);
        rest = rest.get(size + 2..).unwrap_or(&[]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_and_chunked_replies() {
        let plain = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(parse_response(plain), Ok((200, b"{}".to_vec())));
        let chunked =
            b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=1\r\nde\r\n0\r\n\r\n";
        assert_eq!(parse_response(chunked), Ok((201, b"abcde".to_vec())));
        assert!(parse_response(b"garbage").is_err());
        assert!(
            parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").is_err()
        );
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
