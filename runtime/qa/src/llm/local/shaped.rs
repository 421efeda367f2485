//! Replies of a [`Shape`]: the model runs only where the reply chooses.
//!
//! The text between two choices is forced; its tokens wait and are
//! evaluated in one batch together with the token chosen before them, and
//! the logits of the batch's last token make the next choice. A 2-hop plan
//! of about 22 tokens takes five or six passes through the model instead
//! of 23, and no grammar is applied to the whole vocabulary per token. The
//! reply's log-probability is that of its choices, each among the tokens
//! the shape allowed there (forced tokens count 1).

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

/// One reply of `shape`, the prompt evaluated (its last logits in
/// `batch`) up to position `pos`: (text, complete, log-probability).
/// `pick` chooses among the allowed tokens; at most `budget` tokens.
pub(super) fn reply(
    model: &LlamaModel,
    ctx: &mut LlamaContext<'_>,
    batch: &mut LlamaBatch,
    shape: &Shape,
    mut pos: usize,
    budget: i64,
    pick: &mut LlamaSampler,
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
                if !pending.is_empty() {
                    decode_at(ctx, batch, &pending, pos)?;
                    pos += pending.len();
                    pending.clear();
                }
                let logits = ctx.get_logits_ith(batch.n_tokens() - 1);
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
                logprob += f64::from(logit(token)) - all;
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
        pending.push(token);
        hypotheses.push(token, &mut tokenize);
    }
}
