//! What linking produces ([`Candidate`]s of a [`Mention`]), how each was
//! found ([`Method`]), and the linker's knobs ([`LinkOptions`]).

use serde::Serialize;

/// How a candidate was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// The normalized mention is the entity's normalized name.
    Exact,
    /// The normalized mention is one of the entity's normalized aliases.
    Alias,
    /// A name or alias within a small edit distance of the mention.
    Fuzzy,
    /// A nearest neighbour of the mention's embedding in the dense index.
    Dense,
}

/// One entity a mention may refer to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    pub entity: u32,
    pub name: String,
    /// Probability that the mention refers to this entity (see the module docs).
    pub probability: f32,
    pub method: Method,
    /// Levenshtein distance, in characters, between the normalized mention
    /// and the matched index key (0 for exact, alias and dense matches).
    pub distance: u32,
    /// Dense stage only: Euclidean distance between the unit embeddings of
    /// the mention and of the entity's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedding_distance: Option<f32>,
}

/// A mention found in text, with its candidates.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mention {
    /// The mention as written: `&input[start..end]`.
    pub text: String,
    /// Byte offsets into the input text.
    pub start: usize,
    pub end: usize,
    /// Whether the mention was given in `[brackets]` (the brackets are not
    /// part of `text`, `start` or `end`).
    pub bracketed: bool,
    /// Best first; may be empty for a bracketed mention that links to nothing.
    pub candidates: Vec<Candidate>,
}

/// Knobs of the linker.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkOptions {
    /// Candidates kept per mention.
    pub top_m: usize,
    /// Whether to run the fuzzy stage when exact and alias lookups find nothing.
    pub fuzzy: bool,
    /// Upper bound on the fuzzy stage's edit distance (see the module docs
    /// for how the distance scales with the mention's length).
    pub max_distance: u32,
    /// Longest run of words tried as one mention outside brackets.
    pub max_mention_tokens: usize,
    /// Whether to run the dense stage (when a dense index is given) when the
    /// lexical stages find nothing.
    pub dense: bool,
}

impl Default for LinkOptions {
    fn default() -> Self {
        LinkOptions {
            top_m: 5,
            fuzzy: true,
            max_distance: 2,
            max_mention_tokens: 32,
            dense: true,
        }
    }
}

/// Sorts by probability (descending), then name, then id; keeps `top_m`.
pub(super) fn rank(mut candidates: Vec<Candidate>, top_m: usize) -> Vec<Candidate> {
    candidates.sort_by(|a, b| {
        b.probability
            .total_cmp(&a.probability)
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.entity.cmp(&b.entity))
    });
    candidates.truncate(top_m);
    candidates
}
