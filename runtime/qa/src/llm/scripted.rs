//! A chat model for unit tests: a closure answers each request, and every
//! request is recorded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;

use super::{ChatBackend, ChatRequest, LlmError, Sample};

type Script = dyn Fn(&ChatRequest) -> Result<String, LlmError> + Send + Sync;
type SampleScript = dyn Fn(&ChatRequest, usize) -> Result<Vec<Sample>, LlmError> + Send + Sync;

pub(crate) struct Scripted {
    reply: Box<Script>,
    /// Answers [`ChatBackend::sample`] when set (else the default: one
    /// reply from `reply`).
    samples: Option<Box<SampleScript>>,
    calls: Mutex<Vec<ChatRequest>>,
}

impl Scripted {
    pub(crate) fn new(
        reply: impl Fn(&ChatRequest) -> Result<String, LlmError> + Send + Sync + 'static,
    ) -> Self {
        Scripted {
            reply: Box::new(reply),
            samples: None,
            calls: Mutex::new(Vec::new()),
        }
    }

    /// A model whose `sample` gives `replies(request, n)`.
    pub(crate) fn sampling(
        replies: impl Fn(&ChatRequest, usize) -> Result<Vec<Sample>, LlmError> + Send + Sync + 'static,
    ) -> Self {
        Scripted {
            reply: Box::new(|_| Err(LlmError::BadReply("only sample() is scripted".into()))),
            samples: Some(Box::new(replies)),
            calls: Mutex::new(Vec::new()),
        }
    }

    /// Every request so far.
    pub(crate) fn calls(&self) -> Vec<ChatRequest> {
        self.calls.lock().unwrap().clone()
    }

    /// The purpose of each request, in order.
    pub(crate) fn purposes(&self) -> Vec<&'static str> {
        self.calls().iter().map(|c| c.purpose).collect()
    }

    /// Every message text sent.
    pub(crate) fn sent(&self) -> String {
        self.calls()
            .iter()
            .flat_map(|c| c.messages.iter().map(|m| m.content.clone()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl ChatBackend for Scripted {
    fn complete(&self, req: &ChatRequest) -> Result<String, LlmError> {
        self.calls.lock().unwrap().push(req.clone());
        (self.reply)(req)
    }
    fn sample(&self, req: &ChatRequest, n: usize) -> Result<Vec<Sample>, LlmError> {
        match &self.samples {
            Some(script) => {
                self.calls.lock().unwrap().push(req.clone());
                script(req, n)
            }
            None => Ok(vec![Sample {
                text: self.complete(req)?,
                logprob: None,
            }]),
        }
    }
    fn endpoint(&self) -> String {
        "scripted".into()
    }
}
