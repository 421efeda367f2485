//! Resolving a parsed query's names against a bundle's graph.

use kgbox_bundle::normalize::normalize;
use kgbox_bundle::Kg;

use crate::ast::{EntityRef, Query, RelationRef, Span};
use crate::diag::{DiagKind, Diagnostic};
use crate::plan::{Node, Plan};

/// Suffix that inverts a relation.
pub const INVERSE_SUFFIX: &str = "_inv";

/// Binds every entity and relation of `query` (parsed from `source`).
pub fn bind(kg: &Kg<'_>, query: &Query, source: &str) -> Result<Plan, Diagnostic> {
    let mut plan = Plan::default();
    bind_node(kg, query, source, &mut plan)?;
    Ok(plan)
}

fn bind_node(kg: &Kg<'_>, q: &Query, source: &str, plan: &mut Plan) -> Result<usize, Diagnostic> {
    Ok(match q {
        Query::Entity { entity, span } => {
            let entity = resolve_entity(kg, entity, *span, source)?;
            plan.push(Node::Anchor { entity })
        }
        Query::Project { input, relation } => {
            let input = bind_node(kg, input, source, plan)?;
            let (relation, inverse) = resolve_relation(kg, relation, source)?;
            plan.push(Node::Project {
                input,
                relation,
                inverse,
            })
        }
        Query::And { operands, .. } => {
            let ops = operands
                .iter()
                .map(|o| bind_node(kg, o, source, plan))
                .collect::<Result<_, _>>()?;
            plan.push(Node::And(ops))
        }
        Query::Or { operands, .. } => {
            let ops = operands
                .iter()
                .map(|o| bind_node(kg, o, source, plan))
                .collect::<Result<_, _>>()?;
            plan.push(Node::Or(ops))
        }
        Query::Not { operand, .. } => {
            let op = bind_node(kg, operand, source, plan)?;
            plan.push(Node::Not(op))
        }
    })
}

/// An entity written as text (a name, or `#id`), resolved like the
/// entities of a query; errors point into `text`.
pub fn resolve_entity_text(kg: &Kg<'_>, text: &str) -> Result<u32, Diagnostic> {
    let entity = match text.strip_prefix('#').and_then(|d| d.parse::<u32>().ok()) {
        Some(id) => EntityRef::Id(id),
        None => EntityRef::Name(text.to_string()),
    };
    resolve_entity(kg, &entity, Span::new(0, text.len()), text)
}

/// Exact name, then `#id`, then a unique normalized name or alias.
pub fn resolve_entity(
    kg: &Kg<'_>,
    entity: &EntityRef,
    span: Span,
    source: &str,
) -> Result<u32, Diagnostic> {
    match entity {
        EntityRef::Id(id) if (*id as usize) < kg.entity_count() => Ok(*id),
        EntityRef::Id(id) => Err(Diagnostic::new(
            DiagKind::UnknownEntity,
            format!(
                "no entity #{id} (this bundle has ids 0 to {})",
                kg.entity_count().saturating_sub(1)
            ),
            span,
            source,
        )),
        EntityRef::Name(name) => {
            let hits = match lookup_name(kg, name) {
                Ok(id) => return Ok(id),
                Err(hits) => hits,
            };
            match hits.as_slice() {
                [] => Err(Diagnostic::new(
                    DiagKind::UnknownEntity,
                    format!("unknown entity {name:?}"),
                    span,
                    source,
                )
                .with_suggestions(suggest_entities(kg, name, 5))),
                many => Err(Diagnostic::new(
                    DiagKind::AmbiguousEntity,
                    format!(
                        "{name:?} names {} entities; quote one exactly or use its #id",
                        many.len()
                    ),
                    span,
                    source,
                )
                .with_suggestions(
                    many.iter()
                        .take(5)
                        .filter_map(|&e| kg.entity_name(e).map(|n| format!("{n:?} (#{e})")))
                        .collect(),
                )),
            }
        }
    }
}

/// An entity by exact name, else by a normalized name or alias that names
/// exactly one entity. `Err` holds the matching ids: none, or several.
pub fn lookup_name(kg: &Kg<'_>, name: &str) -> Result<u32, Vec<u32>> {
    if let Some(id) = kg.entity_id(name) {
        return Ok(id);
    }
    let mut hits: Vec<u32> = kg
        .lookup_normalized(&normalize(name))
        .into_iter()
        .map(|p| p.entity)
        .collect();
    hits.sort_unstable();
    hits.dedup();
    match hits.as_slice() {
        [one] => Ok(*one),
        _ => Err(hits),
    }
}

/// A relation by exact name, or `name_inv` for the inverse of `name`.
pub fn resolve_relation(
    kg: &Kg<'_>,
    r: &RelationRef,
    source: &str,
) -> Result<(u32, bool), Diagnostic> {
    if let Some(id) = kg.relation_id(&r.name) {
        return Ok((id, false));
    }
    if let Some(id) = r
        .name
        .strip_suffix(INVERSE_SUFFIX)
        .and_then(|base| kg.relation_id(base))
    {
        return Ok((id, true));
    }
    Err(Diagnostic::new(
        DiagKind::UnknownRelation,
        format!("unknown relation `{}`", r.name),
        r.span,
        source,
    )
    .with_suggestions(suggest_relations(kg, &r.name, 3)))
}

/// Up to `n` entity names close to `name` (the fuzzy stage of
/// [`crate::link::link_mention`]: edit distance up to 2, scaled by length).
pub fn suggest_entities(kg: &Kg<'_>, name: &str, n: usize) -> Vec<String> {
    let opts = crate::link::LinkOptions {
        top_m: n,
        ..crate::link::LinkOptions::default()
    };
    let mut names: Vec<String> = crate::link::link_mention(kg, name, &opts)
        .into_iter()
        .map(|c| c.name)
        .collect();
    names.dedup();
    names
}

/// The `n` relation names (forward and `_inv`) closest to `name` by edit distance.
pub fn suggest_relations(kg: &Kg<'_>, name: &str, n: usize) -> Vec<String> {
    let mut scored: Vec<(usize, String)> = (0..kg.relation_count() as u32)
        .filter_map(|r| kg.relation_name(r))
        .flat_map(|r| [r.to_string(), format!("{r}{INVERSE_SUFFIX}")])
        .map(|c| (edit_distance(&c.to_lowercase(), &name.to_lowercase()), c))
        .collect();
    scored.sort();
    let limit = name.chars().count().max(3) / 2 + 1;
    scored
        .into_iter()
        .filter(|(d, _)| *d <= limit)
        .take(n)
        .map(|(_, c)| c)
        .collect()
}

/// Levenshtein distance over chars.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}
