//! Query templates: a DSL query with its one topic entity taken out. The
//! learned planner predicts a template; filling in the linked topic entity
//! gives the query to run.

use kgbox_query::ast::{EntityRef, Query};
use serde::{Deserialize, Serialize};

/// Where the topic entity goes in a template's text.
pub const SLOT: &str = "{topic}";

/// Stands for the topic entity while printing; cannot occur in a name the
/// parser accepted (it holds control characters).
const SENTINEL: &str = "\u{1}topic\u{1}";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("the query names no entity; a template needs exactly one (the topic)")]
    NoEntity,
    #[error("the query names {0} entities; a template needs exactly one (the topic)")]
    ManyEntities(usize),
}

/// A query in canonical form with [`SLOT`] for its topic entity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Template(pub String);

fn entities<'q>(q: &'q Query, out: &mut Vec<&'q EntityRef>) {
    match q {
        Query::Entity { entity, .. } => out.push(entity),
        Query::Project { input, .. } => entities(input, out),
        Query::And { operands, .. } | Query::Or { operands, .. } => {
            for o in operands {
                entities(o, out);
            }
        }
        Query::Not { operand, .. } => entities(operand, out),
    }
}

fn replace_entity(q: &Query) -> Query {
    match q {
        Query::Entity { span, .. } => Query::Entity {
            entity: EntityRef::Name(SENTINEL.into()),
            span: *span,
        },
        Query::Project { input, relation } => Query::Project {
            input: Box::new(replace_entity(input)),
            relation: relation.clone(),
        },
        Query::And { operands, span } => Query::And {
            operands: operands.iter().map(replace_entity).collect(),
            span: *span,
        },
        Query::Or { operands, span } => Query::Or {
            operands: operands.iter().map(replace_entity).collect(),
            span: *span,
        },
        Query::Not { operand, span } => Query::Not {
            operand: Box::new(replace_entity(operand)),
            span: *span,
        },
    }
}

impl Template {
    /// The template of a parsed query and its topic entity as written.
    pub fn from_query(q: &Query) -> Result<(Template, EntityRef), TemplateError> {
        let mut found = Vec::new();
        entities(q, &mut found);
        match found.as_slice() {
            [] => Err(TemplateError::NoEntity),
            [one] => {
                let text = replace_entity(q)
                    .to_string()
                    .replace(&format!("\"{SENTINEL}\""), SLOT);
                Ok((Template(text), (*one).clone()))
            }
            many => Err(TemplateError::ManyEntities(many.len())),
        }
    }

    /// The query about the entity called `name`.
    pub fn instantiate(&self, name: &str) -> String {
        let quoted = Query::Entity {
            entity: EntityRef::Name(name.to_string()),
            span: Default::default(),
        }
        .to_string();
        self.0.replacen(SLOT, &quoted, 1)
    }

    /// Relation names used, in order of appearance.
    pub fn relations(&self) -> Vec<&str> {
        self.0
            .split("->")
            .skip(1)
            .filter_map(|s| {
                s.trim_start()
                    .split(|c: char| c.is_whitespace() || c == ',' || c == ')')
                    .next()
            })
            .filter(|s| !s.is_empty())
            .collect()
    }

    /// The relations of a plain chain template (`{topic} -> r1 -> r2`), in
    /// order; `None` for templates with `AND`, `OR` or `NOT`.
    pub fn chain(&self) -> Option<Vec<&str>> {
        let rest = self.0.strip_prefix(SLOT)?;
        let mut out = Vec::new();
        for part in rest.split("->").skip(1) {
            let r = part.trim();
            if r.is_empty() || r.contains(|c: char| c.is_whitespace() || "(),\"".contains(c)) {
                return None;
            }
            out.push(r);
        }
        if rest
            .split("->")
            .next()
            .is_some_and(|head| !head.trim().is_empty())
            || out.is_empty()
        {
            return None;
        }
        Some(out)
    }

    /// Projections in the template (hops along its longest chain are at most this).
    pub fn hops(&self) -> usize {
        self.0.matches("->").count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgbox_query::parse;

    #[test]
    fn chain_template_round_trips() {
        let q = parse("[Blade Runner] -> directed_by -> directed_by_inv").expect("parses");
        let (t, e) = Template::from_query(&q).expect("template");
        assert_eq!(t.0, "{topic} -> directed_by -> directed_by_inv");
        assert_eq!(e, EntityRef::Name("[Blade Runner]".into()));
        let text = t.instantiate("Say \"Hi\"");
        assert_eq!(text, "\"Say \\\"Hi\\\"\" -> directed_by -> directed_by_inv");
        let back = parse(&text).expect("instantiated query parses");
        let (t2, e2) = Template::from_query(&back).expect("template");
        assert_eq!(t2, t);
        assert_eq!(e2, EntityRef::Name("Say \"Hi\"".into()));
        assert_eq!(t.relations(), vec!["directed_by", "directed_by_inv"]);
        assert_eq!(t.chain(), Some(vec!["directed_by", "directed_by_inv"]));
        assert_eq!(
            Template("{topic} -> r -> s".into()).chain(),
            Some(vec!["r", "s"])
        );
        assert_eq!(Template("AND({topic} -> r, x -> s)".into()).chain(), None);
        assert_eq!(Template("{topic}".into()).chain(), None);
        assert_eq!(t.hops(), 2);
    }

    #[test]
    fn one_entity_exactly() {
        let q = parse("AND(a -> r, b -> s)").expect("parses");
        assert_eq!(
            Template::from_query(&q),
            Err(TemplateError::ManyEntities(2))
        );
        let q = parse("AND(a -> r, NOT(a -> s -> s_inv)) -> t").expect("parses");
        assert_eq!(
            Template::from_query(&q),
            Err(TemplateError::ManyEntities(2))
        );
    }
}
