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
    decode_with(ctx, batch, tokens, first, &[], &[])
}

/// Decodes `tokens` and then `after` at positions from `first` on, in one
/// batch: with the logits of the last of `tokens` and of each of `after`
/// whose `after_logits` is true.
fn decode_with(
    ctx: &mut LlamaContext<'_>,
    batch: &mut LlamaBatch,
    tokens: &[LlamaToken],
    first: usize,
    after: &[LlamaToken],
    after_logits: &[bool],
) -> Result<(), LlmError> {
    batch.clear();
    let logits = (0..tokens.len())
        .map(|i| i + 1 == tokens.len())
        .chain(after_logits.iter().copied().chain(std::iter::repeat(false)));
    for (i, (&t, logits)) in tokens.iter().chain(after).zip(logits).enumerate() {
        let pos = i32::try_from(first + i).map_err(|_| local("the prompt is too long"))?;
        batch
            .add(t, pos, &[0], logits)
            .map_err(|e| local(format!("cannot batch the prompt: {e}")))?;
    }
    ctx.decode(batch)
        .map_err(|e| local(format!("llama.cpp cannot decode the prompt: {e}")))
}

/// The sequence a kept start is copied to before its state is saved: the
/// prompt's own is [`SEQ`].
const SCRATCH_SEQ: i32 = 1;
/// The prompt's sequence.
const SEQ: i32 = 0;
/// Sequences a context needs for the cache: the prompt's and the scratch.
pub(super) const SEQUENCES: u32 = 2;

/// llama.cpp's state of the first `len` positions of the prompt's sequence.
fn state_of_start(ctx: &mut LlamaContext<'_>, len: usize) -> Option<SeqState> {
    let len = u32::try_from(len).ok()?;
    ctx.copy_kv_cache_seq(SEQ, SCRATCH_SEQ, None, Some(len))
        .ok()?;
    let state = ctx.state_seq_get(SCRATCH_SEQ, LlamaStateSeqFlags::empty());
    let _ = ctx.clear_kv_cache_seq(Some(SCRATCH_SEQ as u32), None, None);
    state.ok()
}

impl PromptCache {
    /// Evaluates the prompt `tokens` into `ctx` from the longest kept start
    /// it begins with, followed in the same batch by `after`'s tokens (with
    /// the logits of those whose flag is true), and keeps the
    /// prompt's own starts: the first `stable` tokens (all but the last
    /// message; 0 when unknown) and the start it shares with the prompt
    /// before. `capacity` 0 keeps nothing. Returns the batch index of the
    /// prompt's last token (its logits are kept).
    pub(super) fn evaluate(
        &mut self,
        ctx: &mut LlamaContext<'_>,
        batch: &mut LlamaBatch,
        tokens: &[LlamaToken],
        stable: usize,
        capacity: usize,
        after: (&[LlamaToken], &[bool]),
    ) -> Result<usize, LlmError> {
        let (after, after_logits) = after;
        if capacity == 0 {
            decode_with(ctx, batch, tokens, 0, after, after_logits)?;
            return Ok(tokens.len() - 1);
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
            if ctx.state_seq_set(&start.state, SEQ).is_ok() {
                from = start.tokens.len();
                self.starts.push(start);
            } else {
                // A failed restore may leave part of it: start clean.
                let _ = ctx.clear_kv_cache_seq(None, None, None);
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
        // The rest of the prompt in one batch (a batch per cut would run
        // the model's weights through the cores once more each); the
        // starts are copied out of the evaluated sequence after.
        decode_with(ctx, batch, &tokens[from..], from, after, after_logits)?;
        for cut in cuts {
            if let Some(state) = state_of_start(ctx, cut) {
                if self.starts.len() >= capacity {
                    self.starts.remove(0);
                }
                self.starts.push(Start {
                    tokens: tokens[..cut].to_vec(),
                    state,
                });
            }
        }
        self.last = tokens.to_vec();
        Ok(tokens.len() - from - 1)
    }
}
