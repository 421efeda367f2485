//! Entity linking: from mentions in text to entities of a bundle's graph.
//!
//! [`link_mention`] maps one mention to ranked candidate entities;
//! [`link_text`] finds the mentions in a question first.
//!
//! # Stages of [`link_mention`]
//!
//! The mention is normalized with the index's own
//! [`normalize`](kgbox_bundle::normalize::normalize), then looked up in three
//! stages; the first stage that finds anything wins:
//!
//! 1. **exact**: entities whose normalized *name* is the key, literal value
//!    nodes aside;
//! 2. **alias**: entities with an *alias* whose normalized form is the key,
//!    and the literal value nodes whose name is the key (so that
//!    `[Mercury]` finds the planet with the alias "Mercury" rather than a
//!    literal "Mercury"). A literal value node is told apart only in a
//!    bundle with source IRIs (packed from RDF): an entity with no IRI and
//!    no out-edges ([`is_literal_value`]);
//! 3. **fuzzy**: keys of the index (names and aliases) within a small
//!    Levenshtein distance of the key, found with a Levenshtein automaton over
//!    the `fst`. The allowed distance grows with the key's length in
//!    characters: 0 below 4 characters (so no fuzzy stage at all), 1 below 8,
//!    2 from 8 on, never more than [`LinkOptions::max_distance`]. At most
//!    [`MAX_FUZZY_KEYS`] keys are collected (in the index's byte order), and
//!    mentions longer than [`MAX_FUZZY_CHARS`] characters are not tried.
//! 4. **dense** (only through [`link_mention_dense`] and [`link_text_dense`],
//!    and only when the bundle holds a dense index and its encoder): the
//!    mention, as written, is embedded with the bundle's sentence encoder
//!    (a [`TextEncoder`](crate::dense::TextEncoder)) and its
//!    [`LinkOptions::top_m`] nearest entity names are the candidates (see
//!    [`crate::dense`]).
//!
//! # Probabilities
//!
//! In the exact and alias stages the `k` entities found tie, and each gets
//! `1/k`; they are ordered as people mean them: entities before literal
//! value nodes, then by degree (in- and out-edges, higher first), then by
//! name and id. In the fuzzy stage the probabilities follow Eq. 1 of ULTRAG
//! (a Gaussian kernel normalized by a softmax, `σ = 0.1`):
//!
//! ```text
//! d_j = lev(mention, key_j) / max(|mention|, |key_j|)        (in [0, 1])
//! p_j = exp(-d_j² / 2σ²) / Σ_k exp(-d_k² / 2σ²)
//! ```
//!
//! This is an adaptation: Eq. 1 is defined on Euclidean distances between
//! text embeddings; here it is applied to the edit distance between the
//! normalized mention and the matched index key, divided by the longer of the
//! two lengths (in characters) so that it lies in `[0, 1]`. An entity reached
//! through several keys (its name and an alias) counts once, at its smallest
//! distance.
//!
//! Probabilities are computed over every candidate a stage finds; the list is
//! then cut to [`LinkOptions::top_m`] (by probability, ties as above in the
//! exact and alias stages, by name, then id in the fuzzy stage)
//! *without* renormalizing, so a cut list sums to less than 1: the mass of the
//! entities left out is not handed to the ones kept.
//!
//! In the dense stage Eq. 1 is applied as defined, to the Euclidean distance
//! `d = sqrt(2 - 2·cos)` between the unit embeddings of the mention and of
//! the entity's name, over the `top_m` nearest entities only, so those
//! probabilities sum to 1.
//!
//! # Mentions in text
//!
//! See [`link_text`]: bracketed mentions are taken as given; the rest of the
//! text is scanned for the longest runs of words that are keys of the index.
//!
//! # Modules
//!
//! - [`candidate`]: what linking produces ([`Candidate`], [`Mention`]) and
//!   its knobs ([`LinkOptions`]);
//! - [`kernel`]: Eq. 1 ([`eq1`], [`SIGMA`]);
//! - [`lexical`]: one mention against the index's names and aliases
//!   (exact, alias, fuzzy);
//! - [`text`]: mentions in text (brackets, longest-match scan);
//! - [`dense`]: the dense stage (nearest entity names of an embedding).

pub mod candidate;
pub mod dense;
pub mod kernel;
pub mod lexical;
pub mod text;

pub use candidate::{Candidate, LinkOptions, Mention, Method};
pub use dense::{link_mention_dense, link_text_dense};
pub use kernel::{eq1, SIGMA};
pub use lexical::{
    fuzzy_distance, is_literal_value, link_mention, MAX_FUZZY_CHARS, MAX_FUZZY_KEYS,
};
pub use text::{link_text, MIN_WORD_CHARS, STOPWORDS};
