//! Tab-separated inputs: triples, aliases and relation descriptions.

use std::io::BufRead;
use std::path::Path;

use indicatif::ProgressBar;

use super::source::{open, read_error};
use super::{InputError, RawKg};

/// Calls `f(line_number, fields)` for each non-empty, non-comment line of a
/// tab-separated file with exactly `n` non-empty fields.
fn for_each_tsv_line(
    path: &Path,
    n: usize,
    what: &str,
    progress: &ProgressBar,
    mut f: impl FnMut(u64, &[&str]) -> Result<(), InputError>,
) -> Result<(), InputError> {
    let mut reader = open(path, progress)?;
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    let malformed = |line: u64, problem: String| InputError::Malformed {
        file: path.to_path_buf(),
        line,
        problem,
    };
    loop {
        buf.clear();
        let read = reader
            .read_until(b'\n', &mut buf)
            .map_err(|source| read_error(path, source))?;
        if read == 0 {
            break;
        }
        line_no += 1;
        let line = std::str::from_utf8(&buf)
            .map_err(|e| malformed(line_no, format!("not valid UTF-8 ({e})")))?;
        let line = line.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').map(str::trim).collect();
        if fields.len() != n {
            return Err(malformed(
                line_no,
                format!(
                    "expected {n} tab-separated fields ({what}), found {}",
                    fields.len()
                ),
            ));
        }
        if let Some(i) = fields.iter().position(|f| f.is_empty()) {
            return Err(malformed(line_no, format!("field {} is empty", i + 1)));
        }
        f(line_no, &fields)?;
    }
    Ok(())
}

/// Reads `head<TAB>relation<TAB>tail` lines.
pub fn read_tsv(path: &Path, kg: &mut RawKg, progress: &ProgressBar) -> Result<(), InputError> {
    for_each_tsv_line(path, 3, "head, relation, tail", progress, |_, f| {
        kg.add_triple(f[0], f[1], f[2]).map_err(InputError::Spill)
    })
}

/// Reads `entity<TAB>alias` lines. Aliases of entities that appear in no
/// triple are skipped with a warning.
pub fn read_aliases(path: &Path, kg: &mut RawKg, progress: &ProgressBar) -> Result<(), InputError> {
    let mut skipped = 0u64;
    let mut first_skipped = None;
    let (entities, aliases) = (&kg.entities, &mut kg.aliases);
    for_each_tsv_line(path, 2, "entity, alias", progress, |line, f| {
        match entities.get(f[0]) {
            Some(id) => aliases.push((id, f[1].to_string())),
            None => {
                skipped += 1;
                first_skipped.get_or_insert((line, f[0].to_string()));
            }
        }
        Ok(())
    })?;
    if let Some((line, name)) = first_skipped {
        kg.warnings.push(format!(
            "{}: skipped {skipped} aliases of entities that are in no triple (first: line {line}, `{name}`)",
            path.display()
        ));
    }
    Ok(())
}

/// Reads `relation<TAB>description` lines.
pub fn read_relation_descriptions(
    path: &Path,
    kg: &mut RawKg,
    progress: &ProgressBar,
) -> Result<(), InputError> {
    let mut unknown = Vec::new();
    let (relations, descriptions) = (&kg.relations, &mut kg.relation_descriptions);
    for_each_tsv_line(path, 2, "relation, description", progress, |line, f| {
        match relations.get(f[0]) {
            Some(id) => {
                descriptions.insert(id, f[1].to_string());
            }
            None => unknown.push(format!("line {line}: `{}`", f[0])),
        }
        Ok(())
    })?;
    if !unknown.is_empty() {
        kg.warnings.push(format!(
            "{}: skipped descriptions of relations that are in no triple: {}",
            path.display(),
            unknown.join(", ")
        ));
    }
    Ok(())
}
