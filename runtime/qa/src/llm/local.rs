//! The `local` backend: a GGUF model run in-process by llama.cpp (through the
//! `llama-cpp-2` crate), behind the `local-llm` feature.
//!
//! * The prompt is the model's own chat template (from the GGUF), or ChatML
//!   when the model has none that llama.cpp can apply.
//! * System messages are never sent as such: small models like SmolLM2 do
//!   badly with a system turn, so their text is merged into the start of the
//!   first user message.
//! * Decoding is greedy (the request's temperature is ignored), at most
//!   `max_tokens` new tokens, up to the end-of-generation token.
//! * A [`Constraint::JsonSchema`] becomes a GBNF grammar
//!   ([`json_schema_to_gbnf`]) that constrains the decoding.

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::{send_logs_to_tracing, LogOptions};
use serde_json::{Map, Value};

use super::{ChatBackend, ChatRequest, Constraint, LlmError, Message};

/// How to load and run a local model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalOptions {
    /// The GGUF file.
    pub model: PathBuf,
    /// CPU threads for llama.cpp (default 2).
    pub threads: usize,
    /// Context size in tokens: prompt plus reply (default 2048).
    pub context: u32,
    /// Random seed. Decoding is greedy, so it has no effect today; it is kept
    /// so that a sampling mode can be added without changing the options.
    pub seed: u32,
}

impl LocalOptions {
    /// The default options for the model at `model`.
    pub fn new(model: impl Into<PathBuf>) -> LocalOptions {
        LocalOptions {
            model: model.into(),
            ..LocalOptions::default()
        }
    }
}

impl Default for LocalOptions {
    fn default() -> LocalOptions {
        LocalOptions {
            model: PathBuf::new(),
            threads: 2,
            context: 2048,
            seed: 0,
        }
    }
}

/// A GGUF model loaded in this process.
pub struct LocalModel {
    model: LlamaModel,
    options: LocalOptions,
    /// One completion at a time: llama.cpp contexts must not be created
    /// concurrently from one model, and the CPU is the bottleneck anyway.
    busy: Mutex<()>,
}

impl fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalModel")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

fn local(message: impl Into<String>) -> LlmError {
    LlmError::Local(message.into())
}

/// The llama.cpp backend, initialised once per process with its logging off.
fn backend() -> Result<&'static LlamaBackend, LlmError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            // Before the init, so that the init's own messages are silenced too.
            send_logs_to_tracing(LogOptions::default().with_logs_enabled(false));
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| local(format!("cannot initialise the llama.cpp backend: {e}")))
}

/// The first bytes of every GGUF file.
const GGUF_MAGIC: &[u8; 4] = b"GGUF";

fn check_model_file(path: &Path) -> Result<(), LlmError> {
    if path.as_os_str().is_empty() {
        return Err(local("no model file given (LocalOptions::model is empty)"));
    }
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            local(format!("model file {shown} does not exist"))
        } else {
            local(format!("cannot read model file {shown}: {e}"))
        }
    })?;
    if !meta.is_file() {
        return Err(local(format!("model path {shown} is not a file")));
    }
    let mut magic = [0u8; 4];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .map_err(|e| local(format!("cannot read model file {shown}: {e}")))?;
    if &magic != GGUF_MAGIC {
        return Err(local(format!("model file {shown} is not a GGUF file")));
    }
    Ok(())
}

impl LocalModel {
    /// Loads the GGUF model named by `options`.
    pub fn load(options: &LocalOptions) -> Result<LocalModel, LlmError> {
        if options.threads == 0 {
            return Err(local("threads must be at least 1"));
        }
        if i32::try_from(options.threads).is_err() {
            return Err(local(format!("threads = {} is too large", options.threads)));
        }
        if options.context < 16 {
            return Err(local(format!(
                "context = {} tokens is too small (at least 16)",
                options.context
            )));
        }
        if i32::try_from(options.context).is_err() {
            return Err(local(format!(
                "context = {} tokens is too large",
                options.context
            )));
        }
        check_model_file(&options.model)?;
        let backend = backend()?;
        let model =
            LlamaModel::load_from_file(backend, &options.model, &LlamaModelParams::default())
                .map_err(|e| {
                    local(format!(
                        "llama.cpp cannot load model file {}: {e}",
                        options.model.display()
                    ))
                })?;
        Ok(LocalModel {
            model,
            options: options.clone(),
            busy: Mutex::new(()),
        })
    }

    /// The options the model was loaded with.
    pub fn options(&self) -> &LocalOptions {
        &self.options
    }

    /// The prompt text for `messages`: the model's chat template, or ChatML.
    fn render_prompt(&self, messages: &[Message]) -> Result<String, LlmError> {
        let messages = merge_system_messages(messages);
        if messages.is_empty() {
            return Err(local("the request has no messages"));
        }
        let mut chat = Vec::with_capacity(messages.len());
        for (i, m) in messages.iter().enumerate() {
            if m.role.contains('\0') || m.content.contains('\0') {
                return Err(local(format!(
                    "message {i} ({}) contains a NUL byte",
                    m.role
                )));
            }
            chat.push(
                LlamaChatMessage::new(m.role.clone(), m.content.clone())
                    .map_err(|e| local(format!("message {i} ({}): {e}", m.role)))?,
            );
        }
        let rendered = self
            .model
            .chat_template(None)
            .ok()
            .and_then(|template| self.model.apply_chat_template(&template, &chat, true).ok());
        Ok(rendered.unwrap_or_else(|| chatml(&messages)))
    }

    fn generate(&self, req: &ChatRequest, prompt: &str) -> Result<(String, bool), LlmError> {
        let backend = backend()?;
        let n_ctx = self.options.context;
        // Checked in `load`.
        let threads = i32::try_from(self.options.threads).unwrap_or(1);
        let n_ctx_i32 = i32::try_from(n_ctx).unwrap_or(i32::MAX);
        if prompt.len() >= i32::MAX as usize / 2 {
            return Err(local(format!(
                "the prompt is too long ({} bytes)",
                prompt.len()
            )));
        }

        let vocab = self.model.vocab();
        let tokens = vocab.tokenize(prompt.as_bytes(), true, true);
        if tokens.is_empty() {
            return Err(local("the prompt has no tokens"));
        }
        let n_prompt = i32::try_from(tokens.len()).unwrap_or(i32::MAX);
        if n_prompt >= n_ctx_i32 {
            return Err(local(format!(
                "the prompt is {} tokens, it does not fit the context of {n_ctx} tokens",
                tokens.len()
            )));
        }

        let mut sampler = match &req.constraint {
            Constraint::None => LlamaSampler::greedy(),
            Constraint::JsonSchema { name, schema } => {
                let grammar = json_schema_to_gbnf(schema)?;
                let grammar =
                    LlamaSampler::grammar(&self.model, &grammar, "root").map_err(|e| {
                        local(format!(
                            "llama.cpp rejects the grammar for schema {name}: {e}"
                        ))
                    })?;
                LlamaSampler::chain_simple([grammar, LlamaSampler::greedy()])
            }
        };

        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(n_ctx)
            .with_n_threads(threads)
            .with_n_threads_batch(threads)
            .with_no_perf(true);
        let mut ctx = self
            .model
            .new_context(backend, params)
            .map_err(|e| local(format!("cannot create a llama.cpp context: {e}")))?;

        let mut batch = LlamaBatch::new(tokens.len().max(1), 1);
        batch
            .add_sequence(&tokens, 0, false)
            .map_err(|e| local(format!("cannot batch the prompt: {e}")))?;
        ctx.decode(&mut batch)
            .map_err(|e| local(format!("llama.cpp cannot decode the prompt: {e}")))?;

        let budget = i64::from(req.max_tokens).min(i64::from(n_ctx_i32 - n_prompt));
        let mut pos = n_prompt;
        let mut out = Vec::new();
        let mut finished = false;
        let mut produced: i64 = 0;
        while produced < budget {
            let token = sampler.sample(&ctx, batch.n_tokens() - 1);
            if vocab.is_eog(token) {
                finished = true;
                break;
            }
            vocab.token_to_piece_into(token, &mut out, false, None);
            produced += 1;
            if produced >= budget {
                break;
            }
            batch.clear();
            batch
                .add(token, pos, &[0], true)
                .map_err(|e| local(format!("cannot batch token {produced}: {e}")))?;
            pos += 1;
            ctx.decode(&mut batch)
                .map_err(|e| local(format!("llama.cpp cannot decode token {produced}: {e}")))?;
        }
        Ok((String::from_utf8_lossy(&out).into_owned(), finished))
    }
}

impl ChatBackend for LocalModel {
    fn complete(&self, req: &ChatRequest) -> Result<String, LlmError> {
        if req.max_tokens == 0 {
            return Err(local("max_tokens is 0"));
        }
        let prompt = self.render_prompt(&req.messages)?;
        let (text, finished) = {
            // A panic while holding the lock leaves nothing half-done to see.
            let _busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
            self.generate(req, &prompt)?
        };
        let text = text.trim().to_string();
        if let Constraint::JsonSchema { .. } = req.constraint {
            if serde_json::from_str::<Value>(&text).is_err() {
                let why = if finished {
                    "is not valid JSON"
                } else {
                    "was cut off before the JSON was complete"
                };
                return Err(LlmError::BadReply(format!(
                    "the local model's reply {why} (max_tokens {}): {text}",
                    req.max_tokens
                )));
            }
        }
        Ok(text)
    }

    fn endpoint(&self) -> String {
        format!("local:{}", self.options.model.display())
    }
}

/// The messages with every `system` message removed and its text put at the
/// start of the first user message (or, with no user message, as a first user
/// message of its own).
pub fn merge_system_messages(messages: &[Message]) -> Vec<Message> {
    let system: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == "system")
        .map(|m| m.content.trim())
        .filter(|c| !c.is_empty())
        .collect();
    let mut rest: Vec<Message> = messages
        .iter()
        .filter(|m| m.role != "system")
        .cloned()
        .collect();
    if system.is_empty() {
        return rest;
    }
    let system = system.join("\n\n");
    match rest.iter_mut().find(|m| m.role == "user") {
        Some(user) => user.content = format!("{system}\n\n{}", user.content),
        None => rest.insert(0, Message::user(system)),
    }
    rest
}

/// ChatML, for models without a usable chat template.
fn chatml(messages: &[Message]) -> String {
    let mut out = String::new();
    for m in messages {
        out.push_str("<|im_start|>");
        out.push_str(&m.role);
        out.push('\n');
        out.push_str(&m.content);
        out.push_str("<|im_end|>\n");
    }
    out.push_str("<|im_start|>assistant\n");
    out
}

// ---------------------------------------------------------------------------
// JSON schema -> GBNF

/// The longest string a schema string gets without `maxLength`.
const DEFAULT_MAX_STRING_CHARS: u64 = 512;
/// The most items an array gets without `maxItems`.
const DEFAULT_MAX_ITEMS: u64 = 32;
/// Upper bounds on what a schema may ask for (keeps the grammar small).
const LIMIT_STRING_CHARS: u64 = 4096;
const LIMIT_ITEMS: u64 = 256;

/// Keywords that only annotate a schema: accepted and ignored.
const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "examples",
    "default",
    "$schema",
    "$id",
    "$comment",
];

/// The shared rules of every grammar: optional single spaces, and the
/// characters of a JSON string. Raw control characters are excluded, and of
/// the escapes only `\"`, `\\` and `\/` are allowed, so the decoded string has
/// no control characters either.
const COMMON_RULES: &str = r#"ws ::= " "?
char ::= [^"\\\x7F\x00-\x1F] | "\\" ["\\/]
"#;

fn schema_error(message: impl fmt::Display) -> LlmError {
    local(format!(
        "JSON schema not supported by the local model: {message}"
    ))
}

/// A GBNF string literal (in double quotes) matching exactly `s`.
fn gbnf_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\x7f' => {
                out.push_str(&format!("\\x{:02X}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A GBNF literal matching `s` written as a JSON string.
fn gbnf_json_string_literal(s: &str) -> Result<String, LlmError> {
    let json = serde_json::to_string(s).map_err(|e| schema_error(format!("{s:?}: {e}")))?;
    Ok(gbnf_literal(&json))
}

fn check_keywords(
    what: &str,
    schema: &Map<String, Value>,
    allowed: &[&str],
) -> Result<(), LlmError> {
    for key in schema.keys() {
        if !allowed.contains(&key.as_str()) && !ANNOTATIONS.contains(&key.as_str()) {
            return Err(schema_error(format!(
                "{what}: keyword {key:?} is not supported"
            )));
        }
    }
    Ok(())
}

/// The non-negative integer `schema[key]`, or `default` when absent.
fn bound(
    what: &str,
    schema: &Map<String, Value>,
    key: &str,
    default: u64,
    limit: u64,
) -> Result<u64, LlmError> {
    match schema.get(key) {
        None => Ok(default),
        Some(v) => match v.as_u64() {
            Some(n) if n <= limit => Ok(n),
            Some(n) => Err(schema_error(format!(
                "{what}: {key} = {n} is over the limit of {limit}"
            ))),
            None => Err(schema_error(format!(
                "{what}: {key} must be a non-negative integer, not {v}"
            ))),
        },
    }
}

fn type_name(schema: &Map<String, Value>) -> Option<&str> {
    schema.get("type").and_then(Value::as_str)
}

/// The GBNF expression for a string schema (`type: string`, optionally with
/// `enum`, `minLength`, `maxLength`).
fn string_expr(what: &str, schema: &Map<String, Value>) -> Result<String, LlmError> {
    check_keywords(what, schema, &["type", "enum", "minLength", "maxLength"])?;
    match schema.get("type") {
        None if schema.contains_key("enum") => {}
        Some(Value::String(t)) if t == "string" => {}
        Some(t) => {
            return Err(schema_error(format!(
                "{what}: type {t} is not supported here (string expected)"
            )))
        }
        None => return Err(schema_error(format!("{what}: no type"))),
    }
    if let Some(values) = schema.get("enum") {
        let values = values
            .as_array()
            .ok_or_else(|| schema_error(format!("{what}: enum must be an array")))?;
        if values.is_empty() {
            return Err(schema_error(format!("{what}: enum is empty")));
        }
        let mut alternatives = Vec::with_capacity(values.len());
        for v in values {
            let s = v
                .as_str()
                .ok_or_else(|| schema_error(format!("{what}: enum value {v} is not a string")))?;
            alternatives.push(gbnf_json_string_literal(s)?);
        }
        return Ok(format!("( {} )", alternatives.join(" | ")));
    }
    let min = bound(what, schema, "minLength", 0, LIMIT_STRING_CHARS)?;
    let max = bound(
        what,
        schema,
        "maxLength",
        DEFAULT_MAX_STRING_CHARS.max(min),
        LIMIT_STRING_CHARS,
    )?;
    if min > max {
        return Err(schema_error(format!(
            "{what}: minLength {min} is over maxLength {max}"
        )));
    }
    if max == 0 {
        return Ok(r#""\"\"""#.to_string());
    }
    Ok(format!(r#""\"" char{{{min},{max}}} "\"""#))
}

/// The GBNF expression for an array of strings, with `item` the rule name of
/// one item.
fn array_expr(what: &str, schema: &Map<String, Value>, item: &str) -> Result<String, LlmError> {
    check_keywords(what, schema, &["type", "items", "minItems", "maxItems"])?;
    let min = bound(what, schema, "minItems", 0, LIMIT_ITEMS)?;
    let max = bound(
        what,
        schema,
        "maxItems",
        DEFAULT_MAX_ITEMS.max(min),
        LIMIT_ITEMS,
    )?;
    if min > max {
        return Err(schema_error(format!(
            "{what}: minItems {min} is over maxItems {max}"
        )));
    }
    let more = format!(r#"( ws "," ws {item} )"#);
    Ok(match (min, max) {
        (_, 0) => r#""[" ws "]""#.to_string(),
        (0, 1) => format!(r#""[" ws {item}? ws "]""#),
        (0, max) => format!(r#""[" ws ( {item} {more}{{0,{}}} )? ws "]""#, max - 1),
        (_, 1) => format!(r#""[" ws {item} ws "]""#),
        (min, max) => format!(r#""[" ws {item} {more}{{{},{}}} ws "]""#, min - 1, max - 1),
    })
}

/// A GBNF grammar (root rule `root`) for the JSON values matching `schema`.
///
/// Supported: an object (`type: object`) with `properties`, each a `string`
/// (optionally with `enum`, `minLength`, `maxLength`) or an `array` of such
/// strings (optionally with `minItems`, `maxItems`); `required` and
/// `additionalProperties`. The object has exactly the listed properties, all
/// of them present, in the order of `required` (then any property `required`
/// leaves out, by name: serde_json does not keep the order of `properties`). Strings are at most 512 characters
/// and arrays at most 32 items unless the schema says otherwise; JSON
/// whitespace is at most one space.
pub fn json_schema_to_gbnf(schema: &Value) -> Result<String, LlmError> {
    let root = schema
        .as_object()
        .ok_or_else(|| schema_error("the schema is not a JSON object"))?;
    check_keywords(
        "the schema",
        root,
        &["type", "properties", "required", "additionalProperties"],
    )?;
    if type_name(root) != Some("object") {
        return Err(schema_error(format!(
            "the top level must be type \"object\", not {}",
            root.get("type")
                .map_or_else(|| "missing".to_string(), Value::to_string)
        )));
    }
    let empty = Map::new();
    let properties = match root.get("properties") {
        None => &empty,
        Some(Value::Object(p)) => p,
        Some(other) => {
            return Err(schema_error(format!(
                "properties must be an object, not {other}"
            )))
        }
    };
    // The order of the properties: serde_json's maps are sorted by key (no
    // `preserve_order`), so the listed order is taken from `required`, then
    // any property it leaves out follows in key order.
    let mut order: Vec<&str> = Vec::with_capacity(properties.len());
    match root.get("required") {
        None => {}
        Some(Value::Array(names)) => {
            for name in names {
                let name = name.as_str().ok_or_else(|| {
                    schema_error(format!("required entry {name} is not a string"))
                })?;
                if !properties.contains_key(name) {
                    return Err(schema_error(format!(
                        "required property {name:?} is not in properties"
                    )));
                }
                if order.contains(&name) {
                    return Err(schema_error(format!(
                        "required property {name:?} is listed twice"
                    )));
                }
                order.push(name);
            }
        }
        Some(other) => {
            return Err(schema_error(format!(
                "required must be an array, not {other}"
            )))
        }
    }
    for name in properties.keys() {
        if !order.contains(&name.as_str()) {
            order.push(name);
        }
    }
    match root.get("additionalProperties") {
        None | Some(Value::Bool(_)) => {}
        Some(other) => {
            return Err(schema_error(format!(
                "additionalProperties must be true or false, not {other}"
            )))
        }
    }

    let mut rules = Vec::new();
    let mut members = Vec::with_capacity(properties.len());
    for (i, name) in order.into_iter().enumerate() {
        let what = format!("property {name:?}");
        let prop = properties
            .get(name)
            .ok_or_else(|| schema_error(format!("{what}: no schema")))?
            .as_object()
            .ok_or_else(|| schema_error(format!("{what}: its schema is not an object")))?;
        let rule = format!("prop-{i}");
        let expr = match type_name(prop) {
            Some("array") => {
                let items = prop
                    .get("items")
                    .ok_or_else(|| schema_error(format!("{what}: an array needs items")))?
                    .as_object()
                    .ok_or_else(|| schema_error(format!("{what}: items is not an object")))?;
                let item_rule = format!("{rule}-item");
                rules.push(format!(
                    "{item_rule} ::= {}",
                    string_expr(&format!("{what} items"), items)?
                ));
                array_expr(&what, prop, &item_rule)?
            }
            _ => string_expr(&what, prop)?,
        };
        rules.push(format!("{rule} ::= {expr}"));
        members.push(format!(
            r#"{} ws ":" ws {rule}"#,
            gbnf_json_string_literal(name)?
        ));
    }

    let body = if members.is_empty() {
        r#""{" ws "}""#.to_string()
    } else {
        format!(r#""{{" ws {} ws "}}""#, members.join(r#" ws "," ws "#))
    };
    let mut grammar = format!("root ::= {body}\n");
    for rule in rules {
        grammar.push_str(&rule);
        grammar.push('\n');
    }
    grammar.push_str(COMMON_RULES);
    Ok(grammar)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gbnf_for_one_string() {
        let schema = json!({
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
            "additionalProperties": false
        });
        let g = json_schema_to_gbnf(&schema).unwrap();
        assert!(
            g.starts_with(r#"root ::= "{" ws "\"query\"" ws ":" ws prop-0 ws "}""#),
            "{g}"
        );
        assert!(g.contains(r#"prop-0 ::= "\"" char{0,512} "\"""#), "{g}");
        assert!(g.contains("char ::= "), "{g}");
        assert!(g.contains("ws ::= "), "{g}");
    }

    #[test]
    fn gbnf_for_array_of_strings_and_enum_in_order() {
        let schema = json!({
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": {"type": "string"}},
                "kind": {"type": "string", "enum": ["a", "b\"c"]},
                "name": {"type": "string", "maxLength": 40}
            },
            "required": ["tags", "kind", "name"],
            "additionalProperties": false
        });
        let g = json_schema_to_gbnf(&schema).unwrap();
        let root = g.lines().next().unwrap();
        let tags = root.find(r#""\"tags\"""#).unwrap();
        let kind = root.find(r#""\"kind\"""#).unwrap();
        let name = root.find(r#""\"name\"""#).unwrap();
        assert!(tags < kind && kind < name, "{root}");
        assert!(
            g.contains(r#"prop-0-item ::= "\"" char{0,512} "\"""#),
            "{g}"
        );
        assert!(
            g.contains(
                r#"prop-0 ::= "[" ws ( prop-0-item ( ws "," ws prop-0-item ){0,31} )? ws "]""#
            ),
            "{g}"
        );
        assert!(
            g.contains(r#"prop-1 ::= ( "\"a\"" | "\"b\\\"c\"" )"#),
            "{g}"
        );
        assert!(g.contains(r#"prop-2 ::= "\"" char{0,40} "\"""#), "{g}");
    }

    #[test]
    fn gbnf_properties_outside_required_follow_by_name() {
        let schema = json!({
            "type": "object",
            "properties": {"b": {"type": "string"}, "c": {"type": "string"}, "a": {"type": "string"}},
            "required": ["c"]
        });
        let g = json_schema_to_gbnf(&schema).unwrap();
        let root = g.lines().next().unwrap();
        assert_eq!(
            root,
            r#"root ::= "{" ws "\"c\"" ws ":" ws prop-0 ws "," ws "\"a\"" ws ":" ws prop-1 ws "," ws "\"b\"" ws ":" ws prop-2 ws "}""#
        );
        let empty = json_schema_to_gbnf(&json!({"type": "object"})).unwrap();
        assert!(empty.starts_with(r#"root ::= "{" ws "}""#), "{empty}");
    }

    #[test]
    fn gbnf_array_bounds() {
        let schema = json!({
            "type": "object",
            "properties": {"xs": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3}}
        });
        let g = json_schema_to_gbnf(&schema).unwrap();
        assert!(
            g.contains(r#"prop-0 ::= "[" ws prop-0-item ( ws "," ws prop-0-item ){0,2} ws "]""#),
            "{g}"
        );
    }

    #[test]
    fn gbnf_rejects_unsupported_schemas() {
        for schema in [
            json!("string"),
            json!({"type": "array"}),
            json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            json!({"type": "object", "properties": {"n": {"type": "string", "pattern": "x"}}}),
            json!({"type": "object", "properties": {"n": {"type": "array"}}}),
            json!({"type": "object", "properties": {"n": {"type": "array", "items": {"type": "number"}}}}),
            json!({"type": "object", "properties": {"n": {"type": "string", "enum": [1]}}}),
            json!({"type": "object", "properties": {"n": {"type": "string", "enum": []}}}),
            json!({"type": "object", "properties": {"n": {"type": "string", "maxLength": -1}}}),
            json!({"type": "object", "properties": {"n": {"type": "string"}}, "required": ["m"]}),
            json!({"type": "object", "properties": {"n": {"type": "string"}}, "required": ["n", "n"]}),
            json!({"type": "object", "properties": {}, "additionalProperties": {}}),
        ] {
            match json_schema_to_gbnf(&schema) {
                Err(LlmError::Local(m)) => assert!(m.contains("JSON schema"), "{m}"),
                other => panic!("{schema}: {other:?}"),
            }
        }
    }

    #[test]
    fn gbnf_literals_are_escaped() {
        assert_eq!(gbnf_literal("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\x01""#);
        assert_eq!(gbnf_json_string_literal("q").unwrap(), r#""\"q\"""#);
    }

    #[test]
    fn system_messages_go_into_the_first_user_message() {
        let merged = merge_system_messages(&[
            Message::system("Be brief."),
            Message::user("Hi"),
            Message::assistant("Hello"),
            Message::user("Again"),
        ]);
        assert_eq!(
            merged,
            vec![
                Message::user("Be brief.\n\nHi"),
                Message::assistant("Hello"),
                Message::user("Again"),
            ]
        );
        assert_eq!(
            merge_system_messages(&[Message::system("Only")]),
            vec![Message::user("Only")]
        );
        assert_eq!(
            merge_system_messages(&[Message::user("x")]),
            vec![Message::user("x")]
        );
    }

    #[test]
    fn chatml_fallback() {
        assert_eq!(
            chatml(&[Message::user("Hi")]),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn missing_model_file_is_named() {
        let path = std::env::temp_dir().join("kgbox-no-such-model.gguf");
        match LocalModel::load(&LocalOptions::new(&path)) {
            Err(LlmError::Local(m)) => assert!(m.contains(&path.display().to_string()), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
