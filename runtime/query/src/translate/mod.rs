//! Read-only openCypher path patterns and SPARQL basic graph patterns,
//! translated to the DSL (the inverse of [`crate::render`], same data model).
//!
//! Supported: `MATCH` clauses of path patterns over `(var:Entity {name:
//! '...'})` nodes and `-[:rel]->` / `<-[:rel]-` relationships, then `RETURN
//! [DISTINCT] var` or `var.name` (with `AS alias`); `[PREFIX ...] SELECT
//! [DISTINCT] ?var WHERE { triple patterns }` whose subjects and objects are
//! entity IRIs or variables and whose predicates are relation IRIs. The
//! pattern must be a tree around the answer variable in which every
//! variable leads to a named entity; anything else is refused with an error
//! naming the construct.

use std::collections::HashMap;

use crate::ast::{EntityRef, Query, RelationRef, Span};

mod cypher;
mod sparql;

pub use cypher::from_cypher;
pub use sparql::from_sparql;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TranslateError {
    #[error("unsupported {language}: {what} (supported: {supported})")]
    Unsupported {
        language: &'static str,
        what: String,
        supported: &'static str,
    },
    #[error("{language} syntax: {0}", language = .1)]
    Syntax(String, &'static str),
    #[error("the pattern {0}")]
    Shape(String),
}

pub(crate) const CYPHER_SUBSET: &str =
    "MATCH path patterns of (v:Entity {name: '...'}) nodes and -[:rel]-> / <-[:rel]- relationships, then RETURN [DISTINCT] v or v.name";
pub(crate) const SPARQL_SUBSET: &str =
    "[PREFIX ...] SELECT [DISTINCT] ?v WHERE { triple patterns of entity IRIs, relation IRIs and variables }";

/// A node of the pattern: a variable or a named entity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Term {
    Var(String),
    Entity(String),
}

/// The pattern: `subject -relation-> object` edges and the answer variable.
pub(crate) struct Pattern {
    pub(crate) edges: Vec<(Term, String, Term)>,
    pub(crate) answer: String,
}

// ------------------------------------------------------------------ shape

impl Pattern {
    /// The DSL query whose answers are the answer variable's bindings.
    pub(crate) fn to_query(&self) -> Result<Query, TranslateError> {
        let mut incident: HashMap<&Term, Vec<usize>> = HashMap::new();
        for (i, (s, _, o)) in self.edges.iter().enumerate() {
            incident.entry(s).or_default().push(i);
            if o != s {
                incident.entry(o).or_default().push(i);
            } else {
                return Err(TranslateError::Shape("has a self-loop".into()));
            }
        }
        let root = Term::Var(self.answer.clone());
        if !incident.contains_key(&root) {
            return Err(TranslateError::Shape(format!(
                "does not use the answer variable {}",
                self.answer
            )));
        }
        let mut used = vec![false; self.edges.len()];
        let q = self.build(&root, None, &incident, &mut used)?;
        if used.iter().any(|u| !u) {
            return Err(TranslateError::Shape(
                "has parts not connected to the answer variable, or a cycle".into(),
            ));
        }
        Ok(q)
    }

    fn build(
        &self,
        node: &Term,
        via: Option<usize>,
        incident: &HashMap<&Term, Vec<usize>>,
        used: &mut [bool],
    ) -> Result<Query, TranslateError> {
        let mut operands = Vec::new();
        if let Term::Entity(name) = node {
            operands.push(Query::Entity {
                entity: EntityRef::Name(name.clone()),
                span: Span::default(),
            });
        }
        for &e in incident.get(node).map(Vec::as_slice).unwrap_or(&[]) {
            if Some(e) == via {
                continue;
            }
            if used[e] {
                return Err(TranslateError::Shape(
                    "has a cycle (only tree-shaped patterns have a DSL form)".into(),
                ));
            }
            used[e] = true;
            let (s, r, o) = &self.edges[e];
            let (other, relation) = if o == node {
                (s, r.clone())
            } else {
                (o, format!("{r}_inv"))
            };
            let input = self.build(other, Some(e), incident, used)?;
            operands.push(Query::Project {
                input: Box::new(input),
                relation: RelationRef {
                    name: relation,
                    span: Span::default(),
                },
            });
        }
        match operands.len() {
            0 => Err(TranslateError::Shape(format!(
                "leaves variable {} unconstrained: every variable must lead to a named entity",
                match node {
                    Term::Var(v) | Term::Entity(v) => v,
                }
            ))),
            1 => Ok(operands.remove(0)),
            _ => Ok(Query::And {
                operands,
                span: Span::default(),
            }),
        }
    }
}

// ------------------------------------------------------------------ tokens

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tok {
    Word(String),
    Str(String),
    Iri(String),
    Var(String),
    Punct(char),
}

pub(crate) fn tokenize(text: &str, language: &'static str) -> Result<Vec<Tok>, TranslateError> {
    let syntax = |m: String| TranslateError::Syntax(m, language);
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(i, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '\'' || c == '"' {
            chars.next();
            let mut s = String::new();
            loop {
                match chars.next() {
                    None => return Err(syntax(format!("unterminated string at byte {i}"))),
                    Some((_, '\\')) => match chars.next() {
                        Some((_, 'n')) => s.push('\n'),
                        Some((_, 't')) => s.push('\t'),
                        Some((_, x)) => s.push(x),
                        None => return Err(syntax(format!("unterminated string at byte {i}"))),
                    },
                    Some((_, x)) if x == c => break,
                    Some((_, x)) => s.push(x),
                }
            }
            out.push(Tok::Str(s));
        } else if c == '`' {
            chars.next();
            let mut s = String::new();
            loop {
                match chars.next() {
                    None => return Err(syntax(format!("unterminated `name` at byte {i}"))),
                    Some((_, '`')) if chars.peek().map(|p| p.1) == Some('`') => {
                        chars.next();
                        s.push('`');
                    }
                    Some((_, '`')) => break,
                    Some((_, x)) => s.push(x),
                }
            }
            out.push(Tok::Word(s));
        } else if c == '<' && language == "SPARQL" {
            chars.next();
            let mut s = String::new();
            loop {
                match chars.next() {
                    None => return Err(syntax(format!("unterminated IRI at byte {i}"))),
                    Some((_, '>')) => break,
                    Some((_, x)) => s.push(x),
                }
            }
            out.push(Tok::Iri(s));
        } else if (c == '?' || c == '$') && language == "SPARQL" {
            chars.next();
            let mut s = String::new();
            while let Some(&(_, x)) = chars.peek() {
                if x.is_alphanumeric() || x == '_' {
                    s.push(x);
                    chars.next();
                } else {
                    break;
                }
            }
            if s.is_empty() {
                return Err(syntax(format!("empty variable name at byte {i}")));
            }
            out.push(Tok::Var(s));
        } else if c.is_alphanumeric() || c == '_' {
            let mut s = String::new();
            while let Some(&(_, x)) = chars.peek() {
                // Prefixed names (`e:Blade`) keep their colon in SPARQL.
                if x.is_alphanumeric() || x == '_' || (x == ':' && language == "SPARQL") {
                    s.push(x);
                    chars.next();
                } else {
                    break;
                }
            }
            out.push(Tok::Word(s));
        } else {
            chars.next();
            out.push(Tok::Punct(c));
        }
    }
    Ok(out)
}

pub(crate) fn is_kw(t: Option<&Tok>, kw: &str) -> bool {
    matches!(t, Some(Tok::Word(w)) if w.eq_ignore_ascii_case(kw))
}

pub(crate) fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::RenderOptions;

    fn dsl(q: Result<Query, TranslateError>) -> String {
        q.map(|q| q.to_string())
            .unwrap_or_else(|e| format!("ERR {e}"))
    }

    #[test]
    fn cypher_chains_and_branches() {
        assert_eq!(
            dsl(from_cypher(
                "MATCH (a:Entity {name: 'Blade Runner'})-[:directed_by]->(d)<-[:directed_by]-(m) RETURN DISTINCT m.name AS answer"
            )),
            "\"Blade Runner\" -> directed_by -> directed_by_inv"
        );
        let and = dsl(from_cypher(
            "MATCH (a {name: 'A'})<-[:starred_actors]-(m), (b {name: 'B'})<-[:directed_by]-(m) RETURN m",
        ));
        assert_eq!(
            and,
            "AND(\"A\" -> starred_actors_inv, \"B\" -> directed_by_inv)"
        );
        for (q, why) in [
            ("MATCH (a)-[:r]->(b) RETURN b", "unconstrained"),
            (
                "MATCH (a {name: 'A'})-[:r*1..2]->(b) RETURN b",
                "relationship patterns",
            ),
            (
                "MATCH (a {name: 'A'})-[:r]->(b) WHERE b.x = 1 RETURN b",
                "WHERE",
            ),
            ("CREATE (a)", "only MATCH"),
            ("MATCH (a {name: 'A'})-[:r]-(b) RETURN b", "undirected"),
            (
                "MATCH (a {name: 'A'})-[:r]->(b)-[:s]->(c), (c)-[:t]->(b) RETURN c",
                "cycle",
            ),
        ] {
            let got = dsl(from_cypher(q));
            assert!(got.starts_with("ERR") && got.contains(why), "{q}: {got}");
        }
    }

    #[test]
    fn sparql_bgps() {
        let o = RenderOptions::default();
        assert_eq!(
            dsl(from_sparql(
                "SELECT DISTINCT ?x WHERE { ?m <http://kgbox.local/r/directed_by> <http://kgbox.local/e/Ridley%20Scott> . ?m <http://kgbox.local/r/release_year> ?x }",
                &o
            )),
            "\"Ridley Scott\" -> directed_by_inv -> release_year"
        );
        assert_eq!(percent_decode("a%20b%é%"), "a b%é%");
        assert_eq!(
            dsl(from_sparql(
                "PREFIX e: <http://kgbox.local/e/> PREFIX r: <http://kgbox.local/r/> SELECT ?x { e:Alien r:directed_by ?x }",
                &o
            )),
            "\"Alien\" -> directed_by"
        );
        for (q, why) in [
            ("SELECT * WHERE { ?a <http://kgbox.local/r/r> ?b }", "projection"),
            ("SELECT ?b WHERE { ?a ?p ?b }", "variable predicate"),
            ("SELECT ?b WHERE { <http://kgbox.local/e/A> <http://kgbox.local/r/r> ?b OPTIONAL { } }", "OPTIONAL"),
            ("SELECT ?b WHERE { <http://kgbox.local/e/A> <http://kgbox.local/r/r> \"x\" }", "literal"),
            ("SELECT ?b WHERE { <http://other/A> <http://kgbox.local/r/r> ?b }", "IRI"),
            ("ASK { ?a ?b ?c }", "only SELECT"),
        ] {
            let got = dsl(from_sparql(q, &o));
            assert!(got.starts_with("ERR") && got.contains(why), "{q}: {got}");
        }
    }
}
