//! Text a client sends: the query DSL, SPARQL, Cypher, questions to link
//! and texts for the sentence encoder's tokenizer. Each runs against the
//! demo bundle's graph, through to answers where the text is valid.

use std::sync::OnceLock;

use kgbox::loaded::LoadedBundle;
use kgbox_bundle::Kg;
use kgbox_query::link::{link_mention, link_text as link, LinkOptions};
use kgbox_query::render::RenderOptions;
use kgbox_query::translate::{from_cypher, from_sparql};
use kgbox_query::{bind::bind, execute, run_query, ExecOptions, ParseLimits};

fn demo() -> &'static LoadedBundle {
    static B: OnceLock<LoadedBundle> = OnceLock::new();
    B.get_or_init(|| kgbox::demo::load_demo().expect("the demo bundle loads"))
}

fn kg() -> Kg<'static> {
    demo().kg().expect("the demo's graph opens")
}

/// A query in the DSL, parsed, bound and run.
pub fn query_dsl(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = run_query(
        &kg(),
        text,
        &ParseLimits::default(),
        &ExecOptions::default(),
    );
}

/// A SPARQL query, translated against the graph's terms and run.
pub fn sparql(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let kg = kg();
    let Ok(q) = from_sparql(&kg, text, &RenderOptions::default()) else {
        return;
    };
    if let Some(query) = q.query {
        let opts = ExecOptions {
            exclude_anchors: false,
            ..ExecOptions::default()
        };
        if let Ok(plan) = bind(&kg, &query, text) {
            let _ = execute(&kg, &plan, &opts);
        }
    }
}

/// A Cypher query, translated and run.
pub fn cypher(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let kg = kg();
    if let Ok(query) = from_cypher(text) {
        if let Ok(plan) = bind(&kg, &query, text) {
            let _ = execute(&kg, &plan, &ExecOptions::default());
        }
    }
}

/// A question's entity mentions, and the text as one mention.
pub fn link_text(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let kg = kg();
    let opts = LinkOptions::default();
    let _ = link(&kg, text, &opts);
    let _ = link_mention(&kg, text, &opts);
}

/// A text through the sentence encoder's tokenizer (the MiniLM
/// `tokenizer.json` the packager ships with `--embed`).
pub fn tokenizer(data: &[u8]) {
    static T: OnceLock<tokenizers::Tokenizer> = OnceLock::new();
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let t = T.get_or_init(|| {
        kgbox_neural::encoder::load_tokenizer(include_bytes!(
            "../../../models/minilm/tokenizer.json"
        ))
        .expect("the shipped tokenizer loads")
    });
    if let Ok(enc) = t.encode_batch(vec![text], true) {
        for e in enc {
            assert!(
                e.get_ids().len() <= kgbox_neural::encoder::MAX_TOKENS,
                "the tokenizer did not truncate"
            );
        }
    }
}
