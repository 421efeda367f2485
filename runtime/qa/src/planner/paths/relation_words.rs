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
/// objects, or else the description's noun, or else the kind of its
/// values ([`value_kind`]: `date`, `number`). Classes come from `rdf:type`
/// (or a relation named `type`), and the type relation's objects (classes)
/// have the class the graph gives classes, if any; a graph without any has
/// only the descriptions.
pub fn end_types(kg: &Kg<'_>) -> Vec<[Option<String>; 2]> {
    let relations = kg.relation_count();
    // Per relation and end: class id -> count, and the edges counted.
    let mut counts: Vec<[std::collections::BTreeMap<u32, usize>; 2]> =
        (0..relations).map(|_| Default::default()).collect();
    let mut seen = vec![[0usize; 2]; relations];
    let typ = type_relation(kg);
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
            // The type relation's objects are classes: their own class
            // where the graph gives them one (`Rodian` is a `Species`).
            if let (Some(c), Some(k)) = (counts.get_mut(typ as usize), seen.get_mut(typ as usize)) {
                for &class in kg.out.neighbours(n, typ) {
                    let Some(&meta) = kg.out.neighbours(class, typ).first() else {
                        continue;
                    };
                    if k[1] < CLASS_SAMPLE_EDGES {
                        *c[1].entry(meta).or_default() += 1;
                        k[1] += 1;
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
    let values = value_kinds(kg);
    counts
        .iter()
        .enumerate()
        .map(|(r, [subjects, objects])| {
            let subject = relation_domain(kg, r as u32).or_else(|| commonest(subjects));
            let object = commonest(objects)
                .or_else(|| kg.relation_gloss(r as u32).and_then(description_noun))
                .or_else(|| values.get(r).copied().flatten().map(str::to_string));
            [subject, object]
        })
        .collect()
}

/// Nouns for people (a question about one asks "who"), singular and
/// plural.
const PERSON_NOUNS: &[&str] = &[
    "person",
    "people",
    "persons",
    "human",
    "humans",
    "actor",
    "actress",
    "director",
    "writer",
    "author",
    "creator",
    "composer",
    "producer",
    "member",
    "founder",
    "pilot",
    "player",
    "artist",
    "singer",
    "editor",
    "maker",
    "spouse",
    "child",
    "children",
    "parent",
    "character",
    "resident",
    "leader",
    "owner",
    "employee",
    "student",
    "teacher",
    "speaker",
    "musician",
    "performer",
    "colleague",
    "friend",
    "partner",
    "agent",
    "chair",
    "organizer",
    "organiser",
    "reviewer",
    "winner",
    "inventor",
    "painter",
    "poet",
    "scientist",
    "coach",
    "manager",
    "president",
    "king",
    "queen",
    "researcher",
    "politician",
];

/// Nouns for groups of people, which "who" asks for too.
const GROUP_NOUNS: &[&str] = &[
    "band",
    "group",
    "organization",
    "organisation",
    "company",
    "institution",
    "university",
    "team",
    "club",
    "family",
];

/// Whether `noun`'s last word, as written, is one of `words`, or one of
/// them with an -s (`cities`: `city`).
fn last_word_in(noun: &str, words: &[&str]) -> bool {
    noun.split_whitespace().last().is_some_and(|w| {
        words.contains(&w)
            || w.strip_suffix('s').is_some_and(|s| words.contains(&s))
            || w.strip_suffix("ies")
                .is_some_and(|s| words.iter().any(|x| x.strip_suffix('y') == Some(s)))
    })
}

/// Letters a person noun has at least to name people at the end of a
/// longer word ("song*writer*", "film*maker*"; not "par*king*").
const COMPOUND_TAIL: usize = 5;

/// Whether a lower-case noun's last word names people ("lead actor",
/// "characters", "songwriter").
pub fn names_person(noun: &str) -> bool {
    last_word_in(noun, PERSON_NOUNS)
        || noun.split_whitespace().last().is_some_and(|w| {
            let w = w.strip_suffix('s').unwrap_or(w);
            PERSON_NOUNS
                .iter()
                .any(|p| p.len() >= COMPOUND_TAIL && w.len() > p.len() && w.ends_with(p))
        })
}

/// Whether a type (`solo artist`, `Person`, `bands`) names people or
/// groups of them.
pub fn names_agent(t: &str) -> bool {
    let t = t.to_lowercase();
    names_person(&t) || last_word_in(&t, GROUP_NOUNS)
}

/// Nouns for places, which "where" asks for.
const PLACE_NOUNS: &[&str] = &[
    "address",
    "area",
    "city",
    "continent",
    "country",
    "county",
    "district",
    "island",
    "location",
    "nation",
    "place",
    "planet",
    "province",
    "region",
    "site",
    "state",
    "territory",
    "town",
    "venue",
    "village",
    "world",
];

/// Nouns for organisations people work at, which "where ... work" asks
/// for.
const EMPLOYER_NOUNS: &[&str] = &[
    "agency",
    "business",
    "college",
    "company",
    "corporation",
    "department",
    "employer",
    "firm",
    "institute",
    "institution",
    "laboratory",
    "organisation",
    "organization",
    "school",
    "university",
];

/// Whether a type (`Organization`, `universities`) names organisations
/// people work at.
pub fn names_employer(t: &str) -> bool {
    last_word_in(&t.to_lowercase(), EMPLOYER_NOUNS)
}

/// Whether a type (`Planet`, `cities`, `spatial thing`) names places.
pub fn names_place(t: &str) -> bool {
    let t = t.to_lowercase();
    last_word_in(&t, PLACE_NOUNS) || t == "spatial thing"
}

/// Objects of one relation looked at, at most, for the kind of its values.
const VALUE_SAMPLE_EDGES: usize = 32;
/// Share of those objects of one kind for the relation's values to be
/// called that.
const VALUE_SHARE: f32 = 0.8;

/// What a value written `name` is, as a type word: `date` for a date or a
/// year (`1977-05-25`, `2010`), `number` for another number; `None` for
/// anything else.
pub fn value_kind(name: &str) -> Option<&'static str> {
    let t = name.trim();
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    let mut parts = t.splitn(3, '-');
    let year = parts.next().filter(|y| digits(y, 4));
    let rest: Vec<&str> = parts.collect();
    if year.is_some() {
        let month_day = |s: &str| s.len() >= 2 && s.as_bytes()[..2].iter().all(u8::is_ascii_digit);
        if rest.is_empty() {
            let y: u32 = t.parse().ok()?;
            return Some(if (1000..=2100).contains(&y) {
                "date"
            } else {
                "number"
            });
        }
        if rest.iter().all(|p| month_day(p)) {
            return Some("date");
        }
    }
    t.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .map(|_| "number")
}

/// Per relation, the kind of its values ([`value_kind`]) when most of a
/// sample of its objects are of one kind.
fn value_kinds(kg: &Kg<'_>) -> Vec<Option<&'static str>> {
    let relations = kg.relation_count();
    let mut seen: Vec<[usize; 3]> = vec![[0; 3]; relations];
    let nodes = (kg.entity_count() as u32).min(CLASS_SAMPLE_NODES);
    for n in 0..nodes {
        for &r in kg.out.edges(n).0 {
            let Some(k) = seen.get_mut(r as usize) else {
                continue;
            };
            if k[0] >= VALUE_SAMPLE_EDGES {
                continue;
            }
            let Some(&o) = kg.out.neighbours(n, r).first() else {
                continue;
            };
            k[0] += 1;
            match kg.entity_name(o).and_then(value_kind) {
                Some("date") => k[1] += 1,
                Some(_) => k[2] += 1,
                None => {}
            }
        }
    }
    seen.iter()
        .map(|&[total, dates, numbers]| {
            let share = |n: usize| total > 0 && n as f32 >= VALUE_SHARE * total as f32;
            if share(dates) {
                Some("date")
            } else if share(dates + numbers) {
                Some("number")
            } else {
                None
            }
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
        .and_then(|d| description_noun(d).or_else(|| short_gloss(d)))
        .unwrap_or_else(|| name.clone());
    [name, noun]
}

/// A description of a few words and no article is a noun itself (a
/// predicate's label in the graph: "home planet").
fn short_gloss(d: &str) -> Option<String> {
    let words = description_words(d);
    (!words.is_empty()
        && words.len() <= MAX_GLOSS_WORDS
        && !words.iter().any(|w| ARTICLES.contains(&w.as_str())))
    .then(|| words.join(" "))
}

/// Words a description may have to be a noun as a whole.
const MAX_GLOSS_WORDS: usize = 4;

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

/// Predicates that type their subjects: `rdf:type` and Wikidata's
/// "instance of".
pub const TYPE_IRIS: &[&str] = &[
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#type",
    "http://www.wikidata.org/prop/direct/P31",
];

/// Whether `r` types its subjects (`rdf:type`, Wikidata's `P31`, or a
/// relation named `type`): a path ends there ("what kind of thing is X"), it does not go
/// on through a class to all its members.
pub fn is_type(kg: &Kg<'_>, r: u32) -> bool {
    kg.relation_iri(r)
        .map(|i| TYPE_IRIS.contains(&i))
        .unwrap_or_else(|| kg.relation_name(r) == Some("type"))
}

/// The graph's type relation ([`is_type`]), when it has one.
pub fn type_relation(kg: &Kg<'_>) -> Option<u32> {
    (0..kg.relation_count() as u32).find(|&r| is_type(kg, r))
}

#[cfg(test)]
mod tests {
    use super::{names_agent, names_employer, names_place, short_gloss, value_kind};

    #[test]
    fn a_short_description_without_an_article_is_a_noun() {
        assert_eq!(short_gloss("Home planet").as_deref(), Some("home planet"));
        assert_eq!(short_gloss("the planet a person comes from"), None);
        assert_eq!(short_gloss("date of first public release"), None);
        assert_eq!(short_gloss(""), None);
    }

    #[test]
    fn agents_are_people_and_groups() {
        for t in [
            "Person",
            "solo artist",
            "bands",
            "Human",
            "research institution",
            "Songwriter",
            "screenwriters",
            "filmmaker",
        ] {
            assert!(names_agent(t), "{t}");
        }
        for t in [
            "album",
            "film",
            "planet",
            "date",
            "person name",
            "",
            "parking",
            "booking",
        ] {
            assert!(!names_agent(t), "{t}");
        }
    }

    #[test]
    fn employers_are_named_by_their_last_word() {
        for t in ["Organization", "universities", "Research Institute"] {
            assert!(names_employer(t), "{t}");
        }
        for t in ["Person", "Planet", "paper", "organization chart", ""] {
            assert!(!names_employer(t), "{t}");
        }
    }

    #[test]
    fn places_are_named_by_their_last_word() {
        for t in [
            "Planet",
            "cities",
            "home world",
            "spatial thing",
            "Populated Place",
        ] {
            assert!(names_place(t), "{t}");
        }
        for t in ["film", "Person", "place name", "starship", "worldview", ""] {
            assert!(!names_place(t), "{t}");
        }
    }

    #[test]
    fn values_are_dates_numbers_or_neither() {
        for d in ["1977-05-25", "2010", "1999-12", "2004-07-01T09:00:00"] {
            assert_eq!(value_kind(d), Some("date"), "{d}");
        }
        for n in ["210", "1.5", "-3", "12000", "0999"] {
            assert_eq!(value_kind(n), Some("number"), "{n}");
        }
        for x in ["Tatooine", "", "2010s", "Room 2010", "12-ab", "NaN", "inf"] {
            assert_eq!(value_kind(x), None, "{x}");
        }
    }
}
