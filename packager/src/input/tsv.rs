//! Tab-separated inputs: triples, aliases, relation descriptions and
//! relation aliases.

use std::io::BufRead;
use std::path::Path;

use indicatif::ProgressBar;

use super::source::{open, read_error};
use super::{InputError, Interner, RawKg};

/// Bytes of input parsed as one block.
const BLOCK: usize = 4 << 20;

/// Blocks parsed ahead of the caller.
const AHEAD: usize = 4;

/// Whole lines of input, checked and split: each kept line's number, and
/// its `n` fields as byte ranges in `text`.
struct Block {
    text: String,
    lines: Vec<u64>,
    fields: Vec<std::ops::Range<usize>>,
}

/// Calls `f(line_number, fields)` for each non-empty, non-comment line of a
/// tab-separated file with exactly `n` non-empty fields. A second thread
/// reads, checks and splits the lines a block at a time while `f` runs.
fn for_each_tsv_line(
    path: &Path,
    n: usize,
    what: &str,
    progress: &ProgressBar,
    mut f: impl FnMut(u64, &[&str]) -> Result<(), InputError>,
) -> Result<(), InputError> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Result<Block, InputError>>(AHEAD);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            if let Err(e) = read_blocks(path, n, what, progress, &tx) {
                // The receiver is gone only once it has failed itself.
                let _ = tx.send(Err(e));
            }
        });
        for block in rx {
            let block = block?;
            let mut fields: Vec<&str> = Vec::with_capacity(n);
            for (line, ranges) in block.lines.iter().zip(block.fields.chunks_exact(n)) {
                fields.clear();
                fields.extend(ranges.iter().map(|r| &block.text[r.clone()]));
                f(*line, &fields)?;
            }
        }
        Ok(())
    })
}

/// Sends the file's lines as [`Block`]s, or the first malformed line's
/// error; stops early when the receiver is gone.
fn read_blocks(
    path: &Path,
    n: usize,
    what: &str,
    progress: &ProgressBar,
    tx: &std::sync::mpsc::SyncSender<Result<Block, InputError>>,
) -> Result<(), InputError> {
    let mut reader = open(path, progress)?;
    let mut buf: Vec<u8> = Vec::with_capacity(BLOCK + 4096);
    let mut line_no = 0u64;
    let mut done = false;
    while !done {
        // Fill to a block, then to the end of its last line.
        while buf.len() < BLOCK {
            let chunk = reader
                .fill_buf()
                .map_err(|source| read_error(path, source))?;
            if chunk.is_empty() {
                done = true;
                break;
            }
            let take = chunk.len().min(BLOCK - buf.len());
            buf.extend_from_slice(&chunk[..take]);
            reader.consume(take);
        }
        if !done {
            reader
                .read_until(b'\n', &mut buf)
                .map_err(|source| read_error(path, source))?;
        }
        if buf.is_empty() {
            break;
        }
        let (mut lines, mut fields) = (Vec::new(), Vec::new());
        let mut at = 0;
        while at < buf.len() {
            let end = buf[at..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(buf.len(), |i| at + i + 1);
            line_no += 1;
            if split_line(path, &buf[..end], at, line_no, n, what, &mut fields)? {
                lines.push(line_no);
            }
            at = end;
        }
        let text = String::from_utf8(std::mem::take(&mut buf)).map_err(|e| {
            read_error(
                path,
                std::io::Error::new(std::io::ErrorKind::InvalidData, e),
            )
        })?;
        if tx
            .send(Ok(Block {
                text,
                lines,
                fields,
            }))
            .is_err()
        {
            break;
        }
        buf.reserve(BLOCK + 4096);
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
/// triple are skipped with a warning (for a graph read to disk, when it is
/// built).
pub fn read_aliases(path: &Path, kg: &mut RawKg, progress: &ProgressBar) -> Result<(), InputError> {
    let mut skipped = 0u64;
    let mut first_skipped = None;
    let (entities, aliases, large) = (&kg.entities, &mut kg.aliases, &mut kg.large);
    for_each_tsv_line(path, 2, "entity, alias", progress, |line, f| {
        if let Some(large) = large.as_mut() {
            return large
                .add_alias(path, line, f[0], f[1])
                .map_err(InputError::Spill);
        }
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
        kg.warnings
            .push(skipped_aliases(path, skipped, line, &name));
    }
    Ok(())
}

/// The warning for `skipped` aliases of unknown entities, the first on
/// `line` for `name`.
pub fn skipped_aliases(path: &Path, skipped: u64, line: u64, name: &str) -> String {
    format!(
        "{}: skipped {skipped} aliases of entities that are in no triple (first: line {line}, `{name}`)",
        path.display()
    )
}

/// Reads `relation<TAB>description` lines.
pub fn read_relation_descriptions(
    path: &Path,
    kg: &mut RawKg,
    progress: &ProgressBar,
) -> Result<(), InputError> {
    let descriptions = &mut kg.relation_descriptions;
    let what = ("description", "descriptions");
    let skipped = for_each_relation_line(path, &kg.relations, what, progress, |id, t| {
        descriptions.insert(id, t.to_string());
    })?;
    kg.warnings.extend(skipped);
    Ok(())
}

/// Reads `relation<TAB>alias` lines: the words people say for a relation
/// ("helmed", "filmmaker" for `directed_by`), one per line, a relation on
/// as many lines as it has aliases. An alias may not hold a line break.
pub fn read_relation_aliases(
    path: &Path,
    kg: &mut RawKg,
    progress: &ProgressBar,
) -> Result<(), InputError> {
    let aliases = &mut kg.relation_aliases;
    let mut seen: std::collections::HashSet<(u32, String)> = aliases.iter().cloned().collect();
    let (mut added, mut described) = (0usize, std::collections::BTreeSet::new());
    let what = ("alias", "aliases");
    let skipped = for_each_relation_line(path, &kg.relations, what, progress, |id, a| {
        if seen.insert((id, a.to_string())) {
            aliases.push((id, a.to_string()));
            added += 1;
            described.insert(id);
        }
    })?;
    kg.notes.push(format!(
        "relation aliases: {added} for {} relations, from {}",
        described.len(),
        path.display()
    ));
    kg.warnings.extend(skipped);
    Ok(())
}

/// Calls `f` with the relation id and text of each `relation<TAB>text`
/// line (`what`: the text's name, singular and plural); the warning that
/// names the lines of relations that are in no triple, if any.
fn for_each_relation_line(
    path: &Path,
    relations: &Interner,
    what: (&str, &str),
    progress: &ProgressBar,
    mut f: impl FnMut(u32, &str),
) -> Result<Option<String>, InputError> {
    let mut unknown = Vec::new();
    let fields = format!("relation, {}", what.0);
    for_each_tsv_line(path, 2, &fields, progress, |line, fields| {
        match relations.get(fields[0]) {
            Some(id) => f(id, fields[1]),
            None => unknown.push(format!("line {line}: `{}`", fields[0])),
        }
        Ok(())
    })?;
    Ok((!unknown.is_empty()).then(|| {
        format!(
            "{}: skipped {} of relations that are in no triple: {}",
            path.display(),
            what.1,
            unknown.join(", ")
        )
    }))
}

/// Appends the fields of the line at `bytes[start..]` to `fields` (byte
/// ranges in `bytes`); false for a blank or comment line; the error that
/// names a malformed one.
fn split_line(
    path: &Path,
    bytes: &[u8],
    start: usize,
    line_no: u64,
    n: usize,
    what: &str,
    fields: &mut Vec<std::ops::Range<usize>>,
) -> Result<bool, InputError> {
    let malformed = |problem: String| InputError::Malformed {
        file: path.to_path_buf(),
        line: line_no,
        problem,
    };
    let line = std::str::from_utf8(&bytes[start..])
        .map_err(|e| malformed(format!("not valid UTF-8 ({e})")))?;
    let line = line.trim_end_matches(['\n', '\r']);
    if line.trim().is_empty() || line.starts_with('#') {
        return Ok(false);
    }
    let first = fields.len();
    for field in line.split('\t') {
        let field = field.trim();
        let at = field.as_ptr() as usize - bytes.as_ptr() as usize;
        fields.push(at..at + field.len());
    }
    let found = fields.len() - first;
    if found != n {
        return Err(malformed(format!(
            "expected {n} tab-separated fields ({what}), found {found}"
        )));
    }
    if let Some(i) = fields[first..].iter().position(|r| r.is_empty()) {
        return Err(malformed(format!("field {} is empty", i + 1)));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write as _;

    /// Lines past the first 4 MiB block keep their numbers, in errors and
    /// in what the callback sees; comments, blank lines and CRLF count as
    /// lines.
    #[test]
    fn line_numbers_hold_across_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.tsv");
        let mut text = String::new();
        for i in 0..400_000u64 {
            match i % 1000 {
                7 => text.push_str("# a comment\n"),
                8 => text.push_str("\r\n"),
                _ => writeln!(text, "head {i}\trelation\ttail {i}\r").unwrap(),
            }
        }
        assert!(text.len() > 2 * BLOCK);
        std::fs::write(&path, &text).unwrap();
        let mut seen = Vec::new();
        for_each_tsv_line(&path, 3, "t", &ProgressBar::hidden(), |line, f| {
            assert_eq!(f[0], format!("head {}", line - 1));
            assert_eq!(f[2], format!("tail {}", line - 1));
            seen.push(line);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen.len(), 400_000 - 800);
        assert_eq!(seen.last(), Some(&400_000));

        text.push_str("one\ttwo\n");
        std::fs::write(&path, &text).unwrap();
        let err = for_each_tsv_line(&path, 3, "t", &ProgressBar::hidden(), |_, _| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with(":400001: expected 3 tab-separated fields (t), found 2"),
            "{err}"
        );
    }
}
