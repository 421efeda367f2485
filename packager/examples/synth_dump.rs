//! Prints the questions the packager would synthesise for a bundle's graph
//! (`question<TAB>DSL<TAB>answers`), for looking at their phrasing:
//!
//!   cargo run --release -p kgbox-pack --example synth_dump -- BUNDLE PUBKEY
use std::io::Write;

use anyhow::Context;
use kgbox_bundle::{OwnedImage, PublicKey, TrustedKeys};
use kgbox_pack::synth::{synthesize, SynthOptions};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [bundle, key] = &args[..] else {
        anyhow::bail!("usage: synth_dump BUNDLE PUBKEY");
    };
    let bytes = std::fs::read(bundle).with_context(|| format!("reading {bundle}"))?;
    let key = PublicKey::parse(&std::fs::read_to_string(key)?)?;
    let image =
        OwnedImage::from_bundle_bytes(&bytes, &TrustedKeys::new(vec![key]), &Default::default())?;
    let kg = image.kg()?;
    let synthesis = synthesize(&kg, &SynthOptions::default());
    eprintln!("{}", synthesis.summary());
    let mut out = std::io::stdout().lock();
    for e in &synthesis.examples {
        let answers = e.answers.as_deref().unwrap_or(&[]).join("|");
        writeln!(out, "{}\t{}\t{}", e.question, e.dsl, answers)?;
    }
    Ok(())
}
