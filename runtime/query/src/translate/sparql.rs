//! SPARQL basic graph patterns to the DSL.

use std::collections::BTreeMap;

use super::{is_kw, percent_decode, tokenize, Pattern, Term, Tok, TranslateError, SPARQL_SUBSET};
use crate::ast::Query;
use crate::render::RenderOptions;

/// Translates a SPARQL `SELECT` over a basic graph pattern to the DSL.
pub fn from_sparql(text: &str, opts: &RenderOptions) -> Result<Query, TranslateError> {
    const L: &str = "SPARQL";
    let unsupported = |what: String| TranslateError::Unsupported {
        language: L,
        what,
        supported: SPARQL_SUBSET,
    };
    let toks = tokenize(text, L)?;
    let mut i = 0;
    let mut prefixes: BTreeMap<String, String> = BTreeMap::new();
    while is_kw(toks.get(i), "PREFIX") {
        match (toks.get(i + 1), toks.get(i + 2)) {
            (Some(Tok::Word(p)), Some(Tok::Iri(iri))) if p.ends_with(':') => {
                prefixes.insert(p.trim_end_matches(':').to_string(), iri.clone());
                i += 3;
            }
            _ => return Err(TranslateError::Syntax("PREFIX name: <iri>".into(), L)),
        }
    }
    if !is_kw(toks.get(i), "SELECT") {
        return Err(unsupported(format!(
            "{:?} (only SELECT queries)",
            toks.get(i)
        )));
    }
    i += 1;
    if is_kw(toks.get(i), "DISTINCT") || is_kw(toks.get(i), "REDUCED") {
        i += 1;
    }
    let answer = match (toks.get(i), toks.get(i + 1)) {
        (Some(Tok::Var(v)), next) if is_kw(next, "WHERE") || next == Some(&Tok::Punct('{')) => {
            v.clone()
        }
        _ => return Err(unsupported("a projection other than one variable".into())),
    };
    i += 1;
    if is_kw(toks.get(i), "WHERE") {
        i += 1;
    }
    if toks.get(i) != Some(&Tok::Punct('{')) {
        return Err(TranslateError::Syntax("expected `{` after WHERE".into(), L));
    }
    i += 1;
    let term = |t: &Tok| -> Result<Term, TranslateError> {
        let iri = match t {
            Tok::Var(v) => return Ok(Term::Var(v.clone())),
            Tok::Iri(iri) => iri.clone(),
            Tok::Word(w) if w.contains(':') => expand(w, &prefixes)?,
            Tok::Str(_) => return Err(unsupported("a literal (entities are IRIs)".into())),
            other => return Err(unsupported(format!("{other:?} as a subject or object"))),
        };
        match iri.strip_prefix(&opts.entity_ns) {
            Some(name) => Ok(Term::Entity(percent_decode(name))),
            None => Err(unsupported(format!(
                "the IRI <{iri}> (entities are <{}NAME>)",
                opts.entity_ns
            ))),
        }
    };
    let predicate = |t: &Tok| -> Result<String, TranslateError> {
        let iri = match t {
            Tok::Iri(iri) => iri.clone(),
            Tok::Word(w) if w.contains(':') => expand(w, &prefixes)?,
            Tok::Var(v) => return Err(unsupported(format!("a variable predicate ?{v}"))),
            other => return Err(unsupported(format!("{other:?} as a predicate"))),
        };
        iri.strip_prefix(&opts.relation_ns)
            .map(percent_decode)
            .ok_or_else(|| {
                unsupported(format!(
                    "the predicate <{iri}> (relations are <{}NAME>)",
                    opts.relation_ns
                ))
            })
    };
    let mut edges = Vec::new();
    loop {
        match toks.get(i) {
            Some(Tok::Punct('}')) => break,
            None => return Err(TranslateError::Syntax("missing `}`".into(), L)),
            Some(Tok::Word(w)) if !w.contains(':') => {
                return Err(unsupported(format!("`{w}` in the pattern")))
            }
            Some(Tok::Punct('{')) => return Err(unsupported("nested groups or UNION".into())),
            _ => {}
        }
        let (s, p, o) = match (toks.get(i), toks.get(i + 1), toks.get(i + 2)) {
            (Some(s), Some(p), Some(o)) => (term(s)?, predicate(p)?, term(o)?),
            _ => {
                return Err(TranslateError::Syntax(
                    "incomplete triple pattern".into(),
                    L,
                ))
            }
        };
        edges.push((s, p, o));
        i += 3;
        match toks.get(i) {
            Some(Tok::Punct('.')) => i += 1,
            Some(Tok::Punct('}')) => {}
            Some(Tok::Punct(c @ (';' | ','))) => {
                return Err(unsupported(format!(
                    "`{c}` abbreviations (write each triple)"
                )))
            }
            other => {
                return Err(TranslateError::Syntax(
                    format!("expected `.` or `}}`, found {other:?}"),
                    L,
                ))
            }
        }
    }
    if let Some(t) = toks.get(i + 1) {
        return Err(unsupported(format!(
            "{t:?} after the pattern (no modifiers)"
        )));
    }
    Pattern { edges, answer }.to_query()
}

fn expand(word: &str, prefixes: &BTreeMap<String, String>) -> Result<String, TranslateError> {
    let (p, local) = word.split_once(':').unwrap_or(("", word));
    prefixes
        .get(p)
        .map(|ns| format!("{ns}{local}"))
        .ok_or_else(|| TranslateError::Syntax(format!("undeclared prefix `{p}:`"), "SPARQL"))
}
