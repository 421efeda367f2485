//! `kgbox eval qa --export-features FILE`: the reranker's training rows, one
//! per scored candidate, as `models/reranker/train.py` reads them.
//!
//! A TSV file with a header: `question`, `line`, `label` (1 when the
//! candidate is a gold answer), `entity` (its name), then one column per
//! feature (`kgbox_qa::rerank::FEATURE_NAMES`). Lines starting with `#`
//! record the feature set and the bundle.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use kgbox::LoadedBundle;
use kgbox_qa::rerank::apply::CandidateFeatures;
use kgbox_qa::rerank::{FEATURE_NAMES, FEATURE_SET};

pub struct Export<'b> {
    path: PathBuf,
    out: BufWriter<File>,
    bundle: &'b LoadedBundle,
    rows: usize,
}

/// Names without the separators of the format.
fn clean(name: &str) -> String {
    name.replace(['\t', '\n', '\r'], " ")
}

impl<'b> Export<'b> {
    pub fn create(path: &Path, bundle: &'b LoadedBundle) -> Result<Self> {
        let file = File::create(path)
            .with_context(|| format!("cannot create the features file {}", path.display()))?;
        let mut out = BufWriter::new(file);
        let m = bundle.manifest();
        writeln!(out, "# feature_set\t{FEATURE_SET}")?;
        writeln!(out, "# bundle\t{}\t{}", clean(&m.name), m.version)?;
        writeln!(
            out,
            "question\tline\tlabel\tentity\t{}",
            FEATURE_NAMES.join("\t")
        )?;
        Ok(Export {
            path: path.to_path_buf(),
            out,
            bundle,
            rows: 0,
        })
    }

    pub fn write(
        &mut self,
        question: usize,
        line: usize,
        rows: &[CandidateFeatures],
        is_gold: &dyn Fn(u32) -> bool,
    ) -> Result<()> {
        let kg = self.bundle.kg()?;
        for row in rows {
            let name = kg.entity_name(row.entity).unwrap_or("?");
            write!(
                self.out,
                "{question}\t{line}\t{}\t{}",
                u8::from(is_gold(row.entity)),
                clean(name)
            )?;
            for v in row.values {
                write!(self.out, "\t{v}")?;
            }
            writeln!(self.out)?;
            self.rows += 1;
        }
        Ok(())
    }

    /// Flushes the file; its path and the rows written.
    pub fn finish(mut self) -> Result<(PathBuf, usize)> {
        self.out
            .flush()
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        Ok((self.path, self.rows))
    }
}
