//! What a relation's description says beside its noun, read with a few
//! rules of English and no dictionary: a verb the relation's object does to
//! its subject ("an actor *starring in* a film": actors star in films), or
//! what happened to the subject that the object dates or places ("the year
//! a film *was released*"). Questions people ask use those verbs ("who
//! starred in \[X\]", "when was \[X\] released") more than the nouns.
//!
//! The verb's forms are guessed from the gerund (`starring` → `star`,
//! `stars`, `starred`; `describing` → `describe`); an irregular verb gets a
//! wrong past (`writed`), which costs a few odd training questions, not a
//! wrong plan.

/// A verb the relation's object does to its subject, with its preposition
/// (`star in`; none for `a tag describing a film`).
#[derive(Debug, Clone, PartialEq)]
pub struct Verb {
    /// `star`.
    pub lemma: String,
    /// `stars`.
    pub third: String,
    /// `starring`.
    pub gerund: String,
    /// `starred`: the relation's name's own past when it has one
    /// (`starred_actors`), else the regular one.
    pub past: String,
    /// `in`, or nothing when the verb takes its subject directly.
    pub prep: Option<String>,
}

impl Verb {
    /// The verb from its gerund, when the word reads as one.
    pub fn from_gerund(gerund: &str, prep: Option<&str>) -> Option<Verb> {
        let stem = gerund.strip_suffix("ing")?;
        if stem.len() < 3
            || !stem.bytes().all(|c| c.is_ascii_lowercase())
            || !stem.bytes().any(|c| is_vowel(c) || c == b'y')
        {
            return None;
        }
        let lemma = lemma_of(stem);
        Some(Verb {
            third: third_person(&lemma),
            past: regular_past(&lemma),
            gerund: gerund.to_string(),
            lemma,
            prep: prep.map(str::to_string),
        })
    }

    /// Takes `past` (a word of the relation's name, `starred`) as the past
    /// when it is this verb's.
    pub fn with_past_from(mut self, words: &[String]) -> Verb {
        let lemma = &self.lemma;
        if let Some(p) = words.iter().find(|w| {
            w.len() > 3 && w.ends_with("ed") && w.starts_with(&lemma[..lemma.len().min(3)])
        }) {
            self.past = p.clone();
        }
        self
    }

    /// ` in` (with its leading space), or nothing.
    pub fn prep(&self) -> String {
        self.prep
            .as_deref()
            .map(|p| format!(" {p}"))
            .unwrap_or_default()
    }
}

fn is_vowel(c: u8) -> bool {
    matches!(c, b'a' | b'e' | b'i' | b'o' | b'u')
}

/// Whether a word ends consonant, vowel, consonant (not `w`, `x`, `y`):
/// `writ`, `star`.
fn ends_cvc(b: &[u8]) -> bool {
    let n = b.len();
    n >= 3
        && !is_vowel(b[n - 3])
        && is_vowel(b[n - 2])
        && !is_vowel(b[n - 1])
        && !b"wxy".contains(&b[n - 1])
}

/// The lemma from a gerund's stem: `starr` → `star`, `describ` →
/// `describe`, `act` → `act`, `play` → `play`.
fn lemma_of(stem: &str) -> String {
    let b = stem.as_bytes();
    let n = b.len();
    if n >= 3 && b[n - 1] == b[n - 2] && !is_vowel(b[n - 1]) && !b"lsz".contains(&b[n - 1]) {
        return stem[..n - 1].to_string();
    }
    // No English verb ends in `v` (`liv`, `serv`), few in a vowel and `s`
    // or `z` (`hous`, `caus`, `freez`).
    if b[n - 1] == b'v' || n >= 2 && is_vowel(b[n - 2]) && b"sz".contains(&b[n - 1]) {
        return format!("{stem}e");
    }
    // Consonant, vowel, consonant at the end: the silent `e` was dropped
    // (`writ`, `describ`, `locat`).
    if ends_cvc(b) {
        return format!("{stem}e");
    }
    stem.to_string()
}

/// `star` → `stars`, `watch` → `watches`, `carry` → `carries`, `go` →
/// `goes`.
pub fn third_person(lemma: &str) -> String {
    if lemma.ends_with('o') {
        format!("{lemma}es")
    } else {
        with_s(lemma)
    }
}

/// The `-s` form plurals and third persons share: `film` → `films`, `box`
/// → `boxes`, `city` → `cities`.
pub fn with_s(word: &str) -> String {
    if ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|e| word.ends_with(e))
    {
        format!("{word}es")
    } else if let Some(stem) = word
        .strip_suffix('y')
        .filter(|s| !s.ends_with(['a', 'e', 'o', 'u']))
    {
        format!("{stem}ies")
    } else {
        format!("{word}s")
    }
}

/// `star` → `starred`, `describe` → `described`, `act` → `acted`.
fn regular_past(lemma: &str) -> String {
    let b = lemma.as_bytes();
    let n = b.len();
    if lemma.ends_with('e') {
        return format!("{lemma}d");
    }
    if let Some(stem) = lemma
        .strip_suffix('y')
        .filter(|s| !s.ends_with(['a', 'e', 'o', 'u']))
    {
        return format!("{stem}ied");
    }
    // One short syllable ending consonant, vowel, consonant doubles it.
    if (3..=4).contains(&n) && ends_cvc(b) {
        return format!("{lemma}{}ed", b[n - 1] as char);
    }
    format!("{lemma}ed")
}

/// Words that say when (a question about one asks "when").
const TIME_NOUNS: &[&str] = &[
    "year", "date", "day", "time", "month", "decade", "century", "era", "period",
];

/// Whether `noun`'s last word names a time ("release year").
pub fn is_time(noun: &str) -> bool {
    noun.split_whitespace()
        .last()
        .is_some_and(|w| TIME_NOUNS.contains(&w))
}

/// Whether a noun's last word names people ("lead actor", "characters").
pub use kgbox_qa::planner::paths::names_person as is_person;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_of_a_verb_from_its_gerund() {
        let forms = |g: &str| {
            let v = Verb::from_gerund(g, Some("in")).unwrap();
            (v.lemma, v.third, v.past)
        };
        let s = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
        assert_eq!(forms("starring"), s("star", "stars", "starred"));
        assert_eq!(forms("acting"), s("act", "acts", "acted"));
        assert_eq!(forms("describing"), s("describe", "describes", "described"));
        assert_eq!(forms("playing"), s("play", "plays", "played"));
        assert_eq!(forms("falling"), s("fall", "falls", "falled"));
        assert_eq!(forms("carrying"), s("carry", "carries", "carried"));
        assert_eq!(forms("watching"), s("watch", "watches", "watched"));
        assert_eq!(forms("living"), s("live", "lives", "lived"));
        assert_eq!(forms("housing"), s("house", "houses", "housed"));
        assert_eq!(Verb::from_gerund("thing", None), None);
        assert_eq!(Verb::from_gerund("ing", None), None);
        assert_eq!(
            Verb::from_gerund("starring", Some("in")).unwrap().prep(),
            " in"
        );
        assert_eq!(Verb::from_gerund("describing", None).unwrap().prep(), "");
        // The name's own past wins over the regular one.
        let name = ["starred".to_string(), "actors".to_string()];
        let w = Verb::from_gerund("writing", None).unwrap();
        assert_eq!(w.past, "writed");
        let w = w.with_past_from(&["written".to_string(), "by".to_string()]);
        assert_eq!(w.past, "writed", "`written` is no -ed form");
        let v = Verb::from_gerund("starring", Some("in"))
            .unwrap()
            .with_past_from(&name);
        assert_eq!(v.past, "starred");
    }

    #[test]
    fn times_and_people() {
        assert!(is_time("release year") && is_time("date"));
        assert!(!is_time("genre") && !is_time("yearbook"));
        assert!(is_person("actor") && is_person("lead actors") && is_person("children"));
        assert!(!is_person("genre") && !is_person("actors guild"));
    }
}
