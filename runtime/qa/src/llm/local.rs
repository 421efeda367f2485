//! The `local` backend: a GGUF model run in-process by llama.cpp (through the
//! `llama-cpp-2` crate), behind the `local-llm` feature.
//!
//! * The prompt is the model's own chat template (from the GGUF), or ChatML
//!   when the model has none that llama.cpp can apply.
//! * System messages are never sent as such: small models like SmolLM2 do
//!   badly with a system turn, so their text is merged into the start of the
//!   first user message.
//! * Decoding is greedy (the request's temperature is ignored), at most
//!   `max_tokens` new tokens, up to the end-of-generation token. Further
//!   samples ([`ChatBackend::sample`]) reuse the evaluated prompt and are
//!   drawn at [`SAMPLE_TEMPERATURE`] until [`enough_samples`]; each reply
//!   carries the model's log-probability of its tokens.
//! * A [`Constraint::JsonSchema`] of the planners' kind (an object of
//!   string enums and short arrays of them, see [`Shape`]) is decoded as a
//!   sequence of choices ([`shaped`]): the model runs only where the reply
//!   may differ. Any other schema becomes a GBNF grammar
//!   ([`json_schema_to_gbnf`]) that constrains the decoding token by token.

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
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::{send_logs_to_tracing, LogOptions};

use super::gbnf::json_schema_to_gbnf;
use super::shape::Shape;
use super::weights::file_type_name;
use super::{
    enough_samples, ChatBackend, ChatRequest, Constraint, LlmError, Message, Sample,
    SAMPLE_TEMPERATURE,
};

/// How to load and run a local model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalOptions {
    /// The GGUF file.
    pub model: PathBuf,
    /// CPU threads for llama.cpp (default 2).
    pub threads: usize,
    /// Context size in tokens: prompt plus reply (default 2048).
    pub context: u32,
    /// Random seed of the samples after the first (greedy) reply.
    pub seed: u32,
    /// Keep the evaluated state of the prompts' common start (see
    /// [`PromptCache`]) and evaluate only what follows it (default on).
    pub prompt_cache: bool,
    /// Starts kept at most (default 16; each holds the model's state for
    /// its tokens: about 23 KB a token for SmolLM2-135M, 4 MB for a
    /// 180-token start).
    pub prompt_cache_entries: usize,
    /// Decode replies of a [`Shape`] as choices, the forced text between
    /// them in one batch (default on); off, every schema is a grammar.
    pub choice_decoding: bool,
    /// With choice decoding, run a request's draft reply through the model
    /// in the prompt's batch and write the reply from its logits while the
    /// reply keeps to it (default on; see [`shaped`]).
    pub draft: bool,
    /// Rewrite the weights at load time into a format llama.cpp runs
    /// faster (default [`Requantize::Auto`]: Q4_1 becomes Q8_0).
    pub requantize: Requantize,
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
            prompt_cache: true,
            prompt_cache_entries: 16,
            choice_decoding: true,
            draft: true,
            requantize: Requantize::Auto,
        }
    }
}

/// A GGUF model loaded in this process.
pub struct LocalModel {
    model: LlamaModel,
    options: LocalOptions,
    /// One completion at a time: llama.cpp contexts must not be created
    /// concurrently from one model, and the CPU is the bottleneck anyway.
    /// It guards the prompt cache too.
    busy: Mutex<PromptCache>,
}

impl fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalModel")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

mod cpu;
mod prompt_cache;
mod requantize;
mod shaped;

pub use crate::llm::weights::Requantize;
pub use prompt_cache::PromptCache;

fn local(message: impl Into<String>) -> LlmError {
    LlmError::Local(message.into())
}

/// The llama.cpp backend, initialised once per process with its logging off.
fn backend() -> Result<&'static LlamaBackend, LlmError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            cpu::check_cpu()?;
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
        let from = requantize::file_type(&model);
        let model = match options.requantize.target(from) {
            Some(to) => requantize::rewritten(backend, model, options, from, to),
            None => model,
        };
        Ok(LocalModel {
            model,
            options: options.clone(),
            busy: Mutex::new(PromptCache::default()),
        })
    }

    /// The format of the weights that run (`Q4_0`, `Q4_K_M`, ...), as the
    /// loaded model names it.
    pub fn weights(&self) -> String {
        file_type_name(requantize::file_type(&self.model))
    }

    /// The options the model was loaded with.
    pub fn options(&self) -> &LocalOptions {
        &self.options
    }

    /// The prompt text for `messages`: the model's chat template, or ChatML;
    /// with the start of the assistant's turn when `reply`.
    fn render_prompt(&self, messages: &[Message], reply: bool) -> Result<String, LlmError> {
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
            .and_then(|template| self.model.apply_chat_template(&template, &chat, reply).ok());
        Ok(rendered.unwrap_or_else(|| chatml(&messages, reply)))
    }

    /// `n` replies to `prompt`: the first greedy, the others sampled at
    /// [`SAMPLE_TEMPERATURE`] from the same evaluated prompt (its cache is
    /// kept; only the reply's tokens are dropped between samples). Each
    /// reply comes with whether it ended on its own and the model's
    /// log-probability of its tokens.
    fn generate(
        &self,
        req: &ChatRequest,
        prompt: &str,
        stable: Option<&str>,
        n: usize,
        cache: &mut PromptCache,
    ) -> Result<Vec<(String, bool, f32)>, LlmError> {
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
        let Some(&last) = tokens.last() else {
            return Err(local("the prompt has no tokens"));
        };
        let n_prompt = i32::try_from(tokens.len()).unwrap_or(i32::MAX);
        if n_prompt >= n_ctx_i32 {
            return Err(local(format!(
                "the prompt is {} tokens, it does not fit the context of {n_ctx} tokens",
                tokens.len()
            )));
        }
        let shape = match &req.constraint {
            Constraint::JsonSchema { schema, .. } if self.options.choice_decoding => {
                Shape::from_schema(schema)
            }
            _ => None,
        };
        let grammar = match &req.constraint {
            Constraint::JsonSchema { name, schema } if shape.is_none() => {
                Some((name, json_schema_to_gbnf(schema)?))
            }
            _ => None,
        };
        // Reply `i`'s samplers: the grammar's (which masks the tokens it
        // does not allow), then the one that picks a token.
        let samplers = |i: usize| -> Result<(Option<LlamaSampler>, LlamaSampler), LlmError> {
            let pick = if i == 0 {
                LlamaSampler::greedy()
            } else {
                let seed = self.options.seed.wrapping_add(i as u32);
                LlamaSampler::chain_simple([
                    LlamaSampler::temp(SAMPLE_TEMPERATURE),
                    LlamaSampler::dist(seed),
                ])
            };
            let grammar = match &grammar {
                None => None,
                Some((name, g)) => {
                    Some(LlamaSampler::grammar(&self.model, g, "root").map_err(|e| {
                        local(format!(
                            "llama.cpp rejects the grammar for schema {name}: {e}"
                        ))
                    })?)
                }
            };
            Ok((grammar, pick))
        };

        // The prompt's start before its last message, in tokens, when the
        // prompt's tokens begin with it.
        let stable = stable
            .filter(|s| prompt.starts_with(s))
            .map(|s| vocab.tokenize(s.as_bytes(), true, true))
            .filter(|s| tokens.starts_with(s))
            .map_or(0, |s| s.len());
        // A context as large as this prompt and its reply need (in steps
        // of 256 tokens), not the configured most: it is made for each
        // request, and a smaller one is made faster.
        let needed = u64::from(n_prompt.unsigned_abs()) + u64::from(req.max_tokens) + 1;
        let n_ctx = u32::try_from(needed.div_ceil(256) * 256)
            .unwrap_or(n_ctx)
            .min(n_ctx);
        let n_ctx_i32 = i32::try_from(n_ctx).unwrap_or(i32::MAX);
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(n_ctx)
            .with_n_threads(threads)
            .with_n_threads_batch(threads)
            // The prompt's sequence, and one the prompt cache copies a
            // start to, in one buffer.
            .with_n_seq_max(prompt_cache::SEQUENCES)
            .with_kv_unified(true)
            .with_no_perf(true);
        let mut ctx = self
            .model
            .new_context(backend, params)
            .map_err(|e| local(format!("cannot create a llama.cpp context: {e}")))?;

        let capacity = if self.options.prompt_cache {
            self.options.prompt_cache_entries
        } else {
            0
        };
        let budget = i64::from(req.max_tokens).min(i64::from(n_ctx_i32 - n_prompt));
        // The greedy reply's draft goes through the model with the prompt.
        let draft = match (&shape, &req.draft) {
            (Some(shape), Some(text)) if self.options.draft => {
                shaped::Draft::new(&self.model, shape, text, budget)
            }
            _ => None,
        };
        let after = draft
            .as_ref()
            .map_or((&[][..], &[][..]), |d| (&d.tokens[..], &d.logits[..]));
        // Room for the prompt and the draft, or for a reply's forced text
        // in one batch.
        let mut batch = LlamaBatch::new((tokens.len() + after.0.len()).max(512), 1);
        let last_at = cache.evaluate(&mut ctx, &mut batch, &tokens, stable, capacity, after)?;
        let mut ahead = draft.map(|d| shaped::Ahead::new(d, last_at));

        let mut replies: Vec<(String, bool, f32)> = Vec::with_capacity(n);
        for i in 0..n.max(1) {
            let had: Vec<Sample> = replies
                .iter()
                .map(|(text, _, lp)| Sample {
                    text: text.clone(),
                    logprob: Some(*lp),
                })
                .collect();
            if enough_samples(&had) {
                break;
            }
            if i > 0 {
                // Back to the end of the prompt: drop the last reply's
                // tokens and decode the prompt's last token again for its
                // logits.
                let from = u32::try_from(n_prompt - 1).unwrap_or(0);
                ctx.clear_kv_cache_seq(Some(0), Some(from), None)
                    .map_err(|e| local(format!("cannot reset the cache: {e}")))?;
                batch.clear();
                batch
                    .add(last, n_prompt - 1, &[0], true)
                    .map_err(|e| local(format!("cannot batch the prompt's end: {e}")))?;
                ctx.decode(&mut batch)
                    .map_err(|e| local(format!("llama.cpp cannot decode the prompt: {e}")))?;
            }
            let (mut grammar, mut pick) = samplers(i)?;
            if let Some(shape) = &shape {
                let model = &self.model;
                replies.push(shaped::reply(
                    model,
                    &mut ctx,
                    &mut batch,
                    shape,
                    tokens.len(),
                    budget,
                    &mut pick,
                    // The greedy (first) reply's only.
                    ahead.take(),
                )?);
                continue;
            }
            let mut pos = n_prompt;
            let mut out = Vec::new();
            let mut finished = false;
            let mut produced: i64 = 0;
            let mut logprob = 0.0f64;
            while produced < budget {
                let at = batch.n_tokens() - 1;
                let logits = ctx.get_logits_ith(at);
                let mut tokens = LlamaTokenDataArray::from_iter(
                    logits.iter().enumerate().map(|(t, &l)| {
                        LlamaTokenData::new(
                            LlamaToken(i32::try_from(t).unwrap_or(i32::MAX)),
                            l,
                            0.0,
                        )
                    }),
                    false,
                );
                if let Some(g) = grammar.as_mut() {
                    g.apply(&mut tokens);
                }
                // The reply's probability among those the grammar allows.
                let allowed = log_sum_exp(tokens.data.iter().map(|d| d.logit()));
                pick.apply(&mut tokens);
                let token = tokens
                    .selected_token()
                    .ok_or_else(|| local("the grammar allows no token here"))?;
                let logit = usize::try_from(token.0)
                    .ok()
                    .and_then(|t| logits.get(t))
                    .copied()
                    .unwrap_or(f32::NEG_INFINITY);
                logprob += f64::from(logit) - allowed;
                if let Some(g) = grammar.as_mut() {
                    g.accept(token);
                }
                pick.accept(token);
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
            replies.push((
                String::from_utf8_lossy(&out).into_owned(),
                finished,
                logprob as f32,
            ));
        }
        Ok(replies)
    }

    /// The prompt cache's hits and misses so far.
    pub fn prompt_cache_counts(&self) -> (u64, u64) {
        let c = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        (c.hits, c.misses)
    }

    /// `n` replies, trimmed; with a JSON-schema constraint, those that are
    /// not JSON are dropped (an error when none is left).
    fn replies(&self, req: &ChatRequest, n: usize) -> Result<Vec<Sample>, LlmError> {
        if req.max_tokens == 0 {
            return Err(local("max_tokens is 0"));
        }
        let prompt = self.render_prompt(&req.messages, true)?;
        // The prompt before the question: what later prompts may share.
        let stable = match req.messages.split_last() {
            Some((last, before)) if last.role == "user" && !before.is_empty() => {
                self.render_prompt(before, false).ok()
            }
            _ => None,
        };
        let replies = {
            // A panic while holding the lock leaves nothing half-done to see.
            let mut cache = self.busy.lock().unwrap_or_else(|e| e.into_inner());
            self.generate(req, &prompt, stable.as_deref(), n, &mut cache)?
        };
        let mut out = Vec::new();
        let mut first_error = None;
        for (text, finished, logprob) in replies {
            let text = text.trim().to_string();
            if let Constraint::JsonSchema { .. } = req.constraint {
                if serde_json::from_str::<serde_json::Value>(&text).is_err() {
                    let why = if finished {
                        "is not valid JSON"
                    } else {
                        "was cut off before the JSON was complete"
                    };
                    first_error.get_or_insert_with(|| {
                        LlmError::BadReply(format!(
                            "the local model's reply {why} (max_tokens {}): {text}",
                            req.max_tokens
                        ))
                    });
                    continue;
                }
            }
            out.push(Sample {
                text,
                logprob: Some(logprob),
            });
        }
        match (out.is_empty(), first_error) {
            (true, Some(e)) => Err(e),
            _ => Ok(out),
        }
    }
}

/// `ln Σ exp(l)` over the finite logits (minus infinity when none is).
fn log_sum_exp(logits: impl Iterator<Item = f32> + Clone) -> f64 {
    let max = logits
        .clone()
        .filter(|l| l.is_finite())
        .fold(f32::NEG_INFINITY, f32::max);
    if !max.is_finite() {
        return f64::NEG_INFINITY;
    }
    let sum: f64 = logits
        .filter(|l| l.is_finite())
        .map(|l| f64::from(l - max).exp())
        .sum();
    f64::from(max) + sum.ln()
}

impl ChatBackend for LocalModel {
    fn complete(&self, req: &ChatRequest) -> Result<String, LlmError> {
        let mut replies = self.replies(req, 1)?.into_iter();
        replies
            .next()
            .map(|s| s.text)
            .ok_or_else(|| local("the model gave no reply"))
    }

    fn sample(&self, req: &ChatRequest, n: usize) -> Result<Vec<Sample>, LlmError> {
        self.replies(req, n)
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
fn chatml(messages: &[Message], reply: bool) -> String {
    let mut out = String::new();
    for m in messages {
        out.push_str("<|im_start|>");
        out.push_str(&m.role);
        out.push('\n');
        out.push_str(&m.content);
        out.push_str("<|im_end|>\n");
    }
    if reply {
        out.push_str("<|im_start|>assistant\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
            chatml(&[Message::user("Hi")], true),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn log_sum_exp_skips_masked_logits() {
        let l = [0.0f32, f32::NEG_INFINITY, (3.0f32).ln()];
        assert!((log_sum_exp(l.iter().copied()) - 4.0f64.ln()).abs() < 1e-6);
        let none = [f32::NEG_INFINITY; 2];
        assert_eq!(log_sum_exp(none.iter().copied()), f64::NEG_INFINITY);
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
