//! The evaluated starts of prompts, kept for the prompts that follow.
//!
//! A planner's prompts share long starts: the instructions, and, for
//! questions the planner reads alike, the same demonstrations, so that only
//! the question at the end differs. The state llama.cpp computed for such a
//! start (its KV cache) is kept, and a prompt that begins with it restores
//! it and evaluates only its own tokens: a copy of a few MB instead of
//! hundreds of tokens through the model.
//!
//! Two starts of each prompt are kept (each when at least [`MIN_PREFIX`]
//! tokens): everything before its last message (the demonstrations a later
//! question may be shown again) and the start it shares with the prompt
//! before it (the instructions). At most `capacity` starts are kept, the
//! least recently used dropped first.

use llama_cpp_2::context::session::{LlamaStateSeqFlags, SeqState};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::token::LlamaToken;

use super::local;
use crate::llm::LlmError;

/// The shortest start worth keeping, tokens.
pub(super) const MIN_PREFIX: usize = 32;

/// One kept start: its tokens and llama.cpp's state after them.
struct Start {
    tokens: Vec<LlamaToken>,
    state: SeqState,
}

/// The kept starts, least recently used first, and the counts of prompts
/// that found one.
#[derive(Default)]
pub struct PromptCache {
    starts: Vec<Start>,
    last: Vec<LlamaToken>,
    /// Prompts that restored a kept start, and prompts evaluated whole.
    pub hits: u64,
    pub misses: u64,
}

fn common_start(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Decodes `tokens` at positions from `first` on, with the logits of the
/// last.
pub(super) fn decode_at(
    ctx: &mut LlamaContext<'_>,
    batch: &mut LlamaBatch,
    tokens: &[LlamaToken],
    first: usize,
) -> Result<(), LlmError> {
    batch.clear();
    for (i, &t) in tokens.iter().enumerate() {
        let pos = i32::try_from(first + i).map_err(|_| local("the prompt is too long"))?;
        batch
            .add(t, pos, &[0], i + 1 == tokens.len())
            .map_err(|e| local(format!("cannot batch the prompt: {e}")))?;
    }
    ctx.decode(batch)
        .map_err(|e| local(format!("llama.cpp cannot decode the prompt: {e}")))
}

impl PromptCache {
    /// Evaluates the prompt `tokens` into `ctx` (the logits of its last
    /// token in `batch`) from the longest kept start it begins with, and
    /// keeps its own starts: the first `stable` tokens (all but the last
    /// message; 0 when unknown) and the start it shares with the prompt
    /// before. `capacity` 0 keeps nothing.
    pub(super) fn evaluate(
        &mut self,
        ctx: &mut LlamaContext<'_>,
        batch: &mut LlamaBatch,
        tokens: &[LlamaToken],
        stable: usize,
        capacity: usize,
    ) -> Result<(), LlmError> {
        if capacity == 0 {
            return decode_at(ctx, batch, tokens, 0);
        }
        let mut from = 0;
        let best = self
            .starts
            .iter()
            .enumerate()
            .filter(|(_, s)| s.tokens.len() < tokens.len() && tokens.starts_with(&s.tokens))
            .max_by_key(|(_, s)| s.tokens.len())
            .map(|(i, _)| i);
        if let Some(i) = best {
            let start = self.starts.remove(i);
            if ctx.state_seq_set(&start.state, 0).is_ok() {
                from = start.tokens.len();
                self.starts.push(start);
            } else {
                // A failed restore may leave part of it: start clean.
                let _ = ctx.clear_kv_cache_seq(Some(0), None, None);
            }
        }
        if from > 0 {
            self.hits += 1;
        } else {
            self.misses += 1;
        }
        // The start shared with the last prompt, when shorter than the
        // stable one (which covers it otherwise).
        let shared = match common_start(tokens, &self.last) {
            n if stable > 0 && n >= stable => 0,
            n => n,
        };
        let mut cuts: Vec<usize> = [shared, stable]
            .into_iter()
            .filter(|&c| c > from && c >= MIN_PREFIX && c < tokens.len())
            .filter(|&c| {
                !self
                    .starts
                    .iter()
                    .any(|s| s.tokens.len() == c && tokens.starts_with(&s.tokens))
            })
            .collect();
        cuts.sort_unstable();
        cuts.dedup();
        for cut in cuts {
            decode_at(ctx, batch, &tokens[from..cut], from)?;
            from = cut;
            if let Ok(state) = ctx.state_seq_get(0, LlamaStateSeqFlags::empty()) {
                if self.starts.len() >= capacity {
                    self.starts.remove(0);
                }
                self.starts.push(Start {
                    tokens: tokens[..cut].to_vec(),
                    state,
                });
            }
        }
        decode_at(ctx, batch, &tokens[from..], from)?;
        self.last = tokens.to_vec();
        Ok(())
    }
}
