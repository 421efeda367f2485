//! RDF triples files (N-Triples, Turtle, N-Quads, TriG, RDF/XML, JSON-LD),
//! parsed as streams with oxrdfio.
//!
//! IRIs and blank nodes become entities and predicates relations. Literal
//! objects are held until the whole file is read (`literals.rs`); then the
//! name predicates are chosen (`label_predicates.rs`): their literals name
//! their subject or become its aliases, and are no graph nodes. Of the other
//! literals, descriptions and long texts are kept out of the graph (counted
//! in the pack log), and the rest become entities named by their lexical
//! form (datatype and language dropped; numbers and booleans in their
//! canonical form, `literals::canonical_value`): dates, numbers, short
//! values. In
//! N-Quads, TriG and JSON-LD the quads of every graph are read as one
//! graph's triples. Names and source IRIs are given in `names.rs`.
//!
//! Beside all that, every statement is kept as given, graph names
//! included (`statements.rs`), unless `--no-rdf-statements` says not to.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use indicatif::ProgressBar;
use oxrdf::{NamedNode, NamedOrBlankNode, Term};
use oxrdfio::{RdfParseError, RdfParser};

use super::interner::Interner;
use super::label_predicates::{self, count, shown, Seen};
use super::literals::{self, Literals};
use super::names::{self, Label, PredicateTexts};
use super::source::{open, read_error};
use super::{Format, InputError, RawKg, ReadOptions};

fn parse_error(path: &Path, e: RdfParseError) -> InputError {
    match e {
        RdfParseError::Syntax(e) => match e.location() {
            Some(at) => {
                // The message without the parser's own "at line L column C".
                let text = e.to_string();
                let message = text
                    .strip_prefix("Parser error at ")
                    .and_then(|t| t.split_once(": "))
                    .map_or(text.as_str(), |(_, m)| m);
                InputError::Malformed {
                    file: path.to_path_buf(),
                    line: at.start.line + 1,
                    problem: format!("{message} (column {})", at.start.column + 1),
                }
            }
            // RDF/XML errors carry no position.
            None => InputError::Rdf {
                file: path.to_path_buf(),
                problem: e.to_string(),
            },
        },
        RdfParseError::Io(e) => read_error(path, e),
    }
}

/// What one file adds while it is read.
struct Reading<'a> {
    kg: &'a mut RawKg,
    literals: Literals,
    /// Every predicate of the file (literal objects or not).
    predicates: Interner,
    /// Objects that are IRIs or blank nodes, by predicate id.
    nonliteral: Vec<u64>,
    /// Whether each entity id is the subject of a triple.
    subjects: Vec<bool>,
}

impl Reading<'_> {
    fn add(
        &mut self,
        path: &Path,
        subject: &NamedOrBlankNode,
        predicate: &NamedNode,
        object: &Term,
    ) -> Result<(), InputError> {
        let subject = match subject {
            NamedOrBlankNode::NamedNode(n) => names::key_iri(n.as_str()),
            NamedOrBlankNode::BlankNode(b) => names::key_blank(b.as_str()),
        };
        let s = self.kg.entities.intern(&subject);
        if self.subjects.len() <= s as usize {
            self.subjects.resize(s as usize + 1, false);
        }
        self.subjects[s as usize] = true;
        let predicate = predicate.as_str();
        let p = self.predicates.intern(predicate);
        if self.nonliteral.len() <= p as usize {
            self.nonliteral.resize(p as usize + 1, 0);
        }
        let object = match object {
            Term::NamedNode(n) => names::key_iri(n.as_str()),
            Term::BlankNode(b) => names::key_blank(b.as_str()),
            Term::Literal(l) => {
                let string =
                    l.language().is_some() || literals::is_string_datatype(l.datatype().as_str());
                let value = literals::canonical_value(l.value(), l.datatype().as_str());
                self.literals
                    .push(s, p, &value, l.language().unwrap_or_default(), string);
                return Ok(());
            }
            // Quoted triples (RDF 1.2), when oxrdf is built with them.
            #[allow(unreachable_patterns)]
            other => {
                return Err(InputError::Rdf {
                    file: path.to_path_buf(),
                    problem: format!("unsupported object term {other}"),
                })
            }
        };
        self.nonliteral[p as usize] += 1;
        // Relations are interned by IRI here and named afterwards.
        self.kg
            .add_triple(&subject, predicate, &object)
            .map_err(InputError::Spill)
    }

    /// Chooses the name predicates, turns their literals into labels and
    /// adds the other literals to the graph (long texts aside); returns
    /// the labels, and what the graph says of its own predicates (their
    /// labels and comments, where a predicate is a subject too).
    fn finish(
        mut self,
        path: &Path,
        opts: &ReadOptions,
    ) -> Result<(Vec<Label>, PredicateTexts), InputError> {
        self.literals.sort();
        self.nonliteral.resize(self.predicates.len(), 0);
        let choice = label_predicates::choose(
            path,
            &Seen {
                predicates: &self.predicates,
                nonliteral: &self.nonliteral,
                literals: &self.literals,
                subjects: &self.subjects,
            },
            &opts.label_predicates,
        )?;
        self.kg.notes.extend(choice.notes.iter().cloned());
        let mut labels = Vec::new();
        // The predicates that are subjects too, by entity id.
        let described: HashMap<u32, &str> = self
            .predicates
            .iter()
            .filter_map(|p| Some((self.kg.entities.get(&names::key_iri(p))?, p)))
            .collect();
        let mut own = PredicateTexts::default();
        // Long texts kept out, by predicate IRI (ordered for the log).
        let mut texts: BTreeMap<&str, u64> = BTreeMap::new();
        for l in self.literals.items() {
            let value = self.literals.value(l);
            let predicate = self.predicates.name(l.predicate);
            if let Some(&iri) = described.get(&l.subject) {
                let lang = self.literals.lang(l);
                own.add(iri, predicate, choice.rank(l.predicate), value, lang);
            }
            if let Some(rank) = choice.rank(l.predicate) {
                labels.push(Label {
                    entity: l.subject,
                    rank,
                    value: value.to_string(),
                    lang: self.literals.lang(l).to_string(),
                });
            } else if choice.is_text(l.predicate) || literals::is_long_text(value) {
                *texts.entry(predicate).or_default() += 1;
            } else {
                let subject = self.kg.entities.name(l.subject).to_string();
                self.kg
                    .add_triple(&subject, predicate, &names::key_literal(value))
                    .map_err(InputError::Spill)?;
            }
        }
        if !texts.is_empty() {
            let total: u64 = texts.values().sum();
            let mut by_count: Vec<(&str, u64)> = texts.into_iter().collect();
            by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            let mut shown_list: Vec<String> = by_count
                .iter()
                .take(5)
                .map(|(p, n)| format!("{} {}", shown(p), count(*n)))
                .collect();
            if by_count.len() > 5 {
                shown_list.push(format!("{} more", by_count.len() - 5));
            }
            self.kg.notes.push(format!(
                "long texts: {} long text literals (predicates {}) kept out of the \
                 question-answering graph (descriptions, comments, more than {} characters \
                 or {} words; /sparql still has them, in the RDF statements)",
                count(total),
                shown_list.join(", "),
                literals::LONG_TEXT_CHARS,
                literals::LONG_TEXT_WORDS,
            ));
        }
        Ok((labels, own))
    }
}

/// Reads an RDF file in `format` (plain or compressed, see `source.rs`) as
/// a stream, with the default [`ReadOptions`]. Syntax errors name the file
/// and line.
pub fn read_rdf(
    path: &Path,
    format: Format,
    kg: &mut RawKg,
    progress: &ProgressBar,
) -> Result<(), InputError> {
    read_rdf_with(path, format, &ReadOptions::default(), kg, progress)
}

/// [`read_rdf`] with options (`--label-predicate`).
pub fn read_rdf_with(
    path: &Path,
    format: Format,
    opts: &ReadOptions,
    kg: &mut RawKg,
    progress: &ProgressBar,
) -> Result<(), InputError> {
    if format == Format::Tsv {
        return super::read_tsv(path, kg, progress);
    }
    kg.keep_names_in_memory();
    let reader = open(path, progress)?;
    let first_entity = kg.entities.len();
    let first_relation = kg.relations.len();
    let mut r = Reading {
        kg,
        literals: Literals::default(),
        predicates: Interner::default(),
        nonliteral: Vec::new(),
        subjects: Vec::new(),
    };
    if let Some(rdf) = format.rdf_format() {
        for q in RdfParser::from_format(rdf).for_reader(reader) {
            let q = q.map_err(|e| parse_error(path, e))?;
            if !opts.no_statements {
                r.kg.statements
                    .add(&q.subject, &q.predicate, &q.object, &q.graph_name);
            }
            r.add(path, &q.subject, &q.predicate, &q.object)?;
        }
    }
    let (labels, own) = r.finish(path, opts)?;
    // The question-answering entity of each blank node of the statements.
    let blanks: HashMap<String, u32> = kg
        .statements
        .blank_labels()
        .into_iter()
        .filter_map(|l| {
            let id = kg.entities.get(&names::key_blank(&l))?;
            Some((l, id))
        })
        .collect();
    if !kg.statements.is_empty() {
        kg.notes.push(format!(
            "RDF statements: {} statements over {} terms kept as given for /sparql \
             (datatypes, languages, labels, long texts, graph names; \
             --no-rdf-statements leaves them out)",
            count(kg.statements.len() as u64),
            count(kg.statements.term_count() as u64),
        ));
    }
    if let Some(why) = kg.statements.dropped() {
        kg.notes.push(format!(
            "RDF statements: not kept ({why}); /sparql answers over the question-answering \
             graph (literals without datatype or language, no label triples, one graph)"
        ));
    }
    names::name_entities(path, kg, first_entity, &labels)?;
    let entities = &kg.entities;
    kg.statements
        .relabel_blanks(|l| blanks.get(l).map(|&id| entities.name(id).to_string()));
    names::name_relations(kg, first_relation, &own);
    Ok(())
}
