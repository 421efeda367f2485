//! RDF triples files (N-Triples, Turtle, N-Quads), parsed as streams with
//! oxttl.
//!
//! IRIs and blank nodes become entities; a literal object becomes an entity
//! named by its lexical form (its datatype and language are dropped), except
//! for the label predicates, whose literals name their subject or become its
//! aliases (see [`LABEL_PREDICATES`]). Predicates become relations. In
//! N-Quads the graph name is ignored: the quads of every graph are read as
//! one graph's triples. Names and source IRIs are given in `names.rs`.

use std::path::Path;

use indicatif::ProgressBar;
use oxrdf::{NamedNode, NamedOrBlankNode, Term};
use oxttl::TurtleParseError;

use super::names::{self, Label};
use super::source::{open, read_error};
use super::{Format, InputError, RawKg};

/// Predicates whose literal objects label their subject, with their rank as
/// a display name (lower is preferred; `None`: an alias only). Every label
/// that does not become the name is an alias.
pub const LABEL_PREDICATES: &[(&str, Option<u8>)] = &[
    ("http://www.w3.org/2000/01/rdf-schema#label", Some(0)),
    ("http://www.w3.org/2004/02/skos/core#prefLabel", Some(1)),
    ("http://schema.org/name", Some(2)),
    ("https://schema.org/name", Some(2)),
    ("http://www.w3.org/2004/02/skos/core#altLabel", None),
];

fn label_rank(predicate: &str) -> Option<Option<u8>> {
    LABEL_PREDICATES
        .iter()
        .find(|(p, _)| *p == predicate)
        .map(|(_, rank)| *rank)
}

fn parse_error(path: &Path, e: TurtleParseError) -> InputError {
    match e {
        TurtleParseError::Syntax(e) => {
            let at = e.location().start;
            InputError::Malformed {
                file: path.to_path_buf(),
                line: at.line + 1,
                problem: format!("{} (column {})", e.message(), at.column + 1),
            }
        }
        TurtleParseError::Io(e) => read_error(path, e),
    }
}

/// What one file adds, before names are given.
struct Reading<'a> {
    kg: &'a mut RawKg,
    labels: Vec<Label>,
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
        let predicate = predicate.as_str();
        let object = match object {
            Term::NamedNode(n) => names::key_iri(n.as_str()),
            Term::BlankNode(b) => names::key_blank(b.as_str()),
            Term::Literal(l) => {
                if let Some(rank) = label_rank(predicate) {
                    let entity = self.kg.entities.intern(&subject);
                    self.labels.push(Label {
                        entity,
                        rank,
                        value: l.value().to_string(),
                        lang: l.language().unwrap_or_default().to_string(),
                    });
                    return Ok(());
                }
                names::key_literal(l.value())
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
        // Relations are interned by IRI here and named afterwards.
        self.kg
            .add_triple(&subject, predicate, &object)
            .map_err(InputError::Spill)
    }
}

/// Reads an RDF file in `format` (plain or compressed, see `source.rs`) as
/// a stream. Syntax errors name the file and line.
pub fn read_rdf(
    path: &Path,
    format: Format,
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
        labels: Vec::new(),
    };
    match format {
        Format::Tsv => {}
        Format::Ntriples => {
            for t in oxttl::NTriplesParser::new().for_reader(reader) {
                let t = t.map_err(|e| parse_error(path, e))?;
                r.add(path, &t.subject, &t.predicate, &t.object)?;
            }
        }
        Format::Turtle => {
            for t in oxttl::TurtleParser::new().for_reader(reader) {
                let t = t.map_err(|e| parse_error(path, e))?;
                r.add(path, &t.subject, &t.predicate, &t.object)?;
            }
        }
        Format::Nquads => {
            for q in oxttl::NQuadsParser::new().for_reader(reader) {
                let q = q.map_err(|e| parse_error(path, e))?;
                r.add(path, &q.subject, &q.predicate, &q.object)?;
            }
        }
    }
    let Reading { kg, labels } = r;
    names::name_entities(path, kg, first_entity, &labels)?;
    names::name_relations(kg, first_relation);
    Ok(())
}
