//! Relations as words: the texts a step is matched by, and the types of
//! what a relation links (from its description, or from the classes of a
//! sample of its subjects and objects).

use kgbox_bundle::Kg;

use crate::words::split_words;

/// Nodes looked at, at most, for the classes at each end of a relation.
const CLASS_SAMPLE_NODES: u32 = 200_000;
/// Edges of one relation looked at, at most, for those classes.
const CLASS_SAMPLE_EDGES: usize = 64;

/// The type of each relation's subjects and of its objects, as words: the
/// description's domain ([`relation_domain`]) or else the most common
/// class of a sample of subjects; the most common class of a sample of
/// objects, or else the description's noun. Classes come from `rdf:type`
/// (or a relation named `type`); a graph without any has only the
/// descriptions.
pub fn end_types(kg: &Kg<'_>) -> Vec<[Option<String>; 2]> {
    let relations = kg.relation_count();
    // Per relation and end: class id -> count, and the edges counted.
    let mut counts: Vec<[std::collections::BTreeMap<u32, usize>; 2]> =
        (0..relations).map(|_| Default::default()).collect();
    let mut seen = vec![[0usize; 2]; relations];
    let typ = (0..relations as u32).find(|&r| is_type(kg, r));
    if let Some(typ) = typ {
        let nodes = (kg.entity_count() as u32).min(CLASS_SAMPLE_NODES);
        for n in 0..nodes {
            let Some(&class) = kg.out.neighbours(n, typ).first() else {
                continue;
            };
            for (end, csr) in [(0, &kg.out), (1, &kg.inc)] {
                for &r in csr.edges(n).0 {
                    let (Some(c), Some(k)) = (counts.get_mut(r as usize), seen.get_mut(r as usize))
                    else {
                        continue;
                    };
                    if r != typ && k[end] < CLASS_SAMPLE_EDGES {
                        *c[end].entry(class).or_default() += 1;
                        k[end] += 1;
                    }
                }
            }
        }
    }
    let commonest = |m: &std::collections::BTreeMap<u32, usize>| {
        let (&class, _) = m.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))?;
        let words = split_words(kg.entity_name(class)?);
        (!words.is_empty()).then(|| words.join(" "))
    };
    counts
        .iter()
        .enumerate()
        .map(|(r, [subjects, objects])| {
            let r = r as u32;
            let subject = relation_domain(kg, r).or_else(|| commonest(subjects));
            let object =
                commonest(objects).or_else(|| kg.relation_gloss(r).and_then(description_noun));
            [subject, object]
        })
        .collect()
}

/// Words a name starts with that say nothing of the relation (`has genre`).
const LEADING: &[&str] = &["has", "have", "is", "was", "hasa"];
/// Prepositions that end a description's noun ("the director *of* a film").
const PREPOSITIONS: &[&str] = &["about", "by", "for", "from", "in", "of", "on", "with"];
const ARTICLES: &[&str] = &["a", "an", "the"];

/// What relation `r` is called, as two texts to match phrases against:
/// its name's words without a leading `has`/`is` (`has_genre` → `genre`,
/// `averageHeight` → `average height`), and its description's noun (`the
/// director of a film` → `director`), or the name again without a
/// description. The description's domain ("a film") is not among them: it
/// is the type of the relation's subjects ([`end_types`]), and would match
/// every "films" in a question.
pub fn relation_texts(kg: &Kg<'_>, r: u32) -> [String; 2] {
    let mut words = split_words(kg.relation_name(r).unwrap_or(""));
    while words.len() > 1 && LEADING.contains(&words[0].as_str()) {
        words.remove(0);
    }
    let name = words.join(" ");
    let noun = kg
        .relation_gloss(r)
        .and_then(description_noun)
        .unwrap_or_else(|| name.clone());
    [name, noun]
}

/// What a relation's subjects are, from its description: the word after
/// its last article but the first ("the director of a *film*", "the year
/// a *film* was released"). It is the type of the answers of the inverse
/// step (`directed_by_inv` finds films).
pub fn relation_domain(kg: &Kg<'_>, r: u32) -> Option<String> {
    description_domain(kg.relation_gloss(r)?)
}

pub(super) fn description_domain(d: &str) -> Option<String> {
    let words = description_words(d);
    let i = (1..words.len().saturating_sub(1))
        .rev()
        .find(|&i| ARTICLES.contains(&words[i].as_str()))?;
    Some(words[i + 1].clone())
}

fn description_words(d: &str) -> Vec<String> {
    d.split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// A description's noun ([`relation_texts`]): its words up to `PREPOSITION
/// ARTICLE` ("the *director* of a film"), or else up to its last article
/// ("a *tag describing* a film", "the *year* a film was released").
pub(super) fn description_noun(d: &str) -> Option<String> {
    let words = description_words(d);
    let start = words
        .iter()
        .position(|w| !ARTICLES.contains(&w.as_str()))
        .unwrap_or(0);
    let words = &words[start..];
    let article = |i: usize| ARTICLES.contains(&words[i].as_str());
    let end = (1..words.len().saturating_sub(1))
        .find(|&i| PREPOSITIONS.contains(&words[i].as_str()) && article(i + 1))
        .or_else(|| {
            (1..words.len().saturating_sub(1))
                .rev()
                .find(|&i| article(i))
        })?;
    Some(words[..end].join(" "))
}

/// Whether `r` types its subjects (`rdf:type`, or a relation named
/// `type`): a path ends there ("what kind of thing is X"), it does not go
/// on through a class to all its members.
pub fn is_type(kg: &Kg<'_>, r: u32) -> bool {
    kg.relation_iri(r)
        .map(|i| i == "http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
        .unwrap_or_else(|| kg.relation_name(r) == Some("type"))
}
