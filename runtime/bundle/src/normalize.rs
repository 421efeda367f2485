//! Normalization of entity names and aliases for the lexical index.

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// Recorded in the manifest so a runtime knows which normalizer built the index.
pub const NORMALIZER_ID: &str = "nfkd-nomarks-lower-alnum-v1";

/// NFKD, combining marks dropped, lowercased; apostrophes removed; any other
/// character that is not a letter or digit becomes a space; runs of spaces
/// collapse. `"Amélie  (2001)"` → `"amelie 2001"`, `"Schindler's List"` →
/// `"schindlers list"`.
pub fn normalize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut pending_space = false;
    for c in s.nfkd() {
        if is_combining_mark(c) || matches!(c, '\'' | '\u{2019}' | '\u{02bc}' | '`') {
            continue;
        }
        if c.is_alphanumeric() {
            if pending_space && !out.is_empty() {
                out.push(' ');
            }
            pending_space = false;
            out.extend(c.to_lowercase());
        } else {
            pending_space = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn folds_case_marks_and_punctuation() {
        assert_eq!(normalize("Amélie  (2001)"), "amelie 2001");
        assert_eq!(normalize("Schindler's List"), "schindlers list");
        assert_eq!(normalize("  AC/DC "), "ac dc");
        assert_eq!(normalize("Blade Runner"), normalize("blade   RUNNER"));
        assert_eq!(normalize("!!!"), "");
    }
}
