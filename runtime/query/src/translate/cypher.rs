//! openCypher path patterns to the DSL.

use std::collections::HashMap;

use super::{is_kw, tokenize, Pattern, Term, Tok, TranslateError, CYPHER_SUBSET};
use crate::ast::Query;

/// Translates a read-only openCypher `MATCH ... RETURN` to the DSL.
pub fn from_cypher(text: &str) -> Result<Query, TranslateError> {
    const L: &str = "openCypher";
    let unsupported = |what: String| TranslateError::Unsupported {
        language: L,
        what,
        supported: CYPHER_SUBSET,
    };
    let syntax = |m: &str| TranslateError::Syntax(m.to_string(), L);
    let toks = tokenize(text, L)?;
    let mut i = 0;
    let mut edges = Vec::new();
    let mut names: HashMap<String, Term> = HashMap::new();
    let mut anon = 0usize;
    if !is_kw(toks.first(), "MATCH") {
        return Err(unsupported(format!(
            "{:?} (only MATCH ... RETURN)",
            toks.first()
        )));
    }
    // Parses `(v:Label {name: '...'})` into its term.
    let mut node =
        |i: &mut usize, names: &mut HashMap<String, Term>| -> Result<Term, TranslateError> {
            if toks.get(*i) != Some(&Tok::Punct('(')) {
                return Err(syntax("expected `(`"));
            }
            *i += 1;
            let var = match toks.get(*i) {
                Some(Tok::Word(w)) => {
                    *i += 1;
                    Some(w.clone())
                }
                _ => None,
            };
            if toks.get(*i) == Some(&Tok::Punct(':')) {
                *i += 2; // any label
            }
            let mut name = None;
            if toks.get(*i) == Some(&Tok::Punct('{')) {
                match (
                    toks.get(*i + 1),
                    toks.get(*i + 2),
                    toks.get(*i + 3),
                    toks.get(*i + 4),
                ) {
                    (
                        Some(Tok::Word(k)),
                        Some(Tok::Punct(':')),
                        Some(Tok::Str(v)),
                        Some(Tok::Punct('}')),
                    ) if k == "name" => {
                        name = Some(v.clone());
                        *i += 5;
                    }
                    _ => {
                        return Err(unsupported(
                            "node properties other than {name: '...'}".into(),
                        ))
                    }
                }
            }
            if toks.get(*i) != Some(&Tok::Punct(')')) {
                return Err(syntax("expected `)`"));
            }
            *i += 1;
            let term = match (&var, name) {
                (_, Some(n)) => Term::Entity(n),
                (Some(v), None) => Term::Var(v.clone()),
                (None, None) => {
                    anon += 1;
                    Term::Var(format!(" anon{anon}"))
                }
            };
            if let Some(v) = var {
                match names.get(&v) {
                    Some(prev) if matches!(term, Term::Entity(_)) && prev != &term => {
                        return Err(unsupported(format!(
                            "variable {v} bound to two different nodes"
                        )))
                    }
                    Some(prev) if matches!(term, Term::Var(_)) => return Ok(prev.clone()),
                    _ => {
                        names.insert(v, term.clone());
                    }
                }
            }
            Ok(term)
        };
    while is_kw(toks.get(i), "MATCH") {
        i += 1;
        loop {
            let mut left = node(&mut i, &mut names)?;
            loop {
                let (back, fwd) = match (toks.get(i), toks.get(i + 1)) {
                    (Some(Tok::Punct('<')), Some(Tok::Punct('-'))) => (true, false),
                    (Some(Tok::Punct('-')), Some(Tok::Punct('['))) => (false, true),
                    (Some(Tok::Punct('-')), Some(Tok::Punct('-'))) => {
                        return Err(unsupported("relationships without a type".into()))
                    }
                    _ => break,
                };
                i += if back { 2 } else { 1 };
                let rel = match (toks.get(i), toks.get(i + 1), toks.get(i + 2), toks.get(i + 3)) {
                    (Some(Tok::Punct('[')), Some(Tok::Punct(':')), Some(Tok::Word(r)), Some(Tok::Punct(']'))) => {
                        r.clone()
                    }
                    _ => {
                        return Err(unsupported(
                            "relationship patterns other than [:type] (no variables, lengths or properties)".into(),
                        ))
                    }
                };
                i += 4;
                let arrow_ok = if back {
                    toks.get(i) == Some(&Tok::Punct('-'))
                } else {
                    toks.get(i) == Some(&Tok::Punct('-'))
                        && toks.get(i + 1) == Some(&Tok::Punct('>'))
                };
                if !arrow_ok {
                    return Err(unsupported("undirected relationships".into()));
                }
                i += if back { 1 } else { 2 };
                let right = node(&mut i, &mut names)?;
                if fwd {
                    edges.push((left.clone(), rel, right.clone()));
                } else {
                    edges.push((right.clone(), rel, left.clone()));
                }
                left = right;
            }
            if toks.get(i) == Some(&Tok::Punct(',')) {
                i += 1;
                continue;
            }
            break;
        }
    }
    if !is_kw(toks.get(i), "RETURN") {
        return Err(unsupported(format!(
            "{} (no WHERE, OPTIONAL MATCH, WITH or writing clauses)",
            match toks.get(i) {
                Some(Tok::Word(w)) => w.clone(),
                other => format!("{other:?}"),
            }
        )));
    }
    i += 1;
    if is_kw(toks.get(i), "DISTINCT") {
        i += 1;
    }
    let var = match toks.get(i) {
        Some(Tok::Word(v)) => v.clone(),
        _ => return Err(syntax("RETURN needs a variable")),
    };
    i += 1;
    if toks.get(i) == Some(&Tok::Punct('.')) && toks.get(i + 1) == Some(&Tok::Word("name".into())) {
        i += 2;
    }
    if is_kw(toks.get(i), "AS") {
        i += 2;
    }
    if let Some(t) = toks.get(i) {
        return Err(unsupported(format!(
            "{t:?} after RETURN (one item, no ORDER BY/LIMIT)"
        )));
    }
    let answer = match names.get(&var) {
        Some(Term::Var(v)) => v.clone(),
        Some(Term::Entity(_)) => {
            return Err(unsupported(format!(
                "returning {var}, a node fixed by name"
            )))
        }
        None => {
            return Err(syntax(&format!(
                "RETURN names {var}, which no pattern binds"
            )))
        }
    };
    Pattern { edges, answer }.to_query()
}
