//! The RDF statements as the input gave them, for the bundle's `rdf.*`
//! sections (`kgbox_bundle::kg::statements`): every quad, its terms in
//! N-Quads syntax (literals with their datatype and language, blank nodes,
//! graph names), whatever the question-answering graph makes of them.
//!
//! Memory: the distinct terms once each, and 16 bytes per statement, until
//! the bundle is written. Past [`MAX_STATEMENTS`] they are dropped (the
//! bundle then answers SPARQL over the question-answering graph) with a
//! note in the pack log, as with `--no-rdf-statements`.

use oxrdf::{GraphName, NamedNode, NamedOrBlankNode, Term};
use sha2::{Digest, Sha256};

use super::interner::Interner;
use kgbox_bundle::kg::statements::{Quad, DEFAULT_GRAPH};

/// Statements kept at most (the in-memory triple limit).
pub const MAX_STATEMENTS: usize = super::DEFAULT_LIMIT;

/// The statements read so far.
#[derive(Debug, Default)]
pub struct RdfStatements {
    terms: Interner,
    quads: Vec<Quad>,
    /// Why they were dropped, when they were.
    dropped: Option<String>,
}

impl RdfStatements {
    pub fn add(
        &mut self,
        subject: &NamedOrBlankNode,
        predicate: &NamedNode,
        object: &Term,
        graph: &GraphName,
    ) {
        if self.dropped.is_some() {
            return;
        }
        if self.quads.len() >= MAX_STATEMENTS {
            self.drop_all(format!("more than {MAX_STATEMENTS} statements"));
            return;
        }
        let graph = match graph {
            GraphName::DefaultGraph => DEFAULT_GRAPH,
            named => self.terms.intern(&named.to_string()),
        };
        let quad = [
            self.terms.intern(&subject.to_string()),
            self.terms.intern(&predicate.to_string()),
            self.terms.intern(&object.to_string()),
            graph,
        ];
        self.quads.push(quad);
    }

    /// The labels of the blank nodes, as read.
    pub fn blank_labels(&self) -> Vec<String> {
        self.terms
            .iter()
            .filter_map(|t| t.strip_prefix("_:"))
            .map(str::to_string)
            .collect()
    }

    /// Relabels each blank node that `name` names (by a name that does not
    /// depend on the input's labels or statement order: its entity's name
    /// in the question-answering graph), so that neither does the bundle.
    pub fn relabel_blanks(&mut self, name: impl Fn(&str) -> Option<String>) {
        self.terms
            .rename(|_, term| match term.strip_prefix("_:").and_then(&name) {
                Some(n) => {
                    let digest = Sha256::digest(n.as_bytes());
                    format!("_:b{}", hex::encode(&digest[..12]))
                }
                None => term.to_string(),
            });
    }

    /// Forgets the statements, for `why`.
    pub fn drop_all(&mut self, why: String) {
        *self = RdfStatements {
            dropped: Some(why),
            ..RdfStatements::default()
        };
    }

    pub fn len(&self) -> usize {
        self.quads.len()
    }

    pub fn is_empty(&self) -> bool {
        self.quads.is_empty()
    }

    /// Distinct terms (graph names included).
    pub fn term_count(&self) -> usize {
        self.terms.len()
    }

    /// Why the statements were dropped, if they were.
    pub fn dropped(&self) -> Option<&str> {
        self.dropped.as_deref()
    }

    /// The encoded sections; none when there are no statements.
    pub fn encode(mut self) -> Vec<(&'static str, Vec<u8>)> {
        if self.quads.is_empty() {
            return Vec::new();
        }
        let terms: Vec<&str> = self.terms.iter().collect();
        kgbox_bundle::kg::statements::encode(&terms, &mut self.quads)
    }
}
