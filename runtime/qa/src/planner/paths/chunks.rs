//! The question's side of the path ranker: its phrases ("pilots", "come
//! from", "home planet"), each embedded on its own, and the score of a
//! relation path as the best match of each step to a phrase of its own.

use std::ops::Range;

use crate::planner::features::words;

/// Words that say nothing about a relation on their own. A phrase needs
/// at least one other word. "where" and "when" are not here: they ask for
/// a place or a date.
const STOP: &[&str] = &[
    "a", "about", "an", "and", "any", "are", "as", "at", "be", "been", "by", "can", "did", "do",
    "does", "for", "from", "had", "has", "have", "he", "her", "his", "how", "i", "in", "into",
    "is", "it", "its", "me", "my", "of", "on", "or", "s", "she", "tell", "that", "the", "their",
    "them", "there", "these", "they", "this", "those", "to", "was", "were", "what", "which", "who",
    "whom", "whose", "with", "you",
];
/// Words that ask for another thing of the same kind ("who *else* comes
/// from [X]'s home planet", "the *same* species as [X]", "the *remaining*
/// films of [X]'s director", "what has its director made *otherwise*"):
/// only then does a path go straight back (`homeworld -> homeworld_inv`).
/// "rest" only as "the *rest of*" ("laid to rest" is not); not "further"
/// or "additional", which ordinary questions use for other things.
const SAME: &[&str] = &[
    "also",
    "another",
    "besides",
    "co",
    "else",
    "elsewhere",
    "opposite",
    "other",
    "others",
    "otherwise",
    "remaining",
    "same",
    "share",
    "shared",
    "shares",
    "together",
    "too",
];
/// Words between "what" or "which" and the noun that names the answer.
const OTHER: &[&str] = &["another", "other"];
/// Words a phrase does not start or end with ("the pilots" is "pilots").
const EDGE: &[&str] = &["a", "an", "of", "the", "s"];
/// Words between a noun's "of" and the topic ("the species of *the* [X]").
const ARTICLES: &[&str] = &["a", "an", "the"];
/// Words of a phrase at most.
const MAX_PHRASE: usize = 3;

/// The phrases of a masked question, in word positions.
#[derive(Debug, Clone, PartialEq)]
pub struct Phrases {
    /// Each phrase's text (lowercase words joined by spaces).
    pub texts: Vec<String>,
    /// Each phrase's words, as positions in the question.
    pub spans: Vec<Range<usize>>,
    /// Positions of the question's content words (not in [`STOP`]).
    pub content: Vec<usize>,
    /// Whether the question asks for others of the same kind ([`SAME`]).
    pub same: bool,
    /// The topic's word position (the mask's), when the question has it.
    pub topic: Option<usize>,
    /// The words of the noun the question ties to its topic ([`tied`]):
    /// a phrase with any of them names the first step that has a phrase.
    pub tied: Option<Range<usize>>,
    /// What the question says of its answer's type.
    pub answer: AnswerCue,
    /// The last `glosses` texts are not the question's words but what its
    /// question word asks for ("a place" for "where", at that word's
    /// span): they may name the answer's type, never a step.
    pub glosses: usize,
}

/// What a question says of the type of its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerCue {
    /// Nothing ("what did [X] write").
    Free,
    /// The answer's type is named at this position, and only there: by
    /// the word right after "what" or "which" ("what *films* did [X]
    /// write") or after a request's verb ("list the *papers* of [X]"),
    /// or by what "who", "whom", "where" or "when" asks for
    /// ([`ASKS_FOR`], a gloss at that word's position); a type word
    /// elsewhere is another node's ("who acted in the *movie* [X]").
    Head(usize),
}

/// Forms of "be" between "what" and "the" and the noun that names the
/// answer ("what *is* the genre of [X]"; "what's" splits as "what s").
const BE: &[&str] = &["are", "is", "s", "was", "were"];
/// Words that ask for the answer, naming its type in the next word.
const WHICH: &[&str] = &["what", "which"];
/// What "who" asks for.
pub const PERSON: &str = "person";
/// What "where" asks for.
pub const PLACE: &str = "place";
/// What "where" asks for when the question is about work ("*where* does
/// [X] *work*"): an organisation, not a place.
pub const EMPLOYER: &str = "employer";
/// Verbs that make "where" ask for an [`EMPLOYER`].
const WORK_VERBS: &[&str] = &[
    "employed", "study", "studied", "studies", "studying", "work", "worked", "working", "works",
];
/// Words that ask for the answer without naming its type, and the type
/// each asks for: a gloss the answer's node may match ("*where* do the
/// pilots of [X] come from" asks for a place: `pilot -> homeworld`, not
/// `pilot`; "*who* has [X] written papers with" for people, not papers).
const ASKS_FOR: &[(&str, &str)] = &[
    ("how", "number"),
    ("when", "date"),
    ("where", PLACE),
    ("who", PERSON),
    ("whom", PERSON),
];

/// Verbs a request for a list starts with: the noun after them names
/// the answer's type, as after "what" ([`listed`]).
const LIST: &[&str] = &[
    "enumerate",
    "find",
    "give",
    "identify",
    "list",
    "name",
    "show",
    "tell",
];
/// Words between such a verb and its noun.
const LIST_FILLER: &[&str] = &["all", "any", "every", "me", "some", "the", "us"];

/// Forms of "be" and "do" after "how" and a word that asks for a measure.
const MEASURE_VERBS: &[&str] = &["are", "did", "do", "does", "is", "was", "were"];

/// Whether "how" at `i` asks for a measure: a word, then a form of "be"
/// or "do" ("how *tall is*", "how *much does*"). "How many" counts the
/// things it names ("how many *films* did [X] direct").
fn measure(words: &[String], i: usize) -> bool {
    match words.get(i + 1..i + 3) {
        Some([adj, verb]) => {
            !is_stop(adj) && adj != "many" && MEASURE_VERBS.contains(&verb.as_str())
        }
        _ => false,
    }
}

/// The gloss of `word` in [`ASKS_FOR`].
fn gloss(word: &str) -> Option<&'static str> {
    ASKS_FOR.iter().find(|(w, _)| *w == word).map(|(_, g)| *g)
}

/// The gloss of the question word at `i`: [`EMPLOYER`] for "where" in a
/// question about work, else its [`gloss`].
fn asked_gloss(words: &[String], i: usize) -> Option<&'static str> {
    let g = gloss(words.get(i)?)?;
    let about_work = || {
        words
            .get(i + 1..)
            .is_some_and(|rest| rest.iter().any(|w| WORK_VERBS.contains(&w.as_str())))
    };
    Some(if g == PLACE && about_work() {
        EMPLOYER
    } else {
        g
    })
}

/// What `words` say of the answer's type: the first question word
/// decides.
fn answer_cue(words: &[String], mask: &str) -> AnswerCue {
    if let Some(head) = listed(words, mask) {
        return head;
    }
    for (i, w) in words.iter().enumerate() {
        // "*how* tall is [X]", "how much does [X] weigh" ask for a number;
        // "how is [X] tagged", "how long has [X] been around" do not say.
        if w == "how" && !measure(words, i) {
            continue;
        }
        // "the person *who* wrote [X]": after a noun and before more
        // words, "who", "where" or "when" starts a clause, not the question.
        let relative =
            i > 0 && i + 1 < words.len() && words[i - 1] != mask && !is_stop(&words[i - 1]);
        if gloss(w).is_some() && !relative {
            return AnswerCue::Head(i);
        }
        if !WHICH.contains(&w.as_str()) {
            continue;
        }
        // "the years *in which* [X] ...": after a noun and a preposition,
        // "which" starts a clause too ("in which years ..." asks); a
        // question that starts with that noun asks for it.
        if i > 1 && is_stop(&words[i - 1]) && words[i - 2] != mask && !is_stop(&words[i - 2]) {
            if words[..i - 2].iter().all(|w| is_stop(w)) {
                return AnswerCue::Head(i - 2);
            }
            continue;
        }
        // "what is the *home planet* of [X]": the noun after "the".
        if let [be, the, noun, ..] = words.get(i + 1..).unwrap_or_default() {
            if BE.contains(&be.as_str()) && the == "the" && noun != mask && !is_stop(noun) {
                return AnswerCue::Head(i + 3);
            }
        }
        // "what *other* starships ...": the noun after "other".
        let next = match words.get(i + 1) {
            Some(w) if OTHER.contains(&w.as_str()) => i + 2,
            _ => i + 1,
        };
        return match words.get(next) {
            Some(w) if w != mask && !is_stop(w) => AnswerCue::Head(next),
            _ => AnswerCue::Free,
        };
    }
    AnswerCue::Free
}

/// What a request that starts with a verb of [`LIST`] names: the noun
/// after it ("*list* the papers of [X]", "tell me the years [X]'s films
/// came out"), or nothing when a question word or the topic comes first
/// ("tell me who directed [X]").
fn listed(words: &[String], mask: &str) -> Option<AnswerCue> {
    let start = request_verb(words)?;
    let (i, w) = words
        .iter()
        .enumerate()
        .skip(start + 1)
        .find(|(_, w)| !LIST_FILLER.contains(&w.as_str()))?;
    if w == mask || gloss(w).is_some() || WHICH.contains(&w.as_str()) || is_stop(w) {
        return None;
    }
    Some(AnswerCue::Head(i))
}

/// The position of the verb a request starts with ([`LIST`]): a word of
/// the request, not of any relation ("*list* the papers of [X]" is not
/// `listAffiliation`).
fn request_verb(words: &[String]) -> Option<usize> {
    let start = words.iter().position(|w| w != "please")?;
    LIST.contains(&words[start].as_str()).then_some(start)
}

/// The noun a question names its answer's type with, when it names one
/// ("what *starships* did [X] fly"; none for "who", "where" or "when",
/// which name no word of the graph).
pub fn answer_noun(masked: &str, mask: &str) -> Option<String> {
    let mask = mask.to_lowercase();
    let words = words(masked);
    match answer_cue(&words, &mask) {
        AnswerCue::Head(i) => words.get(i).filter(|w| gloss(w).is_none()).cloned(),
        AnswerCue::Free => None,
    }
}

fn is_stop(w: &str) -> bool {
    STOP.binary_search(&w).is_ok()
}

/// The noun tied to the topic at `topic` by a possessive or by "of", as
/// the run of content words next to it: "[X]'s *home planet*", "the
/// *authors* of [X]", "the *species* of the [X]". What it names is one
/// step from the topic: "in which countries are the authors of [X] based"
/// goes to the authors first, then to their countries.
fn tied(words: &[String], topic: Option<usize>) -> Option<Range<usize>> {
    let t = topic?;
    let content = |i: &usize| words.get(*i).is_some_and(|w| !is_stop(w));
    if words.get(t + 1).is_some_and(|w| w == "s") {
        let end = (t + 2..words.len())
            .find(|i| !content(i))
            .unwrap_or(words.len());
        return (end > t + 2).then_some(t + 2..end);
    }
    let mut i = t.checked_sub(1)?;
    if ARTICLES.contains(&words[i].as_str()) {
        i = i.checked_sub(1)?;
    }
    if words[i] != "of" {
        return None;
    }
    let start = (0..i).rev().find(|j| !content(j)).map_or(0, |j| j + 1);
    (start < i).then_some(start..i)
}

/// The phrases of `masked` (the question with its topic as `mask`): every
/// run of one to [`MAX_PHRASE`] words that holds a content word, neither
/// starts nor ends with an [`EDGE`] word, and does not reach over the
/// topic.
pub fn phrases(masked: &str, mask: &str) -> Phrases {
    let mask = mask.to_lowercase();
    let words = words(masked);
    let topic = words.iter().position(|w| *w == mask);
    let mut out = Phrases {
        texts: Vec::new(),
        spans: Vec::new(),
        content: Vec::new(),
        same: words.iter().any(|w| SAME.contains(&w.as_str()))
            || words.windows(2).any(|w| w[0] == "rest" && w[1] == "of"),
        topic,
        tied: tied(&words, topic),
        answer: answer_cue(&words, &mask),
        glosses: 0,
    };
    let first = request_verb(&words).map_or(0, |v| v + 1);
    for (i, w) in words.iter().enumerate().skip(first) {
        if *w != mask && !is_stop(w) {
            out.content.push(i);
        }
    }
    for start in first..words.len() {
        for end in start + 1..=(start + MAX_PHRASE).min(words.len()) {
            let span = &words[start..end];
            if span.contains(&mask) {
                break;
            }
            let edge = |w: &String| EDGE.contains(&w.as_str());
            if edge(&span[0]) || span.last().is_some_and(edge) {
                continue;
            }
            if span.iter().all(|w| is_stop(w)) {
                continue;
            }
            out.texts.push(span.join(" "));
            out.spans.push(start..end);
        }
    }
    // What "who", "where", ... asks for, as a text at its position.
    if let AnswerCue::Head(i) = out.answer {
        if let Some(g) = asked_gloss(&words, i) {
            out.texts.push(g.to_string());
            out.spans.push(i..i + 1);
            out.glosses = 1;
        }
    }
    out
}

fn overlaps(a: &Range<usize>, b: &Range<usize>) -> bool {
    a.start < b.end && b.start < a.end
}

/// How a path is scored against the phrases.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    /// Subtracted per step: a step must match a phrase better than this to
    /// pay for itself.
    pub step_cost: f32,
    /// Subtracted again per step after the first: a longer path must
    /// explain more of the question than a shorter one would.
    pub extra_step_cost: f32,
    /// Weight of the share of the question's content words the path's
    /// phrases cover.
    pub coverage: f32,
    /// Subtracted per word-order fault ([`order_faults`]).
    pub order_cost: f32,
    /// Weight of a node's type matching a phrase of its own ("what *films*
    /// did [X] write": the films written by X, not their genres), by how
    /// far its cosine is above [`Weights::type_floor`].
    pub type_match: f32,
    /// Cosine a phrase must pass to name a node's type.
    pub type_floor: f32,
    /// Subtracted when the question names its answer's type and the
    /// path's answer is of another known type ([`answer_mismatch`]).
    pub type_mismatch: f32,
    /// Cosine below which the answer's type is another than the one named.
    pub mismatch_floor: f32,
}

impl Default for Weights {
    fn default() -> Weights {
        Weights {
            step_cost: 0.35,
            extra_step_cost: 0.25,
            coverage: 0.3,
            order_cost: 0.15,
            type_match: 1.0,
            type_floor: 0.5,
            type_mismatch: 0.1,
            mismatch_floor: 0.4,
        }
    }
}

/// Phrases each step may take, at most (its best ones).
const CHOICES: usize = 4;

/// Where a phrase sits: the middle of its words.
fn middle(span: &Range<usize>) -> f32 {
    (span.start + span.end) as f32 / 2.0
}

/// Word-order faults of an assignment (`taken[i]`: step `i`'s phrase).
/// English names the step nearest the topic nearest the topic ("the films
/// written by the screenwriter of [X]": `written_by`, then
/// `written_by_inv`), and the answer at one end ("*who* starred in ...",
/// "... starred *who*"). So the steps before the last must not come nearer
/// the topic as they go, and the last step's phrase must be the first or
/// the last of the path's phrases. A step without a phrase is not counted.
/// The noun `tied` to the topic ([`tied`]) is the first phrased step's:
/// one fault when another step takes it.
fn order_faults(
    taken: &[Option<&Range<usize>>],
    topic: Option<usize>,
    tied: Option<&Range<usize>>,
) -> usize {
    let mut faults = 0;
    if let Some(n) = tied {
        faults += taken
            .iter()
            .flatten()
            .skip(1)
            .filter(|s| overlaps(s, n))
            .count();
    }
    if let Some(t) = topic {
        let t = t as f32;
        let dist: Vec<Option<f32>> = taken
            .iter()
            .map(|s| s.map(|s| (middle(s) - t).abs()))
            .collect();
        let inner = &dist[..dist.len().saturating_sub(1)];
        let placed: Vec<f32> = inner.iter().flatten().copied().collect();
        faults += placed.windows(2).filter(|w| w[1] < w[0]).count();
    }
    if let [.., Some(last)] = taken {
        if taken.len() > 1 {
            let others: Vec<f32> = taken[..taken.len() - 1]
                .iter()
                .flatten()
                .map(|s| middle(s))
                .collect();
            let m = middle(last);
            let first = others.iter().all(|&o| m < o);
            let end = others.iter().all(|&o| m > o);
            if !first && !end {
                faults += 1;
            }
        }
    }
    faults
}

/// The score of a path whose step `i` has cosine `sims[i][j]` to phrase
/// `j`. Each step takes a phrase of its own (phrases of different steps
/// do not overlap; a step may take none), chosen among its
/// [`CHOICES`] best so that the sum is highest: each step gains its
/// cosine less [`Weights::step_cost`] (and [`Weights::extra_step_cost`]
/// after the first), each word-order fault ([`order_faults`]) costs
/// [`Weights::order_cost`], and the path gains [`Weights::coverage`] times
/// the share of content words its phrases cover.
///
/// A step that goes straight back (`back[i]`: the inverse of step `i - 1`)
/// may share the previous step's phrase when the question asks for the
/// same ([`Phrases::same`]): "the films that *share screenwriters* with
/// [X]" is `written_by -> written_by_inv`.
///
/// A two-step path that goes straight back to the topic's kind gives its
/// second step a phrase of its own only then too: "what colour are [X]'s
/// eyes" is `eye_color`, not the people with [X]'s eye colour.
///
/// `types[k]` holds each phrase's cosine to the type of the path's node
/// `k` (0: the topic; `film` for what `written_by_inv` reaches,
/// `director` for what `directed_by` reaches). Once the steps have their
/// phrases, the nodes take phrases of their own too, best match first,
/// each adding [`Weights::type_match`] times its cosine above
/// [`Weights::type_floor`]; their words count as explained.
pub fn score(sims: &[&[f32]], back: &[bool], types: &[&[f32]], p: &Phrases, w: &Weights) -> f32 {
    let choices: Vec<Vec<(usize, f32)>> = sims
        .iter()
        .map(|row| {
            let words = p.texts.len().saturating_sub(p.glosses);
            let mut c: Vec<(usize, f32)> = row.iter().copied().enumerate().take(words).collect();
            c.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            c.truncate(CHOICES);
            c
        })
        .collect();
    let mut best = f32::NEG_INFINITY;
    let mut taken: Vec<Option<&Range<usize>>> = Vec::with_capacity(sims.len());
    let shared: Vec<Option<&[f32]>> = sims
        .iter()
        .enumerate()
        .map(|(i, row)| (p.same && back.get(i).copied().unwrap_or(false)).then_some(*row))
        .collect();
    // (gain, node, phrase), best first.
    let mut named: Vec<(f32, usize, usize)> = types
        .iter()
        .enumerate()
        .flat_map(|(k, row)| {
            row.iter()
                .enumerate()
                .filter(|&(_, &s)| s > w.type_floor)
                .map(move |(j, &s)| (w.type_match * (s - w.type_floor), k, j))
        })
        .collect();
    named.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    // A two-step round trip (`eye_color -> eye_color_inv`: others with the
    // topic's value) is asked for by a word of [`SAME`]; without one, its
    // second step takes no phrase ("what colour are [X]'s eyes" names one
    // relation in two words).
    let mute: Vec<bool> = (0..sims.len())
        .map(|i| !p.same && i == 1 && sims.len() == 2 && back.get(1).copied().unwrap_or(false))
        .collect();
    let ctx = Search {
        choices: &choices,
        mute: &mute,
        shared: &shared,
        named: &named,
        named_nodes: types.len(),
        p,
        w,
    };
    ctx.run(&mut taken, 0.0, &mut best);
    let costs =
        w.step_cost * sims.len() as f32 + w.extra_step_cost * sims.len().saturating_sub(1) as f32;
    let mismatch = if answer_mismatch(types, p, w) {
        w.type_mismatch
    } else {
        0.0
    };
    best - costs - mismatch
}

/// Whether the question names its answer's type ([`AnswerCue::Head`]:
/// "what *countries* ...", "*when* ...") and the path's answer node has a
/// known type that no phrase at that word matches above
/// [`Weights::mismatch_floor`]: "in which countries are the authors of
/// [X] based" is not answered by papers. A node of unknown type (its row
/// all zero) never mismatches.
fn answer_mismatch(types: &[&[f32]], p: &Phrases, w: &Weights) -> bool {
    let (AnswerCue::Head(h), Some(row)) = (p.answer, types.last()) else {
        return false;
    };
    // "who" asks for people in whatever role (actor, author, pilot):
    // [`StepVectors`] checks that by [`names_agent`], not by a word.
    let person = p.glosses > 0 && p.texts.last().is_some_and(|t| t == PERSON);
    if person || row.iter().all(|&s| s == 0.0) {
        return false;
    }
    let best = p
        .spans
        .iter()
        .zip(row.iter())
        .filter(|(s, _)| s.start == h)
        .map(|(_, &c)| c)
        .fold(f32::NEG_INFINITY, f32::max);
    best.is_finite() && best < w.mismatch_floor
}

/// The choices of an assignment search.
struct Search<'a> {
    choices: &'a [Vec<(usize, f32)>],
    /// Per step: whether it may take no phrase of its own.
    mute: &'a [bool],
    /// Per step: its cosines, when it may share the previous step's phrase.
    shared: &'a [Option<&'a [f32]>],
    /// The phrases that may name a node's type: (gain, node, phrase), best
    /// first.
    named: &'a [(f32, usize, usize)],
    /// Nodes of the path (the last is the answer).
    named_nodes: usize,
    p: &'a Phrases,
    w: &'a Weights,
}

impl<'a> Search<'a> {
    /// [`Weights::coverage`] times the share of content words that the
    /// steps' phrases and `extra` cover.
    fn coverage(&self, taken: &[Option<&Range<usize>>], extra: &[&Range<usize>]) -> f32 {
        let content = &self.p.content;
        if content.is_empty() {
            return 0.0;
        }
        let covered = content
            .iter()
            .filter(|&&c| taken.iter().flatten().chain(extra).any(|u| u.contains(&c)))
            .count();
        self.w.coverage * covered as f32 / content.len() as f32
    }

    /// The nodes' phrases once the steps have theirs (`taken`): best
    /// match first, one per node, none overlapping another. Their gain
    /// and spans.
    fn types_named(&self, taken: &[Option<&'a Range<usize>>]) -> (f32, Vec<&'a Range<usize>>) {
        let mut gain = 0.0;
        let mut spans: Vec<&Range<usize>> = Vec::new();
        let mut nodes: Vec<usize> = Vec::new();
        let answer = self.named_nodes.saturating_sub(1);
        for &(g, k, j) in self.named {
            let Some(span) = self.p.spans.get(j) else {
                continue;
            };
            let fits = match self.p.answer {
                AnswerCue::Free => true,
                AnswerCue::Head(h) if k == answer => span.start == h,
                AnswerCue::Head(h) => !span.contains(&h),
            };
            if !fits
                || nodes.contains(&k)
                || taken
                    .iter()
                    .flatten()
                    .chain(&spans)
                    .any(|u| overlaps(u, span))
            {
                continue;
            }
            gain += g;
            spans.push(span);
            nodes.push(k);
        }
        (gain, spans)
    }

    /// Tries every choice of step `taken.len()` onwards; `gained` is the
    /// sum of the cosines so far.
    fn run(&self, taken: &mut Vec<Option<&'a Range<usize>>>, gained: f32, best: &mut f32) {
        let (p, w) = (self.p, self.w);
        let i = taken.len();
        let Some(options) = self.choices.get(i) else {
            let faults = order_faults(taken, p.topic, p.tied.as_ref());
            let (gain, typed) = self.types_named(taken);
            let total = gained + gain - w.order_cost * faults as f32;
            *best = best.max(total + self.coverage(taken, &typed));
            return;
        };
        let muted = self.mute.get(i).copied().unwrap_or(false);
        for &(j, s) in options.iter().filter(|_| !muted) {
            let Some(span) = p.spans.get(j) else { continue };
            if taken.iter().flatten().any(|u| overlaps(u, span)) {
                continue;
            }
            taken.push(Some(span));
            self.run(taken, gained + s, best);
            taken.pop();
        }
        // The previous step's phrase again (its position counted once).
        let prev = taken.last().copied().flatten();
        if let (Some(Some(row)), Some(span)) = (self.shared.get(i), prev) {
            let j = p.spans.iter().position(|s| s == span);
            if let Some(s) = j.and_then(|j| row.get(j)) {
                taken.push(None);
                self.run(taken, gained + s, best);
                taken.pop();
            }
        }
        taken.push(None);
        self.run(taken, gained, best);
        taken.pop();
    }
}

#[cfg(test)]
#[path = "chunks_tests.rs"]
mod tests;
