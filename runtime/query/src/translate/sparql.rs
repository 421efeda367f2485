//! SPARQL 1.1 queries (parsed by `spargebra`) to the DSL.
//!
//! The algebra is read into a [`Group`] (triple patterns, `VALUES`,
//! `FILTER`s, `UNION`, `EXISTS`, `NOT EXISTS`, `MINUS`, property paths of
//! sequences, inverses and alternatives), whose tree around the answer
//! variable is the DSL query; `LIMIT`, `OFFSET`, `ORDER BY` and filters on
//! an answer's name (bound by `rdfs:label`, `skos:prefLabel` or
//! `schema:name`) stay in [`SparqlQuery`] for the caller to apply to the
//! answers. Anything else is refused with an error naming it.

use std::collections::BTreeSet;

use kgbox_bundle::Kg;
use spargebra::algebra::{Expression, GraphPattern, PropertyPathExpression};
use spargebra::term::{GroundTerm, NamedNodePattern, TermPattern};
use spargebra::SparqlParser;

use super::group::{Edge, Group, Sub, Term};
use super::iri;
use super::modifiers::Modifiers;
use super::names::{name_test, NameTest};
use super::{unsupported_sparql as unsupported, TranslateError};
use crate::ast::{EntityRef, Query};
use crate::render::RenderOptions;

const L: &str = "SPARQL";

/// Predicates whose object is an entity's name rather than an edge.
pub const NAME_PREDICATES: [&str; 4] = [
    "http://www.w3.org/2000/01/rdf-schema#label",
    "http://www.w3.org/2004/02/skos/core#prefLabel",
    "http://schema.org/name",
    "https://schema.org/name",
];

/// What the query asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Form {
    /// Rows of the answer variable (and its name, when projected).
    Select {
        answer: String,
        /// The variable bound to the answer's name, when projected.
        name: Option<String>,
        /// The projected variables, in order.
        columns: Vec<String>,
    },
    /// Whether any answer exists.
    Ask,
}

/// The order `ORDER BY` asks for: by the answer's term or its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Order {
    pub by_name: bool,
    pub descending: bool,
}

/// A SPARQL query in kgbox's terms.
#[derive(Debug, Clone)]
pub struct SparqlQuery {
    pub form: Form,
    /// The DSL query of the answer variable; `None`: no answer can match
    /// (the query names something the bundle does not have). Its
    /// anchors are explicit: run it with `exclude_anchors` off.
    pub query: Option<Query>,
    /// Tests on an answer's name, all of which must hold.
    pub name_tests: Vec<NameTest>,
    pub order: Option<Order>,
    pub offset: usize,
    pub limit: Option<usize>,
}

/// Parses SPARQL 1.1 Query `text`, after refusing nesting that would
/// keep the recursive parser busy for minutes (`check_nesting`): every
/// SPARQL text goes through here.
pub fn parse_sparql(text: &str) -> Result<spargebra::Query, TranslateError> {
    super::check_nesting(text, L)?;
    SparqlParser::new()
        .parse_query(text)
        .map_err(|e| TranslateError::Syntax(e.to_string(), L))
}

/// Parses SPARQL `text` and translates it against `kg`'s terms.
pub fn from_sparql(
    kg: &Kg<'_>,
    text: &str,
    opts: &RenderOptions,
) -> Result<SparqlQuery, TranslateError> {
    let parsed = parse_sparql(text)?;
    let (pattern, ask, dataset) = match parsed {
        spargebra::Query::Select {
            pattern, dataset, ..
        } => (pattern, false, dataset),
        spargebra::Query::Ask {
            pattern, dataset, ..
        } => (pattern, true, dataset),
        spargebra::Query::Construct { .. } => {
            return Err(unsupported("CONSTRUCT (only SELECT and ASK)"))
        }
        spargebra::Query::Describe { .. } => {
            return Err(unsupported("DESCRIBE (only SELECT and ASK)"))
        }
    };
    if dataset.is_some() {
        return Err(unsupported(
            "FROM / FROM NAMED (the bundle is one default graph)",
        ));
    }
    let mut m = Modifiers::default();
    let inner = m.peel(&pattern)?;
    let mut reader = Reader {
        kg,
        opts,
        names: Vec::new(),
        name_filters: Vec::new(),
        depth: 0,
        fresh: 0,
    };
    let mut group = Group::default();
    reader.pattern(inner, &mut group)?;
    let vars = group.vars();
    let named: BTreeSet<&String> = reader.names.iter().map(|(_, n)| n).collect();
    let form = if ask {
        Form::Ask
    } else {
        let columns = match &m.project {
            Some(vs) => vs.clone(),
            None => vars
                .iter()
                .chain(named.iter().copied())
                .filter(|v| !v.starts_with('_') && !v.starts_with(' '))
                .cloned()
                .collect(),
        };
        let entity_columns: Vec<&String> = columns.iter().filter(|c| !named.contains(c)).collect();
        let answer = match entity_columns.as_slice() {
            [one] => (*one).clone(),
            [] => return Err(unsupported("a projection without an entity variable")),
            more => {
                return Err(unsupported(format!(
                    "projecting {} entity variables ({}): kgbox answers one variable, optionally with its name",
                    more.len(),
                    more.iter().map(|v| format!("?{v}")).collect::<Vec<_>>().join(" ")
                )))
            }
        };
        let name = columns.iter().find(|c| named.contains(c)).cloned();
        Form::Select {
            answer,
            name,
            columns,
        }
    };
    // The name variables must belong to the answer.
    let answer_var = match &form {
        Form::Select { answer, .. } => Some(answer.clone()),
        Form::Ask => None,
    };
    for (owner, _) in &reader.names {
        if Some(owner) != answer_var.as_ref() {
            return Err(unsupported(format!(
                "the name of ?{owner}, which is not the answer variable"
            )));
        }
    }
    let mut name_tests = Vec::new();
    for e in &reader.name_filters {
        let name_var = reader
            .names
            .iter()
            .map(|(_, n)| n)
            .find(|n| mentions(e, n))
            .ok_or_else(|| unsupported(format!("FILTER {e}")))?;
        name_tests.push(name_test(e, name_var).map_err(unsupported)?);
    }
    let query = match &answer_var {
        Some(a) => group.to_query(a)?,
        None => match vars.iter().next() {
            Some(root) => group.to_query(root)?,
            None => group.ground_query()?,
        },
    };
    let order = match &m.order {
        None => None,
        Some((var, descending)) => {
            let by_name = named.contains(var);
            if !by_name && Some(var) != answer_var.as_ref() {
                return Err(unsupported(format!(
                    "ORDER BY ?{var} (only the answer variable or its name)"
                )));
            }
            Some(Order {
                by_name,
                descending: *descending,
            })
        }
    };
    Ok(SparqlQuery {
        form,
        query,
        name_tests,
        order,
        offset: m.offset,
        limit: m.limit,
    })
}

/// Reads the algebra into a [`Group`].
struct Reader<'a, 'k> {
    kg: &'a Kg<'k>,
    opts: &'a RenderOptions,
    /// `(entity variable, name variable)` of `?x rdfs:label ?n` patterns.
    names: Vec<(String, String)>,
    /// Filters on name variables, applied to the answers.
    name_filters: Vec<Expression>,
    /// How deep in sub-patterns (UNION, EXISTS, MINUS) the reader is.
    depth: usize,
    fresh: usize,
}

impl Reader<'_, '_> {
    fn pattern(&mut self, p: &GraphPattern, g: &mut Group) -> Result<(), TranslateError> {
        match p {
            GraphPattern::Bgp { patterns } => {
                for t in patterns {
                    let predicate = match &t.predicate {
                        NamedNodePattern::NamedNode(n) => n.as_str(),
                        NamedNodePattern::Variable(v) => {
                            return Err(unsupported(format!(
                                "a variable predicate ?{}",
                                v.as_str()
                            )))
                        }
                    };
                    self.triple(&t.subject, predicate, &t.object, g)?;
                }
            }
            GraphPattern::Path {
                subject,
                path,
                object,
            } => {
                let s = self.term(subject)?;
                let o = self.term(object)?;
                self.path(s, path, o, g)?;
            }
            GraphPattern::Join { left, right } => {
                self.pattern(left, g)?;
                self.pattern(right, g)?;
            }
            GraphPattern::Filter { expr, inner } => {
                self.pattern(inner, g)?;
                self.filter(expr, g)?;
            }
            GraphPattern::Union { left, right } => {
                let mut branches = Vec::new();
                for side in [left, right] {
                    self.union_branches(side, &mut branches)?;
                }
                g.subs.push(Sub {
                    branches,
                    negated: false,
                });
            }
            GraphPattern::Minus { left, right } => {
                self.pattern(left, g)?;
                let b = self.sub_group(right)?;
                g.subs.push(Sub {
                    branches: vec![b],
                    negated: true,
                });
            }
            GraphPattern::Values {
                variables,
                bindings,
            } => {
                let [v] = variables.as_slice() else {
                    return Err(unsupported("VALUES over several variables (one at a time)"));
                };
                let mut set = Vec::new();
                for row in bindings {
                    match row.first() {
                        Some(Some(t)) => set.push(self.ground(t)?),
                        _ => return Err(unsupported("UNDEF in VALUES")),
                    }
                }
                g.values.push((v.as_str().to_string(), set));
            }
            GraphPattern::LeftJoin { .. } => return Err(unsupported("OPTIONAL")),
            GraphPattern::Graph { .. } => return Err(unsupported("GRAPH (one default graph)")),
            GraphPattern::Service { .. } => return Err(unsupported("SERVICE (no federation)")),
            GraphPattern::Extend { .. } => return Err(unsupported("BIND")),
            GraphPattern::Group { .. } => return Err(unsupported("GROUP BY and aggregates")),
            GraphPattern::Project { .. } => {
                return Err(unsupported("sub-queries (SELECT in WHERE)"))
            }
            GraphPattern::OrderBy { .. }
            | GraphPattern::Slice { .. }
            | GraphPattern::Distinct { .. }
            | GraphPattern::Reduced { .. } => {
                return Err(unsupported("sub-queries (SELECT in WHERE)"))
            }
            #[allow(unreachable_patterns)]
            _ => return Err(unsupported("this graph pattern")),
        }
        Ok(())
    }

    /// `{ A } UNION { B } UNION { C }` as branches A, B, C.
    fn union_branches(
        &mut self,
        p: &GraphPattern,
        out: &mut Vec<Group>,
    ) -> Result<(), TranslateError> {
        if let GraphPattern::Union { left, right } = p {
            self.union_branches(left, out)?;
            return self.union_branches(right, out);
        }
        out.push(self.sub_group(p)?);
        Ok(())
    }

    fn triple(
        &mut self,
        subject: &TermPattern,
        predicate: &str,
        object: &TermPattern,
        g: &mut Group,
    ) -> Result<(), TranslateError> {
        let s = self.term(subject)?;
        let is_relation =
            iri::relation_by_iri(self.kg, predicate, self.opts.namespaces()).is_some();
        if NAME_PREDICATES.contains(&predicate) && !is_relation {
            let Term::Var(owner) = s else {
                return Err(unsupported("a name pattern on a fixed entity"));
            };
            match object {
                TermPattern::Variable(n) => {
                    self.names.push((owner, n.as_str().to_string()));
                }
                TermPattern::Literal(l) => {
                    let named: Vec<Term> = iri::entities_named(self.kg, l.value())
                        .into_iter()
                        .map(|id| Term::Entity(EntityRef::Id(id)))
                        .collect();
                    g.values.push((owner, named));
                }
                _ => return Err(unsupported("a name that is not a literal or a variable")),
            }
            return Ok(());
        }
        let o = self.term(object)?;
        let relation = self.relation(predicate);
        g.edges.push(Edge {
            subject: s,
            relation,
            object: o,
        });
        Ok(())
    }

    fn relation(&self, iri: &str) -> Option<String> {
        let id = iri::relation_by_iri(self.kg, iri, self.opts.namespaces())?;
        self.kg.relation_name(id).map(str::to_string)
    }

    fn path(
        &mut self,
        s: Term,
        path: &PropertyPathExpression,
        o: Term,
        g: &mut Group,
    ) -> Result<(), TranslateError> {
        match path {
            PropertyPathExpression::NamedNode(n) => g.edges.push(Edge {
                subject: s,
                relation: self.relation(n.as_str()),
                object: o,
            }),
            PropertyPathExpression::Reverse(p) => self.path(o, p, s, g)?,
            PropertyPathExpression::Sequence(a, b) => {
                self.fresh += 1;
                // A name no query can spell.
                let mid = Term::Var(format!(" path{}", self.fresh));
                self.path(s, a, mid.clone(), g)?;
                self.path(mid, b, o, g)?;
            }
            PropertyPathExpression::Alternative(a, b) => {
                let mut branches = Vec::new();
                for p in [a, b] {
                    let mut branch = Group::default();
                    self.depth += 1;
                    let r = self.path(s.clone(), p, o.clone(), &mut branch);
                    self.depth -= 1;
                    r?;
                    branches.push(branch);
                }
                g.subs.push(Sub {
                    branches,
                    negated: false,
                });
            }
            PropertyPathExpression::ZeroOrMore(_)
            | PropertyPathExpression::OneOrMore(_)
            | PropertyPathExpression::ZeroOrOne(_) => {
                return Err(unsupported(
                    "property paths with *, + or ? (the executor walks a fixed number of hops)",
                ))
            }
            PropertyPathExpression::NegatedPropertySet(_) => {
                return Err(unsupported("negated property sets (!p)"))
            }
        }
        Ok(())
    }

    fn term(&self, t: &TermPattern) -> Result<Term, TranslateError> {
        Ok(match t {
            TermPattern::Variable(v) => Term::Var(v.as_str().to_string()),
            TermPattern::BlankNode(b) => Term::Var(format!("_:{}", b.as_str())),
            TermPattern::NamedNode(n) => {
                match iri::entity_by_iri(self.kg, n.as_str(), self.opts.namespaces()) {
                    Some(id) => Term::Entity(EntityRef::Id(id)),
                    None => Term::Nothing,
                }
            }
            TermPattern::Literal(l) => match iri::entity_by_literal(self.kg, l.value()) {
                Some(id) => Term::Entity(EntityRef::Id(id)),
                None => Term::Nothing,
            },
            #[allow(unreachable_patterns)]
            _ => return Err(unsupported("quoted triples")),
        })
    }

    fn ground(&self, t: &GroundTerm) -> Result<Term, TranslateError> {
        match t {
            GroundTerm::NamedNode(n) => self.term(&TermPattern::NamedNode(n.clone())),
            GroundTerm::Literal(l) => self.term(&TermPattern::Literal(l.clone())),
            #[allow(unreachable_patterns)]
            _ => Err(unsupported("quoted triples")),
        }
    }

    fn filter(&mut self, e: &Expression, g: &mut Group) -> Result<(), TranslateError> {
        match e {
            Expression::And(a, b) => {
                self.filter(a, g)?;
                self.filter(b, g)?;
            }
            Expression::Exists(p) => {
                let b = self.sub_group(p)?;
                g.subs.push(Sub {
                    branches: vec![b],
                    negated: false,
                });
            }
            Expression::Not(inner) => match &**inner {
                Expression::Exists(p) => {
                    let b = self.sub_group(p)?;
                    g.subs.push(Sub {
                        branches: vec![b],
                        negated: true,
                    });
                }
                Expression::Equal(a, b) | Expression::SameTerm(a, b)
                    if self.entity_comparison(a, b).is_some() =>
                {
                    if let Some((v, t)) = self.entity_comparison(a, b) {
                        g.excluded.push((v, t?));
                    }
                }
                Expression::In(a, list) if self.entity_var(a).is_some() => {
                    let v = self.entity_var(a).unwrap_or_default();
                    for item in list {
                        g.excluded.push((v.clone(), self.constant(item)?));
                    }
                }
                _ => self.name_filter(e)?,
            },
            Expression::Equal(a, b) | Expression::SameTerm(a, b)
                if self.entity_comparison(a, b).is_some() =>
            {
                if let Some((v, t)) = self.entity_comparison(a, b) {
                    g.values.push((v, vec![t?]));
                }
            }
            Expression::In(a, list) if self.entity_var(a).is_some() => {
                let v = self.entity_var(a).unwrap_or_default();
                let set = list
                    .iter()
                    .map(|i| self.constant(i))
                    .collect::<Result<_, _>>()?;
                g.values.push((v, set));
            }
            _ => self.name_filter(e)?,
        }
        Ok(())
    }

    /// `?v` when `e` is a variable that is not a name variable.
    fn entity_var(&self, e: &Expression) -> Option<String> {
        match e {
            Expression::Variable(v) if !self.names.iter().any(|(_, n)| n == v.as_str()) => {
                Some(v.as_str().to_string())
            }
            _ => None,
        }
    }

    /// `?v = constant` (either way round) on an entity variable.
    fn entity_comparison(
        &self,
        a: &Expression,
        b: &Expression,
    ) -> Option<(String, Result<Term, TranslateError>)> {
        match (self.entity_var(a), self.entity_var(b)) {
            (Some(v), None) if is_constant(b) => Some((v, self.constant(b))),
            (None, Some(v)) if is_constant(a) => Some((v, self.constant(a))),
            _ => None,
        }
    }

    fn constant(&self, e: &Expression) -> Result<Term, TranslateError> {
        match e {
            Expression::NamedNode(n) => self.term(&TermPattern::NamedNode(n.clone())),
            Expression::Literal(l) => self.term(&TermPattern::Literal(l.clone())),
            other => Err(unsupported(format!(
                "{other} where an IRI or a literal belongs"
            ))),
        }
    }

    /// A filter on a name variable, kept for the answers.
    fn name_filter(&mut self, e: &Expression) -> Result<(), TranslateError> {
        let on_name = self.names.iter().any(|(_, n)| mentions(e, n));
        if !on_name {
            return Err(unsupported(format!(
                "FILTER {e} (filters: = != IN NOT IN on entities, EXISTS, NOT EXISTS, and = != CONTAINS STRSTARTS STRENDS REGEX on a name bound by rdfs:label)"
            )));
        }
        if self.depth > 0 {
            return Err(unsupported(format!(
                "FILTER {e} on a name inside UNION, EXISTS or MINUS (only at the top level)"
            )));
        }
        self.name_filters.push(e.clone());
        Ok(())
    }

    /// Reads `p` as a sub-pattern of its own.
    fn sub_group(&mut self, p: &GraphPattern) -> Result<Group, TranslateError> {
        self.depth += 1;
        let mut b = Group::default();
        let r = self.pattern(p, &mut b);
        self.depth -= 1;
        r.map(|()| b)
    }
}

/// Whether `e` mentions variable `var`.
fn mentions(e: &Expression, var: &str) -> bool {
    match e {
        Expression::Variable(v) => v.as_str() == var,
        Expression::Or(a, b)
        | Expression::And(a, b)
        | Expression::Equal(a, b)
        | Expression::SameTerm(a, b)
        | Expression::Greater(a, b)
        | Expression::GreaterOrEqual(a, b)
        | Expression::Less(a, b)
        | Expression::LessOrEqual(a, b)
        | Expression::Add(a, b)
        | Expression::Subtract(a, b)
        | Expression::Multiply(a, b)
        | Expression::Divide(a, b) => mentions(a, var) || mentions(b, var),
        Expression::In(a, list) => mentions(a, var) || list.iter().any(|i| mentions(i, var)),
        Expression::UnaryPlus(a) | Expression::UnaryMinus(a) | Expression::Not(a) => {
            mentions(a, var)
        }
        Expression::If(a, b, c) => mentions(a, var) || mentions(b, var) || mentions(c, var),
        Expression::Coalesce(list) | Expression::FunctionCall(_, list) => {
            list.iter().any(|i| mentions(i, var))
        }
        Expression::Bound(v) => v.as_str() == var,
        _ => false,
    }
}

fn is_constant(e: &Expression) -> bool {
    matches!(e, Expression::NamedNode(_) | Expression::Literal(_))
}
