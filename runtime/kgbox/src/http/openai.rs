//! The OpenAI-compatible facade: `POST /v1/chat/completions` (plain and
//! streamed) and `GET /v1/models`, over the question service of `/v1/ask`
//! (`chat_completions` → `http::ask::run` → [`crate::service::ask::answer`]),
//! so that OpenAI clients (the `openai` package, LangChain, chat front ends)
//! can ask the served bundle.
//!
//! - The last `user` message is the question; the other messages and the
//!   sampling fields (`temperature`, `max_tokens`, `n`, `stop`, tools, ...)
//!   are accepted and ignored. One choice is returned.
//! - `model` names the bundle that answers (none, or `kgbox`: the default);
//!   a name no served bundle has is 404 `model_not_found`, never another
//!   bundle's answer. `/v1/models` lists the bundles served, then the default's
//!   rollback target (which does not answer).
//! - The reply text is short ("Ridley Scott."); the provenance is the
//!   `/v1/ask` reply, in the extra top-level field `kgbox`. Answers that
//!   are not `high` confidence (a repaired query's guess, a weak match)
//!   carry their `caveat` in parentheses after them.
//! - `no_entity` (nothing of the graph named in the question) is a 200
//!   reply whose text says so, with `kgbox.error`; other errors are
//!   OpenAI-shaped (`{"error": {"message", "type", "param", "code"}}`),
//!   `code` being the `/v1/ask` error code, with the `/v1/ask` status.
//! - `usage` counts whitespace-separated words, not model tokens.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::auth::ReadKey;
use super::errors::bad_body;
use super::{ApiError, AppState, Chosen};
use crate::service::ask::{result_json, AskRequest};

/// The model name that means "the default bundle" (or the one `/b/NAME/`
/// chose), for clients configured once for any device.
pub const DEFAULT_MODEL: &str = "kgbox";

/// Answers named in the reply text at most; the rest are counted.
const NAMED_ANSWERS: usize = 5;
/// The reply text when the question names nothing in the graph.
const NO_ENTITY_TEXT: &str = "I could not find anything from the knowledge graph in your \
question. Name the entity it is about, e.g. in [brackets].";

/// The body of `POST /v1/chat/completions`. `model` names the bundle that
/// answers (none: the default one). Fields not named here are accepted and
/// ignored.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct ChatRequest {
    #[serde(default)]
    pub model: Option<String>,
    pub messages: Vec<Message>,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct Message {
    pub role: String,
    #[serde(default)]
    pub content: Option<Content>,
}

/// A message's content: a string, or parts of which the `text` ones count.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct Part {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub text: Option<String>,
}

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: Option<bool>,
}

impl Message {
    /// The text of the message (text parts joined by newlines).
    fn text(&self) -> String {
        match &self.content {
            None => String::new(),
            Some(Content::Text(s)) => s.clone(),
            Some(Content::Parts(parts)) => parts
                .iter()
                .filter(|p| p.kind == "text")
                .filter_map(|p| p.text.as_deref())
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

/// An error in OpenAI's shape: `{"error": {"message", "type", "param",
/// "code"}}`, plus the `/v1/ask` error's extra fields.
#[derive(Debug)]
pub struct OpenAiError {
    status: StatusCode,
    message: String,
    param: Option<&'static str>,
    code: &'static str,
    extra: Option<Value>,
}

impl OpenAiError {
    fn invalid(
        code: &'static str,
        param: Option<&'static str>,
        message: impl Into<String>,
    ) -> Self {
        OpenAiError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            param,
            code,
            extra: None,
        }
    }

    /// OpenAI's error type for the status.
    fn kind(&self) -> &'static str {
        if self.status.is_server_error() {
            "server_error"
        } else {
            "invalid_request_error"
        }
    }

    fn body(&self) -> Value {
        let mut error = json!({
            "message": self.message,
            "type": self.kind(),
            "param": self.param,
            "code": self.code,
        });
        if let Some(Value::Object(extra)) = &self.extra {
            for (k, v) in extra {
                if error.get(k).is_none() {
                    error[k] = v.clone();
                }
            }
        }
        json!({ "error": error })
    }
}

impl From<ApiError> for OpenAiError {
    /// Keeps the status, the code and the extra fields. The facade passes
    /// only the question on, so a `bad_request` is about the messages.
    fn from(e: ApiError) -> Self {
        OpenAiError {
            status: e.status,
            param: (e.code == "bad_request").then_some("messages"),
            code: e.code,
            message: e.message,
            extra: e.extra,
        }
    }
}

impl IntoResponse for OpenAiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body())).into_response()
    }
}

/// A chat request body; one that is not is refused in OpenAI's error shape
/// ([`body_error`]).
pub struct ChatBody(ChatRequest);

impl<S: Send + Sync> FromRequest<S> for ChatBody {
    type Rejection = OpenAiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, OpenAiError> {
        let Json(body) = Json::<ChatRequest>::from_request(req, state)
            .await
            .map_err(body_error)?;
        Ok(ChatBody(body))
    }
}

/// A body that is not a chat request: 400 like OpenAI (axum says 422 for
/// JSON of the wrong shape), but 413 and 415 as they are.
fn body_error(e: JsonRejection) -> OpenAiError {
    let mut error = OpenAiError::from(bad_body(e));
    if error.status == StatusCode::UNPROCESSABLE_ENTITY {
        error.status = StatusCode::BAD_REQUEST;
    }
    error.param = None;
    error
}

/// The question: the text of the last `user` message.
pub fn question_of(messages: &[Message]) -> Result<String, OpenAiError> {
    let last = messages
        .iter()
        .rev()
        .find(|m| m.role == "user")
        .ok_or_else(|| {
            OpenAiError::invalid(
                "no_user_message",
                Some("messages"),
                "messages must contain a message with role \"user\" (its text is the question)",
            )
        })?;
    let text = last.text();
    if text.trim().is_empty() {
        return Err(OpenAiError::invalid(
            "empty_question",
            Some("messages"),
            "the last user message has no text",
        ));
    }
    Ok(text)
}

/// The reply text for answers named `names`, best first: "A.", "A and B.",
/// "A, B and C.", at most [`NAMED_ANSWERS`] named then "and N more".
pub fn phrase(names: &[&str]) -> String {
    let shown = &names[..names.len().min(NAMED_ANSWERS)];
    let rest = names.len() - shown.len();
    let mut items: Vec<String> = shown.iter().map(|n| n.trim().to_string()).collect();
    if rest > 0 {
        items.push(format!("{rest} more"));
    }
    let text = match items.as_slice() {
        [] => return "I found no answer to that in the knowledge graph.".to_string(),
        [one] => one.clone(),
        [head @ .., last] => format!("{} and {last}", head.join(", ")),
    };
    if text.ends_with(['.', '!', '?']) {
        text
    } else {
        format!("{text}.")
    }
}

/// The reply text with the answers' caveat after it in parentheses, when
/// there are answers and they are not high confidence (a repaired query's
/// guess, a weak match): a chat reader sees no other field.
pub fn with_caveat(text: String, answered: bool, caveat: Option<&str>) -> String {
    match caveat {
        Some(c) if answered => format!("{text} ({c})"),
        _ => text,
    }
}

/// Words separated by whitespace: the `usage` counts (not model tokens).
fn words(s: &str) -> u64 {
    s.split_whitespace().count() as u64
}

/// A unique completion id: `chatcmpl-` then the time and a counter.
fn completion_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("chatcmpl-{nanos:x}{n:04x}")
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// One answered chat: what both reply forms are built from.
#[derive(Debug)]
pub struct Completion {
    pub id: String,
    pub created: u64,
    pub model: String,
    pub content: String,
    pub prompt_words: u64,
    /// The provenance (the `/v1/ask` reply, or the `no_entity` error).
    pub kgbox: Value,
}

impl Completion {
    fn usage(&self) -> Value {
        let completion = words(&self.content);
        json!({
            "prompt_tokens": self.prompt_words,
            "completion_tokens": completion,
            "total_tokens": self.prompt_words + completion,
        })
    }

    /// The `chat.completion` object.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": self.content, "refusal": null},
                "logprobs": null,
                "finish_reason": "stop",
            }],
            "usage": self.usage(),
            "kgbox": self.kgbox,
        })
    }

    fn chunk(&self, delta: Value, finish: Option<&str>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        })
    }

    /// The Server-Sent Events of a streamed reply: the role, the content
    /// word by word, the finish (with `kgbox`), the usage when asked for,
    /// then `[DONE]`.
    pub fn events(&self, include_usage: bool) -> Vec<String> {
        let mut chunks = vec![self.chunk(json!({"role": "assistant", "content": ""}), None)];
        for piece in self.content.split_inclusive(' ') {
            chunks.push(self.chunk(json!({ "content": piece }), None));
        }
        let mut last = self.chunk(json!({}), Some("stop"));
        last["kgbox"] = self.kgbox.clone();
        chunks.push(last);
        if include_usage {
            for c in &mut chunks {
                c["usage"] = Value::Null;
            }
            let mut usage = self.chunk(json!({}), None);
            usage["choices"] = json!([]);
            usage["usage"] = self.usage();
            chunks.push(usage);
        }
        let mut events: Vec<String> = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
        events.push("data: [DONE]\n\n".to_string());
        events
    }
}

/// `POST /v1/chat/completions`.
#[utoipa::path(post, path = "/v1/chat/completions", tag = "answers",
    request_body = ChatRequest,
    responses(
        (status = 200, description = "A chat completion (`object: chat.completion`, provenance in `kgbox`), or with `stream: true` its chunks as server-sent events", content(
            (Object = "application/json"),
            (String = "text/event-stream"))),
        (status = 400, description = "No user message, an empty question, or not a chat request", body = super::schema::OpenAiErrorBody),
        (status = 404, description = "The planned query names an unknown entity or relation", body = super::schema::OpenAiErrorBody),
        (status = 408, description = "Past the request timeout", body = super::schema::OpenAiErrorBody),
        (status = 409, description = "The planned query names an ambiguous entity", body = super::schema::OpenAiErrorBody),
        (status = 413, description = "The body is over the size limit", body = super::schema::OpenAiErrorBody),
        (status = 415, description = "The body is not JSON", body = super::schema::OpenAiErrorBody),
        (status = 422, description = "The question cannot be planned or its query run", body = super::schema::OpenAiErrorBody),
        (status = 500, description = "The encoder or reranker failed", body = super::schema::OpenAiErrorBody),
        (status = 502, description = "The LLM could not be used", body = super::schema::OpenAiErrorBody),
    ))]
pub async fn chat_completions(
    State(state): State<Arc<AppState>>,
    Chosen(chosen): Chosen,
    key: Option<axum::Extension<ReadKey>>,
    ChatBody(req): ChatBody,
) -> Result<Response, OpenAiError> {
    // The bundle the model names; a name no bundle has is an error, never
    // another bundle's answer. Under /b/NAME/, the model must be NAME.
    let served = match req.model.as_deref().filter(|m| !m.is_empty()) {
        // No model, or the generic name: the bundle the path chose.
        None | Some(DEFAULT_MODEL) => chosen,
        Some(m) if chosen.bundle.manifest().name == m => chosen,
        Some(m) => match state.bundles.get(m) {
            Some(d) if std::ptr::eq(chosen.as_ref(), state.served().as_ref()) => d.served(),
            _ => {
                return Err(ApiError::new(
                    StatusCode::NOT_FOUND,
                    "model_not_found",
                    format!("the model {m:?} does not exist: the models are the bundles GET /v1/models lists"),
                )
                .into())
            }
        },
    };
    let model = served.bundle.manifest().name.clone();
    ReadKey::check(key.as_deref(), &model)?;
    let question = question_of(&req.messages)?;
    let prompt_words = req.messages.iter().map(|m| words(&m.text())).sum();
    let asked = AskRequest {
        question: question.clone(),
        ..Default::default()
    };
    let (content, mut kgbox) = match super::ask::run(&state, served, asked).await {
        Ok((result, executor)) => {
            let names: Vec<&str> = result.answers.iter().map(|a| a.name.as_str()).collect();
            let text = with_caveat(phrase(&names), !names.is_empty(), result.caveat.as_deref());
            (
                text,
                result_json(&result, executor).map_err(ApiError::from)?,
            )
        }
        Err(e) if e.code() == "no_entity" => (
            NO_ENTITY_TEXT.to_string(),
            json!({"answers": [], "error": {"code": e.code, "message": e.message}}),
        ),
        Err(e) => return Err(e.into()),
    };
    kgbox["question"] = json!(question);
    let completion = Completion {
        id: completion_id(),
        created: unix_now(),
        model,
        content,
        prompt_words,
        kgbox,
    };
    if req.stream != Some(true) {
        return Ok(Json(completion.to_json()).into_response());
    }
    let include_usage = req
        .stream_options
        .and_then(|o| o.include_usage)
        .unwrap_or(false);
    let events = completion.events(include_usage);
    let body = Body::from_stream(futures_util::stream::iter(
        events.into_iter().map(Ok::<_, Infallible>),
    ));
    Ok((
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response())
}

/// `GET /v1/models`: one model per bundle served (the default first, then
/// those beside it by name; each is a `model` a chat request may name),
/// then the default's other installed slot, not served. A key sees the
/// bundles it may read.
#[utoipa::path(get, path = "/v1/models", tag = "answers",
    responses((status = 200, description = "`{object: list, data: [model]}`: the bundles served, then the default's other installed one", body = Object)))]
pub async fn models(
    State(state): State<Arc<AppState>>,
    key: Option<axum::Extension<ReadKey>>,
) -> Json<Value> {
    let may_read = |name: &str| ReadKey::check(key.as_deref(), name).is_ok();
    let mut data = Vec::new();
    for deployer in state.bundles.all() {
        let served = deployer.served();
        let m = served.bundle.manifest();
        if !may_read(&m.name) {
            continue;
        }
        data.push(json!({
            "id": m.name,
            "object": "model",
            "created": m.created_unix,
            "owned_by": "kgbox",
            "kgbox": {"version": m.version.to_string(), "source": served.bundle.source.label(), "serving": true},
        }));
    }
    let served = state.served();
    let served_source = served.bundle.source.label();
    for rec in state.deployer.installed() {
        let source = format!("slot-{}", rec.slot);
        if source == served_source || rec.name.is_empty() || !may_read(&rec.name) {
            continue;
        }
        data.push(json!({
            "id": rec.name,
            "object": "model",
            "owned_by": "kgbox",
            "kgbox": {"version": rec.version, "source": source, "serving": false},
        }));
    }
    Json(json!({"object": "list", "data": data}))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn messages(v: Value) -> Vec<Message> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn phrases_answers_naturally() {
        assert_eq!(phrase(&["Ridley Scott"]), "Ridley Scott.");
        assert_eq!(phrase(&["A", "B"]), "A and B.");
        assert_eq!(
            phrase(&["Harrison Ford", "Rutger Hauer", "Sean Young"]),
            "Harrison Ford, Rutger Hauer and Sean Young."
        );
        assert_eq!(
            phrase(&["a", "b", "c", "d", "e", "f", "g"]),
            "a, b, c, d, e and 2 more."
        );
        assert_eq!(phrase(&["a", "b", "c", "d", "e"]), "a, b, c, d and e.");
        assert_eq!(phrase(&["Sammy Davis Jr."]), "Sammy Davis Jr.");
        assert!(phrase(&[]).contains("no answer"), "{}", phrase(&[]));
    }

    #[test]
    fn a_caveat_follows_the_answers() {
        let caveat = "repaired query: \"X\" -> employs — the question's query \"X\" -> member found nothing; this is a guess";
        assert_eq!(
            with_caveat(phrase(&["Carol"]), true, Some(caveat)),
            format!("Carol. ({caveat})")
        );
        assert_eq!(with_caveat(phrase(&["Carol"]), true, None), "Carol.");
        let none = phrase(&[]);
        assert_eq!(
            with_caveat(none.clone(), false, Some("no answer was found")),
            none
        );
    }

    #[test]
    fn the_question_is_the_last_user_message() {
        let m = messages(json!([
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "who wrote [Alien]"},
            {"role": "assistant", "content": "Dan O'Bannon."},
            {"role": "user", "content": [
                {"type": "text", "text": "who directed"},
                {"type": "image_url", "image_url": {"url": "x"}},
                {"type": "text", "text": "[Blade Runner]"}
            ]},
            {"role": "assistant", "content": null, "tool_calls": []}
        ]));
        assert_eq!(question_of(&m).unwrap(), "who directed\n[Blade Runner]");
        let one = messages(json!([{"role": "user", "content": "who directed [Alien]"}]));
        assert_eq!(question_of(&one).unwrap(), "who directed [Alien]");
    }

    #[test]
    fn no_or_empty_user_message_is_an_invalid_request() {
        let none = messages(json!([{"role": "system", "content": "hi"}]));
        let e = question_of(&none).unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        let b = e.body();
        assert_eq!(b["error"]["type"], "invalid_request_error");
        assert_eq!(b["error"]["code"], "no_user_message");
        assert_eq!(b["error"]["param"], "messages");
        assert!(b["error"]["message"].as_str().unwrap().contains("user"));
        let empty = messages(json!([{"role": "user", "content": [{"type": "text", "text": " "}]}]));
        assert_eq!(question_of(&empty).unwrap_err().code, "empty_question");
    }

    #[test]
    fn ask_errors_keep_their_status_code_and_extras() {
        let e: OpenAiError = ApiError::new(StatusCode::BAD_GATEWAY, "llm_unavailable", "down")
            .with_extra(json!({"query": "q", "code": "not this"}))
            .into();
        assert_eq!(e.status, StatusCode::BAD_GATEWAY);
        let b = e.body();
        assert_eq!(b["error"]["type"], "server_error");
        assert_eq!(b["error"]["code"], "llm_unavailable");
        assert_eq!(b["error"]["message"], "down");
        assert_eq!(b["error"]["param"], Value::Null);
        assert_eq!(b["error"]["query"], "q");
        let bad: OpenAiError = ApiError::new(StatusCode::BAD_REQUEST, "bad_request", "x").into();
        assert_eq!(bad.body()["error"]["param"], "messages");
        assert_eq!(bad.body()["error"]["type"], "invalid_request_error");
    }

    fn completion() -> Completion {
        Completion {
            id: completion_id(),
            created: 7,
            model: "demo".into(),
            content: "A, B and C.".into(),
            prompt_words: 3,
            kgbox: json!({"query": "q"}),
        }
    }

    #[test]
    fn a_completion_has_openais_fields() {
        let v = completion().to_json();
        assert!(v["id"].as_str().unwrap().starts_with("chatcmpl-"));
        assert_ne!(completion().id, completion().id);
        assert_eq!(v["object"], "chat.completion");
        assert_eq!(v["choices"][0]["message"]["content"], "A, B and C.");
        assert_eq!(v["choices"][0]["finish_reason"], "stop");
        assert_eq!(v["usage"]["completion_tokens"], 4);
        assert_eq!(v["usage"]["total_tokens"], 7);
        assert_eq!(v["kgbox"]["query"], "q");
    }

    fn parse(events: &[String]) -> Vec<Value> {
        let (done, data) = events.split_last().unwrap();
        assert_eq!(done, "data: [DONE]\n\n");
        data.iter()
            .map(|e| {
                let json = e
                    .strip_prefix("data: ")
                    .unwrap()
                    .strip_suffix("\n\n")
                    .unwrap();
                serde_json::from_str(json).unwrap()
            })
            .collect()
    }

    #[test]
    fn a_stream_sends_role_content_finish_and_done() {
        let c = completion();
        let chunks = parse(&c.events(false));
        assert!(chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk"));
        assert!(chunks.iter().all(|c| c.get("usage").is_none()));
        assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
        let text: String = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert_eq!(text, c.content);
        let last = chunks.last().unwrap();
        assert_eq!(last["choices"][0]["finish_reason"], "stop");
        assert_eq!(last["kgbox"]["query"], "q");
        assert_eq!(
            chunks
                .iter()
                .filter(|c| c["choices"][0]["finish_reason"] == "stop")
                .count(),
            1
        );

        let with_usage = parse(&c.events(true));
        let usage = with_usage.last().unwrap();
        assert_eq!(usage["choices"], json!([]));
        assert_eq!(usage["usage"]["completion_tokens"], 4);
        assert!(with_usage[..with_usage.len() - 1]
            .iter()
            .all(|c| c["usage"].is_null()));
    }
}
