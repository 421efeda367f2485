//! Replies of a [`Shape`]: the model runs only where the reply chooses.
//!
//! The text between two choices is forced; its tokens wait and are
//! evaluated in one batch together with the token chosen before them, and
//! the logits of the batch's last token make the next choice. A 2-hop plan
//! of about 22 tokens takes five or six passes through the model instead
//! of 23, and no grammar is applied to the whole vocabulary per token. The
//! reply's log-probability is that of its choices, each among the tokens
//! the shape allowed there (forced tokens count 1).
//!
//! A request's draft (the reply the caller expects most) cuts the passes
//! further: its tokens go through the model in one batch with the logits
//! of each kept, the choices are made from those, and only where the reply
//! leaves the draft are the draft's later tokens dropped and the model run
//! on as above. A right draft costs one pass; the reply is the same.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;

use super::prompt_cache::decode_at;
use super::{local, log_sum_exp};
use crate::llm::shape::{Hypotheses, Next, Shape};
use crate::llm::LlmError;

/// A draft as the reply's tokens: those the shape can write toward it, and
/// for each whether the logits after it are needed (before a choice, and
/// after the last, where the reply may go on past the draft).
pub(super) struct Draft {
    pub tokens: Vec<LlamaToken>,
    pub logits: Vec<bool>,
}

impl Draft {
    /// The tokens of `draft` a reply of `shape` can write (at most
    /// `budget`); `None` when none of them is a choice (a draft the reply
    /// cannot follow past its forced start).
    pub(super) fn new(
        model: &LlamaModel,
        shape: &Shape,
        draft: &str,
        budget: i64,
    ) -> Option<Draft> {
        let vocab = model.vocab();
        let mut tokenize = |text: &str| vocab.tokenize(text.as_bytes(), false, false);
        let mut h = Hypotheses::new(shape, &mut tokenize);
        let mut tokens = Vec::new();
        let mut logits: Vec<bool> = Vec::new();
        let mut chosen = false;
        while i64::try_from(tokens.len()).unwrap_or(i64::MAX) < budget {
            let token = match h.next() {
                Next::Done(_) => break,
                Next::Forced(t) => t,
                // Up to the first choice the draft does not make.
                Next::Choose(_) => match h.toward(draft) {
                    Some(t) => {
                        // The model chooses here: the logits after the
                        // token before are kept.
                        if let Some(last) = logits.last_mut() {
                            *last = true;
                        }
                        chosen = true;
                        t
                    }
                    None => break,
                },
            };
            tokens.push(token);
            logits.push(false);
            h.push(token, &mut tokenize);
        }
        if !chosen {
            return None;
        }
        // And after the last: the reply may go on past the draft.
        if let Some(last) = logits.last_mut() {
            *last = true;
        }
        Some(Draft { tokens, logits })
    }
}

/// A draft decoded after the prompt in the prompt's batch: the logits at
/// its positions stand in for the passes that would write it a token at a
/// time, as long as the reply keeps to it.
pub(super) struct Ahead {
    draft: Draft,
    /// The batch index of the prompt's last token (the draft's follow).
    base: usize,
    /// Tokens of the draft the reply has written.
    taken: usize,
}

impl Ahead {
    /// `draft`, decoded after the prompt whose last token has batch index
    /// `base`.
    pub(super) fn new(draft: Draft, base: usize) -> Ahead {
        Ahead {
            draft,
            base,
            taken: 0,
        }
    }

    /// The logits for the reply's next token, a choice.
    fn logits<'c>(&self, ctx: &'c LlamaContext<'_>) -> Result<&'c [f32], LlmError> {
        // The same shape walked from the same start chooses where the draft
        // was seen to: the logits there were kept.
        let kept = match self.taken.checked_sub(1) {
            None => true,
            Some(i) => self.draft.logits.get(i) == Some(&true),
        };
        if !kept {
            return Err(local(format!(
                "no logits kept at the draft's token {}",
                self.taken
            )));
        }
        let i =
            i32::try_from(self.base + self.taken).map_err(|_| local("the batch is too long"))?;
        Ok(ctx.get_logits_ith(i))
    }

    /// Whether `token` is the draft's next (then it is taken).
    fn take(&mut self, token: LlamaToken) -> bool {
        let same = self.draft.tokens.get(self.taken) == Some(&token);
        if same {
            self.taken += 1;
        }
        same
    }
}

/// One reply of `shape`, the prompt evaluated (its last logits in
/// `batch`) up to position `pos`: (text, complete, log-probability).
/// `pick` chooses among the allowed tokens; at most `budget` tokens.
/// With `ahead` (a draft decoded with the prompt), the model runs again
/// only from where the reply leaves the draft.
#[allow(clippy::too_many_arguments)]
pub(super) fn reply(
    model: &LlamaModel,
    ctx: &mut LlamaContext<'_>,
    batch: &mut LlamaBatch,
    shape: &Shape,
    mut pos: usize,
    budget: i64,
    pick: &mut LlamaSampler,
    mut ahead: Option<Ahead>,
) -> Result<(String, bool, f32), LlmError> {
    let vocab = model.vocab();
    let mut tokenize = |text: &str| vocab.tokenize(text.as_bytes(), false, false);
    let mut hypotheses = Hypotheses::new(shape, &mut tokenize);
    let mut pending: Vec<LlamaToken> = Vec::new();
    let mut written: Vec<LlamaToken> = Vec::new();
    let mut logprob = 0.0f64;
    loop {
        let token = match hypotheses.next() {
            Next::Done(text) => return Ok((text, true, logprob as f32)),
            Next::Forced(t) => t,
            Next::Choose(allowed) if allowed.is_empty() => {
                return Err(local("the reply's shape allows no token here"))
            }
            Next::Choose(allowed) => {
                if ahead.is_none() && !pending.is_empty() {
                    decode_at(ctx, batch, &pending, pos)?;
                    pos += pending.len();
                    pending.clear();
                }
                let logits = match &ahead {
                    Some(a) => a.logits(ctx)?,
                    None => ctx.get_logits_ith(batch.n_tokens() - 1),
                };
                let (token, lp) = choose(logits, &allowed, pick)?;
                logprob += lp;
                token
            }
        };
        if i64::try_from(written.len()).unwrap_or(i64::MAX) >= budget {
            let mut out = Vec::new();
            for &t in &written {
                vocab.token_to_piece_into(t, &mut out, false, None);
            }
            return Ok((
                String::from_utf8_lossy(&out).into_owned(),
                false,
                logprob as f32,
            ));
        }
        written.push(token);
        hypotheses.push(token, &mut tokenize);
        match ahead.as_mut().map(|a| a.take(token)) {
            Some(true) => continue,
            Some(false) => {
                // The reply leaves the draft: its tokens from here on are
                // dropped from the cache, and the model runs as without one.
                let taken = ahead.take().map_or(0, |a| a.taken);
                pos += taken;
                let from = u32::try_from(pos).unwrap_or(u32::MAX);
                ctx.clear_kv_cache_seq(Some(0), Some(from), None)
                    .map_err(|e| local(format!("cannot drop the draft: {e}")))?;
            }
            None => {}
        }
        pending.push(token);
    }
}

/// The token `pick` chooses among `allowed` by their `logits`, and its
/// log-probability among them.
fn choose(
    logits: &[f32],
    allowed: &[LlamaToken],
    pick: &mut LlamaSampler,
) -> Result<(LlamaToken, f64), LlmError> {
    let logit = |t: LlamaToken| {
        usize::try_from(t.0)
            .ok()
            .and_then(|i| logits.get(i))
            .copied()
            .unwrap_or(f32::NEG_INFINITY)
    };
    let mut offered = LlamaTokenDataArray::from_iter(
        allowed
            .iter()
            .map(|&t| LlamaTokenData::new(t, logit(t), 0.0)),
        false,
    );
    let all = log_sum_exp(allowed.iter().map(|&t| logit(t)));
    pick.apply(&mut offered);
    let token = offered
        .selected_token()
        .filter(|t| allowed.contains(t))
        .ok_or_else(|| local("the sampler chose no allowed token"))?;
    pick.accept(token);
    Ok((token, f64::from(logit(token)) - all))
}
