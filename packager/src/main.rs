//! `kgbox-pack`: build, sign and inspect kgbox bundles. This file only
//! parses the command line and hands each command to the module that runs
//! it: `cli/` for `keygen`, `build` and `paraphrase`, the library for the
//! others.

mod cli;
// The same `completions` and `man` as the device's binary.
#[path = "../../runtime/kgbox/src/cmd/manual.rs"]
mod manual;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{CommandFactory, Parser, Subcommand};

use cli::build::BuildArgs;
use cli::paraphrase::ParaphraseArgs;

#[derive(Parser)]
#[command(
    name = "kgbox-pack",
    version,
    about = "Build, sign and inspect kgbox KG bundles"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write a new ed25519 signing key pair (NAME.key, mode 0600, and NAME.pub).
    Keygen {
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value = "kgbox")]
        name: String,
        /// Replace existing key files.
        #[arg(long)]
        force: bool,
    },
    /// Pack a KG slice into a signed bundle.
    Build(Box<BuildArgs>),
    /// Print a bundle's manifest and section table.
    Inspect { bundle: PathBuf },
    /// Write a bundle's graph as N-Triples with the IRIs the `sparql_store`
    /// executor queries, to load a graph store (see docs/sparql-store.md).
    Export(kgbox_pack::export::ExportArgs),
    /// Reword planner examples with an LLM; keeps the rewordings whose
    /// linked topic and template find the gold answers.
    Paraphrase(Box<ParaphraseArgs>),
    /// Send a bundle to devices over MQTT (or to one device over HTTP).
    Push(Box<kgbox_pack::push::PushArgs>),
    /// Send a bundle to a fleet in waves, by a plan: a canary first, golden
    /// questions and error/latency criteria after each wave, rollback and a
    /// stop when they fail; resumable (see docs/fleet.md).
    Rollout(Box<kgbox_pack::rollout::RolloutArgs>),
    /// The fleet as its devices report it over MQTT.
    #[command(subcommand)]
    Fleet(kgbox_pack::fleet::FleetCommand),
    /// Make a signed delta update that turns OLD (installed on a device)
    /// into NEW.
    Delta(Box<kgbox_pack::delta::DeltaArgs>),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions { shell: clap_complete::Shell },
    /// Print the man page (roff); with --dir, write one page per command there.
    Man {
        /// Write kgbox-pack.1, kgbox-pack-build.1, ... into this directory.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

fn run() -> Result<()> {
    match Cli::parse().command {
        Command::Keygen { out, name, force } => cli::keygen::run(&out, &name, force),
        Command::Build(args) => cli::build::run(*args),
        Command::Inspect { bundle } => {
            print!("{}", kgbox_pack::inspect::inspect(&bundle)?);
            Ok(())
        }
        Command::Export(args) => kgbox_pack::export::run(&args),
        Command::Paraphrase(args) => cli::paraphrase::run(*args),
        Command::Push(args) => kgbox_pack::push::run(&args),
        Command::Delta(args) => kgbox_pack::delta::run(&args),
        Command::Rollout(args) => kgbox_pack::rollout::run(&args),
        Command::Fleet(cmd) => kgbox_pack::fleet::run(&cmd),
        Command::Completions { shell } => manual::completions(shell, Cli::command()),
        Command::Man { dir } => manual::man(Cli::command(), dir.as_deref()),
    }
}

/// Makes glibc serve every allocation of 1 MiB or more from its own
/// mapping, returned to the kernel when freed. By default the threshold
/// rises with the blocks freed (up to 32 MiB), after which a pack's large
/// and short-lived blocks (read buffers, hash tables that double, sorted
/// runs) come from the heap and their pages stay resident once freed:
/// about 1 GB more at a billion triples.
fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets an allocator parameter; it is called
    // before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

fn main() -> ExitCode {
    return_freed_memory();
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
