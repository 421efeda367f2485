//! `kgbox-scale`: kgbox at 1M, 10M, 100M (and more) triples.
//!
//! ```text
//! cargo build --release -p kgbox -p kgbox-pack -p kgbox-benches
//! target/release/kgbox-scale --sizes 1000000,10000000 --real metaqa=$DATA/metaqa/kb.tsv \
//!     --work $SCRATCH/scale --results benches/scale/results.json --plots benches/scale
//! target/release/kgbox-scale --plot-only --results benches/scale/results.json --plots benches/scale
//! ```
//!
//! Per case: the graph (synthetic from `kgbox-gen`'s generator, or a real
//! TSV), `kgbox-pack build` (wall time and peak RSS from the kernel), the
//! bundle's size, `kgbox install`, `kgbox bench` (symbolic 1-3 hops,
//! non-hub and hub-touching, linking, neural with `--ultra`),
//! `kgbox serve` (start to ready, RSS) and `kgbox-load` on the bench's
//! queries (HTTP throughput, RSS after the mix). Results are kept in one
//! JSON file by case name (a rerun replaces its case), printed as a
//! Markdown table and plotted (SVG, one figure per measure). With `--fifo`
//! the synthetic graph streams from the generator through a named pipe,
//! for graphs larger than the disk holds as text.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Parser;
use kgbox_benches::gen::{self, Spec};
use kgbox_benches::plot::{self, Series};
use kgbox_benches::scale::{self, Case, Tools};
use serde_json::Value;

#[derive(Parser)]
#[command(
    name = "kgbox-scale",
    about = "Pack, install, serve and time kgbox at growing graph sizes"
)]
struct Args {
    /// Synthetic graph sizes in triples, comma-separated.
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<u64>,
    /// Real graphs, NAME=TSV (repeat).
    #[arg(long)]
    real: Vec<String>,
    /// `--ultra PREFIX` for the real graphs' packs (neural figures). The
    /// synthetic graphs' 1,000 relations all share entities, a relation
    /// graph ULTRA's relation model does not fit (the packager refuses it).
    #[arg(long)]
    ultra: Option<PathBuf>,
    /// Scratch directory (graphs, bundles, data dirs); each case's folder
    /// is removed after it unless --keep.
    #[arg(long)]
    work: Option<PathBuf>,
    #[arg(long)]
    keep: bool,
    /// Stream synthetic graphs through a named pipe instead of a file.
    #[arg(long)]
    fifo: bool,
    /// The results file (JSON array), updated case by case.
    #[arg(long, default_value = "benches/scale/results.json")]
    results: PathBuf,
    /// Where the SVG figures go.
    #[arg(long, default_value = "benches/scale")]
    plots: PathBuf,
    /// Only print and plot the results file.
    #[arg(long)]
    plot_only: bool,
    /// A case already packed, NAME=DIR (repeat): the folder a run left
    /// (with --keep, or cut short after packing) holding `bundle.kgb`,
    /// `key/kgbox.pub` and `pack.json`; it is measured from install on and
    /// not removed.
    #[arg(long)]
    packed: Vec<String>,
}

fn tools() -> Result<Tools> {
    let here = std::env::current_exe()?;
    let dir = here.parent().context("no directory for this executable")?;
    let find = |name: &str| {
        let p = dir.join(name);
        anyhow::ensure!(
            p.is_file(),
            "{} not found: build it first (cargo build --release -p kgbox -p kgbox-pack -p kgbox-benches)",
            p.display()
        );
        Ok(p)
    };
    Ok(Tools {
        kgbox: find("kgbox")?,
        pack: find("kgbox-pack")?,
        load: find("kgbox-load")?,
    })
}

fn label(triples: u64) -> String {
    match triples {
        t if t >= 1_000_000_000 && t % 1_000_000_000 == 0 => format!("{}B", t / 1_000_000_000),
        t if t >= 1_000_000 && t % 1_000_000 == 0 => format!("{}M", t / 1_000_000),
        t if t >= 1000 && t % 1000 == 0 => format!("{}k", t / 1000),
        t => t.to_string(),
    }
}

fn load_results(path: &Path) -> Result<Vec<Value>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(serde_json::from_str(&text)
            .with_context(|| format!("{} is not a JSON array", path.display()))?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

fn save_result(path: &Path, result: Value) -> Result<()> {
    let mut all = load_results(path)?;
    all.retain(|r| r["case"] != result["case"]);
    all.push(result);
    all.sort_by_key(|r| r["triples"].as_u64().unwrap_or(0));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, serde_json::to_string_pretty(&all)? + "\n")
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Writes the synthetic graph of `triples` (and its aliases) into `dir`;
/// with `fifo`, the triples go through a named pipe written by a thread.
fn synthetic(triples: u64, dir: &Path, fifo: bool) -> Result<Case> {
    std::fs::create_dir_all(dir)?;
    let spec = Spec::new(triples, 1);
    let aliases = dir.join("aliases.tsv");
    gen::write_aliases(&spec, &mut BufWriter::new(File::create(&aliases)?))?;
    let path = dir.join("triples.tsv");
    if fifo {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())?;
        // SAFETY: a valid NUL-terminated path.
        if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
            anyhow::bail!(
                "mkfifo {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            );
        }
        let writer_path = path.clone();
        std::thread::spawn(move || {
            let run = || -> std::io::Result<()> {
                let mut out = BufWriter::with_capacity(1 << 20, File::create(&writer_path)?);
                gen::write_triples(&spec, &mut out, |_| {})
            };
            if let Err(e) = run() {
                eprintln!("kgbox-scale: the generator stopped: {e}");
            }
        });
    } else {
        gen::write_triples(&spec, &mut BufWriter::new(File::create(&path)?), |_| {})?;
    }
    Ok(Case {
        name: label(triples),
        triples: path,
        aliases: Some(aliases),
        ultra: None,
        packed: false,
    })
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn table(results: &[Value]) -> String {
    let mut out = String::from(
        "| case | triples | entities | pack s | pack peak RSS MiB | bundle MB | B/triple | install s | ready ms | RSS ready MiB | RSS after mix MiB | 1-hop p50/p95 µs | 2-hop p50/p95 µs | 3-hop p50/p95 µs | 3-hop hub p50/p95 µs | link p50 µs | neural p50 ms | HTTP req/s |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in results {
        let b = &r["bench"];
        let q = |k: &str| {
            let m = &b["symbolic"][k];
            format!("{:.1} / {:.1}", f(&m["p50"]), f(&m["p95"]))
        };
        let neural = b["neural"]["p50"]
            .as_f64()
            .map_or("-".to_string(), |v| format!("{:.1}", v / 1e3));
        out.push_str(&format!(
            "| {} | {} | {} | {:.1} | {:.0} | {:.1} | {:.2} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} | {} | {} | {:.1} | {} | {:.0} |\n",
            r["case"].as_str().unwrap_or("?"),
            r["triples"],
            r["entities"],
            f(&r["pack_s"]),
            f(&r["pack_peak_rss_mib"]),
            f(&r["bundle_bytes"]) / 1e6,
            f(&r["bytes_per_triple"]),
            f(&r["install_s"]),
            f(&r["ready_ms"]),
            f(&r["rss_ready_mib"]),
            f(&r["rss_after_mix_mib"]),
            q("hops_1_nonhub"),
            q("hops_2_nonhub"),
            q("hops_3_nonhub"),
            q("hops_3_hub"),
            f(&b["link"]["p50"]),
            neural,
            f(&r["http_rps"]),
        ));
    }
    out
}

/// Whether a result is of a synthetic graph (named by its size, `10M`).
fn synthetic_case(r: &Value) -> bool {
    r["case"]
        .as_str()
        .is_some_and(|c| c.starts_with(|ch: char| ch.is_ascii_digit()))
}

/// The figures: lines over the synthetic sizes; the real graphs (other
/// graphs, other models) are in the table, and only the neural figures,
/// which only they have, are plotted for them.
fn plots(results: &[Value], dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let of = |keep: &dyn Fn(&Value) -> bool, name: &str, get: &dyn Fn(&Value) -> f64| Series {
        name: name.to_string(),
        points: results
            .iter()
            .filter(|r| keep(r))
            .map(|r| (f(&r["triples"]), get(r)))
            .filter(|p| p.1.is_finite())
            .collect(),
    };
    let series = |name: &str, get: &dyn Fn(&Value) -> f64| of(&synthetic_case, name, get);
    let figures: Vec<(&str, &str, &str, Vec<Series>)> = vec![
        (
            "pack.svg",
            "Packing: time and peak memory",
            "seconds / MiB",
            vec![
                series("pack time (s)", &|r| f(&r["pack_s"])),
                series("pack peak RSS (MiB)", &|r| f(&r["pack_peak_rss_mib"])),
                series("install time (s)", &|r| f(&r["install_s"])),
            ],
        ),
        (
            "size.svg",
            "Bundle size",
            "MB / bytes per triple",
            vec![
                series("bundle (MB)", &|r| f(&r["bundle_bytes"]) / 1e6),
                series("bytes per triple", &|r| f(&r["bytes_per_triple"])),
            ],
        ),
        (
            "serve.svg",
            "Serving: start to ready and resident memory",
            "ms / MiB",
            vec![
                series("start to ready (ms)", &|r| f(&r["ready_ms"])),
                series("RSS ready (MiB)", &|r| f(&r["rss_ready_mib"])),
                series("RSS after the query mix (MiB)", &|r| {
                    f(&r["rss_after_mix_mib"])
                }),
            ],
        ),
        (
            "queries.svg",
            "Symbolic query p50 (in process)",
            "µs",
            ["1", "2", "3"]
                .iter()
                .flat_map(|h| {
                    ["nonhub", "hub"].map(|k| {
                        series(&format!("{h}-hop {k}"), &|r| {
                            f(&r["bench"]["symbolic"][format!("hops_{h}_{k}")]["p50"])
                        })
                    })
                })
                .collect(),
        ),
        (
            "linking.svg",
            "Entity linking (synthetic) and neural projection (real graphs) p50",
            "µs",
            vec![
                series("link one name", &|r| f(&r["bench"]["link"]["p50"])),
                of(
                    &|r| !synthetic_case(r),
                    "neural 1-hop, SEPPR k = 500 (real graphs)",
                    &|r| f(&r["bench"]["neural"]["p50"]),
                ),
            ],
        ),
        (
            "http.svg",
            "HTTP throughput (POST /v1/query, 8 connections)",
            "requests per second",
            vec![series("requests/s", &|r| f(&r["http_rps"]))],
        ),
    ];
    for (file, title, y, s) in figures {
        let s: Vec<Series> = s.into_iter().filter(|s| !s.points.is_empty()).collect();
        if s.is_empty() {
            continue;
        }
        plot::chart(&dir.join(file), title, y, &s)?;
    }
    Ok(())
}

fn main() -> Result<()> {
    let args = Args::parse();
    kgbox_benches::proc::catch_interrupts();
    if !args.plot_only {
        let tools = tools()?;
        let work = match &args.work {
            Some(w) => w.clone(),
            None => std::env::temp_dir().join("kgbox-scale"),
        };
        let mut cases = Vec::new();
        for r in &args.real {
            let (name, path) = r
                .split_once('=')
                .with_context(|| format!("--real {r:?}: expected NAME=TSV"))?;
            cases.push(Case {
                name: name.to_string(),
                triples: PathBuf::from(path),
                aliases: None,
                ultra: args.ultra.clone(),
                packed: false,
            });
        }
        for p in &args.packed {
            let (name, dir) = p
                .split_once('=')
                .with_context(|| format!("--packed {p:?}: expected NAME=DIR"))?;
            cases.push(Case {
                name: name.to_string(),
                triples: PathBuf::from(dir),
                aliases: None,
                ultra: None,
                packed: true,
            });
        }
        for &n in &args.sizes {
            cases.push(Case {
                name: label(n),
                triples: PathBuf::new(),
                aliases: None,
                ultra: None,
                packed: false,
            });
        }
        for mut case in cases {
            if case.packed {
                let result = scale::run_case(&tools, &case, &case.triples.clone());
                save_result(&args.results, result?)?;
                continue;
            }
            let dir = work.join(&case.name);
            if case.triples.as_os_str().is_empty() {
                let triples = args
                    .sizes
                    .iter()
                    .copied()
                    .find(|&n| label(n) == case.name)
                    .unwrap_or(0);
                eprintln!("[{}] generating", case.name);
                case = synthetic(triples, &dir.join("input"), args.fifo)?;
            }
            let result = scale::run_case(&tools, &case, &dir);
            if !args.keep {
                let _ = std::fs::remove_dir_all(&dir);
            }
            save_result(&args.results, result?)?;
        }
    }
    let results = load_results(&args.results)?;
    print!("{}", table(&results));
    plots(&results, &args.plots)?;
    Ok(())
}
