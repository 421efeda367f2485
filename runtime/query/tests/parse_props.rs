//! Properties of the query parser: it never panics, its errors point inside
//! the text, what it accepts obeys the limits and the NOT rule with spans
//! that point at what they name, and printed trees parse back.

use kgbox_query::ast::{EntityRef, Query, RelationRef, Span};
use kgbox_query::{parse_with, DiagKind, Diagnostic, ParseLimits};
use proptest::prelude::*;
use proptest::sample::{select, Index};

// ---- checks -----------------------------------------------------------------

/// `span` as a slice of `text`, failing if it is out of range or splits a character.
fn slice(text: &str, span: Span) -> Result<&str, TestCaseError> {
    prop_assert!(
        span.start <= span.end && span.end <= text.len(),
        "{span:?} outside {} bytes",
        text.len()
    );
    prop_assert!(
        text.is_char_boundary(span.start) && text.is_char_boundary(span.end),
        "{span:?} splits a character"
    );
    Ok(&text[span.start..span.end])
}

/// A diagnostic's span, line, column and snippet agree with the text.
fn check_diag(text: &str, d: &Diagnostic) -> Result<(), TestCaseError> {
    prop_assert!(
        matches!(d.kind, DiagKind::Syntax | DiagKind::TooLarge),
        "{:?}",
        d.kind
    );
    prop_assert!(!d.message.is_empty());
    slice(text, d.span)?;
    let before = &text[..d.span.start];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[d.span.start..]
        .find('\n')
        .map_or(text.len(), |i| d.span.start + i);
    let lines = text.matches('\n').count() + 1;
    prop_assert!(d.line >= 1 && d.line <= lines, "line {} of {lines}", d.line);
    prop_assert_eq!(d.line, before.matches('\n').count() + 1);
    let line_text = &text[line_start..line_end];
    prop_assert!(
        d.column >= 1 && d.column <= line_text.chars().count() + 1,
        "column {}",
        d.column
    );
    prop_assert_eq!(d.column, text[line_start..d.span.start].chars().count() + 1);
    // Long lines are cut to a window around the caret, marked with `…`.
    let shown = d.snippet.split('\n').next().unwrap_or_default();
    if line_text.chars().count() <= 100 {
        prop_assert_eq!(shown, line_text);
    } else {
        let inner = shown.trim_start_matches('…').trim_end_matches('…');
        prop_assert!(line_text.contains(inner), "{shown:?} not in the line");
    }
    Ok(())
}

/// An accepted tree obeys the limits and the NOT rule, and its spans point at
/// what they name.
fn check_tree(text: &str, q: &Query, limits: &ParseLimits) -> Result<(), TestCaseError> {
    prop_assert!(q.depth() <= limits.max_depth, "depth {}", q.depth());
    prop_assert!(q.size() <= limits.max_nodes, "size {}", q.size());
    check_node(text, q, false)
}

fn check_node(text: &str, q: &Query, not_allowed: bool) -> Result<(), TestCaseError> {
    match q {
        Query::Entity { entity, span } => {
            let s = slice(text, *span)?;
            match entity {
                EntityRef::Id(id) => {
                    prop_assert!(s.starts_with('#'), "{s:?}");
                    prop_assert_eq!(s[1..].parse::<u32>().ok(), Some(*id));
                }
                EntityRef::Name(n) => {
                    prop_assert!(!n.is_empty());
                    if s.starts_with('"') {
                        prop_assert!(s.len() >= 2 && s.ends_with('"'), "{s:?}");
                    } else {
                        prop_assert_eq!(s, n.as_str(), "a bare name is its span");
                        prop_assert_eq!(n.trim(), n.as_str());
                        prop_assert!(!n.contains(['(', ')', ',', '"', '\n']) && !n.contains("->"));
                    }
                }
            }
        }
        Query::Project { input, relation } => {
            prop_assert!(!matches!(**input, Query::Not { .. }), "a projected NOT");
            prop_assert_eq!(slice(text, relation.span)?, relation.name.as_str());
            prop_assert!(input.span().end <= relation.span.start);
            check_node(text, input, false)?;
        }
        Query::And { operands, span } | Query::Or { operands, span } => {
            let is_and = matches!(q, Query::And { .. });
            let s = slice(text, *span)?;
            prop_assert!(
                s.starts_with(if is_and { "AND" } else { "OR" }) && s.ends_with(')'),
                "{s:?}"
            );
            prop_assert!(operands.len() >= 2);
            if is_and {
                prop_assert!(
                    operands.iter().any(|o| !matches!(o, Query::Not { .. })),
                    "an AND of NOTs"
                );
            }
            for o in operands {
                let os = o.span();
                prop_assert!(span.start < os.start && os.end < span.end);
                check_node(text, o, is_and)?;
            }
        }
        Query::Not { operand, span } => {
            prop_assert!(not_allowed, "a NOT outside an AND");
            let s = slice(text, *span)?;
            prop_assert!(s.starts_with("NOT") && s.ends_with(')'), "{s:?}");
            check_node(text, operand, false)?;
        }
    }
    Ok(())
}

/// Parses `text` under `limits`; either way the result must be sound, and an
/// accepted query must print to text that parses back to the same tree.
fn check_parse(text: &str, limits: &ParseLimits) -> Result<Option<Query>, TestCaseError> {
    match parse_with(text, limits) {
        Ok(q) => {
            check_tree(text, &q, limits)?;
            let printed = q.to_string();
            let unbounded = ParseLimits {
                max_len: usize::MAX,
                ..*limits
            };
            match parse_with(&printed, &unbounded) {
                Ok(back) => prop_assert_eq!(
                    without_spans_of(&back),
                    without_spans_of(&q),
                    "printed as {:?}",
                    printed
                ),
                Err(d) => prop_assert!(false, "printed as {printed:?}, which fails:\n{d}"),
            }
            Ok(Some(q))
        }
        Err(d) => {
            check_diag(text, &d)?;
            Ok(None)
        }
    }
}

// ---- strategies -------------------------------------------------------------

/// Text over pieces of the DSL, so that random strings get deep into the parser.
fn dsl_soup() -> impl Strategy<Value = String> {
    let piece = select(vec![
        "AND(", "OR(", "NOT(", "AND", "(", ")", "->", "-", ">", ",", "\"", "#", "\\", "\\n",
        "\\\"", "a", "b", "1", "_inv", " ", " ", "\n", "\t", "é", "東", "🦀", "#12", "r", "AND (",
        "\r\n",
    ]);
    prop::collection::vec(piece, 0..48).prop_map(|v| v.concat())
}

fn any_text() -> impl Strategy<Value = String> {
    prop::collection::vec(any::<char>(), 0..48).prop_map(|v| v.into_iter().collect())
}

fn entity_name() -> impl Strategy<Value = String> {
    prop_oneof![
        // Anything at all (printed quoted, or bare when it can be).
        prop::collection::vec(any::<char>(), 1..10).prop_map(|v| v.into_iter().collect::<String>()),
        // Names that can be written bare.
        "[A-Za-z0-9][A-Za-z0-9 '.&!?:#-]{0,12}".prop_map(|s| s.trim_end().to_string()),
        // Names full of the DSL's own characters.
        "[a() ,\"\\\\#\n\t->AND]{1,10}",
    ]
}

fn relation_name() -> impl Strategy<Value = String> {
    "[A-Za-z_][A-Za-z0-9_.:/-]{0,10}"
}

fn leaf() -> impl Strategy<Value = Query> {
    prop_oneof![
        3 => entity_name().prop_map(|n| Query::Entity { entity: EntityRef::Name(n), span: Span::default() }),
        1 => any::<u32>().prop_map(|i| Query::Entity { entity: EntityRef::Id(i), span: Span::default() }),
    ]
}

/// Valid trees: NOT only directly inside an AND beside a positive operand.
fn tree() -> impl Strategy<Value = Query> {
    let z = Span::default();
    leaf().prop_recursive(4, 40, 4, move |inner| {
        prop_oneof![
            (inner.clone(), relation_name()).prop_map(move |(q, r)| Query::Project {
                input: Box::new(q),
                relation: RelationRef { name: r, span: z },
            }),
            (
                prop::collection::vec(inner.clone(), 1..4),
                prop::collection::vec(inner.clone(), 0..3)
            )
                .prop_filter("AND needs 2 operands", |(p, n)| p.len() + n.len() >= 2)
                .prop_flat_map(move |(p, n)| {
                    let mut ops = p;
                    ops.extend(n.into_iter().map(|q| Query::Not {
                        operand: Box::new(q),
                        span: z,
                    }));
                    Just(ops).prop_shuffle()
                })
                .prop_map(move |operands| Query::And { operands, span: z }),
            prop::collection::vec(inner, 2..4)
                .prop_map(move |operands| Query::Or { operands, span: z }),
        ]
    })
}

/// Any tree, valid or not: NOT anywhere, operators with 1 to 3 operands,
/// empty names. [`is_valid`] says which ones the parser must accept.
fn any_tree() -> impl Strategy<Value = Query> {
    let z = Span::default();
    let leaf = prop_oneof![
        8 => leaf(),
        1 => Just(Query::Entity { entity: EntityRef::Name(String::new()), span: z }),
    ];
    leaf.prop_recursive(6, 24, 3, move |inner| {
        prop_oneof![
            (inner.clone(), relation_name()).prop_map(move |(q, r)| Query::Project {
                input: Box::new(q),
                relation: RelationRef { name: r, span: z },
            }),
            prop::collection::vec(inner.clone(), 1..4)
                .prop_map(move |operands| Query::And { operands, span: z }),
            prop::collection::vec(inner.clone(), 1..4)
                .prop_map(move |operands| Query::Or { operands, span: z }),
            inner.prop_map(move |q| Query::Not {
                operand: Box::new(q),
                span: z
            }),
        ]
    })
}

/// Whether the parser must accept the printed form of `q` under `limits`.
fn is_valid(q: &Query, limits: &ParseLimits) -> bool {
    fn shape(q: &Query, not_allowed: bool) -> bool {
        match q {
            Query::Entity { entity, .. } => !matches!(entity, EntityRef::Name(n) if n.is_empty()),
            Query::Project { input, .. } => {
                !matches!(**input, Query::Not { .. }) && shape(input, false)
            }
            Query::Or { operands, .. } => {
                operands.len() >= 2 && operands.iter().all(|o| shape(o, false))
            }
            Query::And { operands, .. } => {
                operands.len() >= 2
                    && operands.iter().any(|o| !matches!(o, Query::Not { .. }))
                    && operands.iter().all(|o| shape(o, true))
            }
            Query::Not { operand, .. } => not_allowed && shape(operand, false),
        }
    }
    shape(q, false) && q.depth() <= limits.max_depth && q.size() <= limits.max_nodes
}

/// Prints like `Display` but with varied whitespace and bare names where a
/// name can be written bare; `ws` picks the blanks in turn.
fn print_loosely(q: &Query, ws: &[u8], k: &mut usize, out: &mut String) {
    const BLANKS: [&str; 6] = ["", " ", "\n", "\t ", "  \n  ", "\r\n"];
    fn blank(ws: &[u8], k: &mut usize, out: &mut String) {
        out.push_str(BLANKS[usize::from(ws[*k % ws.len()]) % BLANKS.len()]);
        *k += 1;
    }
    match q {
        Query::Entity {
            entity: EntityRef::Name(n),
            ..
        } if can_be_bare(n) => out.push_str(n),
        Query::Entity { .. } => out.push_str(&q.to_string()),
        Query::Project { input, relation } => {
            print_loosely(input, ws, k, out);
            blank(ws, k, out);
            out.push_str("->");
            blank(ws, k, out);
            out.push_str(&relation.name);
        }
        Query::And { operands, .. } | Query::Or { operands, .. } => {
            out.push_str(if matches!(q, Query::And { .. }) {
                "AND"
            } else {
                "OR"
            });
            blank(ws, k, out);
            out.push('(');
            for (i, o) in operands.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                blank(ws, k, out);
                print_loosely(o, ws, k, out);
                blank(ws, k, out);
            }
            out.push(')');
        }
        Query::Not { operand, .. } => {
            out.push_str("NOT(");
            blank(ws, k, out);
            print_loosely(operand, ws, k, out);
            blank(ws, k, out);
            out.push(')');
        }
    }
}

fn can_be_bare(n: &str) -> bool {
    !n.is_empty()
        && n.trim() == n
        && !n.contains(['(', ')', ',', '"', '\n'])
        && !n.contains("->")
        && !n.starts_with('#')
}

#[derive(Debug, Clone)]
enum Edit {
    Delete(Index),
    Insert(Index, char),
    Swap(Index),
}

fn edit() -> impl Strategy<Value = Edit> {
    let ch = prop_oneof![
        3 => select(vec!['(', ')', ',', '"', '#', '\\', '-', '>', ' ', '\n', 'A', 'N', 'D', 'a', '1', 'é']),
        1 => any::<char>(),
    ];
    prop_oneof![
        any::<Index>().prop_map(Edit::Delete),
        (any::<Index>(), ch).prop_map(|(i, c)| Edit::Insert(i, c)),
        any::<Index>().prop_map(Edit::Swap),
    ]
}

fn apply(text: &str, e: &Edit) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    match e {
        Edit::Delete(i) if !chars.is_empty() => {
            chars.remove(i.index(chars.len()));
        }
        Edit::Insert(i, c) => chars.insert(i.index(chars.len() + 1), *c),
        Edit::Swap(i) if chars.len() >= 2 => {
            let at = i.index(chars.len() - 1);
            chars.swap(at, at + 1);
        }
        _ => {}
    }
    chars.into_iter().collect()
}

const VALID: &[&str] = &[
    "AND(TA -> P1_inv, DL -> P2_inv) -> P4",
    r#"AND("Joel Zwick" -> directed_by_inv, "Comedy" -> has_genre_inv) -> in_language"#,
    "Blade Runner 2049 -> directed_by",
    "#12 -> r",
    r#""a \"b\" \\ c\n\td" -> r"#,
    "AND(OR(a, b -> r1), NOT(c -> r2), d) -> r3",
    "(x -> p) -> q",
    "AND(\n  Joel Zwick -> directed_by_inv,\n  NOT(Comedy -> has_genre_inv)\n) -> in_language",
    "1982 -> release_year_inv -> starred_actors",
];

fn small_limits() -> ParseLimits {
    ParseLimits {
        max_len: 40,
        max_depth: 4,
        max_nodes: 6,
    }
}

// ---- properties -------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_text_is_parsed_or_refused_soundly(text in any_text()) {
        check_parse(&text, &ParseLimits::default())?;
        check_parse(&text, &small_limits())?;
    }

    #[test]
    fn dsl_soup_is_parsed_or_refused_soundly(text in dsl_soup()) {
        check_parse(&text, &ParseLimits::default())?;
        check_parse(&text, &small_limits())?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn printed_trees_parse_back(q in tree()) {
        let limits = ParseLimits { max_len: usize::MAX, max_depth: 32, max_nodes: 100_000 };
        let printed = q.to_string();
        let back = parse_with(&printed, &limits);
        prop_assert!(back.is_ok(), "{:?} fails: {}", printed, back.err().map(|d| d.to_string()).unwrap_or_default());
        let back = back.unwrap();
        prop_assert_eq!(without_spans_of(&back), without_spans_of(&q), "printed as {:?}", printed);
        check_tree(&printed, &back, &limits)?;
        prop_assert_eq!(back.to_string(), printed);
    }

    #[test]
    fn loosely_written_trees_parse_back(q in tree(), ws in prop::collection::vec(any::<u8>(), 1..16)) {
        let limits = ParseLimits { max_len: usize::MAX, max_depth: 32, max_nodes: 100_000 };
        let mut text = String::new();
        print_loosely(&q, &ws, &mut 0, &mut text);
        let back = parse_with(&text, &limits);
        prop_assert!(back.is_ok(), "{:?} fails: {}", text, back.err().map(|d| d.to_string()).unwrap_or_default());
        let back = back.unwrap();
        prop_assert_eq!(without_spans_of(&back), without_spans_of(&q), "written as {:?}", text);
        check_tree(&text, &back, &limits)?;
    }

    #[test]
    fn printed_trees_are_accepted_exactly_when_valid(q in any_tree(), depth in 1usize..8, nodes in 1usize..16) {
        let limits = ParseLimits { max_len: usize::MAX, max_depth: depth, max_nodes: nodes };
        let printed = q.to_string();
        match parse_with(&printed, &limits) {
            Ok(back) => {
                prop_assert!(is_valid(&q, &limits), "accepted {:?} under {:?}", printed, limits);
                prop_assert_eq!(without_spans_of(&back), without_spans_of(&q));
                check_tree(&printed, &back, &limits)?;
            }
            Err(d) => {
                prop_assert!(!is_valid(&q, &limits), "refused {:?} under {:?}: {}", printed, limits, d);
                check_diag(&printed, &d)?;
                if is_valid(&q, &ParseLimits { max_len: usize::MAX, max_depth: usize::MAX, max_nodes: usize::MAX }) {
                    prop_assert_eq!(d.kind, DiagKind::TooLarge, "{}", d);
                }
            }
        }
    }

    #[test]
    fn edited_queries_are_parsed_or_refused_soundly(
        base in prop_oneof![select(VALID.to_vec()).prop_map(String::from), tree().prop_map(|q| q.to_string())],
        edits in prop::collection::vec(edit(), 1..4),
    ) {
        let mut text = base;
        for e in &edits {
            text = apply(&text, e);
        }
        check_parse(&text, &ParseLimits::default())?;
        check_parse(&text, &small_limits())?;
    }
}

#[test]
fn the_valid_bases_are_valid() {
    for text in VALID {
        assert!(
            matches!(check_parse(text, &ParseLimits::default()), Ok(Some(_))),
            "{text:?}"
        );
    }
}

fn without_spans_of(q: &Query) -> Query {
    q.without_spans()
}
