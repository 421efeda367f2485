//! The question side of planning: the linked entities, which linked mention
//! is the topic entity, and the question text with that mention masked (so
//! that a planner learns the kind of question, not the entity).

use kgbox_query::link::{Mention, Method};
use serde::Serialize;

/// What a masked mention is replaced with.
pub const MASK: &str = "ENTITY";

/// The entity a question is about.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Topic {
    pub entity: u32,
    pub name: String,
    /// The mention as written in the question.
    pub mention: String,
    /// Byte range of the mention in the question, brackets included when
    /// it was bracketed.
    #[serde(skip)]
    pub range: (usize, usize),
    pub probability: f32,
    pub method: Method,
}

/// A mention of the question with its best entity.
#[derive(Debug, Clone, Serialize)]
pub struct LinkedEntity {
    pub mention: String,
    pub entity: u32,
    pub name: String,
    pub probability: f32,
    pub method: Method,
}

/// The mentions that have a candidate, each with its best one.
pub fn linked_entities(mentions: &[Mention]) -> Vec<LinkedEntity> {
    mentions
        .iter()
        .filter_map(|m| {
            let c = m.candidates.first()?;
            Some(LinkedEntity {
                mention: m.text.clone(),
                entity: c.entity,
                name: c.name.clone(),
                probability: c.probability,
                method: c.method,
            })
        })
        .collect()
}

/// The topic entity among `mentions` of `question`: a bracketed mention
/// first, else the mention most surely naming an entity
/// ([`mention_strength`]); on a tie a mention written as a name (with a
/// capital letter) before a common word that is also an entity (a tag such
/// as "screenplay" or "director"), then the longer one, then the earlier
/// one. `None` when no mention has a candidate.
pub fn choose_topic(question: &str, mentions: &[Mention]) -> Option<Topic> {
    let best = mentions
        .iter()
        .filter(|m| !m.candidates.is_empty())
        .max_by(|a, b| {
            let key = |m: &Mention| {
                (
                    m.bracketed,
                    mention_strength(m),
                    written_as_name(question, m),
                    m.end - m.start,
                )
            };
            let (ab, ap, an, al) = key(a);
            let (bb, bp, bn, bl) = key(b);
            ab.cmp(&bb)
                .then(ap.total_cmp(&bp))
                .then(an.cmp(&bn))
                .then(al.cmp(&bl))
                // Earlier wins: compare reversed start.
                .then(b.start.cmp(&a.start))
        })?;
    // Names that differ only in case or punctuation ("nina hoss" the tag,
    // "Nina Hoss" the actor) share a normalized key and split the
    // probability: the one written exactly as in the question wins the tie.
    let top_p = best.candidates.first()?.probability;
    let candidate = best
        .candidates
        .iter()
        .take_while(|c| c.probability >= top_p)
        .find(|c| c.name == best.text)
        .or_else(|| best.candidates.first())?;
    Some(Topic {
        entity: candidate.entity,
        name: candidate.name.clone(),
        mention: best.text.clone(),
        range: mention_range(question, best),
        probability: candidate.probability,
        method: candidate.method,
    })
}

/// How surely a mention names some entity: the probability shared by its
/// candidates with the best one's name. Names that differ only in case or
/// punctuation ("tye sheridan" the tag, "Tye Sheridan" the actor) split the
/// probability between them, but the mention is no less a name for that.
fn mention_strength(m: &Mention) -> f32 {
    let Some(first) = m.candidates.first() else {
        return 0.0;
    };
    let key = kgbox_bundle::normalize::normalize(&first.name);
    m.candidates
        .iter()
        .filter(|c| kgbox_bundle::normalize::normalize(&c.name) == key)
        .map(|c| c.probability)
        .sum::<f32>()
        .min(1.0)
}

/// Whether the mention is written with a capital letter (the question's
/// first character aside): a proper name rather than a common word.
fn written_as_name(question: &str, m: &Mention) -> bool {
    let from = if m.start == 0 {
        question.chars().next().map_or(0, char::len_utf8)
    } else {
        m.start
    };
    question
        .get(from..m.end.max(from))
        .is_some_and(|t| t.chars().any(char::is_uppercase))
}

/// The mention's byte range, widened over its brackets if it was bracketed.
pub fn mention_range(question: &str, m: &Mention) -> (usize, usize) {
    if !m.bracketed {
        return (m.start, m.end);
    }
    let before = question.get(..m.start).unwrap_or("");
    let after = question.get(m.end..).unwrap_or("");
    let open = before.trim_end();
    let close = after.trim_start();
    let start = if open.ends_with('[') {
        open.len() - 1
    } else {
        m.start
    };
    let end = if close.starts_with(']') {
        question.len() - close.len() + 1
    } else {
        m.end
    };
    (start, end)
}

/// `question` with `range` replaced by [`MASK`] and lowercased; whitespace
/// runs collapse to one space.
pub fn mask(question: &str, range: (usize, usize)) -> String {
    let (start, end) = range;
    let mut s = String::with_capacity(question.len() + MASK.len());
    match (question.get(..start), question.get(end..)) {
        (Some(a), Some(b)) if start <= end => {
            s.push_str(&a.to_lowercase());
            s.push(' ');
            s.push_str(MASK);
            s.push(' ');
            s.push_str(&b.to_lowercase());
        }
        _ => s.push_str(&question.to_lowercase()),
    }
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgbox_query::link::Candidate;

    fn mention(text: &str, start: usize, bracketed: bool, p: f32) -> Mention {
        Mention {
            text: text.into(),
            start,
            end: start + text.len(),
            bracketed,
            candidates: vec![Candidate {
                entity: start as u32,
                name: text.into(),
                probability: p,
                method: Method::Exact,
                distance: 0,
                embedding_distance: None,
            }],
        }
    }

    #[test]
    fn bracketed_mention_wins_and_is_masked_with_its_brackets() {
        let q = "what movies did [Tom Cullen] act in with Weekend";
        let ms = [
            mention("Tom Cullen", 17, true, 0.6),
            mention("Weekend", 41, false, 1.0),
        ];
        let t = choose_topic(q, &ms).expect("topic");
        assert_eq!(t.name, "Tom Cullen");
        assert_eq!(t.range, (16, 28));
        assert_eq!(
            mask(q, t.range),
            "what movies did ENTITY act in with weekend"
        );
    }

    #[test]
    fn most_probable_then_longest_mention_wins() {
        let q = "is blade runner by ridley scott";
        let ms = [
            mention("blade runner", 3, false, 0.9),
            mention("ridley scott", 19, false, 0.9),
        ];
        let t = choose_topic(q, &ms).expect("topic");
        assert_eq!(
            t.name, "blade runner",
            "equal probability and length: the earlier"
        );
        let ms = [
            mention("blade", 3, false, 0.9),
            mention("ridley scott", 19, false, 0.9),
        ];
        assert_eq!(choose_topic(q, &ms).expect("topic").name, "ridley scott");
        assert_eq!(mask(q, (19, 31)), "is blade runner by ENTITY");
    }

    #[test]
    fn the_exactly_written_name_wins_a_tie() {
        let mut m = mention("Nina Hoss", 1, true, 0.5);
        let mut tag = m.candidates[0].clone();
        tag.name = "nina hoss".into();
        tag.entity = 99;
        m.candidates.insert(0, tag.clone());
        let t = choose_topic("[Nina Hoss]", std::slice::from_ref(&m)).expect("topic");
        assert_eq!(t.name, "Nina Hoss");
        m.text = "nina hoss".into();
        assert_eq!(choose_topic("[nina hoss]", &[m]).expect("topic").entity, 99);
    }

    #[test]
    fn a_name_beats_a_common_word_that_is_also_an_entity() {
        // "screenplay" is a tag and longer than "Brigadoon"; both exact.
        let q = "who penned the screenplay of Brigadoon";
        let ms = [
            mention("screenplay", 15, false, 1.0),
            mention("Brigadoon", 29, false, 1.0),
        ];
        assert_eq!(choose_topic(q, &ms).expect("topic").name, "Brigadoon");
        // A capital at the question's start does not make a name.
        let q = "Screenplay credits of brigadoon";
        let ms = [
            mention("Screenplay", 0, false, 1.0),
            mention("brigadoon", 22, false, 1.0),
        ];
        assert_eq!(choose_topic(q, &ms).expect("topic").name, "Screenplay");
        // A more probable common word still wins over a doubtful name.
        let q = "who penned the screenplay of Brigadon";
        let ms = [
            mention("screenplay", 15, false, 1.0),
            mention("Brigadon", 29, false, 0.6),
        ];
        assert_eq!(choose_topic(q, &ms).expect("topic").name, "screenplay");
    }

    #[test]
    fn a_name_shared_by_two_entities_is_still_a_sure_mention() {
        // "Michael Gordon" links to two entities (0.5 each): together as
        // sure as the tag "director".
        let q = "name a film Michael Gordon was the director of";
        let mut m = mention("Michael Gordon", 12, false, 0.5);
        let mut other = m.candidates[0].clone();
        other.name = "michael gordon".into();
        other.entity = 99;
        m.candidates.push(other);
        let ms = [m, mention("director", 35, false, 1.0)];
        let t = choose_topic(q, &ms).expect("topic");
        assert_eq!(t.name, "Michael Gordon");
    }

    #[test]
    fn no_candidates_no_topic() {
        let mut m = mention("x", 0, true, 1.0);
        m.candidates.clear();
        assert!(choose_topic("[x]", &[m]).is_none());
    }
}
