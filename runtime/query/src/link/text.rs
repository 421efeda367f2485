//! Mentions in text: bracketed mentions as given, and the longest runs of
//! words elsewhere that are keys of the index (see [`link_text`]).

use fst::{IntoStreamer, Streamer};
use kgbox_bundle::normalize::normalize;
use kgbox_bundle::Kg;

use super::candidate::{Candidate, LinkOptions, Mention};
use super::lexical::{from_postings, link_mention};

/// Single words (and runs made only of such words) that are never linked
/// outside brackets even when the graph has an entity of that name: the
/// function words and question words of English questions, and the words
/// questions use for the graph's own vocabulary ("movies", "film"). Short on
/// purpose: a word that is also a real entity (a genre, a tag) should link.
/// Words shorter than [`MIN_WORD_CHARS`] are skipped in the same way.
pub const STOPWORDS: &[&str] = &[
    "a", "about", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "film", "films",
    "for", "from", "has", "have", "he", "her", "his", "how", "i", "in", "is", "it", "its", "movie",
    "movies", "of", "on", "or", "she", "that", "the", "their", "they", "this", "to", "was", "were",
    "what", "when", "where", "which", "who", "whom", "whose", "why", "with",
];

/// Single-word matches outside brackets need at least this many characters.
pub const MIN_WORD_CHARS: usize = 3;

/// Finds entity mentions in `text`, in text order and without overlaps.
///
/// - `[Joel Zwick]`: a bracketed mention is taken as given and linked with
///   [`link_mention`] (exact, alias, then fuzzy). `start..end` covers the
///   content without the brackets and without surrounding whitespace. With
///   nested brackets the innermost pair counts (`[[x]]` gives `x`); a `[`
///   that is never closed is plain text. A bracketed mention is reported
///   even when it links to nothing, unless it is empty.
/// - Elsewhere the text is split into words by the index's normalization
///   rules, and at each word the longest run of up to
///   [`LinkOptions::max_mention_tokens`] words whose normalized form is an
///   index key is taken (exact and alias matches only, no fuzzy stage); the
///   scan continues after it. A run must start and end on word boundaries, so
///   nothing matches inside a word. A possessive last word also matches
///   without its `'s` (`Ridley Scott's` links `Ridley Scott`, and the mention
///   ends before the apostrophe). A capitalised plural last word also
///   matches its singular (`the Wookiees` links `Wookiee`) when the word as
///   written is no key. Runs made only of [`STOPWORDS`] and
///   single words shorter than [`MIN_WORD_CHARS`] are skipped.
pub fn link_text(kg: &Kg<'_>, text: &str, opts: &LinkOptions) -> Vec<Mention> {
    let never: Result<_, std::convert::Infallible> =
        link_text_with(kg, text, opts, |m| Ok(link_mention(kg, m, opts)));
    match never {
        Ok(mentions) => mentions,
        Err(e) => match e {},
    }
}

pub(super) fn link_text_with<E>(
    kg: &Kg<'_>,
    text: &str,
    opts: &LinkOptions,
    mut link_one: impl FnMut(&str) -> Result<Vec<Candidate>, E>,
) -> Result<Vec<Mention>, E> {
    let mut mentions = Vec::new();
    let mut plain_from = 0;
    for (open, close) in brackets(text) {
        scan_plain(kg, text, plain_from, open, opts, &mut mentions);
        let (start, end) = trim_range(text, open + 1, close);
        if start < end && !normalize(&text[start..end]).is_empty() {
            mentions.push(Mention {
                text: text[start..end].to_string(),
                start,
                end,
                bracketed: true,
                candidates: link_one(&text[start..end])?,
            });
        }
        plain_from = close + 1;
    }
    scan_plain(kg, text, plain_from, text.len(), opts, &mut mentions);
    Ok(mentions)
}

/// Byte offsets of `[` and its `]` for each bracketed span, innermost `[`
/// before a `]`; unclosed `[` are not reported.
fn brackets(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut open = None;
    for (i, b) in text.bytes().enumerate() {
        match b {
            b'[' => open = Some(i),
            b']' => {
                if let Some(o) = open.take() {
                    out.push((o, i));
                }
            }
            _ => {}
        }
    }
    out
}

/// `start..end` without leading and trailing whitespace.
fn trim_range(text: &str, start: usize, end: usize) -> (usize, usize) {
    let s = &text[start..end];
    let lead = s.len() - s.trim_start().len();
    let trail = s.len() - s.trim_end().len();
    if lead == s.len() {
        return (start, start);
    }
    (start + lead, end - trail)
}

/// A word of the text: its normalized form and where it came from.
#[derive(Debug)]
struct Word {
    norm: String,
    start: usize,
    end: usize,
    /// For a word that ends in `'s`: the normalized form without the `s`,
    /// and the end of the word before the apostrophe.
    possessive: Option<(String, usize)>,
    /// For a capitalised plural (`Wookiees`, `Droids`): the normalized
    /// singular, tried when the word as written is no key.
    plural: Option<String>,
}

/// The singular of a capitalised plural word of the text (`Wookiees` →
/// `wookiee`, `Kaminoans` → `kaminoan`); `None` for other words. Lowercase
/// words are left alone: "actors" is the graph's vocabulary, not a name.
fn singular(original: &str, norm: &str) -> Option<String> {
    if !original.chars().next().is_some_and(char::is_uppercase)
        || norm.chars().count() < 4
        || !norm.ends_with('s')
        || norm.ends_with("ss")
        || is_stopword(norm)
    {
        return None;
    }
    Some(norm[..norm.len() - 1].to_string())
}

fn is_apostrophe(c: char) -> bool {
    matches!(c, '\'' | '\u{2019}' | '\u{02bc}' | '`')
}

/// What one character of the text contributes to its normalized form.
enum Piece {
    /// Dropped without separating words (apostrophes, combining marks).
    Transparent,
    /// A word separator.
    Break,
    /// Normalized text, with separators as single spaces; a leading or
    /// trailing space means the character also separates from its neighbours.
    Text(String),
}

fn piece(c: char) -> Piece {
    if c.is_ascii() {
        return if c.is_ascii_alphanumeric() {
            Piece::Text(c.to_ascii_lowercase().to_string())
        } else if is_apostrophe(c) {
            Piece::Transparent
        } else {
            Piece::Break
        };
    }
    // Normalize the character between two letters, so that separators at its
    // edges survive: "a½a" gives "a1 2a", "a—a" gives "a a", "a\u{301}a" gives "aa".
    let mut buf = [0u8; 4];
    let sandwich = format!("a{}a", c.encode_utf8(&mut buf));
    let n = normalize(&sandwich);
    let inner = n
        .strip_prefix('a')
        .and_then(|s| s.strip_suffix('a'))
        .unwrap_or(" ");
    if inner.is_empty() {
        Piece::Transparent
    } else if inner.trim().is_empty() {
        Piece::Break
    } else {
        Piece::Text(inner.to_string())
    }
}

/// Splits `text[from..to]` into normalized words with byte ranges into `text`.
///
/// Normalizes character by character, which agrees with normalizing the whole
/// string except where canonical reordering would move a combining character
/// across a character boundary; such characters are marks, which are dropped.
fn words(text: &str, from: usize, to: usize) -> Vec<Word> {
    let mut out: Vec<Word> = Vec::new();
    let mut cur: Option<Word> = None;
    // Byte offset of the last apostrophe inside the current word, and whether
    // only an `s` has followed it.
    let mut apostrophe: Option<usize> = None;
    let mut after_apostrophe = String::new();
    let finish = |cur: &mut Option<Word>,
                  out: &mut Vec<Word>,
                  apostrophe: &mut Option<usize>,
                  after: &mut String| {
        if let Some(mut w) = cur.take() {
            if let Some(at) = apostrophe.take() {
                if after == "s" && w.norm.len() > 1 {
                    let cut = w.norm[..w.norm.len() - 1].to_string();
                    w.possessive = Some((cut, at));
                }
            }
            if w.possessive.is_none() {
                w.plural = singular(&text[w.start..w.end], &w.norm);
            }
            out.push(w);
        }
        *apostrophe = None;
        after.clear();
    };
    for (i, c) in text[from..to].char_indices() {
        let (start, end) = (from + i, from + i + c.len_utf8());
        match piece(c) {
            Piece::Transparent => {
                if let Some(w) = cur.as_mut() {
                    if is_apostrophe(c) {
                        apostrophe = Some(start);
                        after_apostrophe.clear();
                    } else if w.end == start {
                        // A combining mark belongs to the word it follows.
                        w.end = end;
                    }
                }
            }
            Piece::Break => finish(&mut cur, &mut out, &mut apostrophe, &mut after_apostrophe),
            Piece::Text(t) => {
                let t = t.as_str();
                let lead_break = t.starts_with(' ');
                let trail_break = t.ends_with(' ');
                if lead_break {
                    finish(&mut cur, &mut out, &mut apostrophe, &mut after_apostrophe);
                }
                for (k, part) in t.split(' ').filter(|p| !p.is_empty()).enumerate() {
                    if k > 0 {
                        finish(&mut cur, &mut out, &mut apostrophe, &mut after_apostrophe);
                    }
                    match cur.as_mut() {
                        Some(w) => {
                            w.norm.push_str(part);
                            w.end = end;
                        }
                        None => {
                            cur = Some(Word {
                                norm: part.to_string(),
                                start,
                                end,
                                possessive: None,
                                plural: None,
                            })
                        }
                    }
                    if apostrophe.is_some() {
                        after_apostrophe.push_str(part);
                    }
                }
                if trail_break {
                    finish(&mut cur, &mut out, &mut apostrophe, &mut after_apostrophe);
                }
            }
        }
    }
    finish(&mut cur, &mut out, &mut apostrophe, &mut after_apostrophe);
    out
}

fn is_stopword(norm: &str) -> bool {
    STOPWORDS.binary_search(&norm).is_ok()
}

/// Whether a run of words is too common to link outside brackets.
fn skipped(run: &[&str]) -> bool {
    match run {
        [one] => one.chars().count() < MIN_WORD_CHARS || is_stopword(one),
        _ => run.iter().all(|w| is_stopword(w)),
    }
}

/// The longest match starting at `words[0]`: (words used, end byte of the
/// match in the text, fst value of the matched key).
fn longest_at(kg: &Kg<'_>, words: &[Word], max_tokens: usize) -> Option<(usize, usize, u64)> {
    kg.with_index(|index| {
        let has_prefix = |p: &str| {
            let mut s = index.range().ge(p).into_stream();
            matches!(s.next(), Some((k, _)) if k.starts_with(p.as_bytes()))
        };
        let mut best = None;
        let mut key = String::new();
        for (n, w) in words.iter().take(max_tokens).enumerate() {
            if n > 0 {
                key.push(' ');
                if !has_prefix(&key) {
                    break;
                }
            }
            let len = key.len();
            if let Some((cut, at)) = &w.possessive {
                key.push_str(cut);
                if let Some(v) = index.get(&key) {
                    best = Some((n + 1, *at, v));
                }
                key.truncate(len);
            }
            if let Some(one) = &w.plural {
                key.push_str(one);
                if let Some(v) = index.get(&key) {
                    best = Some((n + 1, w.end, v));
                }
                key.truncate(len);
            }
            key.push_str(&w.norm);
            if let Some(v) = index.get(&key) {
                best = Some((n + 1, w.end, v));
            }
        }
        best
    })
    .flatten()
}

/// Longest-match scan of `text[from..to]` (no brackets inside).
fn scan_plain(
    kg: &Kg<'_>,
    text: &str,
    from: usize,
    to: usize,
    opts: &LinkOptions,
    mentions: &mut Vec<Mention>,
) {
    if from >= to || opts.max_mention_tokens == 0 {
        return;
    }
    let ws = words(text, from, to);
    let mut i = 0;
    while i < ws.len() {
        let Some((n, end, value)) = longest_at(kg, &ws[i..], opts.max_mention_tokens) else {
            i += 1;
            continue;
        };
        let run: Vec<&str> = ws[i..i + n].iter().map(|w| w.norm.as_str()).collect();
        if skipped(&run) {
            i += 1;
            continue;
        }
        let candidates = from_postings(kg, &kg.decode_postings(value), opts);
        if candidates.is_empty() {
            i += 1;
            continue;
        }
        let start = ws[i].start;
        mentions.push(Mention {
            text: text[start..end].to_string(),
            start,
            end,
            bracketed: false,
            candidates,
        });
        i += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norms(text: &str) -> Vec<(String, &str)> {
        words(text, 0, text.len())
            .into_iter()
            .map(|w| (w.norm, &text[w.start..w.end]))
            .collect()
    }

    #[test]
    fn stopwords_are_sorted() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn words_follow_normalize() {
        for text in [
            "Amélie  (2001)",
            "Schindler's List",
            "  AC/DC ",
            "e\u{301}te\u{301} ½ ﬁsh — ①",
            "İstanbul ΣΊΣΥΦΟΣ straße",
            "",
            "!!!",
        ] {
            let joined: Vec<String> = norms(text).into_iter().map(|(n, _)| n).collect();
            assert_eq!(joined.join(" "), normalize(text), "{text:?}");
        }
        assert_eq!(
            norms("Amélie's  (2001)"),
            [("amelies".to_string(), "Amélie's"), ("2001".into(), "2001")]
        );
        assert_eq!(norms("e\u{301}x")[0].1, "e\u{301}x");
        assert_eq!(norms("a½b"), [("a1".into(), "a½"), ("2b".into(), "½b")]);
    }

    #[test]
    fn possessives() {
        let w = words("Scott's x", 0, 9);
        assert_eq!(w[0].norm, "scotts");
        assert_eq!(w[0].possessive, Some(("scott".into(), 5)));
        assert_eq!(words("It’S", 0, 6)[0].possessive, Some(("it".into(), 2)));
        assert_eq!(words("it's'", 0, 5)[0].possessive, None);
        assert_eq!(words("o'clock", 0, 7)[0].possessive, None);
    }

    #[test]
    fn capitalised_plurals() {
        let w = words("the Wookiees and Ewoks like actors", 0, 34);
        let plurals: Vec<Option<&str>> = w.iter().map(|w| w.plural.as_deref()).collect();
        assert_eq!(
            plurals,
            [None, Some("wookiee"), None, Some("ewok"), None, None]
        );
        assert_eq!(words("Ross", 0, 4)[0].plural, None);
        assert_eq!(words("Bus", 0, 3)[0].plural, None);
    }

    #[test]
    fn bracket_spans() {
        assert_eq!(brackets("[[x]]"), [(1, 3)]);
        assert_eq!(brackets("[a] [b"), [(0, 2)]);
        assert_eq!(brackets("]["), []);
    }
}
