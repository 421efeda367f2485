//! Describing one entity: its name, aliases and paginated edges.

use kgbox_bundle::Kg;
use serde::{Deserialize, Serialize};

pub const DEFAULT_PAGE: usize = 100;
pub const MAX_PAGE: usize = 1000;

/// Which edges to list.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    #[default]
    Both,
    Out,
    In,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Page {
    pub offset: usize,
    pub limit: usize,
    pub direction: Direction,
}

impl Default for Page {
    fn default() -> Self {
        Page {
            offset: 0,
            limit: DEFAULT_PAGE,
            direction: Direction::Both,
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Edge {
    pub relation: String,
    pub entity: String,
    pub entity_id: u32,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EdgePage {
    pub total: usize,
    pub offset: usize,
    pub limit: usize,
    pub edges: Vec<Edge>,
    /// Offset of the next page, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EntityView {
    pub id: u32,
    pub name: String,
    /// The source IRI, for a bundle packed from RDF.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iri: Option<String>,
    pub aliases: Vec<String>,
    /// Edges from this entity: (this, relation, entity).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outgoing: Option<EdgePage>,
    /// Edges into this entity: (entity, relation, this).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incoming: Option<EdgePage>,
}

#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum LookupError {
    #[error("no entity named {name:?}")]
    NotFound {
        name: String,
        suggestions: Vec<String>,
    },
    #[error("{name:?} matches {} entities; name one exactly or by id (#ID)", candidates.len())]
    Ambiguous {
        name: String,
        candidates: Vec<String>,
    },
    #[error("limit must be between 1 and {MAX_PAGE}")]
    BadLimit,
}

/// Resolves a name: exact name, then `#ID`, then a unique normalized
/// name or alias match.
pub fn resolve(kg: &Kg<'_>, name: &str) -> Result<u32, LookupError> {
    if let Some(id) = name.strip_prefix('#').and_then(|d| d.parse::<u32>().ok()) {
        if (id as usize) < kg.entity_count() && kg.entity_id(name).is_none() {
            return Ok(id);
        }
    }
    match kgbox_query::bind::lookup_name(kg, name) {
        Ok(id) => Ok(id),
        Err(hits) if hits.is_empty() => Err(LookupError::NotFound {
            name: name.to_string(),
            suggestions: kgbox_query::bind::suggest_entities(kg, name, 5),
        }),
        Err(hits) => Err(LookupError::Ambiguous {
            name: name.to_string(),
            candidates: hits
                .iter()
                .take(10)
                .filter_map(|&i| kg.entity_name(i).map(str::to_string))
                .collect(),
        }),
    }
}

fn page_of(kg: &Kg<'_>, rels: &[u32], others: &[u32], page: &Page) -> EdgePage {
    let total = others.len();
    let start = page.offset.min(total);
    let end = start.saturating_add(page.limit).min(total);
    let edges = (start..end)
        .map(|i| Edge {
            relation: kg.relation_name(rels[i]).unwrap_or("?").to_string(),
            entity: kg.entity_name(others[i]).unwrap_or("?").to_string(),
            entity_id: others[i],
        })
        .collect();
    EdgePage {
        total,
        offset: page.offset,
        limit: page.limit,
        edges,
        next_offset: (end < total).then_some(end),
    }
}

/// The entity named `name` with one page of its edges.
pub fn describe(kg: &Kg<'_>, name: &str, page: &Page) -> Result<EntityView, LookupError> {
    if page.limit == 0 || page.limit > MAX_PAGE {
        return Err(LookupError::BadLimit);
    }
    let id = resolve(kg, name)?;
    let (or, oo) = kg.out.edges(id);
    let (ir, io) = kg.inc.edges(id);
    Ok(EntityView {
        id,
        name: kg.entity_name(id).unwrap_or_default().to_string(),
        iri: kg.entity_iri(id).map(str::to_string),
        aliases: kg.aliases(id).map(str::to_string).collect(),
        outgoing: (page.direction != Direction::In).then(|| page_of(kg, or, oo, page)),
        incoming: (page.direction != Direction::Out).then(|| page_of(kg, ir, io, page)),
    })
}
