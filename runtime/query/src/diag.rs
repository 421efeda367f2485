//! Positioned errors with a caret under the problem.

use std::fmt;

use crate::ast::Span;

/// What went wrong, for callers that branch on it (HTTP status codes, retries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DiagKind {
    /// The text is not a query.
    Syntax,
    /// The query is too long, too deep or too big.
    TooLarge,
    /// An entity name or id the bundle does not have.
    UnknownEntity,
    /// A name that matches several entities.
    AmbiguousEntity,
    /// A relation the bundle does not have.
    UnknownRelation,
}

/// A positioned error in a query: message, span, 1-based line and column
/// (in characters), and for unknown names the closest names in the bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub kind: DiagKind,
    pub message: String,
    pub span: Span,
    pub line: usize,
    pub column: usize,
    pub suggestions: Vec<String>,
    /// The source line with a caret line under the span.
    pub snippet: String,
}

impl Diagnostic {
    /// Builds a diagnostic, computing line, column and snippet from `source`.
    pub fn new(kind: DiagKind, message: impl Into<String>, span: Span, source: &str) -> Diagnostic {
        let start = floor_char_boundary(source, span.start.min(source.len()));
        let end = floor_char_boundary(source, span.end.clamp(start, source.len()));
        let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = source[start..]
            .find('\n')
            .map_or(source.len(), |i| start + i);
        let line = source[..start].matches('\n').count() + 1;
        let column = source[line_start..start].chars().count() + 1;
        let text = &source[line_start..line_end];
        let width = source[start..end.min(line_end).max(start)]
            .chars()
            .count()
            .max(1);
        let snippet = snippet(text, column - 1, width);
        Diagnostic {
            kind,
            message: message.into(),
            span: Span::new(start, end),
            line,
            column,
            suggestions: Vec::new(),
            snippet,
        }
    }

    pub fn with_suggestions(mut self, suggestions: Vec<String>) -> Diagnostic {
        self.suggestions = suggestions;
        self
    }
}

/// `line L, column C: message`, then the snippet and caret, then suggestions.
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )?;
        for l in self.snippet.lines() {
            write!(f, "\n  {l}")?;
        }
        if !self.suggestions.is_empty() {
            write!(f, "\n  did you mean: {}", self.suggestions.join(", "))?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostic {}

/// Longest source line shown whole; longer ones are cut around the caret.
const SNIPPET_CHARS: usize = 100;

/// The line and a caret line under `width` chars from char `col`, cut to a
/// window around the caret when the line is long.
fn snippet(text: &str, col: usize, width: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= SNIPPET_CHARS {
        return format!("{text}\n{}{}", " ".repeat(col), "^".repeat(width));
    }
    let from = col.saturating_sub(SNIPPET_CHARS / 3).min(chars.len());
    let to = (from + SNIPPET_CHARS).min(chars.len());
    let lead = if from > 0 { "…" } else { "" };
    let tail = if to < chars.len() { "…" } else { "" };
    let shown: String = chars[from..to].iter().collect();
    let caret_at = lead.chars().count() + col.saturating_sub(from);
    let width = width.min(to.saturating_sub(col)).max(1);
    format!(
        "{lead}{shown}{tail}\n{}{}",
        " ".repeat(caret_at),
        "^".repeat(width)
    )
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caret_under_the_span_on_the_right_line() {
        let src = "AND(a -> r,\n    b -> bad)";
        let at = src.find("bad").unwrap();
        let d = Diagnostic::new(
            DiagKind::UnknownRelation,
            "unknown relation `bad`",
            Span::new(at, at + 3),
            src,
        );
        assert_eq!((d.line, d.column), (2, 10));
        assert_eq!(d.snippet, "    b -> bad)\n         ^^^");
        assert!(d
            .to_string()
            .starts_with("line 2, column 10: unknown relation `bad`"));
    }

    #[test]
    fn long_lines_are_cut_around_the_caret() {
        let src = format!("{}x -> ){}", "a".repeat(5000), "b".repeat(5000));
        let at = src.find(')').unwrap();
        let d = Diagnostic::new(
            DiagKind::Syntax,
            "expected a relation",
            Span::new(at, at + 1),
            &src,
        );
        assert_eq!(d.column, 5006);
        let lines: Vec<&str> = d.snippet.lines().collect();
        assert!(
            lines[0].chars().count() <= SNIPPET_CHARS + 2,
            "{}",
            lines[0].len()
        );
        let caret = lines[1].chars().position(|c| c == '^').unwrap();
        assert_eq!(lines[0].chars().nth(caret), Some(')'));
    }
}
