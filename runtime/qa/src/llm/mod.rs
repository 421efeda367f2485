//! Talking to a language model: one chat interface ([`ChatBackend`]) with an
//! OpenAI-compatible HTTP client ([`openai`]) and, behind the `local-llm`
//! feature, an in-process GGUF model ([`local`]). Every backend is wrapped by
//! the privacy policy ([`policy`]) and the audit log ([`audit`]).

pub mod audit;
pub mod gbnf;
#[cfg(feature = "local-llm")]
pub mod local;
pub mod openai;
pub mod policy;
#[cfg(test)]
pub(crate) mod scripted;
pub mod shape;
pub mod weights;

use serde::{Deserialize, Serialize};

/// One chat message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Message {
        Message {
            role: "system".into(),
            content: content.into(),
        }
    }
    pub fn user(content: impl Into<String>) -> Message {
        Message {
            role: "user".into(),
            content: content.into(),
        }
    }
    pub fn assistant(content: impl Into<String>) -> Message {
        Message {
            role: "assistant".into(),
            content: content.into(),
        }
    }
}

/// What the answer must look like.
#[derive(Debug, Clone, PartialEq)]
pub enum Constraint {
    /// Free text.
    None,
    /// A JSON value matching this JSON schema (`response_format` of the
    /// OpenAI API; a grammar for the local model).
    JsonSchema {
        name: String,
        schema: serde_json::Value,
    },
}

/// One completion request.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    pub constraint: Constraint,
    pub max_tokens: u32,
    pub temperature: f32,
    /// Why the call is made (`plan`, `arbitrate`): recorded in the audit log
    /// and the metrics.
    pub purpose: &'static str,
    /// The reply the caller expects most (a guided planner's likeliest
    /// chain, as the constraint writes it). The local model checks it in
    /// one pass through the model instead of one pass per choice, and
    /// writes on from where the model would choose otherwise: the reply is
    /// the one it writes without a draft. Not sent to HTTP endpoints.
    pub draft: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("LLM endpoint {endpoint}: {message}")]
    Transport { endpoint: String, message: String },
    #[error("LLM endpoint {endpoint} answered HTTP {status}: {body}")]
    Status {
        endpoint: String,
        status: u16,
        body: String,
        /// How long the server asked to wait before trying again (its
        /// `Retry-After`, when given in seconds).
        retry_after: Option<std::time::Duration>,
    },
    #[error("the LLM's reply is not usable: {0}")]
    BadReply(String),
    #[error("privacy policy: {0}")]
    Policy(String),
    #[error("the local model failed: {0}")]
    Local(String),
    #[error("the audit log cannot be written: {0}")]
    Audit(String),
}

/// Temperature of the replies sampled after the first (greedy) one.
pub const SAMPLE_TEMPERATURE: f32 = 0.8;
/// Sampling stops once the distinct replies had hold this much of the
/// model's probability: the rest could not outweigh them.
pub const SAMPLE_STOP_MASS: f32 = 0.5;

/// Whether `samples` are enough: their distinct texts' probabilities sum
/// to [`SAMPLE_STOP_MASS`] or more (never without log-probabilities).
pub fn enough_samples(samples: &[Sample]) -> bool {
    let mut seen: Vec<&str> = Vec::new();
    let mut mass = 0.0f32;
    for s in samples {
        let Some(lp) = s.logprob else { return false };
        if !seen.contains(&s.text.as_str()) {
            seen.push(&s.text);
            mass += lp.exp();
        }
    }
    mass >= SAMPLE_STOP_MASS
}

/// One reply of several ([`ChatBackend::sample`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub text: String,
    /// The model's log-probability of the reply's tokens (natural log,
    /// summed), when the backend reports it.
    pub logprob: Option<f32>,
}

/// A language model that completes chats.
pub trait ChatBackend: Send + Sync {
    /// The assistant's reply text (for a JSON-schema constraint, the JSON text).
    fn complete(&self, req: &ChatRequest) -> Result<String, LlmError>;
    /// Up to `n` replies to `req` with their log-probabilities: the first
    /// decoded at `req.temperature`, the others sampled at
    /// [`SAMPLE_TEMPERATURE`], stopping early once they are
    /// [`enough_samples`]. A backend that cannot sample gives one reply
    /// without a log-probability. Fails only when no reply was had.
    fn sample(&self, req: &ChatRequest, n: usize) -> Result<Vec<Sample>, LlmError> {
        let _ = n;
        Ok(vec![Sample {
            text: self.complete(req)?,
            logprob: None,
        }])
    }
    /// Where the model runs, for logs and the audit log (a URL, or `local:PATH`).
    fn endpoint(&self) -> String;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str, p: Option<f32>) -> Sample {
        Sample {
            text: text.into(),
            logprob: p.map(f32::ln),
        }
    }

    #[test]
    fn sampling_stops_once_the_replies_are_likely_enough() {
        assert!(!enough_samples(&[]));
        assert!(enough_samples(&[s("a", Some(0.6))]));
        assert!(!enough_samples(&[s("a", Some(0.3))]));
        // The same reply twice counts once.
        assert!(!enough_samples(&[s("a", Some(0.3)), s("a", Some(0.3))]));
        assert!(enough_samples(&[s("a", Some(0.3)), s("b", Some(0.25))]));
        // Without log-probabilities there is no telling.
        assert!(!enough_samples(&[s("a", None)]));
    }
}
