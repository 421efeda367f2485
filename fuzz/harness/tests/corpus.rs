//! Every committed seed (`fuzz/corpus/TARGET/`) and every input that once
//! crashed a target (`fuzz/regressions/TARGET/`) runs through its target:
//! the stable-Rust replay of the fuzzers' findings, in `cargo test`.

use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

#[test]
fn every_target_has_a_seed_corpus() {
    for (name, _) in kgbox_fuzz_harness::TARGETS {
        let seeds = files(&fuzz_dir().join("corpus").join(name));
        assert!(!seeds.is_empty(), "fuzz/corpus/{name} has no seeds");
        let target = fuzz_dir().join("fuzz_targets").join(format!("{name}.rs"));
        assert!(target.is_file(), "{} is missing", target.display());
    }
}

#[test]
fn seeds_and_regressions_pass() {
    let mut ran = 0;
    for (name, target) in kgbox_fuzz_harness::TARGETS {
        for kind in ["corpus", "regressions"] {
            for file in files(&fuzz_dir().join(kind).join(name)) {
                let data = std::fs::read(&file).expect("reading a corpus file");
                target(&data);
                ran += 1;
            }
        }
    }
    assert!(ran >= kgbox_fuzz_harness::TARGETS.len());
}
