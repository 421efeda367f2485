//! Which predicates name the entities of an RDF graph, chosen once the
//! whole file is read (see [`choose`]):
//!
//! - **given** (`--label-predicate`): exactly those predicates name
//!   entities, the first given preferred;
//! - else the **known** ones found in the data ([`KNOWN`]: `rdfs:label`,
//!   `skos:prefLabel`, `schema:name`, `foaf:name`, `dcterms:title`,
//!   `dc:title`), plus the **detected** ones: predicates whose objects are
//!   short string literals, one per subject and language, that cover a good
//!   share of the subjects the known ones leave unnamed, and whose local name
//!   looks like a name (`name`, `label`, `title`, …) or whose values are
//!   unique to their subjects (see the `MIN_`/`MAX_` thresholds below).
//!
//! Known alias predicates (`skos:altLabel`, `skos:hiddenLabel`, `foaf:nick`,
//! `schema:alternateName`) give aliases in every case. Every choice is
//! explained by a line of the pack log.

use std::collections::HashMap;
use std::path::Path;

use super::interner::Interner;
use super::literals::{Literal, Literals, TEXT_PREDICATES};
use super::InputError;

/// Predicates known to label their subject, with their rank as a display
/// name (lower is preferred; `None`: an alias only).
pub const KNOWN: &[(&str, Option<u8>)] = &[
    ("http://www.w3.org/2000/01/rdf-schema#label", Some(0)),
    ("http://www.w3.org/2004/02/skos/core#prefLabel", Some(1)),
    ("http://schema.org/name", Some(2)),
    ("https://schema.org/name", Some(2)),
    ("http://xmlns.com/foaf/0.1/name", Some(3)),
    ("http://purl.org/dc/terms/title", Some(4)),
    ("http://purl.org/dc/elements/1.1/title", Some(5)),
    ("http://www.w3.org/2004/02/skos/core#altLabel", None),
    ("http://www.w3.org/2004/02/skos/core#hiddenLabel", None),
    ("http://xmlns.com/foaf/0.1/nick", None),
    ("http://schema.org/alternateName", None),
    ("https://schema.org/alternateName", None),
];

/// Rank of the first detected predicate (after every known one).
const DETECTED_RANK: u8 = 16;
/// Detected name predicates kept at most (the rest are left as relations).
const MAX_DETECTED: usize = 4;

/// A detected predicate has at least this share of literal objects.
const MIN_LITERAL_SHARE: f64 = 0.95;
/// … and at least this many subjects.
const MIN_SUBJECTS: u64 = 2;
/// … and at least this share of its subjects have one value per language.
const MIN_SINGLE_SHARE: f64 = 0.9;
/// … and values of at most this median length, in characters.
const MAX_MEDIAN_CHARS: usize = 60;
/// … and at most this share of long texts (`literals::is_long_text`).
const MAX_LONG_SHARE: f64 = 0.02;
/// … and at least this share of string values with a letter (not numbers,
/// dates, IRIs or e-mail addresses).
const MIN_TEXT_SHARE: f64 = 0.9;
/// … and it covers at least this share of the subjects that no known
/// predicate names.
const MIN_COVERAGE: f64 = 0.3;
/// A predicate whose local name is not name-like needs this many subjects
/// …
const MIN_UNIQUE_SUBJECTS: u64 = 10;
/// … and this share of subjects whose value no other subject has.
const MIN_UNIQUE_SHARE: f64 = 0.98;

/// Words of a local name that make it a partial name or not a name at all
/// (`givenName`, `fileName`, `altLabel`, `typeName`).
const NOT_NAMES: &[&str] = &[
    "alt",
    "alternate",
    "alternative",
    "class",
    "column",
    "domain",
    "family",
    "field",
    "file",
    "first",
    "former",
    "given",
    "hidden",
    "host",
    "key",
    "last",
    "maiden",
    "middle",
    "nick",
    "other",
    "property",
    "sort",
    "sur",
    "type",
    "user",
    "variable",
];

/// The words of an IRI's local name: `hasFullName` → `has full name`.
fn local_words(iri: &str) -> Vec<String> {
    crate::synth::phrase::split_words(iri.rsplit(['#', '/', ':']).next().unwrap_or(iri))
}

/// How much a predicate's local name looks like a name: `Some(0)` for
/// `…name`, 1 for `…label`, 2 for `…title`; `None` when it does not.
fn name_like(iri: &str) -> Option<u8> {
    let words = local_words(iri);
    if words.iter().any(|w| NOT_NAMES.contains(&w.as_str())) {
        return None;
    }
    match words.last().map(String::as_str) {
        Some("name") => Some(0),
        Some("label") => Some(1),
        Some("title") => Some(2),
        _ => None,
    }
}

/// Prefixes the pack log and `--label-predicate` understand.
const PREFIXES: &[(&str, &str)] = &[
    ("rdfs:", "http://www.w3.org/2000/01/rdf-schema#"),
    ("rdf:", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"),
    ("skos:", "http://www.w3.org/2004/02/skos/core#"),
    ("schema:", "http://schema.org/"),
    ("foaf:", "http://xmlns.com/foaf/0.1/"),
    ("dcterms:", "http://purl.org/dc/terms/"),
    ("dc:", "http://purl.org/dc/elements/1.1/"),
    ("dbo:", "http://dbpedia.org/ontology/"),
];

/// A predicate as the log shows it: `rdfs:label`, or `<iri>`.
pub fn shown(iri: &str) -> String {
    for (prefix, ns) in PREFIXES {
        if let Some(local) = iri.strip_prefix(ns) {
            if !local.is_empty() && local.chars().all(|c| c.is_alphanumeric() || c == '_') {
                return format!("{prefix}{local}");
            }
        }
    }
    format!("<{iri}>")
}

/// A `--label-predicate` argument as an IRI: `<…>` unwrapped, a known
/// prefix (`rdfs:label`) expanded.
pub fn expand(arg: &str) -> String {
    let arg = arg.trim();
    if let Some(iri) = arg.strip_prefix('<').and_then(|a| a.strip_suffix('>')) {
        return iri.to_string();
    }
    for (prefix, ns) in PREFIXES {
        if let Some(local) = arg.strip_prefix(prefix) {
            if !local.starts_with("//") {
                return format!("{ns}{local}");
            }
        }
    }
    arg.to_string()
}

/// `1234567` → `1,234,567`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The share `a / b` (0 when `b` is 0).
fn share(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// What the literals of one predicate look like.
#[derive(Default)]
struct Stats {
    values: u64,
    subjects: u64,
    /// Subjects with at most one value per language.
    single: u64,
    long: u64,
    /// String values with a letter, not an IRI or an e-mail address.
    text: u64,
    /// Subjects that no known predicate names.
    unnamed: u64,
    chars: Vec<usize>,
}

impl Stats {
    fn median_chars(&mut self) -> usize {
        if self.chars.is_empty() {
            return 0;
        }
        let mid = self.chars.len() / 2;
        *self.chars.select_nth_unstable(mid).1
    }
}

fn is_text(l: &Literal, value: &str) -> bool {
    l.string
        && value.chars().any(char::is_alphabetic)
        && !value.contains("://")
        && !value.contains('@')
        && !looks_like_a_date(value)
}

/// An untyped date or time (`2010-11-08T09:00:00`): its `T` is no name.
fn looks_like_a_date(value: &str) -> bool {
    let b = value.as_bytes();
    b.len() >= 7 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' && b[5].is_ascii_digit()
}

/// The predicates that name entities, by predicate id, and the log lines
/// that explain them.
pub struct Choice {
    /// Rank as a display name (`Some(None)`: aliases only) by predicate id.
    ranks: Vec<Option<Option<u8>>>,
    /// Whether a predicate's literals are texts kept out of the graph.
    texts: Vec<bool>,
    pub notes: Vec<String>,
}

impl Choice {
    /// How a predicate's literals label their subject: `None` when they do
    /// not, `Some(None)` as aliases, `Some(Some(rank))` as names.
    pub fn rank(&self, predicate: u32) -> Option<Option<u8>> {
        self.ranks.get(predicate as usize).copied().flatten()
    }

    /// Whether the predicate's literals are descriptions or comments.
    pub fn is_text(&self, predicate: u32) -> bool {
        self.texts.get(predicate as usize).copied().unwrap_or(false)
    }
}

/// What the read saw, for [`choose`].
pub struct Seen<'a> {
    /// Every predicate of the file, by id.
    pub predicates: &'a Interner,
    /// Objects that are IRIs or blank nodes, by predicate id.
    pub nonliteral: &'a [u64],
    /// The literal triples, sorted ([`Literals::sort`]).
    pub literals: &'a Literals,
    /// Whether each entity id is the subject of a triple.
    pub subjects: &'a [bool],
}

/// Chooses the name predicates of the graph (see the module docs): the
/// `given` ones (`--label-predicate`, IRIs or known prefixes; one that is not
/// a predicate of the graph, or has no literal objects, is an error), else
/// the known and detected ones.
pub fn choose(path: &Path, seen: &Seen<'_>, given: &[String]) -> Result<Choice, InputError> {
    let n = seen.predicates.len();
    let mut ranks: Vec<Option<Option<u8>>> = vec![None; n];
    let texts: Vec<bool> = (0..n)
        .map(|p| TEXT_PREDICATES.contains(&seen.predicates.name(p as u32)))
        .collect();
    let known = |iri: &str| KNOWN.iter().find(|(k, _)| *k == iri).map(|(_, r)| *r);
    let ranges = ranges(seen.literals.items(), n);
    let literal_count = |p: usize| ranges[p].len() as u64;
    let total_subjects = seen.subjects.iter().filter(|&&s| s).count() as u64;
    let mut notes = Vec::new();
    // The log line of predicate `p`, once its rank is set.
    let note = |p: usize, why: &str, ranks: &[Option<Option<u8>>]| {
        let items = &seen.literals.items()[ranges[p].clone()];
        let subjects = subject_count(seen.literals, items);
        let iri = seen.predicates.name(p as u32);
        match ranks[p] {
            Some(None) => format!(
                "aliases: {} gives {} aliases to {} subjects ({why})",
                shown(iri),
                count(items.len() as u64),
                count(subjects)
            ),
            _ => format!(
                "names: {} names {} of {} subjects ({why})",
                shown(iri),
                count(subjects),
                count(total_subjects)
            ),
        }
    };

    // Alias predicates count in every case.
    for (p, rank) in ranks.iter_mut().enumerate() {
        if known(seen.predicates.name(p as u32)) == Some(None) && literal_count(p) > 0 {
            *rank = Some(None);
        }
    }

    if !given.is_empty() {
        let mut order = Vec::new();
        for arg in given {
            let iri = expand(arg);
            let Some(p) = seen.predicates.get(&iri) else {
                return Err(InputError::UnknownLabelPredicate {
                    file: path.to_path_buf(),
                    iri,
                });
            };
            if literal_count(p as usize) == 0 {
                return Err(InputError::LabelPredicateWithoutLiterals {
                    file: path.to_path_buf(),
                    iri,
                });
            }
            if !order.contains(&(p as usize)) {
                order.push(p as usize);
            }
        }
        for (rank, &p) in order.iter().enumerate() {
            ranks[p] = Some(Some(rank.min(usize::from(u8::MAX)) as u8));
            notes.push(note(p, "--label-predicate", &ranks));
        }
        for p in 0..n {
            if ranks[p] == Some(None) {
                notes.push(note(p, "known", &ranks));
            }
        }
        return Ok(Choice {
            ranks,
            texts,
            notes,
        });
    }

    // Known name predicates, and the subjects they name.
    let mut named = vec![false; seen.subjects.len()];
    let mut used = Vec::new();
    for p in 0..n {
        if let Some(Some(rank)) = known(seen.predicates.name(p as u32)) {
            if literal_count(p) == 0 {
                continue;
            }
            ranks[p] = Some(Some(rank));
            used.push((rank, p));
            for l in &seen.literals.items()[ranges[p].clone()] {
                if !seen.literals.value(l).trim().is_empty() {
                    if let Some(s) = named.get_mut(l.subject as usize) {
                        *s = true;
                    }
                }
            }
        }
    }
    used.sort_unstable();
    for &(_, p) in &used {
        notes.push(note(p, "known", &ranks));
    }

    // Detection, for the subjects the known predicates leave unnamed.
    let unnamed_total = seen
        .subjects
        .iter()
        .zip(&named)
        .filter(|(&s, &k)| s && !k)
        .count() as u64;
    let mut detected = Vec::new();
    let mut rejected = Vec::new();
    for p in 0..n {
        let iri = seen.predicates.name(p as u32);
        if ranks[p].is_some() || texts[p] || known(iri).is_some() || literal_count(p) == 0 {
            continue;
        }
        let items = &seen.literals.items()[ranges[p].clone()];
        let mut st = stats(seen.literals, items, &named);
        let like = name_like(iri);
        let why = if share(st.values, st.values + seen.nonliteral[p]) < MIN_LITERAL_SHARE {
            Some("its objects are not all literals".to_string())
        } else if st.subjects < MIN_SUBJECTS {
            Some(format!("only {} subject", st.subjects))
        } else if share(st.single, st.subjects) < MIN_SINGLE_SHARE {
            Some(format!(
                "{} of {} subjects have several values in one language",
                count(st.subjects - st.single),
                count(st.subjects)
            ))
        } else if share(st.text, st.values) < MIN_TEXT_SHARE {
            Some("its values are not text (numbers, dates, IRIs)".to_string())
        } else if share(st.long, st.values) > MAX_LONG_SHARE || st.median_chars() > MAX_MEDIAN_CHARS
        {
            Some("its values are long texts".to_string())
        } else if unnamed_total == 0 {
            Some("every subject has a known name".to_string())
        } else if share(st.unnamed, unnamed_total) < MIN_COVERAGE {
            Some(format!(
                "it covers {} of the {} subjects without a known name",
                count(st.unnamed),
                count(unnamed_total)
            ))
        } else if like.is_none()
            && (st.subjects < MIN_UNIQUE_SUBJECTS
                || unique_share(seen.literals, items, st.subjects) < MIN_UNIQUE_SHARE)
        {
            Some("its local name is not a name and its values are not unique".to_string())
        } else {
            None
        };
        match why {
            None => detected.push((like.unwrap_or(u8::MAX), u64::MAX - st.unnamed, iri, p)),
            Some(why) if like.is_some() => rejected.push((iri, why)),
            Some(_) => {}
        }
    }
    detected.sort_unstable();
    for (i, &(like, _, _, p)) in detected.iter().take(MAX_DETECTED).enumerate() {
        ranks[p] = Some(Some(DETECTED_RANK + i as u8));
        let how = if like == u8::MAX {
            "one short literal each, unique: detected"
        } else {
            "one short literal each: detected"
        };
        notes.push(note(p, how, &ranks));
    }
    rejected.sort_unstable();
    for (iri, why) in rejected.iter().take(3) {
        notes.push(format!("names: {} not used: {why}", shown(iri)));
    }
    if used.is_empty() && detected.is_empty() {
        notes.push(
            "names: no name predicate found; entities are named by their IRIs \
             (see --label-predicate)"
                .to_string(),
        );
    }
    for p in 0..n {
        if ranks[p] == Some(None) {
            notes.push(note(p, "known", &ranks));
        }
    }
    Ok(Choice {
        ranks,
        texts,
        notes,
    })
}

/// The range of `items` (sorted by predicate) of each predicate id.
fn ranges(items: &[Literal], n: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = vec![0..0; n];
    let mut start = 0;
    while start < items.len() {
        let p = items[start].predicate;
        let end = start + items[start..].partition_point(|l| l.predicate == p);
        if let Some(r) = out.get_mut(p as usize) {
            *r = start..end;
        }
        start = end;
    }
    out
}

/// Distinct subjects of `items` (sorted by subject).
fn subject_count(literals: &Literals, items: &[Literal]) -> u64 {
    let mut n = 0;
    let mut previous = None;
    for l in items {
        if literals.value(l).trim().is_empty() {
            continue;
        }
        if previous != Some(l.subject) {
            n += 1;
            previous = Some(l.subject);
        }
    }
    n
}

/// The statistics of one predicate's `items` (sorted by subject and
/// language); `named` marks the subjects a known predicate names.
fn stats(literals: &Literals, items: &[Literal], named: &[bool]) -> Stats {
    let mut st = Stats::default();
    let mut i = 0;
    while i < items.len() {
        let subject = items[i].subject;
        let end = i + items[i..].partition_point(|l| l.subject == subject);
        let mut single = true;
        for (k, l) in items[i..end].iter().enumerate() {
            let value = literals.value(l);
            st.values += 1;
            st.chars.push(value.chars().count());
            if super::literals::is_long_text(value) {
                st.long += 1;
            }
            if is_text(l, value) {
                st.text += 1;
            }
            if k > 0 && literals.lang_key(&items[i + k - 1]) == literals.lang_key(l) {
                single = false;
            }
        }
        st.subjects += 1;
        if single {
            st.single += 1;
        }
        if !named.get(subject as usize).copied().unwrap_or(false) {
            st.unnamed += 1;
        }
        i = end;
    }
    st
}

/// The share of `subjects` whose values no other subject has (`items`
/// sorted by subject).
fn unique_share(literals: &Literals, items: &[Literal], subjects: u64) -> f64 {
    // Per value: its first subject, and whether another subject has it too.
    let mut holders: HashMap<&str, (u32, bool)> = HashMap::new();
    for l in items {
        let h = holders
            .entry(literals.value(l).trim())
            .or_insert((l.subject, false));
        if h.0 != l.subject {
            h.1 = true;
        }
    }
    let shared = |l: &Literal| holders.get(literals.value(l).trim()).is_some_and(|h| h.1);
    let mut unique = 0u64;
    for group in items.chunk_by(|a, b| a.subject == b.subject) {
        if !group.iter().any(shared) {
            unique += 1;
        }
    }
    share(unique, subjects)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_like_local_names() {
        for iri in [
            "http://ex.org/name",
            "http://ex.org/o#fullName",
            "http://ex.org/has_title",
            "http://ex.org/prefLabel",
            "urn:x:NAME",
        ] {
            assert!(name_like(iri).is_some(), "{iri}");
        }
        for iri in [
            "http://ex.org/givenName",
            "http://ex.org/surname",
            "http://ex.org/nickname",
            "http://ex.org/fileName",
            "http://ex.org/altLabel",
            "http://ex.org/release_year",
            "http://ex.org/names/x",
        ] {
            assert_eq!(name_like(iri), None, "{iri}");
        }
        assert!(name_like("http://ex.org/name") < name_like("http://ex.org/title"));
    }

    /// Name predicates with their ranks, and the log lines.
    type Chosen = (Vec<(String, Option<u8>)>, Vec<String>);

    /// The choice over literal triples `(subject, predicate, value, lang,
    /// string)` of subjects `0..subjects`.
    fn chosen(
        subjects: usize,
        triples: &[(u32, &str, &str, &str, bool)],
        given: &[&str],
    ) -> Result<Chosen, InputError> {
        let mut predicates = Interner::default();
        let mut literals = Literals::default();
        for &(s, p, v, lang, string) in triples {
            let p = predicates.intern(p);
            literals.push(s, p, v, lang, string);
        }
        literals.sort();
        let nonliteral = vec![0; predicates.len()];
        let subjects = vec![true; subjects];
        let seen = Seen {
            predicates: &predicates,
            nonliteral: &nonliteral,
            literals: &literals,
            subjects: &subjects,
        };
        let given: Vec<String> = given.iter().map(|g| g.to_string()).collect();
        let choice = choose(Path::new("g.ttl"), &seen, &given)?;
        let mut ranks: Vec<(String, Option<u8>)> = (0..predicates.len() as u32)
            .filter_map(|p| Some((predicates.name(p).to_string(), choice.rank(p)?)))
            .collect();
        ranks.sort_by_key(|r| r.1);
        Ok((ranks, choice.notes))
    }

    #[test]
    fn untyped_dates_name_nothing() {
        // Unique to their subjects and "with a letter" (the T), but dates.
        let times: Vec<String> = (0..12)
            .map(|i| format!("2010-11-{:02}T09:00:00", i + 1))
            .collect();
        let triples: Vec<_> = times
            .iter()
            .enumerate()
            .map(|(s, t)| (s as u32, "http://ex.org/dateTime", t.as_str(), "", true))
            .collect();
        let (ranks, _) = chosen(12, &triples, &[]).unwrap();
        assert!(ranks.is_empty(), "{ranks:?}");
        assert!(looks_like_a_date("1999-03-31"));
        assert!(!looks_like_a_date("1999 (film)"));
    }

    #[test]
    fn detection_takes_short_names_not_values_lists_or_texts() {
        let long = "word ".repeat(20);
        let mut triples = Vec::new();
        for s in 0..6u32 {
            let names = ["Alien", "Heat", "Ran", "Up", "Jaws", "Big"];
            triples.push((s, "http://ex.org/name", names[s as usize], "", true));
            triples.push((s, "http://ex.org/hasTitle", "The film", "", true));
            triples.push((s, "http://ex.org/year", "1979", "", false));
            triples.push((s, "http://ex.org/tagLabel", "scary", "", true));
            triples.push((s, "http://ex.org/tagLabel", "tense", "", true));
            triples.push((s, "http://ex.org/bioName", long.as_str(), "", true));
            triples.push((s, "http://ex.org/code", "A-1", "", true));
        }
        // French and English names of one subject are one per language.
        triples.push((
            0,
            "http://ex.org/name",
            "Alien, le huitième passager",
            "fr",
            true,
        ));
        let (ranks, notes) = chosen(6, &triples, &[]).unwrap();
        assert_eq!(
            ranks,
            [
                ("http://ex.org/name".to_string(), Some(DETECTED_RANK)),
                (
                    "http://ex.org/hasTitle".to_string(),
                    Some(DETECTED_RANK + 1)
                ),
            ]
        );
        assert!(
            notes
                .iter()
                .any(|n| n
                    .contains("<http://ex.org/tagLabel> not used: 6 of 6 subjects have several"))
        );
        assert!(notes
            .iter()
            .any(|n| n.contains("<http://ex.org/bioName> not used: its values are long texts")));

        // A known label wins: detection only looks at the subjects it
        // leaves unnamed (here one of six: `:name` covers it).
        triples.push((
            1,
            "http://www.w3.org/2000/01/rdf-schema#label",
            "Heat (1995)",
            "",
            true,
        ));
        let (ranks, _) = chosen(6, &triples, &[]).unwrap();
        assert_eq!(
            ranks[0],
            (
                "http://www.w3.org/2000/01/rdf-schema#label".to_string(),
                Some(0)
            )
        );
        // Given: exactly those, in order.
        let (ranks, _) = chosen(6, &triples, &["http://ex.org/code", "rdfs:label"]).unwrap();
        assert_eq!(
            ranks,
            [
                ("http://ex.org/code".to_string(), Some(0)),
                (
                    "http://www.w3.org/2000/01/rdf-schema#label".to_string(),
                    Some(1)
                ),
            ]
        );
        assert!(matches!(
            chosen(6, &triples, &["http://ex.org/nope"]),
            Err(InputError::UnknownLabelPredicate { iri, .. }) if iri == "http://ex.org/nope"
        ));
    }

    #[test]
    fn shown_and_expanded() {
        let label = "http://www.w3.org/2000/01/rdf-schema#label";
        assert_eq!(shown(label), "rdfs:label");
        assert_eq!(shown("http://ex.org/name"), "<http://ex.org/name>");
        assert_eq!(expand("rdfs:label"), label);
        assert_eq!(expand(&format!("<{label}>")), label);
        assert_eq!(expand("http://ex.org/name"), "http://ex.org/name");
        assert_eq!(count(2113), "2,113");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_234_567), "1,234,567");
    }
}
