//! The operator's relation aliases (`--relation-aliases`) as words a
//! synthesised question can use: nouns stand where the relation's noun
//! does ("the *filmmaker* of X"), past participles where a passive name's
//! does ("what was *helmed* by X"). Other aliases ("came out", "spoken")
//! are verb phrases whose grammar the phrasings cannot know, and are left
//! to the path ranker, which matches them as they are.

/// Words after a verb that make it a phrasal verb ("came *out*").
const PARTICLES: &[&str] = &[
    "about", "along", "away", "back", "down", "in", "off", "on", "out", "over", "up",
];

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
            let words: Vec<String> = alias.split_whitespace().map(|w| w.to_lowercase()).collect();
            let plain = words.iter().all(|w| {
                w.chars()
                    .all(|c| c.is_alphabetic() || c == '-' || c == '\'')
            });
            let Some(last) = words.last().filter(|_| plain) else {
                continue;
            };
            let participle = last.ends_with("ed") || IRREGULAR.contains(&last.as_str());
            if participle {
                if passive && words.len() == 1 && !out.participles.contains(last) {
                    out.participles.push(last.clone());
                }
            } else if words.len() <= MAX_NOUN_WORDS && !PARTICLES.contains(&last.as_str()) {
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
                "came out",
                "spoken",
                "a+b",
            ],
            true,
        );
        assert_eq!(a.nouns, ["filmmaker", "release date"]);
        assert_eq!(a.participles, ["helmed", "directed", "spoken"]);
        // A relation named otherwise ("starred_actors") takes no
        // participle: its questions would need the verb's preposition.
        let a = AliasWords::new(["appeared", "co-star", "number of votes"], false);
        assert_eq!(a.nouns, ["co-star", "number of votes"]);
        assert!(a.participles.is_empty());
        assert!(AliasWords::new([], true).is_empty());
    }
}
