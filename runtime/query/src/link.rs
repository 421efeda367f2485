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
//! 1. **exact**: entities whose normalized *name* is the key;
//! 2. **alias**: entities with an *alias* whose normalized form is the key;
//! 3. **fuzzy**: keys of the index (names and aliases) within a small
//!    Levenshtein distance of the key, found with a Levenshtein automaton over
//!    the `fst`. The allowed distance grows with the key's length in
//!    characters: 0 below 4 characters (so no fuzzy stage at all), 1 below 8,
//!    2 from 8 on, never more than [`LinkOptions::max_distance`]. At most
//!    [`MAX_FUZZY_KEYS`] keys are collected (in the index's byte order), and
//!    mentions longer than [`MAX_FUZZY_CHARS`] characters are not tried.
//! 4. **dense** (only through [`link_mention_dense`] and [`link_text_dense`],
//!    with the `dense` feature, and only when the bundle holds a dense index
//!    and its encoder): the mention, as written, is embedded with the
//!    bundle's sentence encoder and its [`LinkOptions::top_m`] nearest entity
//!    names are the candidates (see [`crate::dense`]).
//!
//! # Probabilities
//!
//! In the exact and alias stages the `k` entities found tie, and each gets
//! `1/k`. In the fuzzy stage the probabilities follow Eq. 1 of ULTRAG
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
//! then cut to [`LinkOptions::top_m`] (by probability, ties by name, then id)
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

use fst::{IntoStreamer, Streamer};
use kgbox_bundle::kg::Posting;
use kgbox_bundle::normalize::normalize;
use kgbox_bundle::Kg;
use serde::Serialize;

/// σ of ULTRAG's Eq. 1.
pub const SIGMA: f32 = 0.1;

/// The fuzzy stage stops collecting index keys after this many.
pub const MAX_FUZZY_KEYS: usize = 1000;

/// Normalized mentions longer than this (in characters) get no fuzzy stage.
pub const MAX_FUZZY_CHARS: usize = 256;

/// Single words (and runs made only of such words) that are never linked
/// outside brackets even when the graph has an entity of that name: the
/// function words and question words of English questions, and the words
/// questions use for the graph's own vocabulary ("movies", "film"). Short on
/// purpose: a word that is also a real entity (a genre, a tag) should link.
/// Words shorter than [`MIN_WORD_CHARS`] are skipped in the same way.
pub const STOPWORDS: &[&str] = &[
    "a", "about", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "film", "films",
    "for", "from", "has", "have", "he", "her", "his", "how", "i", "in", "is", "it", "its", "movie",
    "movies", "of", "on", "or", "she", "that", "the", "their", "they", "this", "to", "was", "were",
    "what", "when", "where", "which", "who", "whom", "whose", "why", "with",
];

/// Single-word matches outside brackets need at least this many characters.
pub const MIN_WORD_CHARS: usize = 3;

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
            max_mention_tokens: 12,
            dense: true,
        }
    }
}

/// The edit distance the fuzzy stage allows for a normalized key of
/// `chars` characters: 0 below 4, 1 below 8, else 2; capped by `max_distance`.
pub fn fuzzy_distance(chars: usize, max_distance: u32) -> u32 {
    let d = match chars {
        0..=3 => 0,
        4..=7 => 1,
        _ => 2,
    };
    d.min(max_distance)
}

/// Candidate entities for one mention, best first (see the module docs).
pub fn link_mention(kg: &Kg<'_>, mention: &str, opts: &LinkOptions) -> Vec<Candidate> {
    let key = normalize(mention);
    if key.is_empty() || opts.top_m == 0 {
        return Vec::new();
    }
    let found = from_postings(kg, &kg.lookup_normalized(&key), opts);
    if !found.is_empty() || !opts.fuzzy {
        return found;
    }
    fuzzy(kg, &key, opts)
}

/// The exact stage, else the alias stage, over the postings of one key.
fn from_postings(kg: &Kg<'_>, postings: &[Posting], opts: &LinkOptions) -> Vec<Candidate> {
    for (via_alias, method) in [(false, Method::Exact), (true, Method::Alias)] {
        let mut ids: Vec<u32> = postings
            .iter()
            .filter(|p| p.via_alias == via_alias)
            .map(|p| p.entity)
            .filter(|&e| kg.entity_name(e).is_some())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            continue;
        }
        let p = 1.0 / ids.len() as f32;
        let candidates = ids
            .into_iter()
            .filter_map(|entity| {
                Some(Candidate {
                    entity,
                    name: kg.entity_name(entity)?.to_string(),
                    probability: p,
                    method,
                    distance: 0,
                    embedding_distance: None,
                })
            })
            .collect();
        return rank(candidates, opts.top_m);
    }
    Vec::new()
}

/// The fuzzy stage: Levenshtein automaton over the index, then Eq. 1.
fn fuzzy(kg: &Kg<'_>, key: &str, opts: &LinkOptions) -> Vec<Candidate> {
    let key_chars: Vec<char> = key.chars().collect();
    let allowed = fuzzy_distance(key_chars.len(), opts.max_distance);
    if allowed == 0 || key_chars.len() > MAX_FUZZY_CHARS {
        return Vec::new();
    }
    let automaton = EditAutomaton {
        query: &key_chars,
        max: allowed,
    };
    // (key length in characters, distance, fst value)
    let matches: Vec<(usize, u32, u64)> = kg
        .with_index(|index| {
            let mut out = Vec::new();
            let mut stream = index.search_with_state(&automaton).into_stream();
            while let Some((k, v, state)) = stream.next() {
                if let Some(d) = state.as_ref().and_then(|s| s.row.last()) {
                    let chars = String::from_utf8_lossy(k).chars().count();
                    out.push((chars, *d, v));
                }
                if out.len() >= MAX_FUZZY_KEYS {
                    break;
                }
            }
            out
        })
        .unwrap_or_default();

    // Smallest distance per entity.
    let mut best: Vec<(u32, u32, f32)> = Vec::new(); // (entity, distance, normalized distance)
    for (chars, d, v) in matches {
        let longer = key_chars.len().max(chars).max(1);
        let dn = d as f32 / longer as f32;
        for p in kg.decode_postings(v) {
            best.push((p.entity, d, dn));
        }
    }
    best.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.2.total_cmp(&b.2)));
    best.dedup_by_key(|b| b.0);
    best.retain(|b| kg.entity_name(b.0).is_some());
    if best.is_empty() {
        return Vec::new();
    }

    // Eq. 1 as a numerically stable softmax of -d²/2σ².
    let logit = |dn: f32| -(dn * dn) / (2.0 * SIGMA * SIGMA);
    let top = best
        .iter()
        .map(|b| logit(b.2))
        .fold(f32::NEG_INFINITY, f32::max);
    let weights: Vec<f32> = best.iter().map(|b| (logit(b.2) - top).exp()).collect();
    let total: f32 = weights.iter().sum();
    let candidates = best
        .iter()
        .zip(&weights)
        .filter_map(|(&(entity, distance, _), &w)| {
            Some(Candidate {
                entity,
                name: kg.entity_name(entity)?.to_string(),
                probability: w / total,
                method: Method::Fuzzy,
                distance,
                embedding_distance: None,
            })
        })
        .collect();
    rank(candidates, opts.top_m)
}

/// Sorts by probability (descending), then name, then id; keeps `top_m`.
fn rank(mut candidates: Vec<Candidate>, top_m: usize) -> Vec<Candidate> {
    candidates.sort_by(|a, b| {
        b.probability
            .total_cmp(&a.probability)
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.entity.cmp(&b.entity))
    });
    candidates.truncate(top_m);
    candidates
}

/// A Levenshtein automaton over the UTF-8 bytes of index keys, simulated one
/// row of the edit-distance table at a time (distances in characters:
/// insertions, deletions, substitutions).
///
/// The `fst` crate's own `Levenshtein` builds a DFA up front, which takes
/// milliseconds for distance 2 and gives up on queries of about 60
/// characters; this one costs one row per key byte the search visits, and the
/// search only visits prefixes that can still end within `max` edits.
struct EditAutomaton<'q> {
    query: &'q [char],
    max: u32,
}

/// One row of the table, plus the bytes of a character not yet complete.
/// `None` is the dead state (invalid UTF-8).
#[derive(Clone)]
struct EditState {
    row: Vec<u32>,
    partial: [u8; 4],
    have: u8,
    need: u8,
}

impl EditAutomaton<'_> {
    fn step(&self, row: &[u32], c: char) -> Vec<u32> {
        let mut next = Vec::with_capacity(row.len());
        next.push(row[0].saturating_add(1));
        for (j, &q) in self.query.iter().enumerate() {
            let sub = row[j] + u32::from(q != c);
            let v = sub.min(row[j + 1] + 1).min(next[j] + 1);
            next.push(v);
        }
        next
    }
}

impl fst::Automaton for EditAutomaton<'_> {
    type State = Option<EditState>;

    fn start(&self) -> Self::State {
        Some(EditState {
            row: (0..=self.query.len() as u32).collect(),
            partial: [0; 4],
            have: 0,
            need: 0,
        })
    }

    fn is_match(&self, state: &Self::State) -> bool {
        matches!(state, Some(s) if s.have == 0 && s.row.last().is_some_and(|&d| d <= self.max))
    }

    fn can_match(&self, state: &Self::State) -> bool {
        matches!(state, Some(s) if s.row.iter().min().is_some_and(|&d| d <= self.max))
    }

    fn accept(&self, state: &Self::State, byte: u8) -> Self::State {
        let s = state.as_ref()?;
        let (mut partial, have, need) = if s.have == 0 {
            let need = match byte {
                0x00..=0x7f => 1,
                0xc2..=0xdf => 2,
                0xe0..=0xef => 3,
                0xf0..=0xf4 => 4,
                _ => return None,
            };
            ([0u8; 4], 0u8, need)
        } else if byte & 0xc0 == 0x80 {
            (s.partial, s.have, s.need)
        } else {
            return None;
        };
        partial[usize::from(have)] = byte;
        let have = have + 1;
        if have < need {
            return Some(EditState {
                row: s.row.clone(),
                partial,
                have,
                need,
            });
        }
        let c = std::str::from_utf8(&partial[..usize::from(need)])
            .ok()?
            .chars()
            .next()?;
        Some(EditState {
            row: self.step(&s.row, c),
            partial: [0; 4],
            have: 0,
            need: 0,
        })
    }
}

/// Finds entity mentions in `text`, in text order and without overlaps.
///
/// - `[Joel Zwick]`: a bracketed mention is taken as given and linked with
///   [`link_mention`] (exact, alias, then fuzzy). `start..end` covers the
///   content without the brackets and without surrounding whitespace. With
///   nested brackets the innermost pair counts (`[[x]]` gives `x`); a `[`
///   that is never closed is plain text. A bracketed mention is reported
///   even when it links to nothing, unless it is empty.
/// - Elsewhere the text is split into words by the index's normalization
///   rules, and at each word the longest run of up to
///   [`LinkOptions::max_mention_tokens`] words whose normalized form is an
///   index key is taken (exact and alias matches only, no fuzzy stage); the
///   scan continues after it. A run must start and end on word boundaries, so
///   nothing matches inside a word. A possessive last word also matches
///   without its `'s` (`Ridley Scott's` links `Ridley Scott`, and the mention
///   ends before the apostrophe). Runs made only of [`STOPWORDS`] and
///   single words shorter than [`MIN_WORD_CHARS`] are skipped.
pub fn link_text(kg: &Kg<'_>, text: &str, opts: &LinkOptions) -> Vec<Mention> {
    let never: Result<_, std::convert::Infallible> =
        link_text_with(kg, text, opts, |m| Ok(link_mention(kg, m, opts)));
    match never {
        Ok(mentions) => mentions,
        Err(e) => match e {},
    }
}

/// [`link_mention`], then, when it finds nothing, the dense stage (see the
/// module docs) if `dense` is given and [`LinkOptions::dense`] is set.
#[cfg(feature = "dense")]
pub fn link_mention_dense(
    kg: &Kg<'_>,
    dense: Option<&crate::dense::Dense<'_>>,
    mention: &str,
    opts: &LinkOptions,
) -> Result<Vec<Candidate>, crate::dense::DenseError> {
    let found = link_mention(kg, mention, opts);
    let Some(dense) = dense else {
        return Ok(found);
    };
    if !found.is_empty() || !opts.dense || opts.top_m == 0 || normalize(mention).is_empty() {
        return Ok(found);
    }
    let query = dense.encoder.embed(&[mention])?.pop().unwrap_or_default();
    let hits: Vec<(u32, f32)> = dense
        .index
        .nearest(&query, opts.top_m)
        .into_iter()
        .filter(|&(e, _)| kg.entity_name(e).is_some())
        .collect();
    let distances: Vec<f32> = hits.iter().map(|h| h.1).collect();
    let probabilities = crate::dense::eq1(&distances);
    let candidates = hits
        .iter()
        .zip(probabilities)
        .filter_map(|(&(entity, d), p)| {
            Some(Candidate {
                entity,
                name: kg.entity_name(entity)?.to_string(),
                probability: p,
                method: Method::Dense,
                distance: 0,
                embedding_distance: Some(d),
            })
        })
        .collect();
    Ok(rank(candidates, opts.top_m))
}

/// [`link_text`] with the dense stage for bracketed mentions (see
/// [`link_mention_dense`]). Mentions outside brackets are still found by
/// exact and alias matches only.
#[cfg(feature = "dense")]
pub fn link_text_dense(
    kg: &Kg<'_>,
    dense: Option<&crate::dense::Dense<'_>>,
    text: &str,
    opts: &LinkOptions,
) -> Result<Vec<Mention>, crate::dense::DenseError> {
    link_text_with(kg, text, opts, |m| link_mention_dense(kg, dense, m, opts))
}

fn link_text_with<E>(
    kg: &Kg<'_>,
    text: &str,
    opts: &LinkOptions,
    mut link_one: impl FnMut(&str) -> Result<Vec<Candidate>, E>,
) -> Result<Vec<Mention>, E> {
    let mut mentions = Vec::new();
    let mut plain_from = 0;
    for (open, close) in brackets(text) {
        scan_plain(kg, text, plain_from, open, opts, &mut mentions);
        let (start, end) = trim_range(text, open + 1, close);
        if start < end && !normalize(&text[start..end]).is_empty() {
            mentions.push(Mention {
                text: text[start..end].to_string(),
                start,
                end,
                bracketed: true,
                candidates: link_one(&text[start..end])?,
            });
        }
        plain_from = close + 1;
    }
    scan_plain(kg, text, plain_from, text.len(), opts, &mut mentions);
    Ok(mentions)
}

/// Byte offsets of `[` and its `]` for each bracketed span, innermost `[`
/// before a `]`; unclosed `[` are not reported.
fn brackets(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut open = None;
    for (i, b) in text.bytes().enumerate() {
        match b {
            b'[' => open = Some(i),
            b']' => {
                if let Some(o) = open.take() {
                    out.push((o, i));
                }
            }
            _ => {}
        }
    }
    out
}

/// `start..end` without leading and trailing whitespace.
fn trim_range(text: &str, start: usize, end: usize) -> (usize, usize) {
    let s = &text[start..end];
    let lead = s.len() - s.trim_start().len();
    let trail = s.len() - s.trim_end().len();
    if lead == s.len() {
        return (start, start);
    }
    (start + lead, end - trail)
}

/// A word of the text: its normalized form and where it came from.
#[derive(Debug)]
struct Word {
    norm: String,
    start: usize,
    end: usize,
    /// For a word that ends in `'s`: the normalized form without the `s`,
    /// and the end of the word before the apostrophe.
    possessive: Option<(String, usize)>,
}

fn is_apostrophe(c: char) -> bool {
    matches!(c, '\'' | '\u{2019}' | '\u{02bc}' | '`')
}

/// What one character of the text contributes to its normalized form.
enum Piece {
    /// Dropped without separating words (apostrophes, combining marks).
    Transparent,
    /// A word separator.
    Break,
    /// Normalized text, with separators as single spaces; a leading or
    /// trailing space means the character also separates from its neighbours.
    Text(String),
}

fn piece(c: char) -> Piece {
    if c.is_ascii() {
        return if c.is_ascii_alphanumeric() {
            Piece::Text(c.to_ascii_lowercase().to_string())
        } else if is_apostrophe(c) {
            Piece::Transparent
        } else {
            Piece::Break
        };
    }
    // Normalize the character between two letters, so that separators at its
    // edges survive: "a½a" gives "a1 2a", "a—a" gives "a a", "a\u{301}a" gives "aa".
    let mut buf = [0u8; 4];
    let sandwich = format!("a{}a", c.encode_utf8(&mut buf));
    let n = normalize(&sandwich);
    let inner = n
        .strip_prefix('a')
        .and_then(|s| s.strip_suffix('a'))
        .unwrap_or(" ");
    if inner.is_empty() {
        Piece::Transparent
    } else if inner.trim().is_empty() {
        Piece::Break
    } else {
        Piece::Text(inner.to_string())
    }
}

/// Splits `text[from..to]` into normalized words with byte ranges into `text`.
///
/// Normalizes character by character, which agrees with normalizing the whole
/// string except where canonical reordering would move a combining character
/// across a character boundary; such characters are marks, which are dropped.
fn words(text: &str, from: usize, to: usize) -> Vec<Word> {
    let mut out: Vec<Word> = Vec::new();
    let mut cur: Option<Word> = None;
    // Byte offset of the last apostrophe inside the current word, and whether
    // only an `s` has followed it.
    let mut apostrophe: Option<usize> = None;
    let mut after_apostrophe = String::new();
    let finish = |cur: &mut Option<Word>,
                  out: &mut Vec<Word>,
                  apostrophe: &mut Option<usize>,
                  after: &mut String| {
        if let Some(mut w) = cur.take() {
            if let Some(at) = apostrophe.take() {
                if after == "s" && w.norm.len() > 1 {
                    let cut = w.norm[..w.norm.len() - 1].to_string();
                    w.possessive = Some((cut, at));
                }
            }
            out.push(w);
        }
        *apostrophe = None;
        after.clear();
    };
    for (i, c) in text[from..to].char_indices() {
        let (start, end) = (from + i, from + i + c.len_utf8());
        match piece(c) {
            Piece::Transparent => {
                if let Some(w) = cur.as_mut() {
                    if is_apostrophe(c) {
                        apostrophe = Some(start);
                        after_apostrophe.clear();
                    } else if w.end == start {
                        // A combining mark belongs to the word it follows.
                        w.end = end;
                    }
                }
            }
            Piece::Break => finish(&mut cur, &mut out, &mut apostrophe, &mut after_apostrophe),
            Piece::Text(t) => {
                let t = t.as_str();
                let lead_break = t.starts_with(' ');
                let trail_break = t.ends_with(' ');
                if lead_break {
                    finish(&mut cur, &mut out, &mut apostrophe, &mut after_apostrophe);
                }
                for (k, part) in t.split(' ').filter(|p| !p.is_empty()).enumerate() {
                    if k > 0 {
                        finish(&mut cur, &mut out, &mut apostrophe, &mut after_apostrophe);
                    }
                    match cur.as_mut() {
                        Some(w) => {
                            w.norm.push_str(part);
                            w.end = end;
                        }
                        None => {
                            cur = Some(Word {
                                norm: part.to_string(),
                                start,
                                end,
                                possessive: None,
                            })
                        }
                    }
                    if apostrophe.is_some() {
                        after_apostrophe.push_str(part);
                    }
                }
                if trail_break {
                    finish(&mut cur, &mut out, &mut apostrophe, &mut after_apostrophe);
                }
            }
        }
    }
    finish(&mut cur, &mut out, &mut apostrophe, &mut after_apostrophe);
    out
}

fn is_stopword(norm: &str) -> bool {
    STOPWORDS.binary_search(&norm).is_ok()
}

/// Whether a run of words is too common to link outside brackets.
fn skipped(run: &[&str]) -> bool {
    match run {
        [one] => one.chars().count() < MIN_WORD_CHARS || is_stopword(one),
        _ => run.iter().all(|w| is_stopword(w)),
    }
}

/// The longest match starting at `words[0]`: (words used, end byte of the
/// match in the text, fst value of the matched key).
fn longest_at(kg: &Kg<'_>, words: &[Word], max_tokens: usize) -> Option<(usize, usize, u64)> {
    kg.with_index(|index| {
        let has_prefix = |p: &str| {
            let mut s = index.range().ge(p).into_stream();
            matches!(s.next(), Some((k, _)) if k.starts_with(p.as_bytes()))
        };
        let mut best = None;
        let mut key = String::new();
        for (n, w) in words.iter().take(max_tokens).enumerate() {
            if n > 0 {
                key.push(' ');
                if !has_prefix(&key) {
                    break;
                }
            }
            let len = key.len();
            if let Some((cut, at)) = &w.possessive {
                key.push_str(cut);
                if let Some(v) = index.get(&key) {
                    best = Some((n + 1, *at, v));
                }
                key.truncate(len);
            }
            key.push_str(&w.norm);
            if let Some(v) = index.get(&key) {
                best = Some((n + 1, w.end, v));
            }
        }
        best
    })
    .flatten()
}

/// Longest-match scan of `text[from..to]` (no brackets inside).
fn scan_plain(
    kg: &Kg<'_>,
    text: &str,
    from: usize,
    to: usize,
    opts: &LinkOptions,
    mentions: &mut Vec<Mention>,
) {
    if from >= to || opts.max_mention_tokens == 0 {
        return;
    }
    let ws = words(text, from, to);
    let mut i = 0;
    while i < ws.len() {
        let Some((n, end, value)) = longest_at(kg, &ws[i..], opts.max_mention_tokens) else {
            i += 1;
            continue;
        };
        let run: Vec<&str> = ws[i..i + n].iter().map(|w| w.norm.as_str()).collect();
        if skipped(&run) {
            i += 1;
            continue;
        }
        let candidates = from_postings(kg, &kg.decode_postings(value), opts);
        if candidates.is_empty() {
            i += 1;
            continue;
        }
        let start = ws[i].start;
        mentions.push(Mention {
            text: text[start..end].to_string(),
            start,
            end,
            bracketed: false,
            candidates,
        });
        i += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norms(text: &str) -> Vec<(String, &str)> {
        words(text, 0, text.len())
            .into_iter()
            .map(|w| (w.norm, &text[w.start..w.end]))
            .collect()
    }

    #[test]
    fn stopwords_are_sorted() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn words_follow_normalize() {
        for text in [
            "Amélie  (2001)",
            "Schindler's List",
            "  AC/DC ",
            "e\u{301}te\u{301} ½ ﬁsh — ①",
            "İstanbul ΣΊΣΥΦΟΣ straße",
            "",
            "!!!",
        ] {
            let joined: Vec<String> = norms(text).into_iter().map(|(n, _)| n).collect();
            assert_eq!(joined.join(" "), normalize(text), "{text:?}");
        }
        assert_eq!(
            norms("Amélie's  (2001)"),
            [("amelies".to_string(), "Amélie's"), ("2001".into(), "2001")]
        );
        assert_eq!(norms("e\u{301}x")[0].1, "e\u{301}x");
        assert_eq!(norms("a½b"), [("a1".into(), "a½"), ("2b".into(), "½b")]);
    }

    #[test]
    fn possessives() {
        let w = words("Scott's x", 0, 9);
        assert_eq!(w[0].norm, "scotts");
        assert_eq!(w[0].possessive, Some(("scott".into(), 5)));
        assert_eq!(words("It’S", 0, 6)[0].possessive, Some(("it".into(), 2)));
        assert_eq!(words("it's'", 0, 5)[0].possessive, None);
        assert_eq!(words("o'clock", 0, 7)[0].possessive, None);
    }

    /// The distance the automaton reaches on `b`, if within 9.
    fn automaton_distance(a: &str, b: &str) -> Option<u32> {
        use fst::Automaton;
        let q: Vec<char> = a.chars().collect();
        let aut = EditAutomaton { query: &q, max: 9 };
        let mut state = aut.start();
        for &byte in b.as_bytes() {
            state = aut.accept(&state, byte);
        }
        aut.is_match(&state)
            .then(|| state.and_then(|s| s.row.last().copied()))
            .flatten()
    }

    #[test]
    fn distances() {
        let l = |a: &str, b: &str| automaton_distance(a, b).unwrap();
        assert_eq!(l("blade runer", "blade runner"), 1);
        assert_eq!(l("", "abc"), 3);
        assert_eq!(l("kitten", "sitting"), 3);
        assert_eq!(l("amelie", "amélie"), 1);
        assert_eq!(l("ꙮxé", "ꙮé"), 1);
        assert_eq!(l("𝔸b", "b"), 1);
        assert_eq!(automaton_distance("abc", "abcdefghijklmn"), None);
        assert_eq!(fuzzy_distance(3, 2), 0);
        assert_eq!(fuzzy_distance(4, 2), 1);
        assert_eq!(fuzzy_distance(8, 2), 2);
        assert_eq!(fuzzy_distance(20, 1), 1);
    }

    #[test]
    fn bracket_spans() {
        assert_eq!(brackets("[[x]]"), [(1, 3)]);
        assert_eq!(brackets("[a] [b"), [(0, 2)]);
        assert_eq!(brackets("]["), []);
    }
}
