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
        let words: Vec<&str> = masked
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        let n = words.len();
        let at = words.iter().position(|w| *w == MASK);
        let near = |i: usize| at.is_some_and(|m| i + TOPIC_BEFORE >= m && i <= m + TOPIC_AFTER);
        let picked: Vec<&str> = match self {
            HeadKind::Topic => (0..n).filter(|&i| near(i)).map(|i| words[i]).collect(),
            HeadKind::Answer => {
                let start = words
                    .iter()
                    .position(|w| QUESTION_WORDS.contains(w))
                    .unwrap_or(0);
                words
                    .iter()
                    .skip(start)
                    .take(ANSWER_WORDS)
                    .copied()
                    .collect()
            }
        };
        if picked.is_empty() {
            MASK.to_string()
        } else {
            picked.join(" ")
        }
    }
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
    }

    #[test]
    fn labels_are_the_end_relations() {
        let t = Template("{topic} -> directed_by -> directed_by_inv -> has_genre".into());
        assert_eq!(HeadKind::Answer.label(&t), Some("has_genre"));
        assert_eq!(HeadKind::Topic.label(&t), Some("directed_by"));
        assert_eq!(HeadKind::Answer.label(&Template("{topic}".into())), None);
    }
}
