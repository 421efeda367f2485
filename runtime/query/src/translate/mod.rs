//! Read-only openCypher and SPARQL 1.1, translated to the DSL (the inverse
//! of [`crate::render`], same data model).
//!
//! Both languages are read into a [`group::Group`]: a graph pattern that
//! must be a tree around the answer variable, in which every variable leads
//! to a named entity (the DSL's shape). SPARQL is parsed by `spargebra`;
//! what lies outside the DSL (`LIMIT`, `ORDER BY`, tests on names) comes
//! back beside the query in a [`SparqlQuery`]. Anything else is refused
//! with an error naming the construct. The supported subset is listed in
//! docs/query-language.md.

mod cypher;
mod group;
pub mod iri;
mod modifiers;
mod names;
mod sparql;

#[cfg(test)]
mod tests;

pub use cypher::from_cypher;
pub use names::NameTest;
pub use sparql::{from_sparql, parse_sparql, Form, Order, SparqlQuery, NAME_PREDICATES};

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

/// Deepest bracket nesting a query text may have: the parsers recurse once
/// per level, and a deep enough text would overflow the stack.
pub const MAX_NESTING: usize = 64;

/// Most SPARQL negations (`!`) a text may have open at once. spargebra
/// parses the operand of each `!` twice (it first tries, and refuses, the
/// SPARQL 1.2 double negation), so the parse time doubles with each `!`
/// nested inside another: 28 of them took minutes, 12 take about 0.14 s
/// even in the fuzz build (address sanitizer), and 12 leave room for any
/// query a person writes.
pub const MAX_SPARQL_NEGATIONS: usize = 12;

/// Refuses a text whose `(`, `{` or `[` nest deeper than [`MAX_NESTING`],
/// or (SPARQL) with more than [`MAX_SPARQL_NEGATIONS`] `!` open at once,
/// before it reaches a recursive parser. Strings, IRIs (SPARQL's `<...>`
/// without spaces or brackets) and `#` comments (SPARQL) are skipped.
pub(crate) fn check_nesting(text: &str, language: &'static str) -> Result<(), TranslateError> {
    let sparql = language == "SPARQL";
    let bytes = text.as_bytes();
    let (mut depth, mut i) = (0usize, 0usize);
    // Negations open now, and their count when each open bracket opened
    // (restored when it closes): an over-count for siblings such as
    // `!a && !b`, exact for the nested chains that cost time.
    let (mut open_negations, mut at_open) = (0usize, Vec::new());
    while let Some(&b) = bytes.get(i) {
        match b {
            b'(' | b'{' | b'[' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(TranslateError::Syntax(
                        format!("brackets nest deeper than {MAX_NESTING} levels"),
                        language,
                    ));
                }
                at_open.push(open_negations);
            }
            b')' | b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if let Some(n) = at_open.pop() {
                    open_negations = n;
                }
            }
            b'!' if sparql && bytes.get(i + 1) != Some(&b'=') => {
                open_negations += 1;
                if open_negations > MAX_SPARQL_NEGATIONS {
                    return Err(TranslateError::Syntax(
                        format!("more than {MAX_SPARQL_NEGATIONS} negations (`!`) nest inside each other"),
                        language,
                    ));
                }
            }
            b'"' | b'\'' => {
                // To the closing quote (escapes skipped), or the end.
                i += 1;
                while let Some(&c) = bytes.get(i) {
                    if c == b'\\' {
                        i += 1;
                    } else if c == b {
                        break;
                    }
                    i += 1;
                }
            }
            b'<' if sparql => {
                let rest = bytes.get(i + 1..).unwrap_or_default();
                let end = rest.iter().position(|c| b" \t\r\n<>{}()[]\"".contains(c));
                if let Some(n) = end.filter(|&n| rest.get(n) == Some(&b'>')) {
                    i += n + 1;
                }
            }
            b'#' if sparql => {
                while bytes.get(i).is_some_and(|&c| c != b'\n') {
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// A SPARQL construct outside the supported subset.
pub(crate) fn unsupported_sparql(what: impl Into<String>) -> TranslateError {
    TranslateError::Unsupported {
        language: "SPARQL",
        what: what.into(),
        supported: SPARQL_SUBSET,
    }
}

pub(crate) const CYPHER_SUBSET: &str =
    "MATCH path patterns of (v:Entity {name: '...'}) nodes and -[:rel]-> / <-[:rel]- relationships, WHERE v.name = / <> / IN and [NOT] EXISTS { MATCH ... } joined by AND, then RETURN [DISTINCT] v or v.name; UNION of such queries";
pub(crate) const SPARQL_SUBSET: &str =
    "SELECT (one entity variable, optionally its rdfs:label) or ASK over a tree-shaped pattern of triple patterns, VALUES, UNION, FILTER (= != IN on entities, [NOT] EXISTS, tests on names), MINUS and property paths of / ^ |, with DISTINCT, ORDER BY, LIMIT and OFFSET";
