//! openCypher tokens.

use std::fmt;

use super::super::TranslateError;
use super::L;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Tok {
    Word(String),
    Str(String),
    Punct(char),
}

/// A token as the query showed it, for error messages.
impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Word(w) => write!(f, "`{w}`"),
            Tok::Str(s) => write!(f, "'{s}'"),
            Tok::Punct(c) => write!(f, "`{c}`"),
        }
    }
}

/// What the token at the cursor is, for "expected X, found Y".
pub(super) fn describe(t: Option<&Tok>) -> String {
    t.map_or_else(|| "the end of the query".to_string(), Tok::to_string)
}

pub(super) fn tokenize(text: &str) -> Result<Vec<Tok>, TranslateError> {
    let syntax = |m: String| TranslateError::Syntax(m, L);
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(i, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '\'' || c == '"' {
            chars.next();
            let mut s = String::new();
            loop {
                match chars.next() {
                    None => return Err(syntax(format!("unterminated string at byte {i}"))),
                    Some((_, '\\')) => match chars.next() {
                        Some((_, 'n')) => s.push('\n'),
                        Some((_, 't')) => s.push('\t'),
                        Some((_, x)) => s.push(x),
                        None => return Err(syntax(format!("unterminated string at byte {i}"))),
                    },
                    Some((_, x)) if x == c => break,
                    Some((_, x)) => s.push(x),
                }
            }
            out.push(Tok::Str(s));
        } else if c == '`' {
            chars.next();
            let mut s = String::new();
            loop {
                match chars.next() {
                    None => return Err(syntax(format!("unterminated `name` at byte {i}"))),
                    Some((_, '`')) if chars.peek().map(|p| p.1) == Some('`') => {
                        chars.next();
                        s.push('`');
                    }
                    Some((_, '`')) => break,
                    Some((_, x)) => s.push(x),
                }
            }
            out.push(Tok::Word(s));
        } else if c.is_alphanumeric() || c == '_' {
            let mut s = String::new();
            while let Some(&(_, x)) = chars.peek() {
                if x.is_alphanumeric() || x == '_' {
                    s.push(x);
                    chars.next();
                } else {
                    break;
                }
            }
            out.push(Tok::Word(s));
        } else {
            chars.next();
            out.push(Tok::Punct(c));
        }
    }
    Ok(out)
}

pub(super) fn is_kw(t: Option<&Tok>, kw: &str) -> bool {
    matches!(t, Some(Tok::Word(w)) if w.eq_ignore_ascii_case(kw))
}
