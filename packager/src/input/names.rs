//! Names for what was read from RDF. While reading, entities are interned by
//! a key that keeps IRIs, blank nodes and literal values apart; here each
//! gets its display name, and relations theirs, so that the result depends
//! only on the graph: not on the input order, the syntax, the blank-node
//! labels or the file name.

use std::collections::{HashMap, HashSet};
use std::path::Path;

// The qualifier of a literal value whose plain name an entity has: the
// runtime reads the value back from the name and its alias.
use kgbox_query::translate::iri::LITERAL_QUALIFIER;
use sha2::{Digest, Sha256};

use super::{literals, wikidata, InputError, RawKg};

/// A label literal of an entity, as read.
pub(super) struct Label {
    pub entity: u32,
    /// Preference as a display name (0 best); `None`: an alias only.
    pub rank: Option<u8>,
    pub value: String,
    pub lang: String,
}

pub(super) fn key_iri(iri: &str) -> String {
    format!("<{iri}")
}

pub(super) fn key_blank(label: &str) -> String {
    format!("_:{label}")
}

pub(super) fn key_literal(value: &str) -> String {
    format!("\"{value}")
}

enum Kind<'a> {
    Iri(&'a str),
    Blank,
    Literal(&'a str),
}

fn kind(key: &str) -> Kind<'_> {
    if let Some(iri) = key.strip_prefix('<') {
        Kind::Iri(iri)
    } else if let Some(value) = key.strip_prefix('"') {
        Kind::Literal(value)
    } else {
        Kind::Blank
    }
}

/// English or no language first, then other English variants, then the rest.
fn lang_rank(lang: &str) -> u8 {
    let lang = lang.to_ascii_lowercase();
    if lang.is_empty() || lang == "en" {
        0
    } else if lang.starts_with("en-") {
        1
    } else {
        2
    }
}

/// The part of an IRI after its last `/` or `#` (trailing ones ignored), or
/// after its last `:` when it has neither (`urn:isbn:…`).
fn local_part(iri: &str) -> &str {
    let trimmed = iri.trim_end_matches(['/', '#']);
    match trimmed.rfind(['/', '#']) {
        Some(i) => &trimmed[i + 1..],
        None => trimmed.rsplit(':').next().unwrap_or(trimmed),
    }
}

/// `%XX` escapes decoded, when the result is UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .ok()
        .map(|c| c.into_owned())
}

/// A readable name from an IRI's local part: `…/Blade_Runner` → `Blade
/// Runner`, `…/Am%C3%A9lie` → `Amélie`; the whole IRI when that is empty.
fn readable(iri: &str) -> String {
    let local = local_part(iri);
    let decoded = percent_decode(local).unwrap_or_else(|| local.to_string());
    let name = decoded
        .replace('_', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if name.is_empty() {
        iri.to_string()
    } else {
        name
    }
}

fn hash(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().into()
}

/// An edge of a blank node: direction (0 out, 1 in), the relation's hash,
/// and the other end: a blank node's position, or the hash of anything else.
type BlankEdge = (u8, [u8; 32], Result<usize, [u8; 32]>);

/// Rounds of refinement at most; past them, blank nodes still alike are
/// numbered in input order.
const MAX_REFINE: usize = 64;

/// Names for the blank nodes among `ids` that do not depend on their labels
/// in the file: `_:` and 16 hex digits of a hash of the node's labels and
/// edges, refined over its neighbours' hashes until the partition is stable
/// (colour refinement). Nodes that stay alike are numbered (`-2`, `-3`, …).
fn blank_names(
    kg: &mut RawKg,
    ids: &[u32],
    labels: &[Label],
) -> Result<HashMap<u32, String>, InputError> {
    let pos: HashMap<u32, usize> = ids.iter().enumerate().map(|(i, &e)| (e, i)).collect();
    if pos.is_empty() {
        return Ok(HashMap::new());
    }
    let mut own: Vec<Vec<String>> = vec![Vec::new(); ids.len()];
    for l in labels {
        if let Some(&p) = pos.get(&l.entity) {
            own[p].push(format!("{:?}\0{}\0{}", l.rank, l.value, l.lang));
        }
    }
    let mut color: Vec<[u8; 32]> = own
        .iter_mut()
        .map(|ls| {
            ls.sort_unstable();
            hash(&[b"blank", ls.join("\n").as_bytes()])
        })
        .collect();
    let fixed = |e: u32| hash(&[kg.entities.name(e).as_bytes()]);
    let relation = |r: u32| hash(&[kg.relations.name(r).as_bytes()]);
    // Edges of each blank node.
    let mut edges: Vec<Vec<BlankEdge>> = vec![Vec::new(); ids.len()];
    let mut add = |block: &[[u32; 3]]| {
        for &[h, r, t] in block {
            let end = |e: u32| pos.get(&e).copied().ok_or_else(|| fixed(e));
            if let Some(&p) = pos.get(&h) {
                edges[p].push((0, relation(r), end(t)));
            }
            if let Some(&p) = pos.get(&t) {
                edges[p].push((1, relation(r), end(h)));
            }
        }
    };
    kg.triples
        .for_each_block(&mut add)
        .map_err(InputError::Spill)?;
    let classes = |c: &[[u8; 32]]| c.iter().collect::<HashSet<_>>().len();
    let mut count = classes(&color);
    for _ in 0..MAX_REFINE {
        let next: Vec<[u8; 32]> = (0..ids.len())
            .map(|p| {
                let mut items: Vec<[u8; 65]> = edges[p]
                    .iter()
                    .map(|(dir, rel, other)| {
                        let other = match other {
                            Ok(q) => color[*q],
                            Err(c) => *c,
                        };
                        let mut item = [0u8; 65];
                        item[0] = *dir;
                        item[1..33].copy_from_slice(rel);
                        item[33..].copy_from_slice(&other);
                        item
                    })
                    .collect();
                items.sort_unstable();
                let flat: Vec<u8> = items.concat();
                hash(&[&color[p], &flat])
            })
            .collect();
        color = next;
        let now = classes(&color);
        if now <= count {
            break;
        }
        count = now;
    }
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by_key(|&p| (color[p], p));
    let mut names = HashMap::new();
    let mut previous: Option<([u8; 32], usize)> = None;
    for p in order {
        let hex = hex::encode(&color[p][..8]);
        let n = match previous {
            Some((c, n)) if c == color[p] => n + 1,
            _ => 1,
        };
        previous = Some((color[p], n));
        let name = if n == 1 {
            format!("_:{hex}")
        } else {
            format!("_:{hex}-{n}")
        };
        names.insert(ids[p], name);
    }
    Ok(names)
}

/// Rounds of renaming entities whose names clash before giving up.
const MAX_CLASH_ROUNDS: usize = 8;

/// `Mercury (planet)` → `Mercury`: the name without a trailing
/// parenthesised disambiguator, when something is left.
pub(super) fn without_disambiguator(name: &str) -> Option<&str> {
    let inner = name.trim_end().strip_suffix(')')?;
    let open = inner.rfind('(')?;
    if inner[open + 1..].contains(')') || inner[open + 1..].trim().is_empty() {
        return None;
    }
    let stripped = inner[..open].trim_end();
    (!stripped.is_empty()).then_some(stripped)
}

/// Renames the names that clash (`clashing` gives them, from the names of
/// this round) with their qualifiers, one more per round, until none does.
fn disambiguate(
    path: &Path,
    keys: &[String],
    base: &[String],
    quals: &[Vec<String>],
    names: &mut [String],
    clashing: impl Fn(&[String]) -> Vec<usize>,
) -> Result<(), InputError> {
    for round in 0.. {
        let clashing = clashing(names);
        if clashing.is_empty() {
            break;
        }
        let stuck = clashing.iter().all(|&i| quals[i].is_empty());
        if round >= MAX_CLASH_ROUNDS || stuck {
            let shown: Vec<&str> = clashing.iter().take(3).map(|&i| keys[i].as_str()).collect();
            return Err(InputError::Rdf {
                file: path.to_path_buf(),
                problem: format!(
                    "cannot give these entities distinct names: {}",
                    shown.join(", ")
                ),
            });
        }
        for i in clashing {
            if let Some(q) = quals[i].get(round).or(quals[i].last()) {
                names[i] = if round < quals[i].len() {
                    format!("{} ({q})", base[i])
                } else {
                    format!("{} ({q}) #{round}", base[i])
                };
            }
        }
    }
    Ok(())
}

/// Gives the entities interned from `first` on their display names, records
/// their IRIs and turns their labels into aliases.
///
/// An entity with an IRI is named by its best label (`rank`, then English or
/// no language, then the smallest value), else by [`readable`]; a blank node
/// by its best label, else by its [`blank_names`] name; a literal by its
/// value. Names clash only among these real entities (IRIs and blank
/// nodes): the clashing ones get a qualifier in parentheses (the IRI's
/// local part, then the whole IRI; the blank node's name). A literal value
/// whose name a real entity has yields: it is named `value (literal)`, with
/// its value as an alias. Every label stays an alias, and a real entity's
/// name or label with a parenthesised disambiguator (`Mercury (planet)`)
/// also gives the alias without it (`Mercury`).
pub(super) fn name_entities(
    path: &Path,
    kg: &mut RawKg,
    first: usize,
    labels: &[Label],
) -> Result<(), InputError> {
    let keys: Vec<String> = kg.entities.names_from(first);
    let mut best: HashMap<u32, (u8, u8, &str, &str)> = HashMap::new();
    for l in labels {
        let (Some(rank), value) = (l.rank, l.value.trim()) else {
            continue;
        };
        if value.is_empty() {
            continue;
        }
        let cand = (rank, lang_rank(&l.lang), value, l.lang.as_str());
        best.entry(l.entity)
            .and_modify(|b| *b = (*b).min(cand))
            .or_insert(cand);
    }
    let blank_ids: Vec<u32> = keys
        .iter()
        .enumerate()
        .filter(|(_, k)| matches!(kind(k), Kind::Blank))
        .map(|(i, _)| (first + i) as u32)
        .collect();
    let blanks = blank_names(kg, &blank_ids, labels)?;

    // Base names and the qualifiers that tell clashing names apart.
    let mut base = Vec::with_capacity(keys.len());
    let mut quals: Vec<Vec<String>> = Vec::with_capacity(keys.len());
    let (mut real, mut values) = (Vec::new(), Vec::new());
    for (i, key) in keys.iter().enumerate() {
        let id = (first + i) as u32;
        let label = best.get(&id).map(|b| b.2.to_string());
        match kind(key) {
            Kind::Iri(iri) => {
                kg.entity_iris.insert(id, iri.to_string());
                let local = local_part(iri);
                let q = match &label {
                    Some(_) if !local.is_empty() => vec![local.to_string(), iri.to_string()],
                    _ => vec![iri.to_string()],
                };
                base.push(label.unwrap_or_else(|| readable(iri)));
                quals.push(q);
                real.push(i);
            }
            Kind::Blank => {
                let name = blanks.get(&id).cloned().unwrap_or_else(|| key.clone());
                base.push(label.unwrap_or_else(|| name.clone()));
                quals.push(vec![name]);
                real.push(i);
            }
            Kind::Literal(value) => {
                base.push(value.to_string());
                quals.push(vec![LITERAL_QUALIFIER.to_string()]);
                values.push(i);
            }
        }
    }
    let mut names = base.clone();
    // Real entities first, among themselves and the entities of earlier
    // inputs.
    let earlier: Vec<&str> = kg.entities.iter().take(first).collect();
    disambiguate(path, &keys, &base, &quals, &mut names, |names| {
        let mut count: HashMap<&str, usize> = HashMap::new();
        for n in earlier
            .iter()
            .copied()
            .chain(real.iter().map(|&k| names[k].as_str()))
        {
            *count.entry(n).or_default() += 1;
        }
        real.iter()
            .copied()
            .filter(|&i| count.get(names[i].as_str()).copied().unwrap_or(0) > 1)
            .collect()
    })?;
    // Then literal values, against the real entities' final names.
    let taken: HashSet<String> = earlier
        .iter()
        .map(|n| n.to_string())
        .chain(real.iter().map(|&k| names[k].clone()))
        .collect();
    disambiguate(path, &keys, &base, &quals, &mut names, |names| {
        let mut count: HashMap<&str, usize> = HashMap::new();
        for &k in &values {
            *count.entry(names[k].as_str()).or_default() += 1;
        }
        values
            .iter()
            .copied()
            .filter(|&i| taken.contains(&names[i]) || count.get(names[i].as_str()) > Some(&1))
            .collect()
    })?;
    for l in labels {
        let value = l.value.trim();
        if !value.is_empty() {
            kg.aliases.push((l.entity, value.to_string()));
            if let Some(short) = without_disambiguator(value) {
                kg.aliases.push((l.entity, short.to_string()));
            }
        }
    }
    for &i in &real {
        if let Some(short) = without_disambiguator(&base[i]) {
            kg.aliases.push(((first + i) as u32, short.to_string()));
        }
    }
    for &i in &values {
        if names[i] != base[i] {
            kg.aliases.push(((first + i) as u32, base[i].clone()));
        }
    }
    kg.entities.rename(|i, old| match i.checked_sub(first) {
        Some(k) => names[k].clone(),
        None => old.to_string(),
    });
    Ok(())
}

/// The local name of a predicate IRI (after the last `#` or `/`).
fn local_name(iri: &str) -> &str {
    iri.rsplit(['#', '/']).next().unwrap_or(iri)
}

/// What a graph says of its own predicates, where a predicate is the
/// subject of a name (its label) or of a description literal (its
/// comment): English or language-less ones first.
#[derive(Debug, Default)]
pub struct PredicateTexts {
    labels: HashMap<String, ((u8, u8), String)>,
    comments: HashMap<String, (u8, String)>,
    /// Alias-only names (`skos:altLabel`, ...), each once.
    aliases: HashMap<String, Vec<String>>,
}

impl PredicateTexts {
    /// Adds the literal `value` (in `lang`) of `predicate` about the
    /// predicate `iri`; `rank` is the predicate's rank as a name.
    pub(super) fn add(
        &mut self,
        iri: &str,
        predicate: &str,
        rank: Option<Option<u8>>,
        value: &str,
        lang: &str,
    ) {
        let lang = lang_rank(lang);
        let value = value.split_whitespace().collect::<Vec<_>>().join(" ");
        if value.is_empty() || lang > 1 {
            return;
        }
        if let Some(Some(rank)) = rank {
            keep_best(&mut self.labels, iri, (rank, lang), value);
        } else if rank.is_some() {
            let list = self.aliases.entry(iri.to_string()).or_default();
            if !list.contains(&value) {
                list.push(value);
            }
        } else if literals::DEFINITION_PREDICATES.contains(&predicate) {
            keep_best(&mut self.comments, iri, lang, value);
        }
    }

    fn label(&self, iri: &str) -> Option<&str> {
        self.labels.get(iri).map(|(_, l)| l.as_str())
    }

    fn comment(&self, iri: &str) -> Option<&str> {
        self.comments.get(iri).map(|(_, c)| c.as_str())
    }

    /// The predicate's alias-only names, English or language-less.
    fn aliases(&self, iri: &str) -> &[String] {
        self.aliases.get(iri).map_or(&[], Vec::as_slice)
    }
}

/// Keeps `value` for `iri` when its `key` ranks before the one kept (the
/// first of equals stays).
fn keep_best<K: PartialOrd>(
    map: &mut HashMap<String, (K, String)>,
    iri: &str,
    key: K,
    value: String,
) {
    if map.get(iri).is_none_or(|(kept, _)| key < *kept) {
        map.insert(iri.to_string(), (key, value));
    }
}

/// Whether a predicate's local name says nothing to a reader (`P19`,
/// `p_7`): it has no run of three letters.
fn is_opaque(local: &str) -> bool {
    let mut run = 0;
    for c in local.chars() {
        run = if c.is_alphabetic() { run + 1 } else { 0 };
        if run >= 3 {
            return false;
        }
    }
    true
}

/// A label as a relation name: its words in lowercase, joined by `_`
/// (`"place of birth"` → `place_of_birth`).
fn label_name(label: &str) -> Option<String> {
    let words: Vec<String> = label
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    (!words.is_empty()).then(|| words.join("_"))
}

/// Names the relations interned (by predicate IRI) from `first` on: the
/// IRI's local name; where that says nothing (`wdt:P19`), the predicate's
/// label in the graph, or its name among Wikidata's properties
/// ([`wikidata`]); the full IRI when several predicates would share a
/// name (whatever the input order) or the name is another predicate's IRI.
/// The IRI is kept as the relation's source IRI. Its description is the
/// graph's own comment on the predicate, else the Wikidata table's, else
/// its label when that says more than the name, else the IRI; an
/// operator's `--relation-descriptions` file replaces it.
pub(super) fn name_relations(kg: &mut RawKg, first: usize, own: &PredicateTexts) {
    /// Where a relation's preferred name came from.
    #[derive(PartialEq)]
    enum Source {
        Local,
        Label,
        Table,
    }
    let iris = kg.relations.names_from(first);
    let preferred: Vec<(String, Source)> = iris
        .iter()
        .map(|iri| {
            let local = local_name(iri);
            if is_opaque(local) {
                if let Some(name) = own.label(iri).and_then(label_name) {
                    return (name, Source::Label);
                }
                if let Some(k) = wikidata::known(iri) {
                    return (k.name.to_string(), Source::Table);
                }
            }
            (local.to_string(), Source::Local)
        })
        .collect();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for (name, _) in &preferred {
        *counts.entry(name.as_str()).or_default() += 1;
    }
    let all: HashSet<&str> = iris.iter().map(String::as_str).collect();
    // A short name must be unique and must not be another predicate's IRI.
    let unique =
        |name: &str| !name.is_empty() && counts.get(name) == Some(&1) && !all.contains(name);
    let renamed: Vec<Option<&str>> = preferred
        .iter()
        .map(|(name, _)| unique(name).then_some(name.as_str()))
        .collect();
    kg.relations.rename(
        |i, name| match i.checked_sub(first).and_then(|k| renamed[k]) {
            Some(short) => short.to_string(),
            None => name.to_string(),
        },
    );
    // Relations named by a label and described, by where it came from.
    let (mut by_label, mut by_table) = (0usize, 0usize);
    let (mut commented, mut labelled, mut tabled) = (0usize, 0usize, 0usize);
    let mut aliased = 0usize;
    for (k, iri) in iris.iter().enumerate() {
        let id = (first + k) as u32;
        let (name, source) = &preferred[k];
        if renamed[k].is_some() {
            by_label += usize::from(*source == Source::Label);
            by_table += usize::from(*source == Source::Table);
        }
        let words = |s: &str| label_name(s).unwrap_or_default();
        let description = if let Some(c) = own.comment(iri) {
            commented += 1;
            c.to_string()
        } else if let Some(v) = wikidata::known(iri) {
            tabled += 1;
            v.description.to_string()
        } else if let Some(l) = own.label(iri).filter(|l| words(l) != words(name)) {
            labelled += 1;
            l.to_string()
        } else {
            iri.clone()
        };
        kg.relation_descriptions.entry(id).or_insert(description);
        kg.relation_iris.insert(id, iri.clone());
        // Its alternative labels are what people say for it besides
        // (each once: `PredicateTexts::add` keeps them distinct).
        let alternatives = own.aliases(iri);
        aliased += usize::from(!alternatives.is_empty());
        kg.relation_aliases
            .extend(alternatives.iter().map(|a| (id, a.clone())));
    }
    if aliased > 0 {
        kg.notes.push(format!(
            "relation aliases: {aliased} relations have alternative labels in the graph \
             (skos:altLabel and the like), which the path ranker matches too"
        ));
    }
    if by_label + by_table + commented + labelled + tabled > 0 {
        kg.notes.push(format!(
            "relations: {by_label} named by their label in the graph and {by_table} by \
             Wikidata's property table (their IRIs' local names say nothing); {commented} \
             described by their comment in the graph, {labelled} by their label and {tabled} \
             by Wikidata's property table (--relation-descriptions replaces any of them)"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readable_names_come_from_the_local_part() {
        assert_eq!(readable("http://ex.org/movie/Blade_Runner"), "Blade Runner");
        assert_eq!(readable("http://ex.org/o#Am%C3%A9lie"), "Amélie");
        assert_eq!(readable("http://ex.org/thing/"), "thing");
        assert_eq!(readable("urn:isbn:0451450523"), "0451450523");
        assert_eq!(readable("http://ex.org/bad%FF"), "bad%FF");
        assert_eq!(readable("http://ex.org/__"), "http://ex.org/__");
        assert_eq!(readable("http://www.wikidata.org/entity/Q42"), "Q42");
    }

    #[test]
    fn disambiguators() {
        assert_eq!(without_disambiguator("Mercury (planet)"), Some("Mercury"));
        assert_eq!(without_disambiguator("Paris (Q90) "), Some("Paris"));
        assert_eq!(without_disambiguator("(planet)"), None);
        assert_eq!(without_disambiguator("Mercury ()"), None);
        assert_eq!(without_disambiguator("Mercury"), None);
        assert_eq!(without_disambiguator("f(x) = (y)"), Some("f(x) ="));
        assert_eq!(without_disambiguator("a (b))"), None);
    }

    #[test]
    fn english_and_language_less_labels_come_first() {
        assert!(lang_rank("") == 0 && lang_rank("EN") == 0);
        assert_eq!(lang_rank("en-GB"), 1);
        assert_eq!(lang_rank("de"), 2);
    }
}
