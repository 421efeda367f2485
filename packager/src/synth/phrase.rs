//! Questions in words for a relation path, from the relations' names and
//! descriptions: rough English that puts the right words in the right
//! places ("who directed the things starring \[X\]"), in many phrasings, for
//! the learned planner to learn the kind of question from. Nothing here
//! knows a particular graph: `directed_by`, `hasGenre`, `birthPlace` and
//! `member of` are all read with the same few rules.

use kgbox_qa::rng::SplitMix64;

use super::aliases::AliasWords;
use super::description::{read_description, Event};
use super::verbs::{is_person, is_time, with_s, Verb};

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
    /// A verb the object does to the subject (`an actor starring in a
    /// film`).
    pub verb: Option<Verb>,
    /// What happened to the subject, that the object dates or places (`the
    /// year a film was released`).
    pub event: Option<Event>,
    /// The operator's aliases that a phrasing can use.
    pub aliases: AliasWords,
    /// Whether the relation's noun names people (a question asks "who").
    pub person: bool,
    /// Whether it names a time (a question asks "when").
    pub time: bool,
}

/// A naive English plural (`film` → `films`, `city` → `cities`); a word
/// ending in `s` is taken as plural already.
pub fn plural(noun: &str) -> String {
    if noun.ends_with('s') {
        noun.to_string()
    } else {
        with_s(noun)
    }
}

const LEADING: &[&str] = &["has", "have", "is", "are", "was", "in", "with", "hasa"];
const TRAILING: &[&str] = &["of", "by", "in", "from", "to", "for", "on", "at", "with"];

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
        let d = description.map(read_description).unwrap_or_default();
        let verb = d
            .verb
            .and_then(|(g, prep)| Verb::from_gerund(&g, prep.as_deref()))
            .map(|v| v.with_past_from(&words));
        let noun = d.noun.as_deref().unwrap_or(&core);
        RelationWords {
            participle: passive.then(|| core.clone()),
            person: is_person(noun) || is_person(&core),
            time: is_time(noun) || is_time(&core),
            all,
            core,
            description: d.noun,
            domain: d.domain,
            verb,
            event: d.event,
            aliases: AliasWords::default(),
        }
    }

    /// With the operator's `aliases` for the relation, used now and then
    /// in place of its own noun or participle.
    pub fn with_aliases<'a>(mut self, aliases: impl IntoIterator<Item = &'a str>) -> Self {
        self.aliases = AliasWords::new(aliases, self.participle.is_some());
        self
    }

    /// The participle to use this time, for a passive name: its own, or
    /// now and then an alias ("helmed" for `directed_by`).
    fn participle(&self, rng: &mut SplitMix64) -> Option<String> {
        let own = self.participle.as_ref()?;
        Some(
            alias_or(&self.aliases.participles, rng)
                .unwrap_or(own)
                .clone(),
        )
    }

    /// A plural for the things this relation starts from, when the
    /// description names them, else a word for anything.
    fn things(&self, rng: &mut SplitMix64) -> String {
        match &self.domain {
            Some(d) if rng.below(2) == 0 => plural(d),
            _ => pick(rng, &["things", "ones", "entities", "items"]).to_string(),
        }
    }

    /// The noun to use this time: the core, or now and then the
    /// description or an alias.
    fn noun(&self, rng: &mut SplitMix64) -> &str {
        if let Some(alias) = alias_or(&self.aliases.nouns, rng) {
            return alias;
        }
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

/// One of `aliases` a third of the time, when there are any (the random
/// stream is untouched when there are none, so a graph without aliases
/// gets the questions it got before).
fn alias_or<'a>(aliases: &'a [String], rng: &mut SplitMix64) -> Option<&'a String> {
    if aliases.is_empty() || rng.below(3) > 0 {
        return None;
    }
    aliases.get(rng.below(aliases.len()))
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
    if rng.below(3) > 0 {
        if let Some(p) = verb_noun_phrase(step, &noun, &thing, inner, rng) {
            return p;
        }
    }
    match (step.inverse, w.participle(rng)) {
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

/// A noun phrase with the relation's verb or event, when it has one ("the
/// actors starring in X", "the films X starred in", "the year X was
/// released").
fn verb_noun_phrase(
    step: &StepWords<'_>,
    noun: &str,
    things: &str,
    inner: &str,
    rng: &mut SplitMix64,
) -> Option<String> {
    let w = step.words;
    if let Some(v) = &w.verb {
        let (p, nouns) = (v.prep(), plural(noun));
        let who = if w.person {
            "those who"
        } else {
            "the ones that"
        };
        return Some(match (step.inverse, rng.below(3)) {
            (false, 0) => format!("the {nouns} {}{p} {inner}", v.gerund),
            (false, 1) => format!("{who} {}{p} {inner}", v.past),
            (false, _) => format!("the {nouns} that {}{p} {inner}", v.lemma),
            (true, 0) => format!("the {things} {inner} {}{p}", v.past),
            (true, 1) => format!("the {things} that {inner} {}{p}", v.third),
            (true, _) => format!("what {inner} {}{p}", v.past),
        });
    }
    let e = w.event.as_ref()?;
    let part = &e.participle;
    let prep = e.prep.as_deref().or(w.time.then_some("in"));
    Some(match (step.inverse, prep) {
        (false, _) if w.time && rng.below(2) == 0 => format!("when {inner} was {part}"),
        (false, _) => format!("the {noun} {inner} was {part}"),
        (true, Some(p)) => format!("the {things} {part} {p} {inner}"),
        (true, None) => format!("the {things} {part} with {noun} {inner}"),
    })
}

/// A question with the relation's verb or event, when it has one ("who
/// starred in X", "what did X star in", "when was X released").
fn verb_question(step: &StepWords<'_>, inner: &str, rng: &mut SplitMix64) -> Option<String> {
    let w = step.words;
    let noun = step.noun(rng);
    if let Some(v) = &w.verb {
        let p = v.prep();
        let who = if w.person { "who" } else { "what" };
        let things = step.things(rng);
        let nouns = plural(&noun);
        return Some(if step.inverse {
            match rng.below(7) {
                0 => format!("what does {inner} {}{p}", v.lemma),
                1 => format!("what did {inner} {}{p}", v.lemma),
                2 => format!("what is {inner} {}{p}", v.gerund),
                3 => format!("which {things} did {inner} {}{p}", v.lemma),
                4 => format!("{inner} {}{p} which {things}", v.third),
                5 => format!("what {things} has {inner} {}{p}", v.past),
                _ => format!("what {things} does {inner} {}{p}", v.lemma),
            }
        } else {
            match rng.below(5) {
                0 => format!("{who} {}{p} {inner}", v.third),
                1 => format!("{who} {}{p} {inner}", v.past),
                2 => format!("{who} is {}{p} {inner}", v.gerund),
                3 => format!("which {nouns} {}{p} {inner}", v.lemma),
                _ => format!("{inner} has which {nouns} {}{p} it", v.gerund),
            }
        });
    }
    let e = w.event.as_ref()?;
    let part = &e.participle;
    let prep = e.prep.as_deref().or(w.time.then_some("in"));
    let things = step.things(rng);
    Some(match (step.inverse, prep) {
        (false, _) if w.time && rng.below(2) == 0 => match rng.below(2) {
            0 => format!("when was {inner} {part}"),
            _ => format!("{inner} was {part} when"),
        },
        (false, Some(p)) => match rng.below(3) {
            0 => format!("{p} what {noun} was {inner} {part}"),
            1 => format!("what {noun} was {inner} {part} {p}"),
            _ => format!("{inner} was {part} {p} which {noun}"),
        },
        (false, None) => format!("what {noun} was {inner} {part}"),
        (true, Some(p)) => match rng.below(3) {
            0 => format!("what {things} were {part} {p} {inner}"),
            1 => format!("which {things} were {part} {p} {inner}"),
            _ => format!("what was {part} {p} {inner}"),
        },
        (true, None) => format!("what {things} were {part} with {noun} {inner}"),
    })
}

/// The question that asks what `step` reaches from `inner`.
fn question_phrase(step: &StepWords<'_>, inner: &str, rng: &mut SplitMix64) -> String {
    if rng.below(3) > 0 {
        if let Some(q) = verb_question(step, inner, rng) {
            return q;
        }
    }
    let w = step.words;
    let noun = step.noun(rng);
    // People asked for ask "who", times "when".
    if w.participle.is_none() && rng.below(3) == 0 {
        let class_person = step.class.as_deref().is_some_and(is_person);
        match (step.inverse, rng.below(2)) {
            (false, 0) if w.person || class_person => {
                return format!("who is the {noun} of {inner}")
            }
            (false, _) if w.person || class_person => {
                return format!("who are {inner}'s {}", plural(&noun))
            }
            (true, 0) if class_person => return format!("who has {inner} as {noun}"),
            (true, _) if class_person => return format!("who has the {noun} {inner}"),
            (false, 0) if w.time => return format!("when is the {noun} of {inner}"),
            (false, _) if w.time => return format!("when is {inner}'s {noun}"),
            _ => {}
        }
    }
    match (step.inverse, w.participle(rng)) {
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
#[path = "phrase_tests.rs"]
mod tests;
