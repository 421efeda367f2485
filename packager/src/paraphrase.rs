//! `kgbox-pack paraphrase`: more planner examples in other words, written by
//! an LLM on the packaging workstation (any OpenAI-compatible endpoint, for
//! example `python3 -m llama_cpp.server` serving a local GGUF).
//!
//! For a few examples of each query template, the model is asked for
//! rewordings that keep the `[bracketed]` entity as written. A rewording is
//! kept only when it still works as an example of the same query: the
//! entity is linked from it as the question's topic, and the template run
//! from that topic finds the same answers as the gold query. The kept lines
//! (`question<TAB>DSL<TAB>answers`) are written for `--planner-examples`,
//! beside the original examples. Nothing here reaches the device: only the
//! trained planner does.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use indicatif::ProgressBar;
use kgbox_bundle::Kg;
use kgbox_qa::llm::audit::AuditLog;
use kgbox_qa::llm::openai::OpenAiClient;
use kgbox_qa::llm::policy::parse_endpoint;
use kgbox_qa::llm::{ChatBackend, ChatRequest, Constraint, Message};
use kgbox_qa::planner::template::Template;
use kgbox_qa::planner::train::{parse_examples, prepare, Example, Prepared};
use kgbox_qa::question::choose_topic;
use kgbox_query::link::{link_text, LinkOptions};
use kgbox_query::{ExecOptions, ParseLimits};
use serde_json::json;

use crate::graph::{self, Aligned};
use crate::input::{self, Format, RawKg};

/// Longest reply asked for.
const MAX_TOKENS: u32 = 300;
/// Text that only a model repeating its prompt or its chat template writes
/// (lower case).
const ECHOES: &[&str] = &[
    "rewrite this question",
    "exactly as written",
    "[inst]",
    "[/inst]",
    "<|",
    "|>",
    "<start_of_turn>",
    "<end_of_turn>",
    "<s>",
    "</s>",
];

/// What `kgbox-pack paraphrase` needs.
#[derive(Debug, Clone)]
pub struct ParaphraseOptions {
    pub triples: PathBuf,
    pub format: Option<Format>,
    pub aliases: Option<PathBuf>,
    /// The planner examples to reword.
    pub examples: PathBuf,
    /// OpenAI-compatible base URL (`http://127.0.0.1:8080/v1`).
    pub endpoint: String,
    /// The requests' `model` field.
    pub model: String,
    /// Environment variable holding an API key, if the endpoint needs one.
    pub api_key_env: Option<String>,
    pub timeout: Duration,
    /// Examples reworded per template.
    pub per_template: usize,
    /// Rewordings asked for per example.
    pub variants: usize,
    /// Where each call is recorded (JSON lines), as on the device.
    pub audit_log: Option<PathBuf>,
    pub progress: bool,
}

/// What was asked and kept.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParaphraseReport {
    /// Examples reworded (LLM calls).
    pub examples: usize,
    /// Rewordings the model wrote.
    pub written: usize,
    pub kept: usize,
    /// Rewordings dropped, by reason.
    pub dropped: BTreeMap<&'static str, usize>,
    /// Calls that failed (the example is skipped).
    pub failed_calls: usize,
}

/// Reads the graph, rewords the examples and writes the kept lines to `out`.
pub fn paraphrase(opts: &ParaphraseOptions, out: &Path) -> Result<ParaphraseReport> {
    if opts.per_template == 0 || opts.variants == 0 {
        bail!("--per-template and --variants must be at least 1");
    }
    let text = std::fs::read_to_string(&opts.examples)
        .with_context(|| format!("cannot read the examples {}", opts.examples.display()))?;
    let examples =
        parse_examples(&text).with_context(|| format!("in {}", opts.examples.display()))?;
    let built = read_graph(opts)?;
    let aligned = Aligned::new(&built.sections)?;
    let kg = aligned.kg()?;
    let endpoint =
        parse_endpoint(&opts.endpoint).with_context(|| format!("--endpoint {}", opts.endpoint))?;
    let key = opts
        .api_key_env
        .as_deref()
        .and_then(|v| std::env::var(v).ok())
        .filter(|k| !k.is_empty());
    let audit = match &opts.audit_log {
        Some(p) => AuditLog::open(p).map_err(anyhow::Error::msg)?,
        None => AuditLog::counters_only(),
    };
    let client = OpenAiClient::new(
        endpoint,
        opts.model.clone(),
        key,
        opts.timeout,
        Arc::new(audit),
    );
    let (lines, report) = reword(&kg, &examples, &client, opts)?;
    let mut body = String::from(
        "# planner examples reworded by kgbox-pack paraphrase (question<TAB>DSL<TAB>answers)\n",
    );
    for l in &lines {
        body.push_str(l);
        body.push('\n');
    }
    crate::pack::write_atomically(out, |f| {
        use std::io::Write;
        f.write_all(body.as_bytes())?;
        Ok(())
    })
    .with_context(|| format!("cannot write {}", out.display()))?;
    Ok(report)
}

fn read_graph(opts: &ParaphraseOptions) -> Result<graph::BuiltKg> {
    let hidden = ProgressBar::hidden();
    let mut raw = RawKg::default();
    input::read_triples(&opts.triples, opts.format, &mut raw, &hidden)?;
    if let Some(path) = &opts.aliases {
        input::read_aliases(path, &mut raw, &hidden)?;
    }
    Ok(graph::build(raw)?)
}

/// Up to `per_template` examples of each template with distinct masked
/// questions, spread over the file.
fn chosen(prepared: &[Prepared], per_template: usize) -> Vec<&Prepared> {
    let mut by_template: BTreeMap<&Template, Vec<&Prepared>> = BTreeMap::new();
    for p in prepared {
        by_template.entry(&p.template).or_default().push(p);
    }
    let mut out = Vec::new();
    for members in by_template.values() {
        let stride = (members.len() / per_template).max(1);
        let mut seen = BTreeSet::new();
        for p in members.iter().step_by(stride).chain(members.iter()) {
            if seen.len() == per_template {
                break;
            }
            if seen.insert(p.masked.as_str()) {
                out.push(*p);
            }
        }
    }
    out
}

/// The request asking for `variants` rewordings of `question`, keeping
/// `[name]`. No system message (small local models do better without).
pub fn request(question: &str, name: &str, variants: usize) -> ChatRequest {
    let ask = format!(
        "Rewrite this question in {variants} different ways that a person might ask it. \
Keep [{name}] exactly as written, brackets included. Keep the meaning: ask for the same \
thing about the same entity. Do not answer it.\nQuestion: {question}"
    );
    ChatRequest {
        messages: vec![Message::user(ask)],
        constraint: Constraint::JsonSchema {
            name: "paraphrases".into(),
            schema: json!({
                "type": "object",
                "properties": {
                    "questions": {
                        "type": "array",
                        "items": {"type": "string", "maxLength": 200},
                        "minItems": 1,
                        "maxItems": variants,
                    }
                },
                "required": ["questions"],
                "additionalProperties": false,
            }),
        },
        max_tokens: MAX_TOKENS,
        temperature: 0.7,
        purpose: "paraphrase",
        draft: None,
    }
}

/// The rewordings in a reply (`{"questions": [...]}`), trimmed.
pub fn read_reply(reply: &str) -> Option<Vec<String>> {
    let v: serde_json::Value = serde_json::from_str(reply.trim()).ok()?;
    Some(
        v.get("questions")?
            .as_array()?
            .iter()
            .filter_map(|q| q.as_str())
            .map(|q| q.trim().to_string())
            .filter(|q| !q.is_empty())
            .collect(),
    )
}

/// The answer names of `query` on `kg` (symbolic), sorted.
fn answers(kg: &Kg<'_>, query: &str) -> Option<Vec<String>> {
    let opts = ExecOptions {
        top_k: 10_000,
        max_paths: 0,
        ..ExecOptions::default()
    };
    let (found, _) = kgbox_query::run_query(kg, query, &ParseLimits::default(), &opts).ok()?;
    let mut names: Vec<String> = found
        .answers
        .iter()
        .filter_map(|a| kg.entity_name(a.entity).map(String::from))
        .collect();
    names.sort_unstable();
    Some(names)
}

/// Why a rewording of `original` (about entity `name`, template
/// `template`, gold answers `gold`) is not kept; `None` keeps it.
pub fn check(
    kg: &Kg<'_>,
    original: &str,
    reworded: &str,
    name: &str,
    template: &Template,
    gold: &[String],
) -> Option<&'static str> {
    let norm = |s: &str| {
        s.to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    };
    if norm(reworded) == norm(original) {
        return Some("same as the original");
    }
    if !reworded.contains(&format!("[{name}]")) {
        return Some("the bracketed entity is not kept");
    }
    if reworded.contains('\t') || reworded.contains('\n') {
        return Some("a tab or line break");
    }
    let lower = reworded.to_lowercase();
    if ECHOES.iter().any(|e| lower.contains(e)) {
        return Some("it echoes the instruction or chat markup");
    }
    let opts = LinkOptions {
        dense: false,
        ..LinkOptions::default()
    };
    let mentions = link_text(kg, reworded, &opts);
    let Some(topic) = choose_topic(reworded, &mentions) else {
        return Some("no entity is linked");
    };
    if topic.name != name {
        return Some("another entity is linked as the topic");
    }
    match answers(kg, &template.instantiate(&topic.name)) {
        Some(a) if a == gold => None,
        _ => Some("the template from the linked topic finds other answers"),
    }
}

/// Rewords the chosen examples with `chat`; the kept lines and the report.
pub fn reword(
    kg: &Kg<'_>,
    examples: &[Example],
    chat: &dyn ChatBackend,
    opts: &ParaphraseOptions,
) -> Result<(Vec<String>, ParaphraseReport)> {
    let (prepared, skipped) = prepare(kg, examples);
    if prepared.is_empty() {
        let first = skipped
            .first()
            .map(|(l, r)| format!("line {l}: {r}"))
            .unwrap_or_else(|| "the file has no examples".into());
        bail!("no usable examples ({first})");
    }
    let by_line: BTreeMap<usize, &Example> = examples.iter().map(|e| (e.line, e)).collect();
    let picked = chosen(&prepared, opts.per_template);
    let progress = crate::planner::bar(opts.progress, picked.len() as u64, "paraphrase");
    let mut report = ParaphraseReport::default();
    let mut lines = Vec::new();
    let mut kept_texts = BTreeSet::new();
    for p in picked {
        progress.inc(1);
        let (Some(ex), Some(name)) = (by_line.get(&p.line), kg.entity_name(p.entity)) else {
            continue;
        };
        let Some(gold) = answers(kg, &ex.dsl) else {
            continue;
        };
        report.examples += 1;
        let reply = match chat.complete(&request(&ex.question, name, opts.variants)) {
            Ok(r) => r,
            Err(_) => {
                report.failed_calls += 1;
                continue;
            }
        };
        let Some(reworded) = read_reply(&reply) else {
            *report
                .dropped
                .entry("the reply is not {\"questions\": [...]}")
                .or_default() += 1;
            continue;
        };
        for q in reworded {
            report.written += 1;
            let why = check(kg, &ex.question, &q, name, &p.template, &gold)
                .or_else(|| (!kept_texts.insert(q.clone())).then_some("written twice"));
            match why {
                Some(reason) => *report.dropped.entry(reason).or_default() += 1,
                None => {
                    report.kept += 1;
                    lines.push(format!("{q}\t{}\t{}", ex.dsl, gold.join("|")));
                }
            }
        }
    }
    progress.finish_and_clear();
    Ok((lines, report))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use kgbox_qa::llm::LlmError;

    /// Replies with `reply(question)` to every request.
    struct Scripted(fn(&str) -> String);
    impl ChatBackend for Scripted {
        fn complete(&self, req: &ChatRequest) -> Result<String, LlmError> {
            let text = &req.messages[0].content;
            let q = text.rsplit("Question: ").next().unwrap_or("");
            Ok((self.0)(q))
        }
        fn endpoint(&self) -> String {
            "scripted".into()
        }
    }

    fn options(per_template: usize) -> ParaphraseOptions {
        ParaphraseOptions {
            triples: PathBuf::new(),
            format: None,
            aliases: None,
            examples: PathBuf::new(),
            endpoint: String::new(),
            model: String::new(),
            api_key_env: None,
            timeout: Duration::from_secs(1),
            per_template,
            variants: 3,
            audit_log: None,
            progress: false,
        }
    }

    fn with_graph<T>(f: impl FnOnce(&Kg<'_>) -> T) -> T {
        let mut raw = RawKg::default();
        raw.add_triple("Blade Runner", "directed_by", "Ridley Scott")
            .unwrap();
        raw.add_triple("Alien", "directed_by", "Ridley Scott")
            .unwrap();
        raw.add_triple("Heat", "directed_by", "Michael Mann")
            .unwrap();
        raw.add_triple("Heat", "has_tags", "screenplay").unwrap();
        let built = graph::build(raw).expect("graph");
        let aligned = Aligned::new(&built.sections).expect("aligned");
        let kg = aligned.kg().expect("kg");
        f(&kg)
    }

    #[test]
    fn rewordings_are_kept_only_when_they_still_find_the_gold_answers() {
        let examples = parse_examples(
            "who directed [Blade Runner]\t\"Blade Runner\" -> directed_by\tRidley Scott\n\
             who is the director of [Heat]\t\"Heat\" -> directed_by\tMichael Mann\n",
        )
        .expect("examples");
        let reply = |q: &str| -> String {
            let name = if q.contains("[Heat]") {
                "Heat"
            } else {
                "Blade Runner"
            };
            json!({"questions": [
                format!("which person directed [{name}]"),
                // The same words as the original.
                q.to_string(),
                // The entity lost its brackets.
                format!("who made {name}"),
                // Another entity becomes the topic (as long or longer,
                // and first).
                format!("is [Ridley Scott] the director of [{name}]"),
                // Written twice.
                format!("which person directed [{name}]"),
                // The prompt or chat markup repeated.
                format!("[/INST] Rewrite this question about [{name}]"),
            ]})
            .to_string()
        };
        let (lines, report) = with_graph(|kg| {
            reword(kg, &examples, &Scripted(reply), &options(2)).expect("reworded")
        });
        assert_eq!(
            lines,
            [
                "which person directed [Blade Runner]\t\"Blade Runner\" -> directed_by\tRidley Scott",
                "which person directed [Heat]\t\"Heat\" -> directed_by\tMichael Mann",
            ]
        );
        assert_eq!(report.examples, 2);
        assert_eq!(report.written, 12);
        assert_eq!(report.kept, 2);
        assert_eq!(report.dropped["same as the original"], 2);
        assert_eq!(report.dropped["the bracketed entity is not kept"], 2);
        assert_eq!(report.dropped["written twice"], 2);
        assert_eq!(report.dropped["another entity is linked as the topic"], 2);
        assert_eq!(
            report.dropped["it echoes the instruction or chat markup"],
            2
        );
        assert_eq!(report.dropped.values().sum::<usize>(), 10);
    }

    #[test]
    fn a_reply_that_is_not_the_schema_is_counted_not_fatal() {
        let examples =
            parse_examples("who directed [Alien]\t\"Alien\" -> directed_by\n").expect("examples");
        let (lines, report) = with_graph(|kg| {
            reword(
                kg,
                &examples,
                &Scripted(|_| "Sure! Here you go".into()),
                &options(1),
            )
            .expect("runs")
        });
        assert!(lines.is_empty());
        assert_eq!(report.dropped["the reply is not {\"questions\": [...]}"], 1);
        // No usable example at all is an error naming the line.
        let bad =
            parse_examples("who directed [Nobody]\t\"Nobody\" -> directed_by\n").expect("examples");
        let e = with_graph(|kg| {
            reword(kg, &bad, &Scripted(|_| String::new()), &options(1)).expect_err("nothing")
        });
        assert!(e.to_string().contains("line 1"), "{e}");
    }
}
