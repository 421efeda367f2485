//! The operator's relation aliases (`--relation-aliases`) as words a
//! synthesised question can use: nouns stand where the relation's noun
//! does ("the *filmmaker* of X"), and for a relation named in the passive
//! (`directed_by`), one-word regular past participles where its own does
//! ("what was *helmed* by X"). Other aliases (verb phrases such as "came
//! out" or "directed by", "-ing" forms, irregular participles such as
//! "spoken" that would not read as a past tense) are left to the path
//! ranker, which matches them as they are.

use super::description::ARTICLES;

/// Words after a verb that make it a phrasal verb ("came *out*"), or that
/// end a relation's phrase ("directed *by*", "part *of*"): an alias ending
/// in one is no noun.
const ENDINGS: &[&str] = &[
    "about", "along", "as", "at", "away", "back", "by", "down", "for", "from", "in", "into", "of",
    "off", "on", "out", "over", "to", "up", "with",
];

/// Words an alias that is a verb phrase starts with ("is part of", "has
/// member").
const VERB_STARTS: &[&str] = &["are", "has", "have", "is", "was", "were"];

/// Irregular past participles: an alias ending in one is no noun.
const IRREGULAR: &[&str] = &[
    "begun", "born", "broken", "chosen", "done", "drawn", "driven", "given", "grown", "held",
    "known", "led", "made", "run", "seen", "shot", "shown", "sold", "spoken", "sung", "taken",
    "told", "won", "worn", "written",
];

/// Longest alias, in words, used as a noun.
const MAX_NOUN_WORDS: usize = 3;

/// A relation's aliases sorted by how a phrasing may use them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AliasWords {
    /// Aliases that read as nouns for what the relation reaches
    /// ("filmmaker", "release date").
    pub nouns: Vec<String>,
    /// One-word past participles ("helmed", "penned"), for relations named
    /// in the passive (`directed_by`).
    pub participles: Vec<String>,
}

impl AliasWords {
    /// Sorts `aliases`; `passive` says whether the relation's own name is a
    /// participle, so that another one can stand for it.
    pub fn new<'a>(aliases: impl IntoIterator<Item = &'a str>, passive: bool) -> AliasWords {
        let mut out = AliasWords::default();
        for alias in aliases {
            let mut words: Vec<String> =
                alias.split_whitespace().map(|w| w.to_lowercase()).collect();
            if words.len() > 1 && ARTICLES.contains(&words[0].as_str()) {
                words.remove(0);
            }
            let plain = words.iter().all(|w| {
                w.chars()
                    .all(|c| c.is_alphabetic() || c == '-' || c == '\'')
            });
            let Some(last) = words.last().filter(|_| plain) else {
                continue;
            };
            let regular = last.ends_with("ed");
            let verb_like = regular
                || IRREGULAR.contains(&last.as_str())
                || last.ends_with("ing")
                || ENDINGS.contains(&last.as_str())
                || VERB_STARTS.contains(&words[0].as_str());
            if regular && passive && words.len() == 1 {
                if !out.participles.contains(last) {
                    out.participles.push(last.clone());
                }
            } else if !verb_like && words.len() <= MAX_NOUN_WORDS {
                let noun = words.join(" ");
                if !out.nouns.contains(&noun) {
                    out.nouns.push(noun);
                }
            }
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.nouns.is_empty() && self.participles.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nouns_and_participles_are_told_apart() {
        let a = AliasWords::new(
            [
                "filmmaker",
                "helmed",
                "Directed",
                "release date",
                "the auteur",
                "came out",
                "spoken",
                "directed by",
                "is part of",
                "starring",
                "a+b",
            ],
            true,
        );
        assert_eq!(a.nouns, ["filmmaker", "release date", "auteur"]);
        // Irregular participles do not read as a past tense ("who spoken
        // X"), so only regular ones stand in.
        assert_eq!(a.participles, ["helmed", "directed"]);
        // A relation named otherwise ("starred_actors") takes no
        // participle: its questions would need the verb's preposition.
        let a = AliasWords::new(["appeared", "co-star", "number of votes"], false);
        assert_eq!(a.nouns, ["co-star", "number of votes"]);
        assert!(a.participles.is_empty());
        assert!(AliasWords::new([], true).is_empty());
    }
}
