//! `kgbox-gen`: writes the scale bench's synthetic graph as TSV.
//!
//! ```text
//! kgbox-gen --triples 10000000 --out $SCRATCH/g10m.tsv --aliases $SCRATCH/g10m.aliases.tsv
//! kgbox-gen --triples 10000000 --change 0.01 --out $SCRATCH/g10m-1pct.tsv
//! ```
//!
//! The same arguments give the same bytes. `--out` may be a FIFO, so a
//! graph too large for the disk streams straight into `kgbox-pack build`.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use kgbox_benches::gen::{self, Spec};

#[derive(Parser)]
#[command(
    name = "kgbox-gen",
    about = "Write a deterministic synthetic knowledge graph (TSV)"
)]
struct Args {
    /// Triples to write.
    #[arg(long)]
    triples: u64,
    /// Entities of the base graph (default: triples / 8).
    #[arg(long)]
    entities: Option<u64>,
    /// Relations.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    relations: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Fraction of the triples replaced by new ones (0.01 = 1%), for deltas.
    #[arg(long, default_value_t = 0.0)]
    change: f64,
    /// The triples file (or FIFO).
    #[arg(long)]
    out: PathBuf,
    /// Also write `entity<TAB>alias` lines here.
    #[arg(long)]
    aliases: Option<PathBuf>,
}

fn main() -> Result<()> {
    let args = Args::parse();
    anyhow::ensure!(args.triples > 0, "--triples must be at least 1");
    anyhow::ensure!(
        (0.0..=1.0).contains(&args.change),
        "--change must be a fraction between 0 and 1"
    );
    let mut spec = Spec::new(args.triples, args.seed);
    spec.relations = args.relations;
    spec.change = args.change;
    if let Some(n) = args.entities {
        anyhow::ensure!(n >= 2, "--entities must be at least 2");
        spec.entities = n;
    }
    let start = Instant::now();
    if let Some(path) = &args.aliases {
        let file =
            File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
        gen::write_aliases(&spec, &mut BufWriter::with_capacity(1 << 20, file))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let file =
        File::create(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut shown = 0u64;
    gen::write_triples(&spec, &mut out, |done| {
        if done - shown >= 10_000_000 || done == spec.triples {
            shown = done;
            let secs = start.elapsed().as_secs_f64();
            eprintln!(
                "kgbox-gen: {done} / {} triples, {secs:.0} s, eta {:.0} s",
                spec.triples,
                secs * (spec.triples - done) as f64 / done.max(1) as f64
            );
        }
    })
    .with_context(|| format!("writing {}", args.out.display()))?;
    Ok(())
}
