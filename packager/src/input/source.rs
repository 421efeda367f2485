//! Input files as byte streams: the syntax and the compression from the file
//! name, and a reader that decompresses on the fly (gzip, zstd) so that no
//! input is ever held whole in memory.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use indicatif::ProgressBar;

use super::{Format, InputError};

/// What the error for an unknown extension lists.
pub const SUPPORTED: &str = ".tsv or .txt (TSV), .nt (N-Triples), .ttl (Turtle), \
                             .nq (N-Quads), .trig (TriG), .rdf, .owl or .xml (RDF/XML), \
                             .jsonld (JSON-LD), each also compressed as .gz or .zst";

const BUFFER: usize = 1 << 20;

/// How an input file is compressed, from its last extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    /// `.gz`: one or more gzip members.
    Gzip,
    /// `.zst`: one or more zstd frames.
    Zstd,
}

impl Compression {
    pub fn from_path(path: &Path) -> Compression {
        match extension(path).as_deref() {
            Some("gz") => Compression::Gzip,
            Some("zst") => Compression::Zstd,
            _ => Compression::None,
        }
    }

    pub fn codec(self) -> &'static str {
        match self {
            Compression::None => "plain",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }
}

fn extension(path: &Path) -> Option<String> {
    path.extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
}

/// The syntax of `path` from its extension, looking past `.gz` or `.zst`.
pub(super) fn format_of(path: &Path) -> Result<Format, InputError> {
    let inner = match Compression::from_path(path) {
        Compression::None => path.to_path_buf(),
        _ => path.with_extension(""),
    };
    let ext = extension(&inner);
    match ext.as_deref() {
        Some("tsv" | "txt") => Ok(Format::Tsv),
        Some("nt") => Ok(Format::Ntriples),
        Some("ttl") => Ok(Format::Turtle),
        Some("nq") => Ok(Format::Nquads),
        Some("trig") => Ok(Format::Trig),
        Some("rdf" | "owl" | "xml") => Ok(Format::RdfXml),
        Some("jsonld") => Ok(Format::JsonLd),
        _ => Err(InputError::UnknownFormat {
            file: path.to_path_buf(),
            extension: match ext {
                Some(e) => format!(".{e}"),
                None => "(none)".to_string(),
            },
        }),
    }
}

/// Opens `path` for reading, through its decompressor when its name ends in
/// `.gz` or `.zst`. The progress bar follows the bytes read from the file
/// (compressed bytes, for a compressed file).
pub(super) fn open(path: &Path, progress: &ProgressBar) -> Result<Box<dyn BufRead>, InputError> {
    let file = File::open(path).map_err(|source| InputError::Io {
        file: path.to_path_buf(),
        source,
    })?;
    if let Ok(meta) = file.metadata() {
        progress.set_length(meta.len());
    }
    progress.set_position(0);
    progress.set_message(path.display().to_string());
    let raw = progress.wrap_read(file);
    Ok(match Compression::from_path(path) {
        Compression::None => Box::new(BufReader::with_capacity(BUFFER, raw)),
        Compression::Gzip => Box::new(BufReader::with_capacity(
            BUFFER,
            flate2::read::MultiGzDecoder::new(BufReader::new(raw)),
        )),
        Compression::Zstd => {
            let decoder =
                zstd::stream::read::Decoder::new(raw).map_err(|source| InputError::Io {
                    file: path.to_path_buf(),
                    source,
                })?;
            Box::new(BufReader::with_capacity(BUFFER, decoder))
        }
    })
}

/// The error for an I/O failure while reading `path`: for a compressed file,
/// almost always a damaged or truncated stream.
pub(super) fn read_error(path: &Path, source: std::io::Error) -> InputError {
    match Compression::from_path(path) {
        Compression::None => InputError::Io {
            file: path.to_path_buf(),
            source,
        },
        c => InputError::Decompress {
            file: path.to_path_buf(),
            codec: c.codec(),
            source,
        },
    }
}
