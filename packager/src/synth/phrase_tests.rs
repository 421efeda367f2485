//! Relation words and the questions phrased with them.

use super::*;

#[test]
fn cores_and_participles() {
    let w = RelationWords::new("directed_by", None);
    assert_eq!(w.core, "directed");
    assert_eq!(w.participle.as_deref(), Some("directed"));
    let w = RelationWords::new("has_genre", None);
    assert_eq!((w.core.as_str(), w.participle.is_none()), ("genre", true));
    let w = RelationWords::new("memberOf", None);
    assert_eq!(w.core, "member");
    let w = RelationWords::new("in_language", Some("The language a film is in."));
    assert_eq!(w.core, "language");
    assert_eq!(w.description.as_deref(), Some("language"));
    assert_eq!(w.domain.as_deref(), Some("film"));
    assert_eq!((w.verb.is_none(), w.event.is_none()), (true, true));
    let w = RelationWords::new("directed_by", Some("the director of a film"));
    assert_eq!(w.description.as_deref(), Some("director"));
    assert_eq!(w.domain.as_deref(), Some("film"));
    assert_eq!(plural("film"), "films");
    assert_eq!(plural("city"), "cities");
    assert_eq!(plural("day"), "days");
    assert_eq!(plural("match"), "matches");
    assert_eq!(plural("photo"), "photos");
    let long = "a description far too long to stand in for the relation in a question";
    assert_eq!(RelationWords::new("r", Some(long)).description, None);
}

#[test]
fn descriptions_give_verbs_and_events() {
    let w = RelationWords::new("starred_actors", Some("an actor starring in a film"));
    assert_eq!(w.description.as_deref(), Some("actor"));
    assert_eq!(w.domain.as_deref(), Some("film"));
    let v = w.verb.as_ref().expect("a verb");
    assert_eq!((v.lemma.as_str(), v.past.as_str()), ("star", "starred"));
    assert_eq!(v.prep.as_deref(), Some("in"));
    assert!(w.person && !w.time);
    let w = RelationWords::new("has_tags", Some("a tag describing a film"));
    let v = w.verb.as_ref().expect("a verb");
    assert_eq!((v.third.as_str(), v.prep.as_deref()), ("describes", None));
    assert_eq!(w.domain.as_deref(), Some("film"));
    let w = RelationWords::new("release_year", Some("the year a film was released"));
    assert_eq!(w.description.as_deref(), Some("year"));
    assert_eq!(w.domain.as_deref(), Some("film"));
    let e = w.event.as_ref().expect("an event");
    assert_eq!(
        (e.participle.as_str(), e.prep.as_deref()),
        ("released", None)
    );
    assert!(w.time && !w.person);
    let w = RelationWords::new("venue", Some("the city that a match is played in"));
    let e = w.event.as_ref().expect("an event");
    assert_eq!(
        (e.participle.as_str(), e.prep.as_deref()),
        ("played", Some("in"))
    );
    // A noun in -ing is no verb.
    let w = RelationWords::new("has_imdb_rating", Some("the IMDb rating of a film"));
    assert_eq!(
        (w.verb.is_none(), w.description.as_deref()),
        (true, Some("imdb rating"))
    );
    let w = RelationWords::new("wing", Some("the building housing a department"));
    assert_eq!(w.verb.as_ref().map(|v| v.lemma.as_str()), Some("house"));
    assert_eq!(w.description.as_deref(), Some("building"));
}

#[test]
fn verbs_and_events_make_the_questions_people_ask() {
    let starred = RelationWords::new("starred_actors", Some("an actor starring in a film"));
    let released = RelationWords::new("release_year", Some("the year a film was released"));
    let step = |words, inverse| StepWords {
        words,
        inverse,
        class: None,
    };
    let mut rng = SplitMix64::new(3);
    let asked = |steps: &[StepWords<'_>], rng: &mut SplitMix64| -> Vec<String> {
        (0..200)
            .map(|_| question(steps, "X", rng).to_lowercase())
            .collect()
    };
    let has = |qs: &[String], s: &str| qs.iter().any(|q| q.contains(s));
    let qs = asked(&[step(&starred, false)], &mut rng);
    assert!(
        has(&qs, "who starred in [x]") && has(&qs, "who stars in [x]"),
        "{qs:?}"
    );
    let qs = asked(&[step(&starred, true)], &mut rng);
    assert!(has(&qs, "what did [x] star in"), "{qs:?}");
    let qs = asked(&[step(&released, false)], &mut rng);
    assert!(has(&qs, "when was [x] released"), "{qs:?}");
    let qs = asked(&[step(&released, true)], &mut rng);
    assert!(has(&qs, "were released in [x]"), "{qs:?}");
    let qs = asked(&[step(&starred, true), step(&released, false)], &mut rng);
    assert!(
        has(&qs, "when was the films [x] starred in released"),
        "{qs:?}"
    );
    // Every question still names the topic once.
    assert!(qs.iter().all(|q| q.matches("[x]").count() == 1));
}

#[test]
fn aliases_stand_in_for_the_relations_words_now_and_then() {
    let plain = RelationWords::new("directed_by", Some("the director of a film"));
    let aliased = plain
        .clone()
        .with_aliases(["filmmaker", "helmed", "came out"]);
    let asked = |words: &RelationWords, inverse: bool| -> Vec<String> {
        let mut rng = SplitMix64::new(5);
        let step = [StepWords {
            words,
            inverse,
            class: None,
        }];
        (0..300).map(|_| question(&step, "X", &mut rng)).collect()
    };
    let count = |qs: &[String], s: &str| qs.iter().filter(|q| q.contains(s)).count();
    let (forward, inverse) = (asked(&aliased, false), asked(&aliased, true));
    assert!(count(&forward, "filmmaker") >= 10, "{forward:?}");
    assert!(count(&inverse, "helmed") >= 10, "{inverse:?}");
    assert_eq!(count(&forward, "came out") + count(&inverse, "came out"), 0);
    // The relation's own words stay the most used.
    assert!(count(&forward, "director") + count(&forward, "directed") > 150);
    // With none, no draw is taken from the random stream, so a graph
    // without aliases gets the questions it got before.
    let mut rng = SplitMix64::new(9);
    let mut untouched = rng.clone();
    assert!(alias_or(&[], &mut rng).is_none());
    assert_eq!(rng.below(1 << 20), untouched.below(1 << 20));
}

#[test]
fn questions_keep_the_topic_bracketed_and_name_each_relation() {
    let directed = RelationWords::new("directed_by", None);
    let genre = RelationWords::new("has_genre", None);
    let steps = [
        StepWords {
            words: &directed,
            inverse: true,
            class: Some("films".into()),
        },
        StepWords {
            words: &genre,
            inverse: false,
            class: None,
        },
    ];
    let mut rng = SplitMix64::new(7);
    let mut with_class = 0;
    for _ in 0..50 {
        let q = question(&steps, "Ridley Scott", &mut rng);
        assert_eq!(q.matches("[Ridley Scott]").count(), 1, "{q}");
        assert!(q.contains("directed"), "{q}");
        assert!(q.contains("genre"), "{q}");
        with_class += usize::from(q.contains("films"));
    }
    // The class names what the inverse step reaches in most phrasings
    // that name it at all.
    assert!(with_class >= 10, "{with_class} of 50 say \"films\"");
}
