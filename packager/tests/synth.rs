//! Training questions synthesised from the graph (`kgbox_pack::synth`), on
//! the demo's movie graph: the paths are the ones people ask about (several
//! hops, no hubs in the middle), and every question's DSL finds exactly the
//! answers it is stored with, never its own topic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeSet, HashSet};

use common::*;
use kgbox_pack::synth::{self, paths, SynthOptions};
use kgbox_query::{run_query_with, ExecOptions, ParseLimits};

/// Each path as `r1 -> r2_inv -> ...`.
fn path_names(kg: &kgbox_bundle::Kg<'_>, found: &[paths::QuestionPath]) -> BTreeSet<String> {
    found
        .iter()
        .map(|p| {
            let names: Vec<String> = p.steps.iter().map(|s| s.name(kg).unwrap()).collect();
            names.join(" -> ")
        })
        .collect()
}

#[test]
fn questions_follow_the_graphs_own_paths_with_their_answers() {
    let dir = tempfile::tempdir().unwrap();
    let triples = workspace().join("demo/movies.tsv");
    let out = dir.path().join("demo.kgb");
    kgbox_pack::pack(&options(&triples), &test_key(), &out).unwrap();
    let loaded = load(&out, &test_key().public());
    let kg = loaded.kg();

    let opts = SynthOptions::default();
    let found = paths::question_paths(&kg, &opts.paths, opts.seed);
    let names = path_names(&kg, &found);
    // One hop both ways, an actor's films' directors, a film's co-stars'
    // other films' years.
    for want in [
        "directed_by",
        "directed_by_inv",
        "starred_actors_inv -> directed_by",
        "starred_actors -> starred_actors_inv -> release_year",
    ] {
        assert!(names.contains(want), "{want} missing from {names:?}");
    }
    // There and back and there again: no.
    let unwanted = "directed_by -> directed_by_inv -> directed_by";
    assert!(!names.contains(unwanted), "{unwanted} kept");
    assert!(found.iter().all(|p| (1..=3).contains(&p.steps.len())));

    let synthesis = synth::synthesize(&kg, &opts);
    assert!(
        synthesis.paths_by_hops.iter().all(|&n| n > 0),
        "{:?}",
        synthesis.paths_by_hops
    );
    assert!(synthesis.examples.len() > 100);
    assert!(synthesis.summary().contains("synthesised from the graph"));
    // Every path worth asking was kept: none of the lengths is partial.
    assert_eq!(synthesis.partial_hops, [false; 3]);
    assert!(!synthesis.summary().contains("left out"));
    // A quota of 4 keeps 2 one-hop paths and 1 of each longer length, so
    // every length is cut, and the planner will know it.
    let mut small = opts.paths.clone();
    small.max_paths = 4;
    let cut = paths::find_paths(&kg, &small, opts.seed);
    assert_eq!(cut.paths.len(), 4);
    assert_eq!(cut.partial, [true; 3]);
    let limits = ParseLimits::default();
    let exec = ExecOptions {
        top_k: 1000,
        max_paths: 0,
        ..ExecOptions::default()
    };
    for ex in &synthesis.examples {
        let (answers, _) = run_query_with(&kg, &ex.dsl, &limits, &exec, None)
            .unwrap_or_else(|e| panic!("{}: {e:?}", ex.dsl));
        let found: HashSet<&str> = answers
            .answers
            .iter()
            .filter_map(|a| kg.entity_name(a.entity))
            .collect();
        let stored: HashSet<&str> = ex
            .answers
            .as_ref()
            .unwrap()
            .iter()
            .map(String::as_str)
            .collect();
        assert_eq!(found, stored, "{} ({})", ex.dsl, ex.question);
        let topic = ex
            .question
            .split('[')
            .nth(1)
            .and_then(|s| s.split(']').next())
            .unwrap();
        assert!(!stored.contains(topic), "{} answers its topic", ex.dsl);
        assert!(ex.dsl.starts_with(&format!("\"{topic}\"")) || ex.dsl.contains(topic));
    }
}

#[test]
fn paths_through_a_hub_are_not_asked() {
    // 60 films of one genre, each with a director of its own: "the films of
    // the same genre as X" has 59 answers, more than anyone asks for.
    let mut tsv = String::new();
    for i in 0..60 {
        tsv.push_str(&format!(
            "Film {i}\thas_genre\tDrama\nFilm {i}\tdirected_by\tDirector {i}\n"
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let triples = write(dir.path(), "hub.tsv", tsv);
    let out = dir.path().join("hub.kgb");
    kgbox_pack::pack(&options(&triples), &test_key(), &out).unwrap();
    let loaded = load(&out, &test_key().public());
    let kg = loaded.kg();
    let opts = SynthOptions::default();
    let found = path_names(&kg, &paths::question_paths(&kg, &opts.paths, opts.seed));
    assert!(found.contains("directed_by"), "{found:?}");
    assert!(found.contains("has_genre"), "{found:?}");
    for hub in [
        "has_genre -> has_genre_inv",
        "has_genre_inv",
        "has_genre -> has_genre_inv -> directed_by",
    ] {
        assert!(!found.contains(hub), "{hub} kept: {found:?}");
    }
}

/// A small RDF graph of typed albums and songs, with release dates: the
/// synthesised questions call things by their class, never by a predicate
/// IRI, and no path of several hops starts at a literal value.
#[test]
fn rdf_questions_use_class_nouns_and_start_at_entities() {
    let ex = "http://ex.org/";
    let ty = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>";
    let label = "<http://www.w3.org/2000/01/rdf-schema#label>";
    let mut nt = String::new();
    for a in 0..12 {
        let artist = format!("<{ex}artist{a}>");
        nt.push_str(&format!("{artist} {ty} <{ex}Band> .\n"));
        nt.push_str(&format!("{artist} {label} \"Band {a}\" .\n"));
        for b in 0..2 {
            let album = format!("<{ex}album{a}_{b}>");
            nt.push_str(&format!("{album} {ty} <{ex}Album> .\n"));
            nt.push_str(&format!("{album} {label} \"Album {a}-{b}\" .\n"));
            nt.push_str(&format!("{album} <{ex}artist> {artist} .\n"));
            nt.push_str(&format!(
                "{album} <{ex}date> \"19{a:02}-0{}-01\" .\n",
                b + 1
            ));
            nt.push_str(&format!("{album} <{ex}year> \"19{a:02}\" .\n"));
            for s in 0..3 {
                let song = format!("<{ex}song{a}_{b}_{s}>");
                nt.push_str(&format!("{song} {ty} <{ex}Song> .\n"));
                nt.push_str(&format!("{song} {label} \"Song {a}-{b}-{s}\" .\n"));
                nt.push_str(&format!("{album} <{ex}track> {song} .\n"));
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let triples = write(dir.path(), "music.nt", nt);
    let out = dir.path().join("music.kgb");
    kgbox_pack::pack(&options(&triples), &test_key(), &out).unwrap();
    let loaded = load(&out, &test_key().public());
    let kg = loaded.kg();

    let opts = SynthOptions::default();
    let found = paths::question_paths(&kg, &opts.paths, opts.seed);
    let names = path_names(&kg, &found);
    assert!(names.contains("artist_inv -> track"), "{names:?}");
    assert!(names.contains("date_inv"), "{names:?}");
    // A band's albums' years differ from band to band, their class never
    // does: the varied path is ranked first (by name it would come last).
    let at = |want: &str| {
        found
            .iter()
            .position(|p| {
                let n: Vec<String> = p.steps.iter().map(|s| s.name(&kg).unwrap()).collect();
                n.join(" -> ") == want
            })
            .unwrap_or_else(|| panic!("{want} missing from {names:?}"))
    };
    assert!(at("artist_inv -> year") < at("artist_inv -> type"));
    for p in &found {
        let first = p.steps[0].name(&kg).unwrap();
        assert!(
            p.steps.len() == 1 || first != "date_inv",
            "a path of {} hops starts at a date: {first}",
            p.steps.len()
        );
    }
    let synthesis = synth::synthesize(&kg, &opts);
    assert!(synthesis
        .examples
        .iter()
        .all(|e| !e.question.contains("http")));
    let says = |dsl_end: &str, word: &str| {
        synthesis
            .examples
            .iter()
            .filter(|e| e.dsl.ends_with(dsl_end))
            .any(|e| e.question.contains(word))
    };
    assert!(says("-> artist_inv -> track", "songs"));
    assert!(says("-> track_inv", "albums"));
}

/// Wikidata's property descriptions (`input::wikidata`) read as a noun
/// and a domain, as an operator's would.
#[test]
fn wikidata_descriptions_read_as_nouns_of_domains() {
    let unread: Vec<&str> = kgbox_pack::input::wikidata::descriptions()
        .filter(|d| {
            let read = kgbox_pack::synth::description::read_description(d);
            read.noun.is_none() || read.domain.is_none()
        })
        .collect();
    assert!(unread.is_empty(), "{unread:#?}");
}

#[test]
fn examples_gain_the_graphs_phrasings_of_their_own_templates_only() {
    use kgbox_qa::planner::train::{self, Example};
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo.kgb");
    kgbox_pack::pack(
        &options(&workspace().join("demo/movies.tsv")),
        &test_key(),
        &out,
    )
    .unwrap();
    let loaded = load(&out, &test_key().public());
    let kg = loaded.kg();
    let examples: Vec<Example> = ["Antwone Fisher", "Sky Murder"]
        .iter()
        .enumerate()
        .map(|(i, film)| Example {
            line: i + 1,
            question: format!("who directed [{film}]"),
            dsl: format!("\"{film}\" -> directed_by"),
            answers: None,
        })
        .collect();
    let (prepared, skipped) = train::prepare(&kg, &examples);
    assert!(skipped.is_empty(), "{skipped:?}");

    let added = kgbox_pack::planner::graph_phrasings(&kg, &prepared);
    assert!(!added.is_empty());
    assert!(added.iter().all(|p| p.template == prepared[0].template));
    // Phrasings beyond the examples' one.
    let phrasings: HashSet<&str> = added.iter().map(|p| p.masked.as_str()).collect();
    assert!(phrasings.len() > 3, "{phrasings:?}");
    assert!(kgbox_pack::planner::graph_phrasings(&kg, &[]).is_empty());
}
