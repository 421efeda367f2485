//! `kgbox-pack build --train-executor`: fine-tunes the neural query executor
//! on the bundle's own graph before it is packed.
//!
//! The packager writes the built graph (`triples.tsv`, entity and relation
//! ids) and the planner examples that are chain queries with answers
//! (`examples.jsonl`) into the training folder, runs `models/ultra/train.py`
//! there (PyTorch: the operator's workstation), and packs the ONNX files it
//! exports like any `--ultra` model. A tenth of the examples (by a hash of the
//! question) never reach the trainer: they are held out to fit the hybrid
//! fusion (`fusion.rs`). Running the same command again resumes an
//! interrupted training from the folder's saved state.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use kgbox_bundle::Kg;
use kgbox_qa::planner::train::Example;
use kgbox_query::plan::{Node, Plan};

/// One example in ten (by question hash) is held out for the fusion.
const HOLDOUT_MODULUS: u64 = 10;

/// What the executor is trained for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TrainTask {
    /// UltraQuery for kgbox's executors: chains of projections on SEPPR
    /// subgraphs, link prediction with other tails hidden, and the
    /// examples' chains.
    #[default]
    Queries,
    /// ULTRA's transductive fine-tuning, what `kgbox eval kgc` scores: link
    /// prediction on the whole graph, conditioned on the direct relation,
    /// only the target edge hidden, 256 sampled negatives, batches of 8,
    /// AdamW at 1e-4; examples are not used.
    LinkPrediction,
}

impl TrainTask {
    /// The checkpoint a task starts from, under `models/ultra/checkpoints/`.
    pub fn default_init(self) -> &'static str {
        match self {
            TrainTask::Queries => "models/ultra/checkpoints/ultraquery.pth",
            TrainTask::LinkPrediction => "models/ultra/checkpoints/ultra_3g.pth",
        }
    }

    /// The trainer's flags for this task (after the common ones).
    fn trainer_args(self) -> &'static [&'static str] {
        match self {
            TrainTask::Queries => &[],
            TrainTask::LinkPrediction => &[
                "--condition",
                "direct",
                "--hide-others",
                "0",
                "--link-targets",
                "hidden",
                "--negatives",
                "256",
                "--batch",
                "8",
                "--lr",
                "1e-4",
                "--example-share",
                "0",
                "--validate",
                "0",
            ],
        }
    }
}

#[derive(Debug, Clone)]
pub struct TrainOptions {
    pub task: TrainTask,
    /// Inputs, resumable state and outputs of the training.
    pub dir: PathBuf,
    /// Wall-clock limit of the training (the trainer's `--budget`).
    pub budget: Option<std::time::Duration>,
    /// Steps to train (the budget may stop earlier).
    pub steps: Option<u64>,
    pub seed: u64,
    /// The Python interpreter with `models/ultra/requirements.txt`.
    pub python: PathBuf,
    /// `models/ultra/train.py`.
    pub script: PathBuf,
    /// The checkpoint to start from (`models/ultra/checkpoints/ultraquery.pth`).
    pub init: PathBuf,
    /// The subgraph size the trainer's projections use (the runtime's
    /// `seppr_k`); `None`: the task's default (500 for queries, the whole
    /// graph for link prediction).
    pub seppr_k: Option<usize>,
}

/// What training produced: the ONNX prefix for `--ultra` and the record.
pub struct Trained {
    pub prefix: PathBuf,
    pub record: serde_json::Value,
}

/// Whether an example is held out of training (for the fusion).
pub fn held_out(question: &str) -> bool {
    // FNV-1a: stable across platforms and releases.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in question.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h.is_multiple_of(HOLDOUT_MODULUS)
}

/// A chain query `anchor -> r1 -> r2 ...` as (anchor, [(relation, inverse)]);
/// `None` for any other plan.
pub fn chain(plan: &Plan) -> Option<(u32, Vec<(u32, bool)>)> {
    let mut steps = Vec::new();
    let mut node = plan.root();
    loop {
        match plan.nodes.get(node)? {
            Node::Anchor { entity } => {
                steps.reverse();
                return (!steps.is_empty()).then_some((*entity, steps));
            }
            Node::Project {
                input,
                relation,
                inverse,
            } => {
                steps.push((*relation, *inverse));
                node = *input;
            }
            _ => return None,
        }
    }
}

/// The plan of an example's DSL on `kg`, if it parses and binds.
pub fn plan_of(kg: &Kg<'_>, dsl: &str) -> Option<Plan> {
    let query = kgbox_query::parse(dsl).ok()?;
    kgbox_query::bind::bind(kg, &query, dsl).ok()
}

/// Writes `triples.tsv` and `examples.jsonl` for the trainer; returns how
/// many examples were written and how many were skipped (not a chain, no
/// known answer).
fn write_inputs(kg: &Kg<'_>, examples: &[Example], dir: &Path) -> Result<(usize, usize)> {
    let path = dir.join("triples.tsv");
    let mut out = BufWriter::new(
        std::fs::File::create(&path).with_context(|| format!("cannot write {}", path.display()))?,
    );
    for h in 0..kg.entity_count() as u32 {
        let (rels, tails) = kg.out.edges(h);
        for (r, t) in rels.iter().zip(tails) {
            writeln!(out, "{h}\t{r}\t{t}")?;
        }
    }
    out.flush()?;
    let path = dir.join("examples.jsonl");
    let mut out = BufWriter::new(
        std::fs::File::create(&path).with_context(|| format!("cannot write {}", path.display()))?,
    );
    let (mut written, mut skipped) = (0, 0);
    for ex in examples.iter().filter(|e| !held_out(&e.question)) {
        let Some(answers) = &ex.answers else {
            continue;
        };
        let Some((anchor, steps)) = plan_of(kg, &ex.dsl).as_ref().and_then(chain) else {
            skipped += 1;
            continue;
        };
        let ids: Vec<String> = answers
            .iter()
            .filter_map(|a| kg.entity_id(a))
            .map(|id| id.to_string())
            .collect();
        if ids.is_empty() {
            skipped += 1;
            continue;
        }
        let path: Vec<(String, bool)> = steps.iter().map(|&(r, i)| (r.to_string(), i)).collect();
        let line = serde_json::json!({"anchor": anchor.to_string(), "path": path, "answers": ids});
        writeln!(out, "{line}")?;
        written += 1;
    }
    out.flush()?;
    Ok((written, skipped))
}

/// Trains the executor on the graph in `built` (and on `examples`), and
/// returns the exported model's prefix and training record.
pub fn train(
    built: &[(&'static str, crate::section::SectionData)],
    examples: &[Example],
    opts: &TrainOptions,
    notes: &mut Vec<String>,
) -> Result<Trained> {
    for (what, path) in [
        ("--train-script", &opts.script),
        ("--train-init", &opts.init),
    ] {
        if !path.is_file() {
            bail!("{what} {}: no such file", path.display());
        }
    }
    std::fs::create_dir_all(&opts.dir)
        .with_context(|| format!("cannot create the training folder {}", opts.dir.display()))?;
    let aligned = crate::graph::Aligned::new(built)?;
    let kg = aligned.kg()?;
    if kg.triple_count() == 0 {
        bail!("the graph has no triples: there is nothing to train the executor on");
    }
    let examples = match opts.task {
        TrainTask::Queries => examples,
        TrainTask::LinkPrediction => &[],
    };
    let (written, skipped) = write_inputs(&kg, examples, &opts.dir)?;
    notes.push(match opts.task {
        TrainTask::Queries => format!(
            "train: {} triples and {written} example chains for the executor ({skipped} examples are not chains with known answers; 1 in {HOLDOUT_MODULUS} is held out for the fusion)",
            kg.triple_count()
        ),
        TrainTask::LinkPrediction => format!(
            "train: {} triples for link prediction on the whole graph",
            kg.triple_count()
        ),
    });
    let seppr_k = opts.seppr_k.unwrap_or(match opts.task {
        TrainTask::Queries => kgbox_neural::seppr::DEFAULT_K,
        TrainTask::LinkPrediction => kg.entity_count(),
    });
    let prefix = opts.dir.join("trained");
    let mut cmd = Command::new(&opts.python);
    cmd.arg(&opts.script)
        .arg("--dir")
        .arg(&opts.dir)
        .arg("--init")
        .arg(&opts.init)
        .arg("--out")
        .arg(&prefix)
        .arg("--seed")
        .arg(opts.seed.to_string())
        .arg("--seppr-k")
        .arg(seppr_k.to_string())
        .args(opts.task.trainer_args());
    if let Some(b) = opts.budget {
        cmd.arg("--budget").arg(format!("{}s", b.as_secs_f64()));
    }
    if let Some(s) = opts.steps {
        cmd.arg("--steps").arg(s.to_string());
    }
    eprintln!(
        "train: running {} {} (progress below; Ctrl-C saves the state, the same command resumes)",
        opts.python.display(),
        opts.script.display()
    );
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {}", opts.python.display()))?;
    match status.code() {
        Some(0) => {}
        Some(130) => bail!(
            "training interrupted; its state is in {}: run the same command again to resume",
            opts.dir.display()
        ),
        _ => bail!("training failed ({status}); see the trainer's messages above"),
    }
    let record_path = record_path(&prefix);
    let record = read_record(&record_path)?;
    Ok(Trained { prefix, record })
}

/// A training budget as the operator writes it: `90s`, `30m`, `2h`, `1h 30m`.
pub fn parse_budget(text: &str) -> Result<std::time::Duration> {
    match humantime::parse_duration(text) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => bail!("--train-budget {text:?}: expected a positive duration like 90s, 30m or 2h"),
    }
}

/// `PREFIX.train.json`, the training record `train.py` writes.
pub fn record_path(prefix: &Path) -> PathBuf {
    let mut p = prefix.as_os_str().to_owned();
    p.push(".train.json");
    PathBuf::from(p)
}

pub fn read_record(path: &Path) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the training record {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("the training record {} is not JSON", path.display()))
}

/// `rel` under the current folder or any of its parents, then under the
/// folder of the running executable or its parents (a repository checkout).
/// The trainer's interpreter when none is given: the environment that
/// `scripts/setup.sh --dev` makes (`.venv-ultra` of this checkout), else
/// `python3` on the PATH.
pub fn default_python() -> PathBuf {
    let venv = find_in_checkout(VENV_PYTHON);
    if venv.is_file() {
        venv
    } else {
        PathBuf::from("python3")
    }
}

/// The set-up script's trainer environment's interpreter, from the root of
/// a checkout.
const VENV_PYTHON: &str = ".venv-ultra/bin/python";

pub fn find_in_checkout(rel: &str) -> PathBuf {
    let mut roots = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        roots.push(cwd);
    }
    if let Ok(exe) = std::env::current_exe() {
        roots.extend(exe.parent().map(Path::to_path_buf));
    }
    for root in &roots {
        for dir in root.ancestors() {
            let candidate = dir.join(rel);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    PathBuf::from(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trainer_runs_in_the_set_up_environment_when_there_is_one() {
        // Tests run in packager/, inside the checkout.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let venv = root.join(VENV_PYTHON);
        let python = default_python();
        if venv.is_file() {
            assert_eq!(
                python.canonicalize().ok(),
                venv.canonicalize().ok(),
                "{}",
                python.display()
            );
        } else {
            assert_eq!(python, PathBuf::from("python3"));
        }
    }

    #[test]
    fn a_tenth_is_held_out_deterministically() {
        let n = (0..10_000)
            .filter(|i| held_out(&format!("question {i}")))
            .count();
        assert!((800..1200).contains(&n), "{n}");
        assert_eq!(
            held_out("what movies did [X] act in"),
            held_out("what movies did [X] act in")
        );
    }

    #[test]
    fn budgets_are_durations() {
        assert_eq!(parse_budget("30m").unwrap().as_secs(), 1800);
        assert_eq!(parse_budget("1h 30m").unwrap().as_secs(), 5400);
        for bad in ["soon", "0s", "", "-5m"] {
            let e = parse_budget(bad).unwrap_err().to_string();
            assert!(e.contains("--train-budget"), "{e}");
        }
    }
}
