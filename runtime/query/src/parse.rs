//! The hand-written parser of the query DSL. See `docs/query-language.md`.
//!
//! A recursive-descent parser over byte offsets of the text; it has no
//! separate lexer because what a token is depends on where it is (a bare
//! entity name may hold spaces and most punctuation, a relation name may not).
//!
//! ```text
//! query   = primary { "->" relation } ;
//! primary = "(" query ")" | "AND" "(" query "," query { "," query } ")"
//!         | "OR" "(" query "," query { "," query } ")" | "NOT" "(" query ")"
//!         | entity ;
//! ```
//!
//! Recursion only happens at a `(` (a group or an operator), and every `(`
//! counts against [`ParseLimits::max_depth`] before the parser descends, so
//! the recursion is bounded by the limit whatever the input. The depth and
//! size of the tree are checked as each node is built, so no tree deeper or
//! bigger than the limits is ever built (dropping and printing a [`Query`]
//! recurse too).

use crate::ast::{EntityRef, Query, RelationRef, Span};
use crate::diag::{DiagKind, Diagnostic};

/// Bounds that reject abusive queries before any work is done.
#[derive(Debug, Clone, Copy)]
pub struct ParseLimits {
    /// Longest query text, bytes.
    pub max_len: usize,
    /// Deepest nesting (see [`Query::depth`]). Also bounds how many `(` may be
    /// open at once, which bounds the parser's recursion: keep it modest.
    pub max_depth: usize,
    /// Most nodes (see [`Query::size`]).
    pub max_nodes: usize,
}

impl Default for ParseLimits {
    fn default() -> Self {
        ParseLimits {
            max_len: 16 * 1024,
            max_depth: 32,
            max_nodes: 512,
        }
    }
}

/// Parses with the default limits.
pub fn parse(text: &str) -> Result<Query, Diagnostic> {
    parse_with(text, &ParseLimits::default())
}

/// Parses `text`, or returns a positioned error.
pub fn parse_with(text: &str, limits: &ParseLimits) -> Result<Query, Diagnostic> {
    if text.len() > limits.max_len {
        return Err(Diagnostic::new(
            DiagKind::TooLarge,
            format!(
                "query is too long: {} bytes, the limit is {}",
                text.len(),
                limits.max_len
            ),
            Span::new(limits.max_len, limits.max_len),
            text,
        ));
    }
    let mut p = Parser {
        text,
        pos: 0,
        limits,
        open: 0,
        nodes: 0,
        after_relation: false,
    };
    p.skip_ws();
    if p.at_end() {
        return Err(p.syntax("empty query", Span::new(0, 0)));
    }
    let node = p.query(Ctx::Top, false)?;
    p.skip_ws();
    if !p.at_end() {
        return Err(p.after_operand_error(Ctx::Top));
    }
    Ok(node.q)
}

/// An operator written `KEYWORD(...)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    And,
    Or,
    Not,
}

impl Op {
    fn keyword(self) -> &'static str {
        match self {
            Op::And => "AND",
            Op::Or => "OR",
            Op::Not => "NOT",
        }
    }
}

/// Where a query is being parsed, for the wording of errors.
#[derive(Debug, Clone, Copy)]
enum Ctx {
    /// The whole query.
    Top,
    /// Inside a grouping `(` at this offset.
    Group { open: usize },
    /// An operand of this operator.
    Operand(Op),
}

/// A parsed subtree with its depth (kept alongside so that no check recurses).
struct Node {
    q: Query,
    depth: usize,
}

/// The rule for NOT, worded once.
const NOT_RULE: &str = "NOT is only allowed as a direct operand of an AND that also has an \
                        operand without NOT, e.g. `AND(q, NOT(p))`, so that the result stays bounded";

struct Parser<'a> {
    text: &'a str,
    /// Byte offset of the next unread character; always on a char boundary.
    pos: usize,
    limits: &'a ParseLimits,
    /// How many `(` (groups and operators) are open.
    open: usize,
    /// How many nodes have been built.
    nodes: usize,
    /// Whether the last token read was a relation name (for a hint).
    after_relation: bool,
}

impl<'a> Parser<'a> {
    // ---- characters -------------------------------------------------------

    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn at_end(&self) -> bool {
        self.pos >= self.text.len()
    }

    fn at_arrow(&self) -> bool {
        self.rest().starts_with("->")
    }

    fn skip_ws(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    /// End of the word starting at `from`: up to whitespace, `(`, `)`, `,`,
    /// `"`, `->` or the end of the text.
    fn word_end(&self, from: usize) -> usize {
        let s = &self.text[from..];
        let mut it = s.char_indices().peekable();
        while let Some((i, c)) = it.next() {
            let arrow = c == '-' && matches!(it.peek(), Some((_, '>')));
            if c.is_whitespace() || matches!(c, '(' | ')' | ',' | '"') || arrow {
                return from + i;
            }
        }
        self.text.len()
    }

    // ---- diagnostics ------------------------------------------------------

    fn syntax(&self, message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic::new(DiagKind::Syntax, message, span, self.text)
    }

    fn too_large(&self, message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic::new(DiagKind::TooLarge, message, span, self.text)
    }

    /// What is at the current position (which must follow `skip_ws`), for
    /// "found ..." in messages, and its span.
    fn found(&self) -> (String, Span) {
        let p = self.pos;
        if self.at_end() {
            let end = self.text.trim_end().len();
            return ("the end of the query".to_string(), Span::new(end, end));
        }
        if self.at_arrow() {
            return ("`->`".to_string(), Span::new(p, p + 2));
        }
        match self.peek() {
            Some(c @ ('(' | ')' | ',' | '"')) => (format!("`{c}`"), Span::new(p, p + 1)),
            _ => {
                let end = self
                    .word_end(p)
                    .max(p + self.peek().map_or(0, char::len_utf8));
                (
                    format!("`{}`", shorten(&self.text[p..end])),
                    Span::new(p, end),
                )
            }
        }
    }

    fn line_col(&self, offset: usize) -> (usize, usize) {
        let before = &self.text[..offset];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        (
            before.matches('\n').count() + 1,
            before[line_start..].chars().count() + 1,
        )
    }

    /// The error for an operand that is missing where `ctx` needs one.
    fn expected_operand_error(&self, ctx: Ctx) -> Diagnostic {
        let (found, span) = self.found();
        let message = match ctx {
            Ctx::Top => format!(
                "expected an entity, `(` or an operator at the start of the query, found {found}"
            ),
            Ctx::Group { .. } => format!("expected a query after `(`, found {found}"),
            Ctx::Operand(op) => format!("expected an operand of {}, found {found}", op.keyword()),
        };
        self.syntax(message, span)
    }

    /// The error for what follows a complete operand in `ctx` when it is
    /// neither `->` nor what `ctx` allows.
    fn after_operand_error(&self, ctx: Ctx) -> Diagnostic {
        let (found, span) = self.found();
        let mut message = match ctx {
            Ctx::Top => format!("unexpected text after the end of the query, found {found}"),
            Ctx::Group { open } => {
                let (line, column) = self.line_col(open);
                format!("expected `)` to close the `(` at line {line}, column {column}, found {found}")
            }
            Ctx::Operand(Op::Not) => format!(
                "expected `)` after the operand of NOT (NOT takes exactly one operand), found {found}"
            ),
            Ctx::Operand(op) => format!(
                "expected `,` or `)` after an operand of {}, found {found}",
                op.keyword()
            ),
        };
        match self.peek() {
            Some(')') if matches!(ctx, Ctx::Top) => message.push_str(" (no `(` is open)"),
            Some('(') => {
                let before = self.text[..self.pos].trim_end();
                let last_word = before
                    .rsplit(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | ',' | '"'))
                    .next()
                    .unwrap_or("");
                if ["and", "or", "not"]
                    .iter()
                    .any(|k| last_word.eq_ignore_ascii_case(k))
                {
                    message
                        .push_str(" (operators are written in uppercase: `AND(`, `OR(`, `NOT(`)");
                } else {
                    message.push_str(
                        " (quote an entity name that contains `(`, `)`, `,`, `\"` or `->`)",
                    );
                }
            }
            Some(c) if self.after_relation && !self.at_arrow() && !matches!(c, ')' | ',' | '"') => {
                message.push_str(" (relation names cannot contain spaces)");
            }
            _ => {}
        }
        self.syntax(message, span)
    }

    // ---- limits -----------------------------------------------------------

    /// Counts one more open `(` at `at`, refusing to nest deeper than the limit.
    fn open_paren(&mut self, at: Span) -> Result<(), Diagnostic> {
        self.open += 1;
        if self.open > self.limits.max_depth {
            return Err(self.too_large(
                format!(
                    "query is nested too deeply: more than {} levels",
                    self.limits.max_depth
                ),
                at,
            ));
        }
        Ok(())
    }

    /// Accounts for a newly built node of `depth`; `at` is where to point.
    fn node(&mut self, q: Query, depth: usize, at: Span) -> Result<Node, Diagnostic> {
        if depth > self.limits.max_depth {
            return Err(self.too_large(
                format!(
                    "query is nested too deeply: more than {} levels",
                    self.limits.max_depth
                ),
                at,
            ));
        }
        self.nodes += 1;
        if self.nodes > self.limits.max_nodes {
            return Err(self.too_large(
                format!(
                    "query is too big: more than {} nodes",
                    self.limits.max_nodes
                ),
                at,
            ));
        }
        Ok(Node { q, depth })
    }

    // ---- grammar ----------------------------------------------------------

    /// `query = primary { "->" relation }`
    fn query(&mut self, ctx: Ctx, allow_not: bool) -> Result<Node, Diagnostic> {
        let mut node = self.primary(ctx, allow_not)?;
        loop {
            self.skip_ws();
            if !self.at_arrow() {
                return Ok(node);
            }
            if let Query::Not { span, .. } = node.q {
                return Err(self.syntax(
                    format!("the result of NOT cannot be projected with `->`: {NOT_RULE}"),
                    span,
                ));
            }
            self.pos += 2;
            let relation = self.relation()?;
            let at = relation.span;
            let depth = node.depth + 1;
            let q = Query::Project {
                input: Box::new(node.q),
                relation,
            };
            node = self.node(q, depth, at)?;
        }
    }

    /// A group, an operator or an entity.
    fn primary(&mut self, ctx: Ctx, allow_not: bool) -> Result<Node, Diagnostic> {
        self.skip_ws();
        let node = match self.peek() {
            None | Some(')' | ',') => return Err(self.expected_operand_error(ctx)),
            Some('-') if self.at_arrow() => return Err(self.expected_operand_error(ctx)),
            Some('(') => self.group(allow_not)?,
            Some('"') => self.quoted()?,
            Some('#') => self.id()?,
            Some(_) => match self.keyword() {
                Some((op, paren)) => self.operator(op, paren, allow_not)?,
                None => self.bare()?,
            },
        };
        self.after_relation = false;
        Ok(node)
    }

    /// `"(" query ")"`; the parentheses leave no trace in the tree.
    fn group(&mut self, allow_not: bool) -> Result<Node, Diagnostic> {
        let open = self.pos;
        self.open_paren(Span::new(open, open + 1))?;
        self.pos += 1;
        let ctx = Ctx::Group { open };
        let inner = self.query(ctx, allow_not)?;
        self.skip_ws();
        if self.peek() != Some(')') {
            return Err(self.after_operand_error(ctx));
        }
        self.pos += 1;
        self.open -= 1;
        Ok(inner)
    }

    /// Whether an operator keyword starts here: `AND`, `OR` or `NOT`, then
    /// optional whitespace, then `(`, whose offset is returned.
    fn keyword(&self) -> Option<(Op, usize)> {
        let rest = self.rest();
        [Op::And, Op::Or, Op::Not].into_iter().find_map(|op| {
            let after = rest.strip_prefix(op.keyword())?;
            let trimmed = after.trim_start();
            trimmed
                .starts_with('(')
                .then(|| (op, self.pos + rest.len() - trimmed.len()))
        })
    }

    /// `AND(q, q, ...)`, `OR(q, q, ...)` or `NOT(q)`; the keyword is at
    /// `self.pos` and its `(` at `paren`.
    fn operator(&mut self, op: Op, paren: usize, allow_not: bool) -> Result<Node, Diagnostic> {
        let start = self.pos;
        let keyword = Span::new(start, start + op.keyword().len());
        if op == Op::Not && !allow_not {
            return Err(self.syntax(NOT_RULE, keyword));
        }
        self.open_paren(keyword)?;
        self.pos = paren + 1;
        let ctx = Ctx::Operand(op);
        let mut operands: Vec<Node> = Vec::new();
        let close = loop {
            self.skip_ws();
            if operands.is_empty() && op != Op::Not && self.peek() == Some(')') {
                return Err(self.syntax(
                    format!("{} needs at least 2 operands", op.keyword()),
                    Span::new(start, self.pos + 1),
                ));
            }
            operands.push(self.query(ctx, op == Op::And)?);
            self.skip_ws();
            match self.peek() {
                Some(',') if op != Op::Not => self.pos += 1,
                Some(')') => {
                    self.pos += 1;
                    break self.pos;
                }
                _ => return Err(self.after_operand_error(ctx)),
            }
        };
        self.open -= 1;
        let span = Span::new(start, close);
        let depth = 1 + operands.iter().map(|n| n.depth).max().unwrap_or(0);
        let mut operands: Vec<Query> = operands.into_iter().map(|n| n.q).collect();
        let q = match op {
            Op::Not => match operands.pop() {
                Some(operand) => Query::Not {
                    operand: Box::new(operand),
                    span,
                },
                None => return Err(self.expected_operand_error(ctx)),
            },
            Op::And | Op::Or if operands.len() < 2 => {
                return Err(self.syntax(
                    format!(
                        "{} needs at least 2 operands, found {}",
                        op.keyword(),
                        operands.len()
                    ),
                    span,
                ));
            }
            Op::And => {
                if let Some(Query::Not { span: not, .. }) = operands.first() {
                    if operands.iter().all(|q| matches!(q, Query::Not { .. })) {
                        return Err(self.syntax(
                            format!("{NOT_RULE}; every operand of this AND is a NOT"),
                            *not,
                        ));
                    }
                }
                Query::And { operands, span }
            }
            Op::Or => Query::Or { operands, span },
        };
        self.node(q, depth, span)
    }

    /// `"..."` with the escapes `\"`, `\\`, `\n` and `\t`, on one line.
    fn quoted(&mut self) -> Result<Node, Diagnostic> {
        let start = self.pos;
        let body = start + 1;
        let mut name = String::new();
        let mut chars = self.text[body..].char_indices();
        let end = loop {
            match chars.next() {
                None | Some((_, '\n')) => return Err(self.unclosed(start)),
                Some((i, '"')) => break body + i + 1,
                Some((i, '\\')) => match chars.next() {
                    Some((_, '"')) => name.push('"'),
                    Some((_, '\\')) => name.push('\\'),
                    Some((_, 'n')) => name.push('\n'),
                    Some((_, 't')) => name.push('\t'),
                    None | Some((_, '\n')) => return Err(self.unclosed(start)),
                    Some((j, c)) => {
                        let shown: String = if c.is_control() {
                            c.escape_debug().collect()
                        } else {
                            c.to_string()
                        };
                        return Err(self.syntax(
                            format!(
                                "unknown escape `\\{shown}` in a string (the escapes are `\\\"`, `\\\\`, `\\n` and `\\t`)"
                            ),
                            Span::new(body + i, body + j + c.len_utf8()),
                        ));
                    }
                },
                Some((_, c)) => name.push(c),
            }
        };
        let span = Span::new(start, end);
        if name.is_empty() {
            return Err(self.syntax("empty entity name `\"\"`", span));
        }
        self.pos = end;
        self.node(
            Query::Entity {
                entity: EntityRef::Name(name),
                span,
            },
            1,
            span,
        )
    }

    fn unclosed(&self, start: usize) -> Diagnostic {
        let line_end = self.text[start..]
            .find('\n')
            .map_or(self.text.len(), |i| start + i);
        let where_ = if line_end < self.text.len() {
            "line"
        } else {
            "query"
        };
        self.syntax(
            format!(
                "unclosed string: no closing `\"` before the end of the {where_} (a string cannot span lines; write `\\n` for a line break)"
            ),
            Span::new(start, line_end),
        )
    }

    /// `#1234`: an entity id.
    fn id(&mut self) -> Result<Node, Diagnostic> {
        let start = self.pos;
        let end = self.word_end(start + 1);
        let span = Span::new(start, end);
        let digits = &self.text[start + 1..end];
        if digits.is_empty() {
            return Err(self.syntax(
                "expected an entity id after `#`, like `#1234`",
                Span::new(start, start + 1),
            ));
        }
        if !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(self.syntax(
                format!(
                    "invalid entity id `#{}`: an id is `#` followed by digits (quote a name that starts with `#`)",
                    shorten(digits)
                ),
                span,
            ));
        }
        let Ok(id) = digits.parse::<u32>() else {
            return Err(self.syntax(
                format!(
                    "entity id `#{}` is too large: the largest is #{}",
                    shorten(digits),
                    u32::MAX
                ),
                span,
            ));
        };
        self.pos = end;
        self.node(
            Query::Entity {
                entity: EntityRef::Id(id),
                span,
            },
            1,
            span,
        )
    }

    /// A bare name: the text up to `->`, `,`, `(`, `)`, `"`, a newline or the
    /// end, trimmed. Starts at a character that is none of those.
    fn bare(&mut self) -> Result<Node, Diagnostic> {
        let start = self.pos;
        let rest = self.rest();
        let mut it = rest.char_indices().peekable();
        let mut run = rest.len();
        while let Some((i, c)) = it.next() {
            let arrow = c == '-' && matches!(it.peek(), Some((_, '>')));
            if matches!(c, '(' | ')' | ',' | '"' | '\n') || arrow {
                run = i;
                break;
            }
        }
        let name = rest[..run].trim_end();
        if name.is_empty() {
            return Err(self.expected_operand_error(Ctx::Top));
        }
        let span = Span::new(start, start + name.len());
        self.pos = span.end;
        self.node(
            Query::Entity {
                entity: EntityRef::Name(name.to_string()),
                span,
            },
            1,
            span,
        )
    }

    /// The relation name after `->`: `[A-Za-z_][A-Za-z0-9_.:/-]*`.
    fn relation(&mut self) -> Result<RelationRef, Diagnostic> {
        self.skip_ws();
        let start = self.pos;
        let end = self.word_end(start);
        if end == start {
            let (found, span) = self.found();
            let hint = if self.peek() == Some('"') {
                " (relation names are written without quotes)"
            } else {
                ""
            };
            return Err(self.syntax(
                format!("expected a relation name after `->`, found {found}{hint}"),
                span,
            ));
        }
        let name = &self.text[start..end];
        let mut chars = name.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        let rest_ok =
            chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '/' | '-'));
        if !(first_ok && rest_ok) {
            return Err(self.syntax(
                format!(
                    "invalid relation name `{}`: a relation name starts with an ASCII letter or `_` and continues with letters, digits, `_`, `.`, `:`, `/` or `-`",
                    shorten(name)
                ),
                Span::new(start, end),
            ));
        }
        self.pos = end;
        self.after_relation = true;
        Ok(RelationRef {
            name: name.to_string(),
            span: Span::new(start, end),
        })
    }
}

/// At most 32 characters of `s` for a message.
fn shorten(s: &str) -> String {
    const MAX: usize = 32;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
