//! SPARQL's solution modifiers (`SLICE`, `DISTINCT`, `PROJECT`,
//! `ORDER BY`) around a query's pattern.

use spargebra::algebra::{Expression, GraphPattern, OrderExpression};

use super::{unsupported_sparql as unsupported, TranslateError};

/// The solution modifiers around the pattern.
#[derive(Default)]
pub(super) struct Modifiers {
    pub(super) project: Option<Vec<String>>,
    pub(super) sliced: bool,
    pub(super) order: Option<(String, bool)>,
    pub(super) offset: usize,
    pub(super) limit: Option<usize>,
}

impl Modifiers {
    /// The pattern inside the query's own `SLICE`, `DISTINCT`, `PROJECT`
    /// and `ORDER BY` (in that order, outside in); a second of any is a
    /// sub-query's, left for the reader to refuse.
    pub(super) fn peel<'p>(
        &mut self,
        mut p: &'p GraphPattern,
    ) -> Result<&'p GraphPattern, TranslateError> {
        loop {
            let done = match p {
                GraphPattern::Slice { .. } => self.sliced || self.project.is_some(),
                GraphPattern::Distinct { .. } | GraphPattern::Reduced { .. } => {
                    self.project.is_some()
                }
                GraphPattern::Project { .. } => self.project.is_some(),
                GraphPattern::OrderBy { .. } => self.order.is_some(),
                _ => false,
            };
            if done {
                return Ok(p);
            }
            p = match p {
                GraphPattern::Project { inner, variables } => {
                    self.project = Some(variables.iter().map(|v| v.as_str().to_string()).collect());
                    inner
                }
                // Answers are sets: every query is DISTINCT.
                GraphPattern::Distinct { inner } | GraphPattern::Reduced { inner } => inner,
                GraphPattern::Slice {
                    inner,
                    start,
                    length,
                } => {
                    self.sliced = true;
                    self.offset = *start;
                    self.limit = *length;
                    inner
                }
                GraphPattern::OrderBy { inner, expression } => {
                    match expression.as_slice() {
                        [OrderExpression::Asc(Expression::Variable(v))] => {
                            self.order = Some((v.as_str().to_string(), false))
                        }
                        [OrderExpression::Desc(Expression::Variable(v))] => {
                            self.order = Some((v.as_str().to_string(), true))
                        }
                        _ => return Err(unsupported("ORDER BY other than one variable")),
                    }
                    inner
                }
                GraphPattern::Group { .. } => {
                    return Err(unsupported("GROUP BY and aggregates (COUNT, SUM, ...)"))
                }
                GraphPattern::Extend { .. } => {
                    return Err(unsupported("BIND and expressions in SELECT (AS)"))
                }
                other => return Ok(other),
            };
        }
    }
}
