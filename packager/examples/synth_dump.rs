//! Prints the questions the packager would synthesise for a bundle's graph
//! (`question<TAB>DSL<TAB>answers`), for looking at their phrasing:
//!
//!   cargo run --release -p kgbox-pack --example synth_dump -- BUNDLE PUBKEY
//!
//! With `--paths` after them it prints every path found instead, kept or
//! not, best first: `hops<TAB>path<TAB>bound<TAB>spread`.
use std::io::Write;

use anyhow::Context;
use kgbox_bundle::{OwnedImage, PublicKey, TrustedKeys};
use kgbox_pack::synth::{synthesize, SynthOptions};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (bundle, key, paths) = match &args[..] {
        [b, k] => (b, k, false),
        [b, k, flag] if flag == "--paths" => (b, k, true),
        _ => anyhow::bail!("usage: synth_dump BUNDLE PUBKEY [--paths]"),
    };
    let bytes = std::fs::read(bundle).with_context(|| format!("reading {bundle}"))?;
    let key = PublicKey::parse(&std::fs::read_to_string(key)?)?;
    let image =
        OwnedImage::from_bundle_bytes(&bytes, &TrustedKeys::new(vec![key]), &Default::default())?;
    let kg = image.kg()?;
    if paths {
        let opts = SynthOptions::default();
        let mut all = opts.paths.clone();
        all.max_paths = usize::MAX;
        let mut out = std::io::stdout().lock();
        for p in kgbox_pack::synth::paths::question_paths(&kg, &all, opts.seed) {
            let names: Vec<String> = p.steps.iter().filter_map(|s| s.name(&kg)).collect();
            let line = format!(
                "{}\t{}\t{:.2}\t{:.2}",
                p.steps.len(),
                names.join(" -> "),
                p.bound,
                p.spread
            );
            writeln!(out, "{line}")?;
        }
        return Ok(());
    }
    let synthesis = synthesize(&kg, &SynthOptions::default());
    eprintln!("{}", synthesis.summary());
    let mut out = std::io::stdout().lock();
    for e in &synthesis.examples {
        let answers = e.answers.as_deref().unwrap_or(&[]).join("|");
        writeln!(out, "{}\t{}\t{}", e.question, e.dsl, answers)?;
    }
    Ok(())
}
