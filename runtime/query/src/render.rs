//! Renders a bound query as openCypher or SPARQL with the symbolic
//! executor's answer semantics, for users who keep their graph in a graph
//! database or an RDF store.
//!
//! The data model the text assumes (the one `benches/peers/` loads):
//! - openCypher: one node label `Entity` with a `name` property; one
//!   relationship type per relation, named like the relation;
//! - SPARQL: entity IRIs `{entity_ns}{percent-encoded name}`, predicate IRIs
//!   `{relation_ns}{percent-encoded relation name}`.
//!
//! Semantics: AND is an intersection, OR a union, NOT a complement inside
//! its AND (SPARQL: a `MINUS` after the AND's other operands); with `exclude_anchors` a projection never returns the anchor
//! entities of its own input (kgbox's default). Each hop is its own `MATCH`
//! clause in Cypher, so the same edge may be walked twice, as kgbox does
//! (one `MATCH` pattern would forbid that).

use std::cell::{Cell, RefCell};

use kgbox_bundle::Kg;

use crate::plan::{Node, Plan};
use crate::translate::iri::{entity_term, relation_iri, EntityTerm, Namespaces};

/// The target language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    Cypher,
    Sparql,
}

impl std::str::FromStr for Language {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "cypher" => Ok(Language::Cypher),
            "sparql" => Ok(Language::Sparql),
            other => Err(format!("unknown language {other:?} (cypher or sparql)")),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderOptions {
    pub exclude_anchors: bool,
    pub entity_ns: String,
    pub relation_ns: String,
}

impl RenderOptions {
    /// The namespaces of terms without a source IRI.
    pub fn namespaces(&self) -> Namespaces<'_> {
        Namespaces {
            entity: &self.entity_ns,
            relation: &self.relation_ns,
        }
    }
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            exclude_anchors: true,
            entity_ns: "http://kgbox.local/e/".into(),
            relation_ns: "http://kgbox.local/r/".into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    #[error("OR below the top of a query has no single-query form in openCypher here; render it as SPARQL")]
    NestedOrInCypher,
    #[error("the plan refers to an id the bundle does not have")]
    Dangling,
    #[error("the plan is empty")]
    Empty,
}

/// Why a query text cannot be rendered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RenderTextError {
    /// The text does not parse or names something the bundle lacks.
    #[error("{0}")]
    Invalid(crate::diag::Diagnostic),
    #[error(transparent)]
    Render(#[from] RenderError),
}

/// Parses and binds `text` against `kg`, then renders it in `lang`.
pub fn render_text(
    kg: &Kg<'_>,
    text: &str,
    limits: &crate::parse::ParseLimits,
    lang: Language,
    opts: &RenderOptions,
) -> Result<String, RenderTextError> {
    let query = crate::parse::parse_with(text, limits).map_err(RenderTextError::Invalid)?;
    let plan = crate::bind::bind(kg, &query, text).map_err(RenderTextError::Invalid)?;
    Ok(render(kg, &plan, lang, opts)?)
}

/// Renders `plan` (bound against `kg`) in `lang`.
pub fn render(
    kg: &Kg<'_>,
    plan: &Plan,
    lang: Language,
    opts: &RenderOptions,
) -> Result<String, RenderError> {
    if plan.nodes.is_empty() {
        return Err(RenderError::Empty);
    }
    let root = plan.root();
    let r = Renderer {
        kg,
        plan,
        opts,
        vars: RefCell::new(Vec::new()),
        in_not: Cell::new(0),
    };
    match lang {
        Language::Sparql => {
            let p = sparql_pattern(kg, plan, opts)?;
            Ok(format!(
                "SELECT DISTINCT {ANSWER_VAR} WHERE {{ {}}}",
                p.body
            ))
        }
        Language::Cypher => {
            // A top-level OR becomes a UNION of whole queries.
            let branches = match plan.nodes.get(root) {
                Some(Node::Or(ops)) => ops.clone(),
                _ => vec![root],
            };
            let mut parts = Vec::new();
            for b in branches {
                let mut c = Cypher::default();
                r.cypher(b, "x", &mut 0, &mut c)?;
                let mut q = c.clauses.join(" ");
                if !c.conditions.is_empty() {
                    q.push_str(&format!(" WHERE {}", c.conditions.join(" AND ")));
                }
                q.push_str(" RETURN DISTINCT x.name AS answer");
                parts.push(q);
            }
            Ok(parts.join(" UNION "))
        }
    }
}

/// The variable of a SPARQL rendering that holds the answers.
pub const ANSWER_VAR: &str = "?x";

/// A plan as a SPARQL group pattern, with the variable of each node: what a
/// caller needs to ask a store for the answers' derivations as well
/// (`SELECT` of every variable) and read provenance back from them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SparqlPattern {
    /// The group's patterns without the braces: the answers are
    /// `SELECT DISTINCT ?x WHERE { body}` ([`render`]'s text).
    pub body: String,
    /// `vars[node]`: the variable bound to node `node`'s entities (`?x`
    /// for the root and the operands of its AND and OR, `?v1`, ... for
    /// the input of each projection); `None` for a node inside a NOT
    /// (a `MINUS` binds nothing in the solutions).
    pub vars: Vec<Option<String>>,
}

/// Renders `plan` (bound against `kg`) as a SPARQL group pattern with its
/// variables (see [`SparqlPattern`]).
pub fn sparql_pattern(
    kg: &Kg<'_>,
    plan: &Plan,
    opts: &RenderOptions,
) -> Result<SparqlPattern, RenderError> {
    if plan.nodes.is_empty() {
        return Err(RenderError::Empty);
    }
    let r = Renderer {
        kg,
        plan,
        opts,
        vars: RefCell::new(vec![None; plan.nodes.len()]),
        in_not: Cell::new(0),
    };
    let mut body = String::new();
    r.sparql(plan.root(), ANSWER_VAR, &mut 0, &mut body)?;
    Ok(SparqlPattern {
        body,
        vars: r.vars.into_inner(),
    })
}

#[derive(Default)]
struct Cypher {
    clauses: Vec<String>,
    conditions: Vec<String>,
}

struct Renderer<'a, 'k> {
    kg: &'a Kg<'k>,
    plan: &'a Plan,
    opts: &'a RenderOptions,
    /// SPARQL: the variable of each node rendered outside a NOT.
    vars: RefCell<Vec<Option<String>>>,
    /// SPARQL: NOTs around the node being rendered.
    in_not: Cell<usize>,
}

/// A Cypher string literal.
fn cypher_str(s: &str) -> String {
    let mut out = String::from("'");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// A backquoted Cypher name.
fn cypher_name(s: &str) -> String {
    format!("`{}`", s.replace('`', "``"))
}

/// A SPARQL string literal.
fn sparql_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl Renderer<'_, '_> {
    fn entity(&self, id: u32) -> Result<&str, RenderError> {
        self.kg.entity_name(id).ok_or(RenderError::Dangling)
    }

    fn relation(&self, id: u32) -> Result<&str, RenderError> {
        self.kg.relation_name(id).ok_or(RenderError::Dangling)
    }

    /// Entity `id` as a SPARQL term (see [`crate::translate::iri`]).
    fn entity_iri(&self, id: u32) -> Result<String, RenderError> {
        match entity_term(self.kg, id, self.opts.namespaces()).ok_or(RenderError::Dangling)? {
            EntityTerm::Iri(iri) => Ok(format!("<{iri}>")),
            EntityTerm::Literal(value) => Ok(sparql_str(&value)),
        }
    }

    fn fresh(prefix: &str, counter: &mut usize) -> String {
        *counter += 1;
        format!("{prefix}{counter}")
    }

    /// Patterns binding `var` (without `?`) to the answers of `node`.
    fn sparql(
        &self,
        node: usize,
        var: &str,
        counter: &mut usize,
        out: &mut String,
    ) -> Result<(), RenderError> {
        if self.in_not.get() == 0 {
            if let Some(slot) = self.vars.borrow_mut().get_mut(node) {
                *slot = Some(var.to_string());
            }
        }
        match self.plan.nodes.get(node).ok_or(RenderError::Dangling)? {
            Node::Anchor { entity } => {
                out.push_str(&format!(
                    "VALUES {var} {{ {} }} ",
                    self.entity_iri(*entity)?
                ));
            }
            Node::Project {
                input,
                relation,
                inverse,
            } => {
                let v = Self::fresh("?v", counter);
                self.sparql(*input, &v, counter, out)?;
                let p = format!(
                    "<{}>",
                    relation_iri(self.kg, *relation, self.opts.namespaces())
                        .ok_or(RenderError::Dangling)?
                );
                if *inverse {
                    out.push_str(&format!("{var} {p} {v} . "));
                } else {
                    out.push_str(&format!("{v} {p} {var} . "));
                }
                if self.opts.exclude_anchors {
                    for a in self.plan.anchors(*input) {
                        out.push_str(&format!("FILTER({var} != {}) ", self.entity_iri(a)?));
                    }
                }
            }
            Node::And(ops) => {
                // The positive operands first: a MINUS removes from what
                // the group has bound before it. Every solution of a NOT's
                // operand binds `var` (and only `var` is shared), so MINUS
                // is NOT EXISTS here, and stores evaluate it once instead
                // of once per candidate.
                let is_not = |op: &usize| matches!(self.plan.nodes.get(*op), Some(Node::Not(_)));
                for op in ops.iter().filter(|op| !is_not(op)) {
                    self.sparql(*op, var, counter, out)?;
                }
                for op in ops.iter().filter(|op| is_not(op)) {
                    if let Some(Node::Not(inner)) = self.plan.nodes.get(*op) {
                        out.push_str("MINUS { ");
                        self.in_not.set(self.in_not.get() + 1);
                        let inner = self.sparql(*inner, var, counter, out);
                        self.in_not.set(self.in_not.get() - 1);
                        inner?;
                        out.push_str("} ");
                    }
                }
            }
            Node::Or(ops) => {
                for (i, op) in ops.iter().enumerate() {
                    if i > 0 {
                        out.push_str("UNION ");
                    }
                    out.push_str("{ ");
                    self.sparql(*op, var, counter, out)?;
                    out.push_str("} ");
                }
            }
            // Only inside AND (handled there); the parser enforces it.
            Node::Not(_) => return Err(RenderError::Dangling),
        }
        Ok(())
    }

    /// Clauses binding `var` to the answers of `node`.
    fn cypher(
        &self,
        node: usize,
        var: &str,
        counter: &mut usize,
        out: &mut Cypher,
    ) -> Result<(), RenderError> {
        match self.plan.nodes.get(node).ok_or(RenderError::Dangling)? {
            Node::Anchor { entity } => out.clauses.push(format!(
                "MATCH ({var}:Entity {{name: {}}})",
                cypher_str(self.entity(*entity)?)
            )),
            Node::Project {
                input,
                relation,
                inverse,
            } => {
                let v = Self::fresh("v", counter);
                self.cypher(*input, &v, counter, out)?;
                let r = cypher_name(self.relation(*relation)?);
                out.clauses.push(if *inverse {
                    format!("MATCH ({v})<-[:{r}]-({var}:Entity)")
                } else {
                    format!("MATCH ({v})-[:{r}]->({var}:Entity)")
                });
                if self.opts.exclude_anchors {
                    for a in self.plan.anchors(*input) {
                        out.conditions
                            .push(format!("{var}.name <> {}", cypher_str(self.entity(a)?)));
                    }
                }
            }
            Node::And(ops) => {
                for op in ops {
                    match self.plan.nodes.get(*op) {
                        Some(Node::Not(inner)) => {
                            let mut sub = Cypher::default();
                            self.cypher(*inner, var, counter, &mut sub)?;
                            let mut text = sub.clauses.join(" ");
                            if !sub.conditions.is_empty() {
                                text.push_str(&format!(" WHERE {}", sub.conditions.join(" AND ")));
                            }
                            out.conditions.push(format!("NOT EXISTS {{ {text} }}"));
                        }
                        _ => self.cypher(*op, var, counter, out)?,
                    }
                }
            }
            Node::Or(_) => return Err(RenderError::NestedOrInCypher),
            Node::Not(_) => return Err(RenderError::Dangling),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_and_iris_are_escaped() {
        assert_eq!(cypher_str("O'Hara \\ x"), "'O\\'Hara \\\\ x'");
        assert_eq!(cypher_name("a`b"), "`a``b`");
        assert_eq!(sparql_str("a \"b\" \\ c"), "\"a \\\"b\\\" \\\\ c\"");
        assert_eq!("sparql".parse::<Language>(), Ok(Language::Sparql));
        assert!("gremlin".parse::<Language>().is_err());
    }
}
