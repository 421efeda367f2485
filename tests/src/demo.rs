//! Test inputs from the repository's demo KB (`demo/movies.tsv`), and the
//! config of a device whose planner is an LLM.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::{pack, repo_root, Keys};

/// The demo KB, `demo/movies.tsv`.
pub fn demo_tsv() -> PathBuf {
    repo_root().join("demo/movies.tsv")
}

/// Packs the demo KB as `name` 1.0.0 with the real packager (see [`pack`]).
pub fn pack_demo(name: &str, keys: &Keys, out: &Path, extra: &[&str]) {
    pack(&demo_tsv(), name, "1.0.0", keys, out, extra);
}

/// (movie, answer) pairs of `relation` in the demo KB, movies with exactly
/// one answer whose title has none of the `forbidden` characters.
pub fn demo_facts(relation: &str, forbidden: &[char]) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(demo_tsv()).unwrap();
    let mut by_movie: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in text.lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() == 3 && cols[1] == relation {
            by_movie
                .entry(cols[0].to_string())
                .or_default()
                .push(cols[2].to_string());
        }
    }
    by_movie
        .into_iter()
        .filter(|(m, a)| a.len() == 1 && !m.contains(forbidden))
        .map(|(m, mut a)| (m, a.remove(0)))
        .collect()
}

/// A question held out of a learned planner's examples.
pub struct Probe {
    pub question: String,
    pub answer: String,
    /// The query that answers it.
    pub query: String,
}

/// Packs the demo KB as `name` into `dir` with a learned planner trained on
/// `phrasings` (per relation, four phrasings with `M` for the movie) about
/// the first 24 movies of each relation; `probes` later movies per relation
/// are held out. The bundle's path and the probes.
pub fn learned_demo_bundle(
    dir: &Path,
    keys: &Keys,
    name: &str,
    phrasings: &[(&str, &[&str])],
    probes: usize,
) -> (PathBuf, Vec<Probe>) {
    learned_demo_bundle_with(dir, keys, name, phrasings, probes, &[])
}

/// [`learned_demo_bundle`] with more `kgbox-pack build` arguments.
pub fn learned_demo_bundle_with(
    dir: &Path,
    keys: &Keys,
    name: &str,
    phrasings: &[(&str, &[&str])],
    probes: usize,
    extra: &[&str],
) -> (PathBuf, Vec<Probe>) {
    let mut examples = String::from("# question<TAB>DSL<TAB>answers\n");
    let mut held = Vec::new();
    for (relation, phrasings) in phrasings {
        let facts = demo_facts(relation, &['"', '[']);
        assert!(
            facts.len() >= 24 + probes,
            "{relation}: {} facts",
            facts.len()
        );
        for (i, (movie, answer)) in facts.iter().take(24).enumerate() {
            let q = phrasings[i % phrasings.len()].replace('M', movie);
            examples.push_str(&format!("{q}\t\"{movie}\" -> {relation}\t{answer}\n"));
        }
        for (i, (movie, answer)) in facts.iter().skip(24).take(probes).enumerate() {
            held.push(Probe {
                question: phrasings[i % phrasings.len()].replace('M', movie),
                answer: answer.clone(),
                query: format!("\"{movie}\" -> {relation}"),
            });
        }
    }
    let ex = dir.join(format!("{name}-examples.tsv"));
    std::fs::write(&ex, examples).unwrap();
    let bundle = dir.join(format!("{name}.kgb"));
    let ex = ex.to_str().expect("a UTF-8 path");
    let mut args = vec!["--planner-examples", ex];
    args.extend_from_slice(extra);
    pack_demo(name, keys, &bundle, &args);
    (bundle, held)
}

/// A device config whose planner is the LLM at `endpoint`.
pub struct LlmConfig<'a> {
    /// `llm.mode`: `local` or `remote`.
    pub mode: &'a str,
    /// `llm.endpoint`, an OpenAI-compatible base URL.
    pub endpoint: &'a str,
    /// `llm.audit_log`.
    pub audit_log: &'a Path,
    /// More lines of the `[planner]` table.
    pub planner: &'a str,
    /// More lines of the `[llm]` table.
    pub llm: &'a str,
}

impl LlmConfig<'_> {
    /// The config text: `[planner]` with `kind = "llm"`, then `[llm]`.
    pub fn toml(&self) -> String {
        format!(
            "[planner]\nkind = \"llm\"\n{}\n[llm]\nmode = \"{}\"\nendpoint = \"{}\"\naudit_log = {:?}\n{}\n",
            self.planner,
            self.mode,
            self.endpoint,
            self.audit_log.display().to_string(),
            self.llm
        )
    }
}
