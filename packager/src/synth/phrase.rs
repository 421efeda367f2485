//! Questions in words for a relation path, from the relations' names and
//! descriptions: rough English that puts the right words in the right
//! places ("who directed the things starring \[X\]"), in many phrasings, for
//! the learned planner to learn the kind of question from. Nothing here
//! knows a particular graph: `directed_by`, `hasGenre`, `birthPlace` and
//! `member of` are all read with the same few rules.

use kgbox_qa::rng::SplitMix64;

/// What a relation is called, split into words.
#[derive(Debug, Clone, PartialEq)]
pub struct RelationWords {
    /// Every word of the name, lower case (`has imdb rating`).
    pub all: String,
    /// The noun at its heart (`imdb rating`, `genre`, `director`-less
    /// `directed`): the name without a leading `has`/`is`/`in` or a
    /// trailing preposition.
    pub core: String,
    /// For a passive name (`directed by`, `written_by`): the participle.
    pub participle: Option<String>,
    /// The operator's description, when short enough to stand in a phrase
    /// (`the director of a film` gives `director`).
    pub description: Option<String>,
    /// What the relation starts from, when the description says (`the
    /// director of a film` gives `film`).
    pub domain: Option<String>,
}

/// Prepositions that end a description's noun ("director *of* a film").
const PREPOSITIONS: &[&str] = &["of", "in", "for", "from", "by", "about"];
/// Words a description's domain may have at most.
const MAX_DOMAIN_WORDS: usize = 2;

/// A description's noun and domain: `the director of a film` gives
/// (`director`, `film`); one that does not read `NOUN PREP ARTICLE DOMAIN`
/// is the noun as a whole, when it is short.
fn read_description(d: &str) -> (Option<String>, Option<String>) {
    let words: Vec<String> = d
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect();
    let Some(start) = words.iter().position(|w| !ARTICLES.contains(&w.as_str())) else {
        return (None, None);
    };
    let words = &words[start..];
    let split = (1..words.len().saturating_sub(1)).rev().find(|&i| {
        PREPOSITIONS.contains(&words[i].as_str()) && ARTICLES.contains(&words[i + 1].as_str())
    });
    if let Some(i) = split {
        let domain = &words[i + 2..];
        if (1..=MAX_DOMAIN_WORDS).contains(&domain.len()) && i <= MAX_DESCRIPTION_WORDS {
            return (Some(words[..i].join(" ")), Some(domain.join(" ")));
        }
    }
    let noun = (words.len() <= MAX_DESCRIPTION_WORDS).then(|| words.join(" "));
    (noun, None)
}

/// A naive English plural (`film` → `films`, `city` → `cities`).
pub fn plural(noun: &str) -> String {
    if noun.ends_with('s') {
        noun.to_string()
    } else if let Some(stem) = noun
        .strip_suffix('y')
        .filter(|s| !s.ends_with(['a', 'e', 'o', 'u']))
    {
        format!("{stem}ies")
    } else {
        format!("{noun}s")
    }
}

const LEADING: &[&str] = &["has", "have", "is", "are", "was", "in", "with", "hasa"];
const TRAILING: &[&str] = &["of", "by", "in", "from", "to", "for", "on", "at", "with"];
const ARTICLES: &[&str] = &["the", "a", "an"];
/// Words of a description at most, for it to be used in phrases.
const MAX_DESCRIPTION_WORDS: usize = 8;

pub use kgbox_qa::words::split_words;

impl RelationWords {
    pub fn new(name: &str, description: Option<&str>) -> RelationWords {
        let words = split_words(name);
        let all = words.join(" ");
        let mut core: &[String] = &words;
        while core.len() > 1 && LEADING.contains(&core[0].as_str()) {
            core = &core[1..];
        }
        let passive = core.len() > 1 && core.last().is_some_and(|w| w == "by");
        while core.len() > 1 && core.last().is_some_and(|w| TRAILING.contains(&w.as_str())) {
            core = &core[..core.len() - 1];
        }
        let core = if core.is_empty() {
            all.clone()
        } else {
            core.join(" ")
        };
        let (description, domain) = description.map(read_description).unwrap_or_default();
        RelationWords {
            participle: passive.then(|| core.clone()),
            all,
            core,
            description,
            domain,
        }
    }

    /// A plural for the things this relation starts from, when the
    /// description names them, else a word for anything.
    fn things(&self, rng: &mut SplitMix64) -> String {
        match &self.domain {
            Some(d) if rng.below(2) == 0 => plural(d),
            _ => pick(rng, &["things", "ones", "entities", "items"]).to_string(),
        }
    }

    /// The noun to use this time: the core, or now and then the description.
    fn noun(&self, rng: &mut SplitMix64) -> &str {
        match &self.description {
            Some(d) if rng.below(2) == 0 => d,
            _ => &self.core,
        }
    }
}

/// One step of a path in words: the relation and its direction.
pub struct StepWords<'a> {
    pub words: &'a RelationWords,
    pub inverse: bool,
    /// What the step reaches, in the plural, when the graph types most of
    /// those entities alike ("albums", "solo artists").
    pub class: Option<String>,
}

impl StepWords<'_> {
    /// The noun for what this step reaches: the relation's, or now and then
    /// the class's ("the songs of X" beside "the track of X").
    fn noun(&self, rng: &mut SplitMix64) -> String {
        match &self.class {
            Some(c) if !self.inverse && rng.below(3) == 0 => c.clone(),
            _ => self.words.noun(rng).to_string(),
        }
    }

    /// The plural for what this step reaches: mostly its class when it has
    /// one, else the relation's word for it.
    fn things(&self, rng: &mut SplitMix64) -> String {
        match &self.class {
            Some(c) if rng.below(4) > 0 => c.clone(),
            _ => self.words.things(rng),
        }
    }
}

fn pick<'a>(rng: &mut SplitMix64, options: &[&'a str]) -> &'a str {
    options[rng.below(options.len())]
}

/// A noun phrase for what `step` reaches from `inner` ("the director of
/// X", "the things starring X").
fn noun_phrase(step: &StepWords<'_>, inner: &str, rng: &mut SplitMix64) -> String {
    let w = step.words;
    let noun = step.noun(rng);
    let thing = step.things(rng);
    match (step.inverse, &w.participle) {
        (false, Some(p)) => match rng.below(3) {
            0 => format!("the ones who {p} {inner}"),
            1 => format!("whoever {p} {inner}"),
            _ => format!("the {noun} of {inner}"),
        },
        (false, None) => match rng.below(3) {
            0 => format!("the {noun} of {inner}"),
            1 => format!("{inner}'s {noun}"),
            _ => format!("the {noun} for {inner}"),
        },
        (true, Some(p)) => match rng.below(3) {
            0 => format!("the {thing} {p} by {inner}"),
            1 => format!("what {inner} {p}"),
            _ => format!("the {thing} with {noun} {inner}"),
        },
        (true, None) => match rng.below(4) {
            0 => format!("the {thing} with {noun} {inner}"),
            1 => format!("the {thing} that have {inner} as {noun}"),
            2 => format!("the {thing} {} {inner}", w.all),
            _ => format!("the {thing} whose {noun} is {inner}"),
        },
    }
}

/// The question that asks what `step` reaches from `inner`.
fn question_phrase(step: &StepWords<'_>, inner: &str, rng: &mut SplitMix64) -> String {
    let w = step.words;
    let noun = step.noun(rng);
    match (step.inverse, &w.participle) {
        (false, Some(p)) => match rng.below(5) {
            0 => format!("who {p} {inner}"),
            1 => format!("{inner} was {p} by whom"),
            2 => format!("what is the {noun} of {inner}"),
            3 => format!("by whom was {inner} {p}"),
            _ => format!("who is the {noun} of {inner}"),
        },
        (false, None) => match rng.below(6) {
            0 => format!("what is the {noun} of {inner}"),
            1 => format!("what are the {noun} of {inner}"),
            2 => format!("which {noun} does {inner} have"),
            3 => format!("what {noun} is {inner}"),
            4 => format!("tell me the {noun} of {inner}"),
            _ => format!("{inner} has what {noun}"),
        },
        (true, Some(p)) => match rng.below(5) {
            0 => format!("what was {p} by {inner}"),
            1 => format!("which ones were {p} by {inner}"),
            2 => format!("what did {inner} {p}"),
            3 => format!("{inner} {p} what"),
            _ => format!("list the {} {p} by {inner}", step.things(rng)),
        },
        (true, None) => match rng.below(6) {
            0 if step.class.is_some() => format!("which {} have {noun} {inner}", step.things(rng)),
            0 => format!("what has {noun} {inner}"),
            1 => format!("which {} have {inner} as {noun}", step.things(rng)),
            2 => format!("what {} {inner}", w.all),
            3 => format!("{inner} is the {noun} of what"),
            4 => format!("which ones have the {noun} {inner}"),
            _ => format!("list everything whose {noun} is {inner}"),
        },
    }
}

/// Whether `b` comes back over `a`'s relation: the pair reads as sharing
/// ("the films with the same director as X", "those who share films
/// with X").
fn comes_back(a: &StepWords<'_>, b: &StepWords<'_>) -> bool {
    std::ptr::eq(a.words, b.words) && a.inverse != b.inverse
}

/// A noun phrase for `step` out and back again from `inner`.
fn shared_phrase(
    step: &StepWords<'_>,
    back: &StepWords<'_>,
    inner: &str,
    rng: &mut SplitMix64,
) -> String {
    let w = step.words;
    let noun = w.noun(rng);
    // Forward and back: the first step reaches what is shared, the second
    // the answers.
    let things = if step.inverse {
        step.things(rng)
    } else {
        back.things(rng)
    };
    if step.inverse {
        // X <-r- Y -r-> Z: the others of X's Ys.
        match rng.below(3) {
            0 => format!("the ones who share {things} with {inner}"),
            1 => format!("the others with {inner} in the same {things}"),
            _ => format!("the {noun} together with {inner}"),
        }
    } else {
        // X -r-> Y <-r- Z: the Zs that share X's Y.
        match rng.below(3) {
            0 => format!("the {things} with the same {noun} as {inner}"),
            1 => format!("the {things} that share a {noun} with {inner}"),
            _ => format!("the other {things} of the {noun} of {inner}"),
        }
    }
}

/// A question for `steps` from the topic `[topic]`, bracketed so that
/// training links it.
pub fn question(steps: &[StepWords<'_>], topic: &str, rng: &mut SplitMix64) -> String {
    let mut phrase = format!("[{topic}]");
    let mut i = 0;
    while i < steps.len() {
        let step = &steps[i];
        let last = i + 1 == steps.len();
        if let Some(next) = steps
            .get(i + 1)
            .filter(|next| comes_back(step, next) && rng.below(3) > 0)
        {
            phrase = shared_phrase(step, next, &phrase, rng);
            i += 2;
            if i == steps.len() {
                phrase = match rng.below(3) {
                    0 => format!("which are {phrase}"),
                    1 => format!("list {phrase}"),
                    _ => format!("what are {phrase}"),
                };
            }
            continue;
        }
        if last {
            phrase = question_phrase(step, &phrase, rng);
        } else {
            phrase = noun_phrase(step, &phrase, rng);
        }
        i += 1;
    }
    let mut q = phrase;
    match rng.below(4) {
        0 => q.push('?'),
        1 => q = format!("{}?", capitalise(&q)),
        _ => {}
    }
    q
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cores_and_participles() {
        let w = RelationWords::new("directed_by", None);
        assert_eq!(w.core, "directed");
        assert_eq!(w.participle.as_deref(), Some("directed"));
        let w = RelationWords::new("has_genre", None);
        assert_eq!((w.core.as_str(), w.participle.is_none()), ("genre", true));
        let w = RelationWords::new("memberOf", None);
        assert_eq!(w.core, "member");
        let w = RelationWords::new("in_language", Some("The language a film is in."));
        assert_eq!(w.core, "language");
        assert_eq!(w.description.as_deref(), Some("language a film is in"));
        assert_eq!(w.domain, None);
        let w = RelationWords::new("directed_by", Some("the director of a film"));
        assert_eq!(w.description.as_deref(), Some("director"));
        assert_eq!(w.domain.as_deref(), Some("film"));
        assert_eq!(plural("film"), "films");
        assert_eq!(plural("city"), "cities");
        assert_eq!(plural("day"), "days");
        let long = "a description far too long to stand in for the relation in a question";
        assert_eq!(RelationWords::new("r", Some(long)).description, None);
    }

    #[test]
    fn questions_keep_the_topic_bracketed_and_name_each_relation() {
        let directed = RelationWords::new("directed_by", None);
        let genre = RelationWords::new("has_genre", None);
        let steps = [
            StepWords {
                words: &directed,
                inverse: true,
                class: Some("films".into()),
            },
            StepWords {
                words: &genre,
                inverse: false,
                class: None,
            },
        ];
        let mut rng = SplitMix64::new(7);
        let mut with_class = 0;
        for _ in 0..50 {
            let q = question(&steps, "Ridley Scott", &mut rng);
            assert_eq!(q.matches("[Ridley Scott]").count(), 1, "{q}");
            assert!(q.contains("directed"), "{q}");
            assert!(q.contains("genre"), "{q}");
            with_class += usize::from(q.contains("films"));
        }
        // The class names what the inverse step reaches in most phrasings
        // that name it at all.
        assert!(with_class >= 10, "{with_class} of 50 say \"films\"");
    }
}
