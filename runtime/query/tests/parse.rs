//! The query parser: exact trees and spans, errors with their positions and
//! carets, limits, and printing then parsing back.

use kgbox_query::ast::{EntityRef, Query, RelationRef, Span};
use kgbox_query::{parse, parse_with, DiagKind, Diagnostic, ParseLimits};

// ---- building expected trees ------------------------------------------------

fn name(n: &str, start: usize, end: usize) -> Query {
    Query::Entity {
        entity: EntityRef::Name(n.to_string()),
        span: Span::new(start, end),
    }
}

fn id(i: u32, start: usize, end: usize) -> Query {
    Query::Entity {
        entity: EntityRef::Id(i),
        span: Span::new(start, end),
    }
}

fn proj(input: Query, rel: &str, start: usize, end: usize) -> Query {
    Query::Project {
        input: Box::new(input),
        relation: RelationRef {
            name: rel.to_string(),
            span: Span::new(start, end),
        },
    }
}

fn and(operands: Vec<Query>, start: usize, end: usize) -> Query {
    Query::And {
        operands,
        span: Span::new(start, end),
    }
}

fn or(operands: Vec<Query>, start: usize, end: usize) -> Query {
    Query::Or {
        operands,
        span: Span::new(start, end),
    }
}

fn not(operand: Query, start: usize, end: usize) -> Query {
    Query::Not {
        operand: Box::new(operand),
        span: Span::new(start, end),
    }
}

fn ok(text: &str) -> Query {
    match parse(text) {
        Ok(q) => q,
        Err(d) => panic!("{text:?} should parse, got:\n{d}"),
    }
}

fn err(text: &str) -> Diagnostic {
    match parse(text) {
        Ok(q) => panic!("{text:?} should not parse, got {q:?}"),
        Err(d) => d,
    }
}

/// Asserts a syntax error: a message part, line, column and the caret snippet.
fn syntax(text: &str, message: &str, line: usize, column: usize, snippet: &str) -> Diagnostic {
    let d = err(text);
    assert_eq!(d.kind, DiagKind::Syntax, "{text:?}: {d}");
    assert!(
        d.message.contains(message),
        "{text:?}: message {:?} lacks {message:?}",
        d.message
    );
    assert_eq!((d.line, d.column), (line, column), "{text:?}: {d}");
    assert_eq!(d.snippet, snippet, "{text:?}: {d}");
    d
}

/// Printing a parsed query and parsing that gives the same tree.
fn assert_round_trip(text: &str) {
    let q = ok(text);
    let printed = q.to_string();
    let back = match parse(&printed) {
        Ok(b) => b,
        Err(d) => panic!("{text:?} printed as {printed:?}, which does not parse:\n{d}"),
    };
    assert_eq!(
        without_spans_of(&back),
        without_spans_of(&q),
        "{text:?} printed as {printed:?}"
    );
    assert_eq!(back.to_string(), printed, "the printed form is canonical");
}

// ---- the paper's examples ---------------------------------------------------

#[test]
fn paper_example_with_ids_of_relations() {
    let text = "AND(TA -> P1_inv, DL -> P2_inv) -> P4";
    let expected = proj(
        and(
            vec![
                proj(name("TA", 4, 6), "P1_inv", 10, 16),
                proj(name("DL", 18, 20), "P2_inv", 24, 30),
            ],
            0,
            31,
        ),
        "P4",
        35,
        37,
    );
    let q = ok(text);
    assert_eq!(q, expected);
    assert_eq!(q.span(), Span::new(0, 37));
    assert_eq!((q.depth(), q.size()), (4, 6));
    assert_eq!(
        q.to_string(),
        r#"AND("TA" -> P1_inv, "DL" -> P2_inv) -> P4"#
    );
}

#[test]
fn paper_example_with_quoted_names() {
    let text = r#"AND("Joel Zwick" -> directed_by_inv, "Comedy" -> has_genre_inv) -> in_language"#;
    let expected = proj(
        and(
            vec![
                proj(name("Joel Zwick", 4, 16), "directed_by_inv", 20, 35),
                proj(name("Comedy", 37, 45), "has_genre_inv", 49, 62),
            ],
            0,
            63,
        ),
        "in_language",
        67,
        78,
    );
    assert_eq!(ok(text), expected);
    assert_eq!(ok(text).to_string(), text, "already canonical");
}

#[test]
fn paper_example_with_bare_names_spread_over_lines() {
    let text =
        "AND(\n  Joel Zwick -> directed_by_inv,\n  Comedy -> has_genre_inv\n) -> in_language\n";
    let expected = proj(
        and(
            vec![
                proj(name("Joel Zwick", 7, 17), "directed_by_inv", 21, 36),
                proj(name("Comedy", 40, 46), "has_genre_inv", 50, 63),
            ],
            0,
            65,
        ),
        "in_language",
        69,
        80,
    );
    assert_eq!(ok(text), expected);
}

// ---- entities ---------------------------------------------------------------

#[test]
fn bare_names_keep_inner_spaces_and_punctuation() {
    assert_eq!(
        ok("Blade Runner 2049 -> directed_by"),
        proj(name("Blade Runner 2049", 0, 17), "directed_by", 21, 32)
    );
    assert_eq!(
        ok("  \t Joel Zwick \t -> directed_by_inv  \n"),
        proj(name("Joel Zwick", 4, 14), "directed_by_inv", 20, 35)
    );
    assert_eq!(
        ok("1982 -> release_year_inv"),
        proj(name("1982", 0, 4), "release_year_inv", 8, 24)
    );
    assert_eq!(ok("Blade Runner"), name("Blade Runner", 0, 12));
    for n in [
        "Spider-Man",
        "C#",
        "Ocean's Eleven: Part 2.5!",
        "AT&T",
        "a - b",
        "-",
        "x-",
        "Amélie",
        "東京",
        "back\\slash",
        "50% off?",
    ] {
        let text = format!("{n} -> r");
        match ok(&text) {
            Query::Project { input, relation } => {
                assert_eq!(*input, name(n, 0, n.len()), "{text:?}");
                assert_eq!(relation.span, Span::new(n.len() + 4, n.len() + 5));
            }
            q => panic!("{text:?} parsed as {q:?}"),
        }
    }
}

#[test]
fn a_bare_name_ends_at_a_newline() {
    assert_eq!(
        ok("Joel Zwick\n-> r"),
        proj(name("Joel Zwick", 0, 10), "r", 14, 15)
    );
    syntax(
        "AND(Joel\n  Zwick -> r, b)",
        "expected `,` or `)` after an operand of AND, found `Zwick`",
        2,
        3,
        "  Zwick -> r, b)\n  ^^^^^",
    );
}

#[test]
fn keywords_are_keywords_only_before_a_paren() {
    assert_eq!(ok("AND -> r"), proj(name("AND", 0, 3), "r", 7, 8));
    assert_eq!(ok("NOT"), name("NOT", 0, 3));
    assert_eq!(ok("ANDROID -> r"), proj(name("ANDROID", 0, 7), "r", 11, 12));
    assert_eq!(ok("ORACLE"), name("ORACLE", 0, 6));
    assert_eq!(ok("Rock AND Roll"), name("Rock AND Roll", 0, 13));
    assert_eq!(ok("NOTE -> r"), proj(name("NOTE", 0, 4), "r", 8, 9));
    // Whitespace (newlines too) may separate the keyword from its `(`.
    assert_eq!(
        ok("AND (a, b)"),
        and(vec![name("a", 5, 6), name("b", 8, 9)], 0, 10)
    );
    assert_eq!(
        ok("OR\n  (a, b)"),
        or(vec![name("a", 6, 7), name("b", 9, 10)], 0, 11)
    );
    // Lower case is not a keyword.
    syntax(
        "and(a, b)",
        "operators are written in uppercase",
        1,
        4,
        "and(a, b)\n   ^",
    );
}

#[test]
fn ids() {
    assert_eq!(ok("#12 -> r"), proj(id(12, 0, 3), "r", 7, 8));
    assert_eq!(ok("#0"), id(0, 0, 2));
    assert_eq!(ok("#007"), id(7, 0, 4));
    assert_eq!(ok("#4294967295"), id(u32::MAX, 0, 11));
    assert_eq!(ok("#5->r"), proj(id(5, 0, 2), "r", 4, 5));
    assert_eq!(ok("AND(#1,#2)"), and(vec![id(1, 4, 6), id(2, 7, 9)], 0, 10));
    // `#` inside a bare name is just a character.
    assert_eq!(ok("C# 7 -> r"), proj(name("C# 7", 0, 4), "r", 8, 9));
    // A quoted name may start with `#`.
    assert_eq!(ok(r##""#12""##), name("#12", 0, 5));
}

#[test]
fn quoted_names_and_escapes() {
    let text = r#""a \"b\" \\ c\n\td" -> r"#;
    assert_eq!(
        ok(text),
        proj(name("a \"b\" \\ c\n\td", 0, 19), "r", 23, 24)
    );
    // Delimiters, keywords and arrows are plain text inside quotes.
    assert_eq!(
        ok(r#""AND(x, y) -> z" -> r"#),
        proj(name("AND(x, y) -> z", 0, 16), "r", 20, 21)
    );
    // Spaces inside quotes are kept verbatim, tabs too.
    assert_eq!(ok("\"  a\tb  \""), name("  a\tb  ", 0, 9));
    assert_eq!(ok(r#""Amélie""#), name("Amélie", 0, 9));
    // No space needed around a quoted name.
    assert_eq!(ok(r#""x"->r"#), proj(name("x", 0, 3), "r", 5, 6));
}

// ---- relations and projection ---------------------------------------------------

#[test]
fn relation_names_are_kept_verbatim() {
    for rel in [
        "directed_by",
        "directed_by_inv",
        "P31",
        "P1_inv",
        "_x",
        "rdfs:label",
        "wiki/P31.x-y",
        "r-",
    ] {
        let text = format!("a -> {rel}");
        assert_eq!(
            ok(&text),
            proj(name("a", 0, 1), rel, 5, 5 + rel.len()),
            "{text:?}"
        );
    }
}

#[test]
fn projection_chains_are_left_associative() {
    let expected = proj(proj(name("a", 0, 1), "r1", 5, 7), "r2", 11, 13);
    assert_eq!(ok("a -> r1 -> r2"), expected);
    assert_eq!(
        ok("a->r1->r2"),
        proj(proj(name("a", 0, 1), "r1", 3, 5), "r2", 7, 9)
    );
    // Explicit grouping of the left-associative reading: same tree, spans shifted.
    assert_eq!(
        ok("(a -> r1) -> r2"),
        proj(proj(name("a", 1, 2), "r1", 6, 8), "r2", 13, 15)
    );
    // Newlines around the arrow.
    assert_eq!(
        ok("a\n  -> r1\n  ->\n r2"),
        proj(proj(name("a", 0, 1), "r1", 7, 9), "r2", 16, 18)
    );
}

#[test]
fn any_query_can_be_projected() {
    assert_eq!(
        ok("AND(a, b) -> r"),
        proj(
            and(vec![name("a", 4, 5), name("b", 7, 8)], 0, 9),
            "r",
            13,
            14
        )
    );
    assert_eq!(
        ok("(OR(a, b)) -> r"),
        proj(
            or(vec![name("a", 4, 5), name("b", 7, 8)], 1, 9),
            "r",
            14,
            15
        )
    );
    assert_eq!(ok("((a))"), name("a", 2, 3));
    // A projection inside a group, then projected again.
    assert_eq!(
        ok("(x -> p) -> q -> s"),
        proj(
            proj(proj(name("x", 1, 2), "p", 6, 7), "q", 12, 13),
            "s",
            17,
            18
        )
    );
}

#[test]
fn nested_and_or_not() {
    let text = "AND(OR(a, b -> r1), NOT(c -> r2), d) -> r3";
    let expected = proj(
        and(
            vec![
                or(
                    vec![name("a", 7, 8), proj(name("b", 10, 11), "r1", 15, 17)],
                    4,
                    18,
                ),
                not(proj(name("c", 24, 25), "r2", 29, 31), 20, 32),
                name("d", 34, 35),
            ],
            0,
            36,
        ),
        "r3",
        40,
        42,
    );
    let q = ok(text);
    assert_eq!(q, expected);
    assert_eq!((q.depth(), q.size()), (5, 10));

    // NOT first, n-ary AND, OR inside NOT, NOT inside a group.
    assert_eq!(
        ok("AND(NOT(x), y, z)"),
        and(
            vec![
                not(name("x", 8, 9), 4, 10),
                name("y", 12, 13),
                name("z", 15, 16)
            ],
            0,
            17
        )
    );
    assert_eq!(
        ok("AND(y, NOT(OR(a, b)))"),
        and(
            vec![
                name("y", 4, 5),
                not(
                    or(vec![name("a", 14, 15), name("b", 17, 18)], 11, 19),
                    7,
                    20
                )
            ],
            0,
            21
        )
    );
    assert_eq!(
        ok("AND((NOT(x)), y)"),
        and(vec![not(name("x", 9, 10), 5, 11), name("y", 14, 15)], 0, 16)
    );
    // An AND that holds a NOT can itself be an operand of anything.
    assert_eq!(
        without_spans_of(&ok("OR(AND(a, NOT(b)), c) -> r")),
        without_spans_of(&proj(
            or(
                vec![
                    and(vec![name("a", 0, 0), not(name("b", 0, 0), 0, 0)], 0, 0),
                    name("c", 0, 0)
                ],
                0,
                0
            ),
            "r",
            0,
            0
        ))
    );
}

#[test]
fn nodes_print_canonically_and_parse_back() {
    for text in [
        "AND(TA -> P1_inv, DL -> P2_inv) -> P4",
        "AND(\n  Joel Zwick -> directed_by_inv,\n  Comedy -> has_genre_inv\n) -> in_language",
        "Blade Runner 2049 -> directed_by",
        "#12 -> r",
        r#""a \"b\" \\ c\n\td" -> r"#,
        "AND(OR(a, b -> r1), NOT(c -> r2), d) -> r3",
        "((x -> p)) -> q",
        "AND((NOT(x)), y, #3 -> z)",
        "AND(Amélie -> directed_by -> in_country, 東京 -> located_in)",
        "AND -> r",
    ] {
        assert_round_trip(text);
    }
    assert_eq!(
        ok("AND( a ,NOT( b ) )->  r").to_string(),
        r#"AND("a", NOT("b")) -> r"#
    );
}

// ---- errors -------------------------------------------------------------------

#[test]
fn empty_query() {
    syntax("", "empty query", 1, 1, "\n^");
    syntax("  \n\t ", "empty query", 1, 1, "  \n^");
}

#[test]
fn missing_relation() {
    syntax(
        "a -> )",
        "expected a relation name after `->`, found `)`",
        1,
        6,
        "a -> )\n     ^",
    );
    syntax(
        "a ->   ",
        "expected a relation name after `->`, found the end of the query",
        1,
        5,
        "a ->   \n    ^",
    );
    syntax(
        "a -> \"r\"",
        "relation names are written without quotes",
        1,
        6,
        "a -> \"r\"\n     ^",
    );
    syntax("a -> -> r", "found `->`", 1, 6, "a -> -> r\n     ^^");
}

#[test]
fn invalid_relation_names() {
    syntax(
        "a -> 1r",
        "invalid relation name `1r`",
        1,
        6,
        "a -> 1r\n     ^^",
    );
    syntax(
        "a -> réalisé",
        "invalid relation name `réalisé`",
        1,
        6,
        "a -> réalisé\n     ^^^^^^^",
    );
    syntax(
        "a -> #4",
        "invalid relation name `#4`",
        1,
        6,
        "a -> #4\n     ^^",
    );
    syntax(
        "a -> directed by",
        "relation names cannot contain spaces",
        1,
        15,
        "a -> directed by\n              ^^",
    );
}

#[test]
fn error_on_the_second_line() {
    let text = "AND(a -> r,\n    b -> )";
    let d = syntax(
        text,
        "expected a relation name after `->`, found `)`",
        2,
        10,
        "    b -> )\n         ^",
    );
    assert_eq!(d.span, Span::new(21, 22));
    assert_eq!(
        d.to_string(),
        "line 2, column 10: expected a relation name after `->`, found `)`\n      b -> )\n           ^"
    );

    let d = syntax(
        "OR(\n  \"Blade Runner -> r,\n  x)",
        "unclosed string",
        2,
        3,
        "  \"Blade Runner -> r,\n  ^^^^^^^^^^^^^^^^^^^",
    );
    assert!(d.message.contains("end of the line"), "{d}");
}

#[test]
fn operator_errors() {
    syntax(
        "AND(a -> r, b",
        "expected `,` or `)` after an operand of AND, found the end of the query",
        1,
        14,
        "AND(a -> r, b\n             ^",
    );
    // The end of the query is shown after the last token, not after trailing blanks.
    syntax(
        "OR(a, b\n\n",
        "expected `,` or `)` after an operand of OR, found the end of the query",
        1,
        8,
        "OR(a, b\n       ^",
    );
    syntax(
        "AND(a)",
        "AND needs at least 2 operands",
        1,
        1,
        "AND(a)\n^^^^^^",
    );
    syntax("OR()", "OR needs at least 2 operands", 1, 1, "OR()\n^^^^");
    syntax(
        "AND(a, , b)",
        "expected an operand of AND, found `,`",
        1,
        8,
        "AND(a, , b)\n       ^",
    );
    syntax(
        "AND(a,)",
        "expected an operand of AND, found `)`",
        1,
        7,
        "AND(a,)\n      ^",
    );
    syntax(
        "AND(x, NOT(a, b))",
        "expected `)` after the operand of NOT (NOT takes exactly one operand), found `,`",
        1,
        13,
        "AND(x, NOT(a, b))\n            ^",
    );
    syntax(
        "AND(x, NOT())",
        "expected an operand of NOT, found `)`",
        1,
        12,
        "AND(x, NOT())\n           ^",
    );
    syntax(
        "AND(a, b -> r \"c\")",
        "expected `,` or `)` after an operand of AND, found `\"`",
        1,
        15,
        "AND(a, b -> r \"c\")\n              ^",
    );
}

#[test]
fn grouping_errors() {
    syntax(
        "(a -> r",
        "expected `)` to close the `(` at line 1, column 1, found the end of the query",
        1,
        8,
        "(a -> r\n       ^",
    );
    syntax(
        "x -> r,\n(a -> r",
        "unexpected text after the end of the query, found `,`",
        1,
        7,
        "x -> r,\n      ^",
    );
    syntax(
        "AND(a,\n (b -> r, c)",
        "expected `)` to close the `(` at line 2, column 2, found `,`",
        2,
        9,
        " (b -> r, c)\n        ^",
    );
    syntax(
        "()",
        "expected a query after `(`, found `)`",
        1,
        2,
        "()\n ^",
    );
}

#[test]
fn trailing_text() {
    syntax(
        "AND(a, b) )",
        "unexpected text after the end of the query, found `)` (no `(` is open)",
        1,
        11,
        "AND(a, b) )\n          ^",
    );
    syntax(
        "a, b",
        "unexpected text after the end of the query, found `,`",
        1,
        2,
        "a, b\n ^",
    );
    syntax(
        "Foo(bar) -> r",
        "quote an entity name that contains `(`",
        1,
        4,
        "Foo(bar) -> r\n   ^",
    );
    syntax(
        "Rock AND(a, b)",
        "unexpected text after the end of the query, found `(`",
        1,
        9,
        "Rock AND(a, b)\n        ^",
    );
    syntax(
        "\"a\" b",
        "unexpected text after the end of the query, found `b`",
        1,
        5,
        "\"a\" b\n    ^",
    );
    syntax("#12 x", "found `x`", 1, 5, "#12 x\n    ^");
}

#[test]
fn start_errors() {
    syntax(
        "-> r",
        "expected an entity, `(` or an operator at the start of the query, found `->`",
        1,
        1,
        "-> r\n^^",
    );
    syntax(")", "found `)`", 1, 1, ")\n^");
    syntax("  , a", "found `,`", 1, 3, "  , a\n  ^");
}

#[test]
fn string_errors() {
    syntax(
        "\"Blade Runner -> r",
        "unclosed string",
        1,
        1,
        "\"Blade Runner -> r\n^^^^^^^^^^^^^^^^^^",
    );
    syntax("\"a\\", "unclosed string", 1, 1, "\"a\\\n^^^");
    syntax("\"a\\\nb\"", "unclosed string", 1, 1, "\"a\\\n^^^");
    let d = syntax(
        r#""a\qb" -> r"#,
        "unknown escape `\\q` in a string",
        1,
        3,
        "\"a\\qb\" -> r\n  ^^",
    );
    assert_eq!(d.span, Span::new(2, 4));
    // The escaped character may be several bytes long.
    let d = syntax(r#""\é""#, "unknown escape `\\é`", 1, 2, "\"\\é\"\n ^^");
    assert_eq!(d.span, Span::new(1, 4));
    syntax(r#""" -> r"#, "empty entity name", 1, 1, "\"\" -> r\n^^");
}

#[test]
fn id_errors() {
    syntax(
        "#99999999999 -> r",
        "entity id `#99999999999` is too large",
        1,
        1,
        "#99999999999 -> r\n^^^^^^^^^^^^",
    );
    syntax("#4294967296", "too large", 1, 1, "#4294967296\n^^^^^^^^^^^");
    syntax(
        "#12abc -> r",
        "invalid entity id `#12abc`",
        1,
        1,
        "#12abc -> r\n^^^^^^",
    );
    syntax("#-1", "invalid entity id `#-1`", 1, 1, "#-1\n^^^");
    syntax("# 12", "expected an entity id after `#`", 1, 1, "# 12\n^");
    syntax(
        "AND(#, a)",
        "expected an entity id after `#`",
        1,
        5,
        "AND(#, a)\n    ^",
    );
}

#[test]
fn not_rule() {
    let rule =
        "NOT is only allowed as a direct operand of an AND that also has an operand without NOT";
    syntax("NOT(a)", rule, 1, 1, "NOT(a)\n^^^");
    syntax("OR(NOT(a), b)", rule, 1, 4, "OR(NOT(a), b)\n   ^^^");
    syntax(
        "AND(a, NOT(NOT(b)))",
        rule,
        1,
        12,
        "AND(a, NOT(NOT(b)))\n           ^^^",
    );
    syntax("(NOT(a))", rule, 1, 2, "(NOT(a))\n ^^^");
    // Every operand of the AND is a NOT: points at the first one.
    let d = syntax(
        "AND(NOT(a), NOT(b))",
        "every operand of this AND is a NOT",
        1,
        5,
        "AND(NOT(a), NOT(b))\n    ^^^^^^",
    );
    assert!(d.message.contains(rule));
    // A projected NOT is not a direct operand.
    syntax(
        "AND(NOT(a) -> r, b)",
        "the result of NOT cannot be projected",
        1,
        5,
        "AND(NOT(a) -> r, b)\n    ^^^^^^",
    );
    syntax(
        "AND((NOT(a)) -> r, b)",
        "the result of NOT cannot be projected",
        1,
        6,
        "AND((NOT(a)) -> r, b)\n     ^^^^^^",
    );
}

#[test]
fn never_panics_on_odd_text() {
    for text in [
        "-",
        "->",
        "- >",
        "-->",
        "a ->-> b",
        "é",
        "é->",
        "->é",
        "(é",
        "é)",
        "\"é",
        "\"\\",
        "#",
        "#é",
        "#1é",
        "AND(",
        "AND",
        "AND(é",
        "NOT(",
        "OR(,",
        "(((",
        ")))",
        ",,,",
        "\u{0}",
        "a\u{2028}->\u{2028}r",
        "\r\n",
        "a\r\n-> r",
        "🦀 -> 🦀",
        "a -> r\u{301}",
        "\u{feff}a -> r",
        "\"\u{0}\"",
    ] {
        match parse(text) {
            Ok(q) => {
                let back = parse(&q.to_string()).expect("printed form parses");
                assert_eq!(without_spans_of(&back), without_spans_of(&q));
            }
            Err(d) => {
                assert!(text.is_char_boundary(d.span.start) && text.is_char_boundary(d.span.end));
                assert!(d.span.start <= d.span.end && d.span.end <= text.len());
            }
        }
    }
    assert_eq!(ok("- > r"), name("- > r", 0, 5));
    assert_eq!(ok("a\r\n-> r"), proj(name("a", 0, 1), "r", 6, 7));
}

// ---- limits -------------------------------------------------------------------

fn too_large(text: &str, limits: &ParseLimits) -> Diagnostic {
    match parse_with(text, limits) {
        Ok(q) => panic!("should be too large, parsed {} nodes", q.size()),
        Err(d) => {
            assert_eq!(d.kind, DiagKind::TooLarge, "{d}");
            d
        }
    }
}

#[test]
fn default_limits() {
    let l = ParseLimits::default();
    assert_eq!((l.max_len, l.max_depth, l.max_nodes), (16 * 1024, 32, 512));
}

#[test]
fn length_is_checked_first() {
    let limits = ParseLimits::default();
    let at_limit = format!("\"{}\"", "a".repeat(limits.max_len - 2));
    assert!(parse(&at_limit).is_ok());
    // Over the limit it fails even though the text would not parse at all.
    let over = format!("){}", "a".repeat(limits.max_len));
    let d = too_large(&over, &limits);
    assert!(
        d.message
            .contains("query is too long: 16385 bytes, the limit is 16384"),
        "{d}"
    );
    assert_eq!(d.span, Span::new(16384, 16384));
    assert_eq!((d.line, d.column), (1, 16385));
    // The limit may fall inside a multi-byte character: the span is moved back.
    let small = ParseLimits {
        max_len: 4,
        ..limits
    };
    let d = too_large("aaé€", &small);
    assert_eq!(d.span, Span::new(4, 4));
    let d = too_large("aaa€", &small);
    assert_eq!(d.span, Span::new(3, 3));
}

#[test]
fn depth_limit() {
    let limits = ParseLimits {
        max_depth: 3,
        ..ParseLimits::default()
    };
    assert_eq!(parse_with("a -> r -> s", &limits).map(|q| q.depth()), Ok(3));
    let d = too_large("a -> r -> s -> t", &limits);
    assert!(
        d.message
            .contains("query is nested too deeply: more than 3 levels"),
        "{d}"
    );
    assert_eq!(
        d.span,
        Span::new(15, 16),
        "points at the relation that is one too deep"
    );
    assert_eq!(
        parse_with("AND(OR(a, b), c)", &limits).map(|q| q.depth()),
        Ok(3)
    );
    let d = too_large("AND(OR(a, b -> r), c)", &limits);
    assert_eq!(d.span, Span::new(0, 21), "the AND");
    // Open parentheses count too, before anything inside them is read.
    let d = too_large("((((a", &limits);
    assert_eq!(d.span, Span::new(3, 4));

    // With the defaults, 31 nested ANDs are 32 levels; one more is too deep.
    let nest = |n: usize| format!("{}x{}", "AND(y, ".repeat(n), ")".repeat(n));
    assert_eq!(parse(&nest(31)).map(|q| q.depth()), Ok(32));
    assert_eq!(
        too_large(&nest(32), &ParseLimits::default()).kind,
        DiagKind::TooLarge
    );
    let chain = |n: usize| format!("a{}", " -> r".repeat(n));
    assert_eq!(parse(&chain(31)).map(|q| q.depth()), Ok(32));
    too_large(&chain(32), &ParseLimits::default());
}

#[test]
fn deep_nesting_cannot_overflow_the_stack() {
    let unlimited_len = ParseLimits {
        max_len: usize::MAX,
        ..ParseLimits::default()
    };
    let n = 100_000;
    for text in [
        "(".repeat(n),
        format!("{}a{}", "(".repeat(n), ")".repeat(n)),
        "AND(".repeat(n),
        format!("{}a", "AND(a, ".repeat(n)),
        format!("{}a", "AND(a, NOT(".repeat(n)),
        "AND(a, OR(".repeat(n),
        format!("a{}", " -> r".repeat(n)),
    ] {
        let d = too_large(&text, &unlimited_len);
        assert!(d.message.contains("nested too deeply"), "{}", d.message);
        // The default length limit stops it even earlier.
        assert!(parse(&text).is_err());
    }
}

#[test]
fn node_limit() {
    let wide = |n: usize| format!("OR({})", vec!["x"; n].join(", "));
    assert_eq!(parse(&wide(511)).map(|q| q.size()), Ok(512));
    let d = too_large(&wide(512), &ParseLimits::default());
    assert!(
        d.message.contains("query is too big: more than 512 nodes"),
        "{d}"
    );
    let limits = ParseLimits {
        max_nodes: 3,
        ..ParseLimits::default()
    };
    assert!(parse_with("a -> r -> s", &limits).is_ok());
    let d = too_large("AND(a, b, c)", &limits);
    assert_eq!(d.span, Span::new(0, 12), "the fourth node is the AND");
    let d = too_large("AND(a, b, c, d)", &limits);
    assert_eq!(d.span, Span::new(13, 14), "the fourth node is `d`");
}

fn without_spans_of(q: &Query) -> Query {
    q.without_spans()
}
