//! One mention against the index's names and aliases: the exact, alias and
//! fuzzy stages of [`link_mention`] (see the [module docs](super)).

use fst::{IntoStreamer, Streamer};
use kgbox_bundle::kg::Posting;
use kgbox_bundle::normalize::normalize;
use kgbox_bundle::Kg;

use super::candidate::{rank, Candidate, LinkOptions, Method};
use super::kernel::eq1;

/// The fuzzy stage stops collecting index keys after this many.
pub const MAX_FUZZY_KEYS: usize = 1000;

/// Normalized mentions longer than this (in characters) get no fuzzy stage.
pub const MAX_FUZZY_CHARS: usize = 256;

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

/// Whether `entity` is a literal value node (a date, a number, a string
/// value): in a bundle with source IRIs (packed from RDF), an entity with
/// no IRI and no out-edges. A bundle without IRIs cannot tell, and says no.
pub fn is_literal_value(kg: &Kg<'_>, entity: u32) -> bool {
    kg.has_iris() && kg.entity_iri(entity).is_none() && kg.out.degree(entity) == 0
}

/// The exact stage, else the alias stage, over the postings of one key. A
/// literal value node matched by its name joins the alias stage, so that an
/// entity with that alias is preferred to the value.
pub(super) fn from_postings(
    kg: &Kg<'_>,
    postings: &[Posting],
    opts: &LinkOptions,
) -> Vec<Candidate> {
    let ids = |via_alias: bool| {
        let mut ids: Vec<u32> = postings
            .iter()
            .filter(|p| p.via_alias == via_alias)
            .map(|p| p.entity)
            .filter(|&e| kg.entity_name(e).is_some())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    };
    let (values, named): (Vec<u32>, Vec<u32>) = ids(false)
        .into_iter()
        .partition(|&e| is_literal_value(kg, e));
    let aliases: Vec<(u32, Method)> = ids(true)
        .into_iter()
        .filter(|e| !values.contains(e))
        .map(|e| (e, Method::Alias))
        .collect();
    let mut later: Vec<(u32, Method)> = values.into_iter().map(|e| (e, Method::Exact)).collect();
    later.extend(aliases);
    let first: Vec<(u32, Method)> = named.into_iter().map(|e| (e, Method::Exact)).collect();
    for stage in [first, later] {
        if stage.is_empty() {
            continue;
        }
        let p = 1.0 / stage.len() as f32;
        let candidates = stage
            .into_iter()
            .filter_map(|(entity, method)| {
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
        return rank_tied(kg, candidates, opts.top_m);
    }
    Vec::new()
}

/// Ranks candidates that tie on probability as people mean them: an entity
/// before a literal value, then higher degree (in- and out-edges), then
/// name and id; keeps `top_m`.
fn rank_tied(kg: &Kg<'_>, candidates: Vec<Candidate>, top_m: usize) -> Vec<Candidate> {
    let mut keyed: Vec<(bool, std::cmp::Reverse<usize>, Candidate)> = candidates
        .into_iter()
        .map(|c| {
            let degree = kg.out.degree(c.entity) + kg.inc.degree(c.entity);
            (is_literal_value(kg, c.entity), std::cmp::Reverse(degree), c)
        })
        .collect();
    keyed.sort_by(|a, b| {
        b.2.probability
            .total_cmp(&a.2.probability)
            .then_with(|| (a.0, a.1).cmp(&(b.0, b.1)))
            .then_with(|| a.2.name.cmp(&b.2.name))
            .then_with(|| a.2.entity.cmp(&b.2.entity))
    });
    keyed.truncate(top_m);
    keyed.into_iter().map(|(.., c)| c).collect()
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

    let distances: Vec<f32> = best.iter().map(|b| b.2).collect();
    let candidates = best
        .iter()
        .zip(eq1(&distances))
        .filter_map(|(&(entity, distance, _), probability)| {
            Some(Candidate {
                entity,
                name: kg.entity_name(entity)?.to_string(),
                probability,
                method: Method::Fuzzy,
                distance,
                embedding_distance: None,
            })
        })
        .collect();
    rank(candidates, opts.top_m)
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
