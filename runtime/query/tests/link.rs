//! Entity linking over the demo bundle (a slice of MetaQA's movie KB) and
//! over a tiny graph built here with aliases and colliding names, and the
//! dense stage over a tiny index with a stand-in encoder.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;

use kgbox_bundle::kg::encode;
use kgbox_bundle::normalize::normalize;
use kgbox_bundle::sections::{self as s, include_in_image};
use kgbox_bundle::{image, AlignedBytes, ImageView, Kg, Limits, PublicKey, TrustedKeys};
use kgbox_query::dense::{
    quantize, Dense, DenseError, DenseIndex, DenseMeta, EncodeError, TextEncoder, QUANTIZATION,
};
use kgbox_query::link::{
    eq1, link_mention, link_mention_dense, link_text, link_text_dense, Candidate, LinkOptions,
    Mention, Method,
};
use proptest::prelude::*;

const DEMO: &[u8] = include_bytes!("../../../demo/demo.kgb");
const DEMO_KEY: &str = include_str!("../../../demo/DEMO-ONLY.pub");

/// The demo bundle, verified and installed as an image in memory.
fn demo_image() -> (AlignedBytes, ImageView) {
    let keys = TrustedKeys::new(vec![PublicKey::parse(DEMO_KEY).unwrap()]);
    let img = image::from_bundle_bytes(DEMO, &keys, &Limits::default()).unwrap();
    let view = ImageView::parse(&img, include_in_image).unwrap();
    (img, view)
}

fn with_demo<T>(f: impl FnOnce(&Kg<'_>) -> T) -> T {
    let (img, view) = demo_image();
    let kg = Kg::from_sections(|n| view.section(&img, n)).unwrap();
    f(&kg)
}

/// KG sections for `entities` (any order) and `aliases` (owner name, alias),
/// with no edges; the index follows the packager's rules (a name wins over an
/// alias of the same entity).
fn tiny_sections(
    entities: &[&str],
    aliases: &[(&str, &str)],
) -> HashMap<&'static str, AlignedBytes> {
    let mut names: Vec<&str> = entities.to_vec();
    names.sort_unstable();
    names.dedup();
    let n = names.len();
    let id = |name: &str| names.binary_search(&name).unwrap() as u32;
    let mut als: Vec<(u32, &str)> = aliases.iter().map(|&(o, a)| (id(o), a)).collect();
    als.sort_unstable();
    als.dedup();
    let mut owners = vec![0u64; n + 1];
    for (e, _) in &als {
        owners[*e as usize + 1] += 1;
    }
    for i in 0..n {
        owners[i + 1] += owners[i];
    }

    let (index, postings) = encode::lexical_index(&names, &als).unwrap();

    let mut out: Vec<(&'static str, Vec<u8>)> = Vec::new();
    let (o, b) = encode::string_table(&names);
    out.push((s::ENTITY_OFFSETS, o));
    out.push((s::ENTITY_NAMES, b));
    let (o, b) = encode::string_table::<&str>(&[]);
    out.push((s::RELATION_OFFSETS, o));
    out.push((s::RELATION_NAMES, b));
    let alias_names: Vec<&str> = als.iter().map(|(_, a)| *a).collect();
    let (o, b) = encode::string_table(&alias_names);
    out.push((s::ALIAS_OWNERS, encode::u64s(&owners)));
    out.push((s::ALIAS_OFFSETS, o));
    out.push((s::ALIAS_NAMES, b));
    let no_edges = encode::u64s(&vec![0u64; n + 1]);
    for (off, rel, other) in [
        (s::OUT_OFFSETS, s::OUT_RELATIONS, s::OUT_TARGETS),
        (s::IN_OFFSETS, s::IN_RELATIONS, s::IN_SOURCES),
    ] {
        out.push((off, no_edges.clone()));
        out.push((rel, Vec::new()));
        out.push((other, Vec::new()));
    }
    out.push((s::INDEX_FST, index));
    out.push((s::INDEX_POSTINGS, postings));
    out.into_iter()
        .map(|(name, bytes)| (name, AlignedBytes::from_slice(&bytes)))
        .collect()
}

const TINY_ENTITIES: &[&str] = &[
    "Amélie",
    "Blade",
    "Blade Runner",
    "Bobby E",
    "Bruce Springsteen",
    "Lade",
    "PARIS",
    "Paris",
    "Paris Hilton",
    "Ridley Scott",
    "Robert De Niro",
    "Run",
    "Tony Soprano",
    "Up",
    "Who",
    "Zwick",
];

const TINY_ALIASES: &[(&str, &str)] = &[
    ("Paris Hilton", "Paris"),
    ("Robert De Niro", "Bobby D"),
    ("Bruce Springsteen", "The Boss"),
    ("Tony Soprano", "The Boss"),
    ("Bruce Springsteen", "The Boss!"), // same normalized key, same owner
];

fn with_tiny<T>(f: impl FnOnce(&Kg<'_>) -> T) -> T {
    let sections = tiny_sections(TINY_ENTITIES, TINY_ALIASES);
    let kg = Kg::from_sections(|n| sections.get(n).map(|b| &b[..])).unwrap();
    f(&kg)
}

fn opts() -> LinkOptions {
    LinkOptions::default()
}

fn names(c: &[Candidate]) -> Vec<&str> {
    c.iter().map(|c| c.name.as_str()).collect()
}

fn texts(ms: &[Mention]) -> Vec<&str> {
    ms.iter().map(|m| m.text.as_str()).collect()
}

fn total(c: &[Candidate]) -> f32 {
    c.iter().map(|c| c.probability).sum()
}

/// Invariants of any result: offsets map back to the text, mentions are in
/// order and disjoint, candidates are ranked and their probabilities sum to
/// at most 1 (exactly 1 when nothing was cut by `top_m`).
fn check(text: &str, ms: &[Mention], opts: &LinkOptions) {
    let mut last_end = 0;
    for m in ms {
        assert!(m.start <= m.end && m.end <= text.len(), "{m:?}");
        assert!(m.start >= last_end, "overlap or disorder in {ms:?}");
        assert_eq!(text.get(m.start..m.end), Some(m.text.as_str()), "{m:?}");
        last_end = m.end;
        assert!(m.bracketed || !m.candidates.is_empty(), "{m:?}");
        assert!(m.candidates.len() <= opts.top_m);
        assert!(m
            .candidates
            .windows(2)
            .all(|w| w[0].probability >= w[1].probability));
        let sum = total(&m.candidates);
        assert!(sum <= 1.0 + 1e-4, "{m:?}");
        if m.candidates.len() < opts.top_m && !m.candidates.is_empty() {
            assert!((sum - 1.0).abs() < 1e-4, "{m:?}");
        }
        for c in &m.candidates {
            assert!(c.probability > 0.0 && c.probability.is_finite(), "{c:?}");
        }
    }
}

#[test]
fn demo_exact_and_fuzzy() {
    with_demo(|kg| {
        let br = kg.entity_id("Blade Runner").unwrap();
        let c = link_mention(kg, "  blade RUNNER ", &opts());
        assert_eq!(c.len(), 1);
        assert_eq!(
            (c[0].entity, c[0].method, c[0].distance),
            (br, Method::Exact, 0)
        );
        assert!((c[0].probability - 1.0).abs() < 1e-6);

        let c = link_mention(kg, "Blade Runer", &opts());
        assert_eq!(names(&c)[0], "Blade Runner", "{c:?}");
        assert_eq!((c[0].method, c[0].distance), (Method::Fuzzy, 1));
        assert!(c[0].probability > 0.99, "{c:?}");
        assert!((total(&c) - 1.0).abs() < 1e-4);

        // Fuzzy can be turned off, and is not tried on short mentions.
        let off = LinkOptions {
            fuzzy: false,
            ..opts()
        };
        assert!(link_mention(kg, "Blade Runer", &off).is_empty());
        assert!(link_mention(
            kg,
            "Blade Runer",
            &LinkOptions {
                max_distance: 0,
                ..opts()
            }
        )
        .is_empty());
        assert!(link_mention(kg, "xr", &opts()).is_empty());
        assert!(link_mention(kg, "", &opts()).is_empty());
        assert!(link_mention(kg, "!!!", &opts()).is_empty());

        // Two entities normalize to "harrison ford" (the actor and a tag): a tie.
        let c = link_mention(kg, "Harrison Ford", &opts());
        assert_eq!(names(&c), ["Harrison Ford", "harrison ford"]);
        assert!(c
            .iter()
            .all(|c| c.method == Method::Exact && (c.probability - 0.5).abs() < 1e-6));
    });
}

#[test]
fn demo_questions() {
    with_demo(|kg| {
        let text = "Who directed Blade Runner, and what did Ridley Scott's films star?";
        let ms = link_text(kg, text, &opts());
        check(text, &ms, &opts());
        assert_eq!(texts(&ms), ["Blade Runner", "Ridley Scott"]);
        assert!(ms.iter().all(|m| !m.bracketed));
        assert_eq!(&text[ms[0].start..ms[0].end], "Blade Runner");
        assert_eq!(ms[0].start, text.find("Blade").unwrap());

        // MetaQA style: the topic entity in brackets.
        let text = "which person directed the movies starred by [Harrison Ford]";
        let ms = link_text(kg, text, &opts());
        check(text, &ms, &opts());
        assert_eq!(ms.len(), 1);
        let m = &ms[0];
        assert!(m.bracketed);
        assert_eq!((m.text.as_str(), m.start, m.end), ("Harrison Ford", 45, 58));
        assert_eq!(names(&m.candidates), ["Harrison Ford", "harrison ford"]);

        // A misspelled bracketed mention is linked fuzzily.
        let text = "what movies did [ Blade Runer ] share actors with";
        let ms = link_text(kg, text, &opts());
        check(text, &ms, &opts());
        assert_eq!(texts(&ms), ["Blade Runer"]);
        assert_eq!(ms[0].candidates[0].name, "Blade Runner");
        assert_eq!(ms[0].candidates[0].method, Method::Fuzzy);
    });
}

#[test]
fn exact_beats_alias_beats_fuzzy() {
    with_tiny(|kg| {
        // "paris": the names "Paris" and "PARIS", and an alias of "Paris Hilton".
        let c = link_mention(kg, "paris", &opts());
        assert_eq!(names(&c), ["PARIS", "Paris"]);
        assert!(c
            .iter()
            .all(|c| c.method == Method::Exact && (c.probability - 0.5).abs() < 1e-6));

        // "Bobby D" is an alias; the name "Bobby E" is one edit away.
        let c = link_mention(kg, "Bobby D", &opts());
        assert_eq!(names(&c), ["Robert De Niro"]);
        assert_eq!((c[0].method, c[0].probability), (Method::Alias, 1.0));

        // No alias for "Bobby F": fuzzy finds both "Bobby E" (a name) and "Bobby D" (an alias).
        let c = link_mention(kg, "Bobby F", &opts());
        assert_eq!(names(&c), ["Bobby E", "Robert De Niro"]);
        assert!(c
            .iter()
            .all(|c| c.method == Method::Fuzzy && c.distance == 1));
        assert!(c.iter().all(|c| (c.probability - 0.5).abs() < 1e-6));

        // Two owners of one alias share it.
        let c = link_mention(kg, "the boss", &opts());
        assert_eq!(names(&c), ["Bruce Springsteen", "Tony Soprano"]);
        assert!(c
            .iter()
            .all(|c| c.method == Method::Alias && (c.probability - 0.5).abs() < 1e-6));

        // top_m cuts without renormalizing.
        let one = LinkOptions { top_m: 1, ..opts() };
        let c = link_mention(kg, "PARIS", &one);
        assert_eq!(names(&c), ["PARIS"]);
        assert!((c[0].probability - 0.5).abs() < 1e-6);
        assert!(link_mention(kg, "paris", &LinkOptions { top_m: 0, ..opts() }).is_empty());

        // Unicode folds the same way as the index.
        let c = link_mention(kg, "AMELIE", &opts());
        assert_eq!(names(&c), ["Amélie"]);
    });
}

#[test]
fn fuzzy_probabilities_follow_eq1() {
    with_tiny(|kg| {
        // "blade runnxx" (12 chars) is 2 edits from "blade runner" (12 chars).
        let c = link_mention(kg, "Blade Runnxx", &opts());
        assert_eq!(names(&c), ["Blade Runner"]);
        assert_eq!(c[0].distance, 2);
        assert!((c[0].probability - 1.0).abs() < 1e-6);

        // "bobby f" vs "bobby e" (1 edit) and "bobby" is not a key; "Blade" vs
        // "blades" is 1 edit of 6 chars.
        let c = link_mention(kg, "Blades", &opts());
        assert_eq!(names(&c), ["Blade"]);
        assert_eq!(c[0].distance, 1);

        // Length scaling: 3 chars, no fuzzy; "rnu" is not "run".
        assert!(link_mention(kg, "Rnu", &opts()).is_empty());
        // 4 chars allow one edit: "lade" -> "Lade" exact; "lada" -> "Lade".
        assert_eq!(names(&link_mention(kg, "Lada", &opts())), ["Lade"]);
        // ...but not two.
        assert!(link_mention(kg, "Lxdx", &opts()).is_empty());
    });
}

#[test]
fn fuzzy_softmax_weights_closer_keys() {
    let sections = tiny_sections(&["abcdefghij", "abcdefghiz", "abcdefghyz"], &[]);
    let kg = Kg::from_sections(|n| sections.get(n).map(|b| &b[..])).unwrap();
    // "abcdefghiq": distance 1 to two names, 2 to the third (10 chars each).
    let c = link_mention(&kg, "abcdefghiq", &opts());
    assert_eq!(names(&c), ["abcdefghij", "abcdefghiz", "abcdefghyz"]);
    assert_eq!(c.iter().map(|c| c.distance).collect::<Vec<_>>(), [1, 1, 2]);
    // Eq. 1 with d = 0.1 and 0.2, sigma = 0.1: weights e^-0.5, e^-0.5, e^-2.
    let (w1, w2) = ((-0.5f32).exp(), (-2.0f32).exp());
    let z = 2.0 * w1 + w2;
    assert!((c[0].probability - w1 / z).abs() < 1e-5, "{c:?}");
    assert!((c[2].probability - w2 / z).abs() < 1e-5, "{c:?}");
    assert!((total(&c) - 1.0).abs() < 1e-5);
}

#[test]
fn longest_match_and_word_boundaries() {
    with_tiny(|kg| {
        let text = "Blade Runner or Blade?";
        let ms = link_text(kg, text, &opts());
        check(text, &ms, &opts());
        assert_eq!(texts(&ms), ["Blade Runner", "Blade"]);
        assert_eq!((ms[0].start, ms[0].end), (0, 12));
        assert_eq!((ms[1].start, ms[1].end), (16, 21));

        // "Lade" inside "Blade", "Run" inside "Runner" and "Rerun": no match.
        let text = "blades runners Rerun";
        let ms = link_text(kg, text, &opts());
        assert!(ms.is_empty(), "{ms:?}");
        // A capitalised plural links its singular, over the whole word.
        let text = "the Blades?";
        let ms = link_text(kg, text, &opts());
        assert_eq!(texts(&ms), ["Blades"]);
        assert_eq!(names(&ms[0].candidates), ["Blade"]);

        // Punctuation and case do not matter; offsets cover the original text.
        let text = "(BLADE—runner!) and Amélie";
        let ms = link_text(kg, text, &opts());
        check(text, &ms, &opts());
        assert_eq!(texts(&ms), ["BLADE—runner", "Amélie"]);

        // Stopwords and very short words are skipped outside brackets only.
        let text = "Who is Up? [Who] [Up] Run";
        let ms = link_text(kg, text, &opts());
        check(text, &ms, &opts());
        assert_eq!(texts(&ms), ["Who", "Up", "Run"]);
        assert!(ms[0].bracketed && ms[1].bracketed && !ms[2].bracketed);
        assert_eq!(&text[ms[0].start..ms[0].end], "Who");
        assert_eq!(ms[0].start, 12);

        // Possessives.
        let text = "Ridley Scott’s films and the boss's songs";
        let ms = link_text(kg, text, &opts());
        check(text, &ms, &opts());
        assert_eq!(texts(&ms), ["Ridley Scott", "the boss"]);
        assert_eq!(
            names(&ms[1].candidates),
            ["Bruce Springsteen", "Tony Soprano"]
        );

        // Run length bound.
        let short = LinkOptions {
            max_mention_tokens: 1,
            ..opts()
        };
        let ms = link_text(kg, "Blade Runner", &short);
        assert_eq!(texts(&ms), ["Blade"]);
        let none = LinkOptions {
            max_mention_tokens: 0,
            ..opts()
        };
        assert!(link_text(kg, "Blade Runner", &none).is_empty());
    });
}

#[test]
fn a_long_title_links_whole_outside_brackets() {
    // Paper and song titles run past a dozen words; the default run bound
    // takes them whole rather than a shorter name inside them.
    let title = "Finding the Achilles Heel of the Web of Data: using network analysis for \
                 link-recommendation and more in sixteen words";
    let sections = tiny_sections(&[title, "Web of Data", "network analysis"], &[]);
    let kg = Kg::from_sections(|n| sections.get(n).map(|b| &b[..])).unwrap();
    let text = format!("when was {title} published?");
    let ms = link_text(&kg, &text, &opts());
    check(&text, &ms, &opts());
    assert_eq!(texts(&ms), [title]);
    assert_eq!(names(&ms[0].candidates), [title]);
    // Bounded, the run stops short and the shorter names inside are taken.
    let short = LinkOptions {
        max_mention_tokens: 12,
        ..opts()
    };
    let ms = link_text(&kg, &text, &short);
    assert_eq!(texts(&ms), ["Web of Data", "network analysis"]);
}

#[test]
fn brackets() {
    with_tiny(|kg| {
        let text = "[[Zwick]] [Bobby D] [ ] [] [nobody at all] [Blade Runer";
        let ms = link_text(kg, text, &opts());
        check(text, &ms, &opts());
        assert_eq!(texts(&ms), ["Zwick", "Bobby D", "nobody at all", "Blade"]);
        assert!(ms[..3].iter().all(|m| m.bracketed));
        assert_eq!((ms[0].start, ms[0].end), (2, 7));
        assert_eq!(ms[1].candidates[0].method, Method::Alias);
        assert!(ms[2].candidates.is_empty());
        // The unclosed `[` is plain text: "Blade" links, "Runer" does not (no fuzzy outside brackets).
        assert!(!ms[3].bracketed);

        for text in [
            "",
            "[",
            "]",
            "[]",
            "[[",
            "]]",
            "[[x]]",
            "][",
            "[[[Blade]",
            "Blade]]]",
        ] {
            let ms = link_text(kg, text, &opts());
            check(text, &ms, &opts());
        }
        assert_eq!(texts(&link_text(kg, "[[[Blade]", &opts())), ["Blade"]);
    });
}

#[test]
fn serializes_lowercase_methods() {
    with_tiny(|kg| {
        let ms = link_text(kg, "[Bobby D]", &opts());
        let json = serde_json::to_value(&ms).unwrap();
        assert_eq!(json[0]["candidates"][0]["method"], "alias");
        assert_eq!(json[0]["candidates"][0]["name"], "Robert De Niro");
        assert_eq!(json[0]["bracketed"], true);
    });
}

#[test]
fn damaged_index_does_not_panic() {
    let mut sections = tiny_sections(TINY_ENTITIES, TINY_ALIASES);
    let fst = sections[s::INDEX_FST].to_vec();
    // fst checks only its header and footer when opened; damage the middle.
    for (k, at) in (8..fst.len().saturating_sub(40)).step_by(3).enumerate() {
        let mut bytes = fst.clone();
        bytes[at] ^= 0x5a + k as u8;
        sections.insert(s::INDEX_FST, AlignedBytes::from_slice(&bytes));
        let Ok(kg) = Kg::from_sections(|n| sections.get(n).map(|b| &b[..])) else {
            continue;
        };
        for text in ["Blade Runner and [Bobby F]", "[Paris] Ridley Scott's"] {
            let ms = link_text(&kg, text, &opts());
            check(text, &ms, &opts());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn never_panics(text in "[\\[\\] a-zA-Z'’`\u{301}½ﬁé—İΣ①\u{0}-]{0,60}") {
        with_tiny(|kg| {
            let ms = link_text(kg, &text, &opts());
            check(&text, &ms, &opts());
            for m in &ms {
                link_mention(kg, &m.text, &opts());
            }
            link_mention(kg, &text, &opts());
        });
    }

    #[test]
    fn any_string_is_fine(text in any::<String>()) {
        with_tiny(|kg| {
            let ms = link_text(kg, &text, &opts());
            check(&text, &ms, &opts());
            link_mention(kg, &text, &opts());
        });
    }
}

fn levenshtein(a: &str, b: &str) -> u32 {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut prev: Vec<u32> = (0..=b.len() as u32).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i as u32 + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push(
                (prev[j] + u32::from(ca != cb))
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1),
            );
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The fuzzy stage finds exactly the entities a brute-force scan of every
/// index key finds, at the same distances.
#[test]
fn fuzzy_matches_brute_force() {
    use fst::Streamer;
    with_demo(|kg| {
        let keys: Vec<(String, u64)> = kg
            .with_index(|index| {
                let mut out = Vec::new();
                let mut stream = index.stream();
                while let Some((k, v)) = stream.next() {
                    out.push((String::from_utf8(k.to_vec()).unwrap(), v));
                }
                out
            })
            .unwrap();
        let all = LinkOptions {
            top_m: usize::MAX,
            ..opts()
        };
        let mut tried = 0;
        for (n, (key, _)) in keys.iter().enumerate().step_by(23) {
            let chars: Vec<char> = key.chars().collect();
            let at = n % chars.len();
            // Drop one character, and substitute another.
            let mut variants = vec![chars.clone(), chars.clone()];
            variants[0].remove(at);
            variants[1][(at + 1) % chars.len()] = 'q';
            for v in variants {
                let mention: String = v.into_iter().collect();
                let mention = normalize(&mention);
                if mention.is_empty() || !kg.lookup_normalized(&mention).is_empty() {
                    continue;
                }
                let allowed = match mention.chars().count() {
                    0..=3 => 0,
                    4..=7 => 1,
                    _ => 2,
                };
                let mut want: Vec<(u32, u32)> = Vec::new();
                for (k, value) in &keys {
                    let d = levenshtein(&mention, k);
                    if d <= allowed {
                        want.extend(kg.decode_postings(*value).iter().map(|p| (p.entity, d)));
                    }
                }
                want.sort_unstable();
                want.dedup_by_key(|w| w.0);
                let mut got: Vec<(u32, u32)> = link_mention(kg, &mention, &all)
                    .iter()
                    .map(|c| {
                        assert_eq!(c.method, Method::Fuzzy);
                        (c.entity, c.distance)
                    })
                    .collect();
                got.sort_unstable();
                assert_eq!(got, want, "{mention:?}");
                tried += 1;
                if !got.is_empty() {
                    let sum = total(&link_mention(kg, &mention, &all));
                    assert!((sum - 1.0).abs() < 1e-4, "{mention:?}: {sum}");
                }
            }
        }
        assert!(tried > 100, "{tried}");
    });
}

#[test]
fn long_mentions() {
    // 12 words (the default longest run), 76 characters.
    let long = "The Assassination of Jesse James by the Coward Robert Ford: Extended Edition";
    let sections = tiny_sections(&[long, "Jesse James"], &[]);
    let kg = Kg::from_sections(|n| sections.get(n).map(|b| &b[..])).unwrap();
    // Two edits in a 76-character name still link fuzzily.
    let typo = long
        .replace("Coward", "Cowart")
        .replace("Extended", "Extnded");
    let c = link_mention(&kg, &typo, &opts());
    assert_eq!(names(&c), [long]);
    assert_eq!((c[0].method, c[0].distance), (Method::Fuzzy, 2));

    // Large inputs finish and stay consistent.
    let text = format!(
        "{} [{}] {}",
        "Jesse James rode. ".repeat(5000),
        "x".repeat(100_000),
        long
    );
    let ms = link_text(&kg, &text, &opts());
    check(&text, &ms, &opts());
    assert_eq!(ms.len(), 5002);
    assert!(ms[5000].bracketed && ms[5000].candidates.is_empty());
    assert_eq!(ms[5001].text, long);
    // One word more than the longest run: only the inner name links.
    let short = LinkOptions {
        max_mention_tokens: 11,
        ..opts()
    };
    assert_eq!(texts(&link_text(&kg, long, &short)), ["Jesse James"]);
}

/// A stand-in for the sentence encoder: every text containing "replicant"
/// lands next to the vector of entity `near`; "fail" is an error.
struct FakeEncoder {
    near: f32,
}

/// Entity `i`'s unit vector in the tiny dense index.
fn angle_vector(angle: f32) -> Vec<f32> {
    vec![angle.cos(), angle.sin()]
}

impl TextEncoder for FakeEncoder {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncodeError> {
        texts
            .iter()
            .map(|t| {
                let t = t.to_lowercase();
                if t.contains("fail") {
                    return Err(EncodeError::failed("the encoder is down"));
                }
                let angle = if t.contains("replicant") {
                    self.near * 0.15 + 0.01
                } else {
                    3.0
                };
                Ok(angle_vector(angle))
            })
            .collect()
    }

    fn dim(&self) -> usize {
        2
    }
}

#[test]
fn dense_stage_through_a_text_encoder() {
    with_tiny(|kg| {
        let n = kg.entity_count();
        let vectors: Vec<Vec<f32>> = (0..n).map(|i| angle_vector(i as f32 * 0.15)).collect();
        let meta = DenseMeta {
            model: "fake".into(),
            dim: 2,
            count: n as u64,
            quantization: QUANTIZATION.into(),
        }
        .to_json();
        let bytes = quantize(&vectors);
        let index = DenseIndex::new(&meta, &bytes, n).unwrap();
        let runner = link_mention(kg, "Blade Runner", &opts())[0].entity;
        let encoder = FakeEncoder {
            near: runner as f32,
        };
        let dense = Dense {
            index,
            encoder: &encoder,
        };

        // Nothing lexical: the dense stage answers, nearest first, Eq. 1 over
        // the kept candidates.
        let found = link_mention_dense(kg, Some(&dense), "Replicant movie", &opts()).unwrap();
        assert_eq!(found.len(), opts().top_m);
        assert_eq!(found[0].name, "Blade Runner");
        assert!(found.iter().all(|c| c.method == Method::Dense));
        assert!(found[0].embedding_distance.unwrap() < 0.05);
        assert!((total(&found) - 1.0).abs() < 1e-5, "{found:?}");
        let distances: Vec<f32> = found
            .iter()
            .map(|c| c.embedding_distance.unwrap())
            .collect();
        let p: Vec<f32> = found.iter().map(|c| c.probability).collect();
        assert_eq!(p, eq1(&distances));

        // A lexical match wins; without the index or with `dense: false`
        // the dense stage is skipped.
        let exact = link_mention_dense(kg, Some(&dense), "Ridley Scott", &opts()).unwrap();
        assert_eq!(exact[0].method, Method::Exact);
        assert!(link_mention_dense(kg, None, "Replicant movie", &opts())
            .unwrap()
            .is_empty());
        let off = LinkOptions {
            dense: false,
            ..opts()
        };
        assert!(
            link_mention_dense(kg, Some(&dense), "Replicant movie", &off)
                .unwrap()
                .is_empty()
        );

        // In text, only bracketed mentions reach the dense stage.
        let ms = link_text_dense(
            kg,
            Some(&dense),
            "[replicant film] by Ridley Scott",
            &opts(),
        )
        .unwrap();
        assert_eq!(texts(&ms), ["replicant film", "Ridley Scott"]);
        assert_eq!(ms[0].candidates[0].name, "Blade Runner");

        // The encoder's error comes back with its own message.
        let err = link_text_dense(kg, Some(&dense), "[fail here]", &opts()).unwrap_err();
        assert!(matches!(err, DenseError::Encoder(_)));
        assert_eq!(err.to_string(), "the encoder is down");
    })
}
