//! Files written whole or not at all: through a temporary file renamed
//! into place (the bundle, and the other files the packager writes).

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Writes through `OUT.partial`, fsyncs, then renames over `out`.
pub fn write_atomically<T>(
    out: &Path,
    f: impl FnOnce(&mut BufWriter<File>) -> Result<T>,
) -> Result<T> {
    let mut tmp = out.as_os_str().to_owned();
    tmp.push(".partial");
    let tmp = PathBuf::from(tmp);
    let file = File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let mut w = BufWriter::new(file);
    let result = f(&mut w).and_then(|v| {
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(v)
    });
    match result {
        Ok(v) => {
            std::fs::rename(&tmp, out)
                .with_context(|| format!("cannot move {} to {}", tmp.display(), out.display()))?;
            let dir = match out.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
            Ok(v)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e.context(format!("writing {}", out.display())))
        }
    }
}
