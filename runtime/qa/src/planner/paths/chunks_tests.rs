//! Phrases, answer cues and path scores on hand-made questions.

use super::*;

#[test]
fn stop_words_are_sorted() {
    assert!(STOP.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn words_for_the_rest_of_a_kind_ask_for_the_same() {
    for q in [
        "what kinds of movies has ENTITY's director made otherwise",
        "besides ENTITY, what has its director done",
        "who scripted the remaining movies by whoever directed ENTITY",
        "films made elsewhere by ENTITY's director",
        "what genres are the rest of ENTITY's writer's films",
    ] {
        assert!(phrases(q, "ENTITY").same, "{q}");
    }
    for q in [
        "what kinds of movies has ENTITY's director made",
        "who directed ENTITY",
        "where was ENTITY laid to rest",
    ] {
        assert!(!phrases(q, "ENTITY").same, "{q}");
    }
}

#[test]
fn phrases_hold_a_content_word_and_stop_at_the_topic() {
    let p = phrases("where do the pilots of ENTITY come from?", "ENTITY");
    assert!(p.texts.contains(&"pilots".to_string()));
    assert!(p.texts.contains(&"come from".to_string()));
    assert!(p.texts.contains(&"where".to_string()));
    assert!(!p.texts.iter().any(|t| t.contains("entity")));
    assert!(!p.texts.contains(&"the pilots".to_string()));
    assert!(!p.texts.contains(&"do the".to_string()));
    // where, pilots, come
    assert_eq!(p.content, vec![0, 3, 6]);
}

/// Phrases with these texts at these spans, no topic and no "same";
/// the last `glosses` texts are glosses.
fn given(
    texts: &[&str],
    spans: Vec<Range<usize>>,
    content: Vec<usize>,
    answer: AnswerCue,
    glosses: usize,
) -> Phrases {
    Phrases {
        texts: texts.iter().map(|t| t.to_string()).collect(),
        spans,
        content,
        same: false,
        topic: None,
        tied: None,
        answer,
        glosses,
    }
}

/// "pilots come from": two phrases, no topic.
fn two_phrases() -> Phrases {
    given(
        &["pilots", "come from"],
        vec![0..1, 1..3],
        vec![0, 1],
        AnswerCue::Free,
        0,
    )
}

/// Weights with only a step cost and a coverage weight.
fn weights(step_cost: f32, coverage: f32) -> Weights {
    Weights {
        step_cost,
        extra_step_cost: 0.0,
        coverage,
        order_cost: 0.0,
        type_match: 0.0,
        type_floor: 1.0,
        type_mismatch: 0.0,
        mismatch_floor: 0.0,
    }
}

#[test]
fn each_step_takes_a_phrase_of_its_own() {
    let p = two_phrases();
    let w = weights(0.3, 0.0);
    // Two steps that both like "pilots" best: the second gets the other
    // phrase.
    let a = [0.9, 0.2];
    let b = [0.8, 0.5];
    let two = score(&[&a, &b], &[false, false], &[], &p, &w);
    assert!((two - (0.9 + 0.5 - 0.6)).abs() < 1e-6, "{two}");
    // One step that matches pays once.
    let one = score(&[&a], &[false], &[], &p, &w);
    assert!((one - 0.6).abs() < 1e-6);
    // A second step that matches nothing well costs more than it gains.
    let c = [0.1, 0.1];
    assert!(score(&[&a, &c], &[false, false], &[], &p, &w) < one);
    assert!(two > one);
}

#[test]
fn coverage_rewards_the_words_a_path_explains() {
    let p = two_phrases();
    let w = weights(0.0, 1.0);
    let a = [0.5, 0.0];
    let b = [0.0, 0.5];
    assert!((score(&[&a], &[false], &[], &p, &w) - 1.0).abs() < 1e-6);
    assert!((score(&[&a, &b], &[false, false], &[], &p, &w) - 2.0).abs() < 1e-6);
}

#[test]
fn a_straight_back_step_shares_a_phrase_only_for_the_same() {
    let mut p = two_phrases();
    let w = weights(0.0, 0.0);
    // Both steps match only "pilots".
    let a = [0.9, 0.0];
    assert!((score(&[&a, &a], &[false, true], &[], &p, &w) - 0.9).abs() < 1e-6);
    p.same = true;
    assert!((score(&[&a, &a], &[false, true], &[], &p, &w) - 1.8).abs() < 1e-6);
    // Not for a step that does not go back.
    assert!((score(&[&a, &a], &[false, false], &[], &p, &w) - 0.9).abs() < 1e-6);
}

#[test]
fn a_round_trip_names_a_second_phrase_only_for_the_same() {
    // "color eyes": the relation matches both words.
    let mut p = two_phrases();
    let w = weights(0.0, 0.0);
    let a = [0.7, 0.6];
    let one = score(&[&a], &[false], &[], &p, &w);
    let round = score(&[&a, &a], &[false, true], &[], &p, &w);
    assert!((one - 0.7).abs() < 1e-6, "{one}");
    assert!((round - 0.7).abs() < 1e-6, "{round}");
    p.same = true;
    let round = score(&[&a, &a], &[false, true], &[], &p, &w);
    assert!((round - 1.4).abs() < 1e-6, "{round}");
    // A longer path's back step keeps its own phrase.
    p.same = false;
    let b = [0.0, 0.0];
    let three = score(&[&b, &a, &a], &[false, false, true], &[], &p, &w);
    assert!((three - 1.3).abs() < 1e-6, "{three}");
}

#[test]
fn what_which_who_say_what_the_answer_is() {
    let cue = |q: &str| phrases(q, "ENTITY").answer;
    assert_eq!(cue("what films did ENTITY write"), AnswerCue::Head(1));
    assert_eq!(cue("ENTITY directed which movies"), AnswerCue::Head(3));
    assert_eq!(cue("who acted in the movie ENTITY"), AnswerCue::Head(0));
    assert_eq!(
        cue("where do the pilots of ENTITY come from"),
        AnswerCue::Head(0)
    );
    assert_eq!(cue("ENTITY was released when"), AnswerCue::Head(3));
    // A clause's "who" is not the question's.
    assert_eq!(
        cue("the person who wrote ENTITY wrote what languages"),
        AnswerCue::Head(7)
    );
    assert_eq!(cue("in which year was ENTITY released"), AnswerCue::Head(2));
    // After a noun and a preposition, "which" starts a clause; a
    // question that starts with that noun asks for it.
    assert_eq!(
        cue("years in which whoever directed ENTITY made films"),
        AnswerCue::Head(0)
    );
    assert_eq!(
        cue("who starred in the films in which ENTITY acted"),
        AnswerCue::Head(0)
    );
    assert_eq!(
        cue("ENTITY acted in films in which who starred"),
        AnswerCue::Head(6)
    );
    assert_eq!(cue("what is the genre of ENTITY"), AnswerCue::Head(3));
    assert_eq!(
        cue("what are the home planets of ENTITY"),
        AnswerCue::Head(3)
    );
    assert_eq!(cue("what is ENTITY about"), AnswerCue::Free);
    assert_eq!(cue("what did ENTITY write"), AnswerCue::Free);
    // A request names it after its verb ([`LIST`]).
    assert_eq!(cue("list the films ENTITY wrote"), AnswerCue::Head(2));
}

#[test]
fn nodes_take_phrases_the_steps_leave() {
    // "films written": one step that matches "written"; the path's
    // nodes are the topic (row 0) and the answer (row 1).
    let mut p = given(
        &["films", "written"],
        vec![0..1, 1..2],
        vec![0, 1],
        AnswerCue::Free,
        0,
    );
    let w = Weights {
        type_match: 1.0,
        type_floor: 0.5,
        ..weights(0.0, 0.0)
    };
    let step = [0.2, 0.9];
    let none = [0.0, 0.0];
    let films = [0.9, 0.1];
    let at = |types: &[&[f32]], p: &Phrases| score(&[&step], &[false], types, p, &w);
    // The answer's type names "films": 0.9 + (0.9 - 0.5).
    assert!((at(&[&none, &films], &p) - 1.3).abs() < 1e-6);
    // Not a phrase the step took.
    assert!((at(&[&none, &[0.1, 0.95]], &p) - 0.9).abs() < 1e-6);
    // After "what", the answer's type is named right there only.
    p.answer = AnswerCue::Head(1);
    assert!((at(&[&none, &films], &p) - 0.9).abs() < 1e-6);
    p.answer = AnswerCue::Head(0);
    assert!((at(&[&none, &films], &p) - 1.3).abs() < 1e-6);
}

#[test]
fn who_where_when_ask_for_a_type_the_answer_may_match_and_no_step() {
    let p = phrases("who has ENTITY written papers with", "ENTITY");
    assert_eq!(p.texts.last().map(String::as_str), Some("person"));
    assert_eq!((p.spans.last(), p.glosses), (Some(&(0..1)), 1));
    assert_eq!(p.answer, AnswerCue::Head(0));
    let p = phrases("where do the pilots of ENTITY come from", "ENTITY");
    assert_eq!(p.texts.last().map(String::as_str), Some("place"));
    // "where" in a question about work asks for an organisation.
    for (q, gloss) in [
        ("where does ENTITY work", "employer"),
        ("where did the authors of ENTITY study", "employer"),
        ("where is ENTITY based", "place"),
        ("where was the workshop ENTITY held", "place"),
    ] {
        let p = phrases(q, "ENTITY");
        assert_eq!(p.texts.last().map(String::as_str), Some(gloss), "{q}");
    }
    let p = phrases("what films did ENTITY write", "ENTITY");
    assert_eq!(p.glosses, 0);
    // "other" stands between "what" and the noun.
    let p = phrases(
        "what other starships have the pilots of ENTITY flown",
        "ENTITY",
    );
    assert_eq!(p.answer, AnswerCue::Head(2));
    // "how" and a word before "be" or "do" asks for a measure.
    for q in ["how tall is ENTITY", "how much does ENTITY weigh"] {
        let p = phrases(q, "ENTITY");
        assert_eq!(p.texts.last().map(String::as_str), Some("number"), "{q}");
        assert_eq!(p.answer, AnswerCue::Head(0), "{q}");
    }
    for q in [
        "how is ENTITY tagged",
        "how long has ENTITY been around",
        "how many films did ENTITY direct",
    ] {
        let p = phrases(q, "ENTITY");
        assert_eq!((p.glosses, p.answer), (0, AnswerCue::Free), "{q}");
    }
    // "papers written" and the gloss "person" for "who" (position 0).
    let p = given(
        &["papers", "written", "person"],
        vec![1..2, 2..3, 0..1],
        vec![1, 2],
        AnswerCue::Head(0),
        1,
    );
    let w = Weights {
        type_match: 1.0,
        type_floor: 0.5,
        ..weights(0.0, 0.0)
    };
    let none = [0.0, 0.0, 0.0];
    // One step that matches "written"; answers typed as people, or
    // as papers (which "papers" names, but not as the answer).
    let step = [0.1, 0.9, 0.0];
    let people = [0.1, 0.0, 0.9];
    let papers = [0.9, 0.0, 0.1];
    let at = |types: &[&[f32]]| score(&[&step], &[false], types, &p, &w);
    assert!((at(&[&none, &people]) - 1.3).abs() < 1e-6);
    assert!((at(&[&none, &papers]) - 0.9).abs() < 1e-6);
    // A type word elsewhere is another node's.
    assert!((at(&[&papers, &none]) - 1.3).abs() < 1e-6);
    // The gloss is no step's phrase, however near.
    let near = [0.0, 0.0, 1.0];
    assert!(score(&[&near], &[false], &[], &p, &w).abs() < 1e-6);
}

#[test]
fn an_answer_of_another_type_than_the_one_named_costs() {
    // "what countries ... written": the step matches "written".
    let p = given(
        &["countries", "written"],
        vec![1..2, 2..3],
        vec![1, 2],
        AnswerCue::Head(1),
        0,
    );
    let w = Weights {
        type_mismatch: 0.1,
        mismatch_floor: 0.4,
        ..weights(0.0, 0.0)
    };
    let step = [0.0, 0.9];
    let none = [0.0, 0.0];
    let at = |answer: &[f32], p: &Phrases| score(&[&step], &[false], &[&none, answer], p, &w);
    // Papers for "countries": 0.9 - 0.1.
    assert!((at(&[0.2, 0.1], &p) - 0.8).abs() < 1e-6);
    // Places, near enough to "countries"; or of no known type.
    assert!((at(&[0.45, 0.1], &p) - 0.9).abs() < 1e-6);
    assert!((at(&none, &p) - 0.9).abs() < 1e-6);
    // No type named, nothing to mismatch.
    let free = Phrases {
        answer: AnswerCue::Free,
        ..p.clone()
    };
    assert!((at(&[0.2, 0.1], &free) - 0.9).abs() < 1e-6);
}

#[test]
fn word_order_faults() {
    // "the films written by the screenwriter of ENTITY starred who":
    // positions 2 (written), 5 (screenwriter), topic 7, 8 (starred).
    let (written, writer, starred) = (2..3, 5..6, 8..9);
    let topic = Some(7);
    // written_by (screenwriter), written_by_inv (written), starred: none.
    assert_eq!(
        order_faults(
            &[Some(&writer), Some(&written), Some(&starred)],
            topic,
            None
        ),
        0
    );
    // The steps before the last coming nearer the topic: one.
    assert_eq!(
        order_faults(
            &[Some(&written), Some(&writer), Some(&starred)],
            topic,
            None
        ),
        1
    );
    // And the answer in the middle of the path's phrases: two.
    assert_eq!(
        order_faults(
            &[Some(&written), Some(&starred), Some(&writer)],
            topic,
            None
        ),
        2
    );
    // The answer at the start is as good as at the end.
    assert_eq!(
        order_faults(
            &[Some(&writer), Some(&starred), Some(&written)],
            topic,
            None
        ),
        0
    );
}

#[test]
fn a_noun_tied_to_the_topic_is_the_first_steps() {
    let tied = |q: &str| phrases(q, "ENTITY").tied;
    // "in which countries are the authors of ENTITY based": 5 authors.
    assert_eq!(
        tied("in which countries are the authors of ENTITY based"),
        Some(5..6)
    );
    assert_eq!(tied("the home planets of the ENTITY"), Some(1..3));
    assert_eq!(
        tied("what species live on ENTITY's home planet"),
        Some(6..8)
    );
    assert_eq!(tied("what films did ENTITY write"), None);
    assert_eq!(tied("ENTITY's"), None);
    // authors (5) by the second step, based (8) by the first: a fault.
    let (authors, based, topic) = (5..6, 8..9, Some(7));
    assert_eq!(
        order_faults(&[Some(&based), Some(&authors)], topic, Some(&authors)),
        1
    );
    assert_eq!(
        order_faults(&[Some(&authors), Some(&based)], topic, Some(&authors)),
        0
    );
    // A first step with no phrase of its own leaves it to the next.
    assert_eq!(
        order_faults(&[None, Some(&authors)], topic, Some(&authors)),
        0
    );
}

#[test]
fn a_request_names_its_answer_after_the_verb() {
    let noun = |q: &str| answer_noun(q, "ENTITY");
    assert_eq!(noun("list the papers of ENTITY").as_deref(), Some("papers"));
    assert_eq!(
        noun("Tell me the years ENTITY's films came out").as_deref(),
        Some("years")
    );
    assert_eq!(
        noun("please name all films ENTITY wrote").as_deref(),
        Some("films")
    );
    // A question word after the verb asks as it always does.
    assert_eq!(noun("tell me who directed ENTITY"), None);
    assert_eq!(
        noun("tell me which films ENTITY wrote").as_deref(),
        Some("films")
    );
    // The verb is no relation's word; elsewhere "name" is.
    let p = phrases("list the papers of ENTITY", "ENTITY");
    assert!(!p.texts.iter().any(|t| t.contains("list")), "{:?}", p.texts);
    assert!(!p.content.contains(&0));
    let p = phrases("what is the name of ENTITY", "ENTITY");
    assert!(p.texts.contains(&"name".to_string()), "{:?}", p.texts);
}
