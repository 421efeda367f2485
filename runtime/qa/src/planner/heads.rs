//! Relation heads: two small classifiers the packager fits beside the
//! template classifier, each on one window of the question.
//!
//! - The **answer** head reads the question's first and last words, where people say what they want back ("which
//!   genres", "what kinds of movies", "... were released in which years"),
//!   and predicts the template's last relation.
//! - The **topic** head reads the words around the topic ("the director of
//!   [X]", "[X]'s screenwriter", "films starring [X]") and predicts the
//!   first relation.
//!
//! Pooled over every template that shares a first or last relation, and
//! blind to the rest of the sentence, they carry over to phrasings the
//! template classifier never saw: it reads "what kinds of movies does [X]
//! act in" as a question about films, the answer head as one about genres.
//! [`super::LearnedPlanner::predict_with`] multiplies the three, each head
//! raised to its weight.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::template::Template;
use crate::question::MASK;

/// Words of the topic window on each side of the topic.
const TOPIC_BEFORE: usize = 2;
const TOPIC_AFTER: usize = 2;
/// Words of the answer window: the question word and those after it.
const ANSWER_WORDS: usize = 4;
/// English question words (lowercase, as in a masked question): where the
/// answer window starts.
const QUESTION_WORDS: [&str; 8] = [
    "which", "what", "who", "whom", "whose", "when", "where", "how",
];

/// What a head reads and predicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HeadKind {
    /// The last relation, from the question's first and last words.
    Answer,
    /// The first relation, from the words around the topic.
    Topic,
}

impl HeadKind {
    pub const ALL: [HeadKind; 2] = [HeadKind::Answer, HeadKind::Topic];

    /// Where this head's window vector sits among the pooled vectors of a
    /// question: after the question's own (index 0), in [`HeadKind::ALL`]
    /// order.
    pub fn slot(self) -> usize {
        match self {
            HeadKind::Answer => 1,
            HeadKind::Topic => 2,
        }
    }

    /// The head's exponent in the product with the template classifier.
    /// Chosen on the free-form set of `benches/metaqa/freeform`, full KB:
    /// answer 0.5 and topic 1 gained 2 / 0 / 18 points (1/2/3-hop) there,
    /// and changed nothing on templated held-out questions; a stronger
    /// answer head started to cost 2-hop questions.
    pub fn default_weight(self) -> f32 {
        match self {
            HeadKind::Answer => 0.5,
            HeadKind::Topic => 1.0,
        }
    }

    /// The relation of `template` this head predicts.
    pub fn label(self, template: &Template) -> Option<&str> {
        let rels = template.relations();
        match self {
            HeadKind::Answer => rels.last().copied(),
            HeadKind::Topic => rels.first().copied(),
        }
    }

    /// The window of a masked question (as [`crate::question::mask`] writes
    /// it) this head reads; [`MASK`] alone when the window is empty.
    pub fn window(self, masked: &str) -> String {
        let picked: Vec<&str> = self
            .words(masked)
            .into_iter()
            .filter_map(|r| masked.get(r))
            .collect();
        if picked.is_empty() {
            MASK.to_string()
        } else {
            picked.join(" ")
        }
    }

    /// The bytes of `masked` from the window's first word to its last
    /// (punctuation between them included); `None` when the window is empty.
    pub fn span(self, masked: &str) -> Option<Range<usize>> {
        let words = self.words(masked);
        Some(words.first()?.start..words.last()?.end)
    }

    /// The window's words, as byte ranges of `masked`, in order.
    fn words(self, masked: &str) -> Vec<Range<usize>> {
        let words = word_ranges(masked);
        let n = words.len();
        let at = words.iter().position(|w| &masked[w.clone()] == MASK);
        let near = |i: usize| at.is_some_and(|m| i + TOPIC_BEFORE >= m && i <= m + TOPIC_AFTER);
        match self {
            HeadKind::Topic => (0..n)
                .filter(|&i| near(i))
                .map(|i| words[i].clone())
                .collect(),
            HeadKind::Answer => {
                let start = words
                    .iter()
                    .position(|w| QUESTION_WORDS.contains(&&masked[w.clone()]))
                    .unwrap_or(0);
                words.into_iter().skip(start).take(ANSWER_WORDS).collect()
            }
        }
    }
}

/// The span of each of [`HeadKind::ALL`]'s windows in `masked`, in that
/// order, for [`WindowVectors::Pooled`]; an empty window pools every word of
/// the text (not the special tokens the whole text's vector also has).
pub fn pooled_spans(masked: &str) -> Vec<Range<usize>> {
    HeadKind::ALL
        .iter()
        .map(|k| k.span(masked).unwrap_or(0..masked.len()))
        .collect()
}

/// Byte ranges of the alphanumeric runs of `text`.
fn word_ranges(text: &str) -> Vec<Range<usize>> {
    let mut words = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                words.push(s..i);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        words.push(s..text.len());
    }
    words
}

/// How the planner's heads get their windows' sentence vectors.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WindowVectors {
    /// Each window encoded alone (one more text per head per question);
    /// bundles packed before pooling.
    #[default]
    Alone,
    /// The question's token states averaged over the window's span: one
    /// pass of the encoder per question serves the template classifier and
    /// every head.
    Pooled,
}

impl WindowVectors {
    pub fn is_alone(&self) -> bool {
        *self == WindowVectors::Alone
    }
}

/// An error unless `vectors` (of several texts) holds the question's vector
/// and one per head window for each.
pub fn check_pooled(vectors: &[Vec<Vec<f32>>], texts: usize) -> Result<(), String> {
    if vectors.len() != texts || vectors.iter().any(|v| v.len() != HeadKind::ALL.len() + 1) {
        return Err("the encoder returned the wrong number of span vectors".into());
    }
    Ok(())
}

/// One head in `planner.meta`; its weights follow the template classifier's
/// in `planner.weights`, `[label][feature + 1]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadMeta {
    pub kind: HeadKind,
    /// Class `i` predicts relation `labels[i]`.
    pub labels: Vec<String>,
    /// The exponent of its probability in the product.
    pub weight: f32,
    /// Accuracy on the packager's held-out examples (`None` if too few).
    pub heldout_accuracy: Option<f32>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::question::mask;

    fn masked(q: &str) -> String {
        let (a, b) = (q.find('[').expect("["), q.find(']').expect("]") + 1);
        mask(q, (a, b))
    }

    #[test]
    fn slots_follow_all() {
        for (i, k) in HeadKind::ALL.iter().enumerate() {
            assert_eq!(k.slot(), i + 1);
        }
    }

    #[test]
    fn windows_split_the_question() {
        let m = masked("what kinds of movies does [William Devane] act in");
        assert_eq!(HeadKind::Answer.window(&m), "what kinds of movies");
        assert_eq!(HeadKind::Topic.window(&m), "movies does ENTITY act in");
        let m = masked("the films directed by [X] were released in which years");
        assert_eq!(HeadKind::Answer.window(&m), "which years");
        assert_eq!(
            HeadKind::Topic.window(&m),
            "directed by ENTITY were released"
        );
        let m = masked("list the movies [X] has writing credits on");
        assert_eq!(HeadKind::Answer.window(&m), "list the movies ENTITY");
        let m = masked("[X]'s screenwriter wrote which films");
        assert_eq!(HeadKind::Topic.window(&m), "ENTITY s screenwriter");
        assert_eq!(HeadKind::Topic.window("no mask here"), MASK);
        assert_eq!(HeadKind::Topic.span("no mask here"), None);
        // A span runs from the window's first word to its last.
        let span = HeadKind::Topic.span(&m).expect("a topic window");
        assert_eq!(&m[span], "ENTITY 's screenwriter");
        let m = masked("what kinds of movies does [William Devane] act in");
        let span = HeadKind::Answer.span(&m).expect("an answer window");
        assert_eq!(&m[span], "what kinds of movies");
    }

    #[test]
    fn labels_are_the_end_relations() {
        let t = Template("{topic} -> directed_by -> directed_by_inv -> has_genre".into());
        assert_eq!(HeadKind::Answer.label(&t), Some("has_genre"));
        assert_eq!(HeadKind::Topic.label(&t), Some("directed_by"));
        assert_eq!(HeadKind::Answer.label(&Template("{topic}".into())), None);
    }
}
