//! Read-only openCypher to the DSL.
//!
//! Accepted: `MATCH` clauses of path patterns over `(v:Label {name:
//! '...'})` nodes and `-[:rel]->` / `<-[:rel]-` relationships, each clause
//! with an optional `WHERE` of conditions joined by `AND`: `v.name = '...'`,
//! `v.name <> '...'`, `v.name IN [...]`, `[NOT] EXISTS { MATCH ... }`;
//! then `RETURN [DISTINCT] v` or `v.name` (with `AS alias`); whole queries
//! joined by `UNION [ALL]`. This is everything [`crate::render`] writes.

mod lex;

use std::collections::HashMap;

use lex::{describe, is_kw, tokenize, Tok};

use super::group::{Edge, Group, Sub, Term};
use super::{TranslateError, CYPHER_SUBSET};
use crate::ast::{EntityRef, Query, Span};

const L: &str = "openCypher";

fn unsupported(what: impl Into<String>) -> TranslateError {
    TranslateError::Unsupported {
        language: L,
        what: what.into(),
        supported: CYPHER_SUBSET,
    }
}

fn syntax(m: impl Into<String>) -> TranslateError {
    TranslateError::Syntax(m.into(), L)
}

/// Translates a read-only openCypher query to the DSL.
pub fn from_cypher(text: &str) -> Result<Query, TranslateError> {
    super::check_nesting(text, L)?;
    let toks = tokenize(text)?;
    let mut p = Parser {
        toks: &toks,
        i: 0,
        anon: 0,
    };
    let mut branches = vec![p.single()?];
    while is_kw(p.peek(), "UNION") {
        p.i += 1;
        if is_kw(p.peek(), "ALL") {
            p.i += 1;
        }
        branches.push(p.single()?);
    }
    if let Some(t) = p.peek() {
        return Err(unsupported(format!(
            "{t} after RETURN (one item; no ORDER BY, SKIP or LIMIT)"
        )));
    }
    let mut operands = Vec::new();
    for (group, answer) in &branches {
        // A branch that names an entity the bundle lacks is still a query:
        // binding reports the name.
        if let Some(q) = group.to_query(answer)? {
            operands.push(q);
        }
    }
    match operands.len() {
        0 => Err(TranslateError::Shape("matches nothing".into())),
        1 => Ok(operands.remove(0)),
        _ => Ok(Query::Or {
            operands,
            span: Span::default(),
        }),
    }
}

struct Parser<'t> {
    toks: &'t [Tok],
    i: usize,
    anon: usize,
}

/// Variable names in scope, each a pattern variable or a fixed entity.
type Scope = HashMap<String, Term>;

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i)
    }

    fn at(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.i + k)
    }

    fn expect(&mut self, c: char) -> Result<(), TranslateError> {
        if self.peek() == Some(&Tok::Punct(c)) {
            self.i += 1;
            Ok(())
        } else {
            Err(syntax(format!(
                "expected `{c}`, found {}",
                describe(self.peek())
            )))
        }
    }

    /// `MATCH ... RETURN v`: the pattern and its answer variable.
    fn single(&mut self) -> Result<(Group, String), TranslateError> {
        let mut scope = Scope::new();
        let mut group = Group::default();
        if !is_kw(self.peek(), "MATCH") {
            return Err(unsupported(format!(
                "{} (only MATCH ... RETURN)",
                describe(self.peek())
            )));
        }
        self.clauses(&mut scope, &mut group)?;
        if !is_kw(self.peek(), "RETURN") {
            return Err(unsupported(format!(
                "{} (no OPTIONAL MATCH, WITH or writing clauses)",
                describe(self.peek())
            )));
        }
        self.i += 1;
        if is_kw(self.peek(), "DISTINCT") {
            self.i += 1;
        }
        let var = match self.peek() {
            Some(Tok::Word(v)) => v.clone(),
            other => {
                return Err(syntax(format!(
                    "RETURN needs a variable, found {}",
                    describe(other)
                )))
            }
        };
        self.i += 1;
        if self.peek() == Some(&Tok::Punct('.')) && self.at(1) == Some(&Tok::Word("name".into())) {
            self.i += 2;
        }
        if is_kw(self.peek(), "AS") {
            self.i += 2;
        }
        match scope.get(&var) {
            Some(Term::Var(v)) => Ok((group, v.clone())),
            Some(_) => Err(unsupported(format!(
                "returning {var}, a node fixed by name"
            ))),
            None => Err(syntax(format!(
                "RETURN names {var}, which no pattern binds"
            ))),
        }
    }

    /// `MATCH patterns [WHERE conditions]`, repeated.
    fn clauses(&mut self, scope: &mut Scope, g: &mut Group) -> Result<(), TranslateError> {
        while is_kw(self.peek(), "MATCH") {
            self.i += 1;
            loop {
                self.path(scope, g)?;
                if self.peek() == Some(&Tok::Punct(',')) {
                    self.i += 1;
                    continue;
                }
                break;
            }
            if is_kw(self.peek(), "WHERE") {
                self.i += 1;
                self.conditions(scope, g)?;
            }
        }
        Ok(())
    }

    /// `condition (AND condition)*`.
    fn conditions(&mut self, scope: &Scope, g: &mut Group) -> Result<(), TranslateError> {
        loop {
            self.condition(scope, g, false)?;
            if is_kw(self.peek(), "AND") {
                self.i += 1;
                continue;
            }
            if is_kw(self.peek(), "OR") || is_kw(self.peek(), "XOR") {
                return Err(unsupported("OR in WHERE (write a UNION of whole queries)"));
            }
            return Ok(());
        }
    }

    fn condition(
        &mut self,
        scope: &Scope,
        g: &mut Group,
        mut negated: bool,
    ) -> Result<(), TranslateError> {
        while is_kw(self.peek(), "NOT") {
            self.i += 1;
            negated = !negated;
        }
        if self.peek() == Some(&Tok::Punct('(')) {
            if negated {
                return Err(unsupported("NOT (...) around conditions"));
            }
            self.i += 1;
            self.conditions(scope, g)?;
            return self.expect(')');
        }
        if is_kw(self.peek(), "EXISTS") {
            self.i += 1;
            self.expect('{')?;
            let mut inner_scope = scope.clone();
            let mut inner = Group::default();
            if is_kw(self.peek(), "MATCH") {
                self.clauses(&mut inner_scope, &mut inner)?;
            } else {
                self.path(&mut inner_scope, &mut inner)?;
                if is_kw(self.peek(), "WHERE") {
                    self.i += 1;
                    self.conditions(&inner_scope, &mut inner)?;
                }
            }
            self.expect('}')?;
            g.subs.push(Sub {
                branches: vec![inner],
                negated,
            });
            return Ok(());
        }
        // v.name (= | <> | IN) value
        let var = match (self.peek(), self.at(1), self.at(2)) {
            (Some(Tok::Word(v)), Some(Tok::Punct('.')), Some(Tok::Word(p))) if p == "name" => v.clone(),
            _ => {
                return Err(unsupported(format!(
                    "the condition at {} (conditions: v.name = '...', v.name <> '...', v.name IN [...], [NOT] EXISTS {{ MATCH ... }})",
                    describe(self.peek())
                )))
            }
        };
        self.i += 3;
        let v = match scope.get(&var) {
            Some(Term::Var(v)) => v.clone(),
            Some(_) => {
                return Err(unsupported(format!(
                    "a condition on {var}, a node fixed by name"
                )))
            }
            None => return Err(syntax(format!("WHERE names {var}, which no pattern binds"))),
        };
        let entity = |s: &str| Term::Entity(EntityRef::Name(s.to_string()));
        let op = match (self.peek(), self.at(1)) {
            (Some(Tok::Punct('<')), Some(Tok::Punct('>')))
            | (Some(Tok::Punct('!')), Some(Tok::Punct('='))) => {
                self.i += 2;
                "<>"
            }
            (Some(Tok::Punct('=')), _) => {
                self.i += 1;
                "="
            }
            (Some(t), _) if is_kw(Some(t), "IN") => {
                self.i += 1;
                "IN"
            }
            (other, _) => {
                return Err(unsupported(format!(
                    "the comparison {} (=, <> or IN)",
                    describe(other)
                )))
            }
        };
        let values = if op == "IN" {
            self.expect('[')?;
            let mut out = Vec::new();
            while let Some(Tok::Str(s)) = self.peek() {
                out.push(entity(s));
                self.i += 1;
                if self.peek() == Some(&Tok::Punct(',')) {
                    self.i += 1;
                }
            }
            self.expect(']')?;
            out
        } else {
            match self.peek() {
                Some(Tok::Str(s)) => {
                    let t = entity(s);
                    self.i += 1;
                    vec![t]
                }
                other => {
                    return Err(syntax(format!(
                        "expected a string, found {}",
                        describe(other)
                    )))
                }
            }
        };
        if (op == "<>") != negated {
            g.excluded
                .extend(values.into_iter().map(|t| (v.clone(), t)));
        } else if values.len() == 1 || !negated {
            g.values.push((v, values));
        } else {
            return Err(unsupported("NOT with IN"));
        }
        Ok(())
    }

    /// `node (rel node)*`.
    fn path(&mut self, scope: &mut Scope, g: &mut Group) -> Result<(), TranslateError> {
        let mut left = self.node(scope)?;
        loop {
            let back = match (self.peek(), self.at(1)) {
                (Some(Tok::Punct('<')), Some(Tok::Punct('-'))) => true,
                (Some(Tok::Punct('-')), Some(Tok::Punct('['))) => false,
                (Some(Tok::Punct('-')), Some(Tok::Punct('-'))) => {
                    return Err(unsupported("relationships without a type"))
                }
                _ => return Ok(()),
            };
            self.i += if back { 2 } else { 1 };
            let rel = match (self.peek(), self.at(1), self.at(2), self.at(3)) {
                (
                    Some(Tok::Punct('[')),
                    Some(Tok::Punct(':')),
                    Some(Tok::Word(r)),
                    Some(Tok::Punct(']')),
                ) => r.clone(),
                _ => {
                    return Err(unsupported(
                        "relationship patterns other than [:type] (no variables, lengths or properties)",
                    ))
                }
            };
            self.i += 4;
            let arrow = if back {
                self.peek() == Some(&Tok::Punct('-'))
            } else {
                self.peek() == Some(&Tok::Punct('-')) && self.at(1) == Some(&Tok::Punct('>'))
            };
            if !arrow {
                return Err(unsupported("undirected relationships"));
            }
            self.i += if back { 1 } else { 2 };
            let right = self.node(scope)?;
            let (subject, object) = if back {
                (right.clone(), left)
            } else {
                (left, right.clone())
            };
            g.edges.push(Edge {
                subject,
                relation: Some(rel),
                object,
            });
            left = right;
        }
    }

    /// `(v:Label {name: '...'})`.
    fn node(&mut self, scope: &mut Scope) -> Result<Term, TranslateError> {
        self.expect('(')?;
        let var = match self.peek() {
            Some(Tok::Word(w)) => {
                let w = w.clone();
                self.i += 1;
                Some(w)
            }
            _ => None,
        };
        if self.peek() == Some(&Tok::Punct(':')) {
            match self.at(1) {
                Some(Tok::Word(label)) if label == "Entity" => self.i += 2,
                other => {
                    return Err(unsupported(format!(
                        "the label {} (nodes are :Entity)",
                        describe(other)
                    )))
                }
            }
        }
        let mut name = None;
        if self.peek() == Some(&Tok::Punct('{')) {
            match (self.at(1), self.at(2), self.at(3), self.at(4)) {
                (
                    Some(Tok::Word(k)),
                    Some(Tok::Punct(':')),
                    Some(Tok::Str(v)),
                    Some(Tok::Punct('}')),
                ) if k == "name" => {
                    name = Some(v.clone());
                    self.i += 5;
                }
                _ => return Err(unsupported("node properties other than {name: '...'}")),
            }
        }
        self.expect(')')?;
        let term = match (&var, name) {
            (_, Some(n)) => Term::Entity(EntityRef::Name(n)),
            (Some(v), None) => Term::Var(v.clone()),
            (None, None) => {
                self.anon += 1;
                Term::Var(format!(" anon{}", self.anon))
            }
        };
        let Some(v) = var else {
            return Ok(term);
        };
        match scope.get(&v) {
            Some(prev) if matches!(term, Term::Entity(_)) && prev != &term => Err(unsupported(
                format!("variable {v} bound to two different nodes"),
            )),
            Some(prev) => Ok(prev.clone()),
            None => {
                scope.insert(v, term.clone());
                Ok(term)
            }
        }
    }
}
