//! The query syntax tree. Knows nothing of any graph: names are strings
//! until [`crate::bind`] resolves them against a bundle.

use std::fmt;

/// Byte offsets `start..end` into the query text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }
}

/// How an entity is written.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EntityRef {
    /// A bare or quoted name, unescaped.
    Name(String),
    /// `#1234`: an entity id of the bundle.
    Id(u32),
}

/// A relation as written: the name, possibly ending in `_inv`. Whether
/// `_inv` means "inverse" is decided when binding (a graph may have a
/// relation whose own name ends in `_inv`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelationRef {
    pub name: String,
    pub span: Span,
}

/// A query: each node evaluates to a fuzzy set of entities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// A leaf: one entity (membership 1).
    Entity { entity: EntityRef, span: Span },
    /// `input -> relation`: the entities reached from `input` over `relation`.
    Project {
        input: Box<Query>,
        relation: RelationRef,
    },
    /// `AND(q1, q2, ...)`: product t-norm. At least two operands.
    And { operands: Vec<Query>, span: Span },
    /// `OR(q1, q2, ...)`: probabilistic sum. At least two operands.
    Or { operands: Vec<Query>, span: Span },
    /// `NOT(q)`: complement; only allowed directly inside an `AND` that has a
    /// positive operand (checked by the parser), so results stay bounded.
    Not { operand: Box<Query>, span: Span },
}

impl Query {
    /// Span of the whole node.
    pub fn span(&self) -> Span {
        match self {
            Query::Entity { span, .. }
            | Query::And { span, .. }
            | Query::Or { span, .. }
            | Query::Not { span, .. } => *span,
            Query::Project { input, relation } => Span::new(input.span().start, relation.span.end),
        }
    }

    /// The same tree with every span zeroed, to compare trees modulo positions.
    pub fn without_spans(&self) -> Query {
        let z = Span::default();
        match self {
            Query::Entity { entity, .. } => Query::Entity {
                entity: entity.clone(),
                span: z,
            },
            Query::Project { input, relation } => Query::Project {
                input: Box::new(input.without_spans()),
                relation: RelationRef {
                    name: relation.name.clone(),
                    span: z,
                },
            },
            Query::And { operands, .. } => Query::And {
                operands: operands.iter().map(Query::without_spans).collect(),
                span: z,
            },
            Query::Or { operands, .. } => Query::Or {
                operands: operands.iter().map(Query::without_spans).collect(),
                span: z,
            },
            Query::Not { operand, .. } => Query::Not {
                operand: Box::new(operand.without_spans()),
                span: z,
            },
        }
    }

    /// Nesting depth (a leaf is 1; each projection or operator adds 1).
    pub fn depth(&self) -> usize {
        match self {
            Query::Entity { .. } => 1,
            Query::Project { input, .. } => 1 + input.depth(),
            Query::Not { operand, .. } => 1 + operand.depth(),
            Query::And { operands, .. } | Query::Or { operands, .. } => {
                1 + operands.iter().map(Query::depth).max().unwrap_or(0)
            }
        }
    }

    /// Number of nodes.
    pub fn size(&self) -> usize {
        match self {
            Query::Entity { .. } => 1,
            Query::Project { input, .. } => 1 + input.size(),
            Query::Not { operand, .. } => 1 + operand.size(),
            Query::And { operands, .. } | Query::Or { operands, .. } => {
                1 + operands.iter().map(Query::size).sum::<usize>()
            }
        }
    }
}

/// Prints the canonical form, which parses back to an equal tree (up to spans):
/// entities always quoted (or `#id`), relations bare, `, ` between operands.
impl fmt::Display for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Query::Entity { entity, .. } => match entity {
                EntityRef::Id(id) => write!(f, "#{id}"),
                EntityRef::Name(n) => {
                    f.write_str("\"")?;
                    for c in n.chars() {
                        match c {
                            '"' => f.write_str("\\\"")?,
                            '\\' => f.write_str("\\\\")?,
                            '\n' => f.write_str("\\n")?,
                            '\t' => f.write_str("\\t")?,
                            c => write!(f, "{c}")?,
                        }
                    }
                    f.write_str("\"")
                }
            },
            Query::Project { input, relation } => write!(f, "{input} -> {}", relation.name),
            Query::And { operands, .. } => write_op(f, "AND", operands),
            Query::Or { operands, .. } => write_op(f, "OR", operands),
            Query::Not { operand, .. } => write!(f, "NOT({operand})"),
        }
    }
}

fn write_op(f: &mut fmt::Formatter<'_>, op: &str, operands: &[Query]) -> fmt::Result {
    write!(f, "{op}(")?;
    for (i, q) in operands.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{q}")?;
    }
    f.write_str(")")
}
