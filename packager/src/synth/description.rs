//! What an operator's relation description says: its noun ("the
//! *director* of a film"), the relation's domain ("a *film*"), and a verb
//! or event when it has one ([`super::verbs`]): "an actor *starring in* a
//! film", "the year a film *was released*". Read with a few patterns of
//! English, no parser.

/// Prepositions that end a description's noun ("director *of* a film").
const PREPOSITIONS: &[&str] = &["of", "in", "for", "from", "by", "about"];
/// Words a description's domain may have at most.
const MAX_DOMAIN_WORDS: usize = 2;

/// What a description says: its noun, the relation's domain, and a verb
/// or event ([`super::verbs`]) when it has one.
#[derive(Debug, Default, PartialEq)]
pub struct Description {
    pub noun: Option<String>,
    pub domain: Option<String>,
    pub verb: Option<(String, Option<String>)>,
    pub event: Option<Event>,
}

/// What happened to the relation's subject, that its object dates or
/// places: "the year a film was *released*" (with the preposition a
/// question puts before the object: "released *in* 1999").
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub participle: String,
    pub prep: Option<String>,
}

/// Nouns that end like a gerund.
const ING_NOUNS: &[&str] = &[
    "thing",
    "things",
    "king",
    "ring",
    "string",
    "spring",
    "morning",
    "evening",
    "wedding",
    "building",
    "ceiling",
    "rating",
    "meeting",
    "painting",
    "setting",
    "ending",
    "beginning",
    "sibling",
    "offspring",
    "clothing",
    "funding",
    "ranking",
    "listing",
    "heading",
    "opening",
    "training",
    "recording",
    "drawing",
    "filling",
    "feeling",
    "earning",
    "saving",
    "landing",
    "crossing",
    "dwelling",
    "standing",
    "timing",
    "spelling",
    "wording",
];

/// Words that open a relative clause after a description's noun.
const RELATIVES: &[&str] = &["that", "which", "when", "where", "who"];
const AUXILIARIES: &[&str] = &["was", "is", "were", "are"];

/// A description's noun (at most [`MAX_DESCRIPTION_WORDS`] words) when
/// `words` are short enough.
fn short(words: &[String]) -> Option<String> {
    (!words.is_empty() && words.len() <= MAX_DESCRIPTION_WORDS).then(|| words.join(" "))
}

/// A domain of at most [`MAX_DOMAIN_WORDS`] words after an optional
/// article.
fn domain_of(words: &[String]) -> Option<String> {
    let start = usize::from(
        words
            .first()
            .is_some_and(|w| ARTICLES.contains(&w.as_str())),
    );
    let d = &words[start.min(words.len())..];
    (1..=MAX_DOMAIN_WORDS)
        .contains(&d.len())
        .then(|| d.join(" "))
}

/// Reads a description: `the director of a film` gives (`director`,
/// `film`); `an actor starring in a film` (`actor`, `film`, verb `starring
/// in`); `the year a film was released` (`year`, `film`, event
/// `released`); one that reads none of these ways is the noun as a whole,
/// when it is short.
pub fn read_description(d: &str) -> Description {
    let words: Vec<String> = d
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect();
    let Some(start) = words.iter().position(|w| !ARTICLES.contains(&w.as_str())) else {
        return Description::default();
    };
    let words = &words[start..];
    // NOUN VERBing [PREP] ARTICLE DOMAIN
    for i in 1..words.len().saturating_sub(1) {
        let w = &words[i];
        if w.len() < 5 || !w.ends_with("ing") || ING_NOUNS.contains(&w.as_str()) {
            continue;
        }
        // "rating of", "painting of": a noun, not a verb.
        let (prep, rest) = match words.get(i + 1) {
            Some(p) if p != "of" && PREPOSITIONS.contains(&p.as_str()) => {
                (Some(p.clone()), &words[i + 2..])
            }
            Some(a) if ARTICLES.contains(&a.as_str()) => (None, &words[i + 1..]),
            _ => continue,
        };
        let domain = domain_of(rest);
        if domain.is_some() || rest.is_empty() {
            return Description {
                noun: short(&words[..i]),
                domain,
                verb: Some((w.clone(), prep)),
                event: None,
            };
        }
    }
    // NOUN [RELATIVE] ARTICLE DOMAIN AUX [PARTICIPLE] [PREP]
    for i in 1..words.len() {
        let mut j = i;
        if RELATIVES.contains(&words[j].as_str()) {
            j += 1;
        }
        if !words.get(j).is_some_and(|w| ARTICLES.contains(&w.as_str())) {
            continue;
        }
        let Some(aux) = (j + 1..words.len()).find(|&k| AUXILIARIES.contains(&words[k].as_str()))
        else {
            continue;
        };
        let Some(domain) = domain_of(&words[j..aux]) else {
            continue;
        };
        let tail = &words[aux + 1..];
        let event = match tail {
            [p] | [p, _] if !PREPOSITIONS.contains(&p.as_str()) => Some(Event {
                participle: p.clone(),
                prep: tail.get(1).cloned(),
            }),
            _ => None,
        };
        return Description {
            noun: short(&words[..i]),
            domain: Some(domain),
            verb: None,
            event,
        };
    }
    // NOUN PREP ARTICLE DOMAIN
    let split = (1..words.len().saturating_sub(1)).rev().find(|&i| {
        PREPOSITIONS.contains(&words[i].as_str()) && ARTICLES.contains(&words[i + 1].as_str())
    });
    if let Some(i) = split {
        let domain = &words[i + 2..];
        if (1..=MAX_DOMAIN_WORDS).contains(&domain.len()) && i <= MAX_DESCRIPTION_WORDS {
            return Description {
                noun: Some(words[..i].join(" ")),
                domain: Some(domain.join(" ")),
                ..Description::default()
            };
        }
    }
    Description {
        noun: short(words),
        ..Description::default()
    }
}

pub(super) const ARTICLES: &[&str] = &["the", "a", "an"];
/// Words of a description at most, for it to be used in phrases.
const MAX_DESCRIPTION_WORDS: usize = 8;
