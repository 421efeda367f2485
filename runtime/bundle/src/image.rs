//! The installed image: a bundle's signed prefix followed by its known
//! sections, decompressed and 64-byte aligned, ready to be memory-mapped.
//!
//! ```text
//! 0    64           image header: magic, version, prefix length, total length
//! 64   prefix_len   the bundle's header, section table, manifest, signature (verbatim)
//! ..   ...          each included section's raw bytes, at a 64-byte aligned offset,
//!                   in table order; zero padding between them
//! ```
//!
//! Section offsets are not stored: [`plan`] derives them from the section
//! table, so the writer and the reader cannot disagree.

use std::collections::HashMap;
use std::io::{Read, Seek, Write};
use std::ops::Range;

use sha2::{Digest, Sha256};

use crate::error::{BundleError, Result};
use crate::format::{Prefix, SectionEntry};
use crate::kg::iris::Collected;
use crate::reader::{BundleReader, Limits};

pub const IMAGE_MAGIC: [u8; 8] = *b"KGBIMG\0\n";
pub const IMAGE_VERSION: u32 = 1;
pub const IMAGE_HEADER_LEN: u64 = 64;
pub const ALIGN: u64 = 64;

fn align_up(x: u64) -> u64 {
    x.div_ceil(ALIGN) * ALIGN
}

/// Where each section lives in the image (`None`: not included).
#[derive(Debug, Clone)]
pub struct Plan {
    pub ranges: Vec<Option<Range<u64>>>,
    pub total_len: u64,
}

/// Lays out the image for a prefix; `include` picks the sections to keep.
pub fn plan(prefix: &Prefix, include: impl Fn(&SectionEntry) -> bool) -> Plan {
    let mut at = align_up(IMAGE_HEADER_LEN + prefix.bytes.len() as u64);
    let mut ranges = Vec::with_capacity(prefix.sections.len());
    for s in &prefix.sections {
        if include(s) {
            let start = align_up(at);
            ranges.push(Some(start..start + s.raw_len));
            at = start + s.raw_len;
        } else {
            ranges.push(None);
        }
    }
    Plan {
        ranges,
        total_len: at,
    }
}

pub(crate) fn image_header(prefix_len: u64, total_len: u64) -> [u8; IMAGE_HEADER_LEN as usize] {
    let mut h = [0u8; IMAGE_HEADER_LEN as usize];
    h[0..8].copy_from_slice(&IMAGE_MAGIC);
    h[8..12].copy_from_slice(&IMAGE_VERSION.to_le_bytes());
    h[16..24].copy_from_slice(&prefix_len.to_le_bytes());
    h[24..32].copy_from_slice(&total_len.to_le_bytes());
    h
}

/// Writes the image of a bundle to `out`, decompressing each included section
/// through [`BundleReader::copy_section`] (bounded memory, sizes and hashes
/// checked), and checks the source IRI sections in full (they are held in
/// memory for that). Derived sections are left as zeros: run
/// [`crate::derive::fill`] on the written image. Call
/// [`BundleReader::check_stored`] first.
pub fn write_image<R: Read + Seek, W: Write>(
    reader: &mut BundleReader<R>,
    limits: &Limits,
    include: impl Fn(&SectionEntry) -> bool,
    out: &mut W,
) -> Result<Plan> {
    let prefix = reader.prefix().clone();
    let plan = plan(&prefix, include);
    let mut image = ImageOut::start(out, &prefix, &plan)?;
    let mut collected = Collected::default();
    for (entry, range) in prefix.sections.iter().zip(&plan.ranges) {
        let Some(range) = range else { continue };
        image.pad_to(range)?;
        reader.copy_checked(entry, limits, image.out, &mut collected)?;
    }
    image.finish()?;
    collected.check(&prefix)?;
    Ok(plan)
}

/// Writes an image's frame: the header and prefix, the zero padding before
/// each section (whose bytes the caller writes to `out`) and after the last.
pub(crate) struct ImageOut<'w, W: Write> {
    pub out: &'w mut W,
    at: u64,
    total_len: u64,
}

impl<'w, W: Write> ImageOut<'w, W> {
    /// Writes the header and the prefix of the image of `prefix` laid out by `plan`.
    pub fn start(out: &'w mut W, prefix: &Prefix, plan: &Plan) -> Result<ImageOut<'w, W>> {
        out.write_all(&image_header(prefix.bytes.len() as u64, plan.total_len))
            .and_then(|_| out.write_all(&prefix.bytes))
            .map_err(|e| BundleError::io("writing the image", e))?;
        Ok(ImageOut {
            out,
            at: IMAGE_HEADER_LEN + prefix.bytes.len() as u64,
            total_len: plan.total_len,
        })
    }

    /// Pads to the start of the section placed at `range`, whose bytes the
    /// caller writes next.
    pub fn pad_to(&mut self, range: &Range<u64>) -> Result<()> {
        self.zeros(range.start)?;
        self.at = range.end;
        Ok(())
    }

    /// Pads to the end of the image.
    pub fn finish(mut self) -> Result<()> {
        self.zeros(self.total_len)
    }

    fn zeros(&mut self, to: u64) -> Result<()> {
        let zeros = [0u8; ALIGN as usize];
        let n = to.saturating_sub(self.at).min(ALIGN) as usize;
        self.out
            .write_all(&zeros[..n])
            .map_err(|e| BundleError::io("writing the image", e))
    }
}

/// Verifies a whole bundle held in memory (signature, known sections,
/// stored hashes and limits, raw hashes) and builds its image in memory.
pub fn from_bundle_bytes(
    bytes: &[u8],
    keys: &crate::TrustedKeys,
    limits: &Limits,
) -> Result<AlignedBytes> {
    let mut reader = BundleReader::open(std::io::Cursor::new(bytes))?;
    reader.verify_signature(keys)?;
    crate::sections::check_known(reader.prefix())?;
    reader.check_stored(limits, crate::sections::include_in_image)?;
    let mut out = Vec::new();
    let plan = write_image(
        &mut reader,
        limits,
        crate::sections::include_in_image,
        &mut out,
    )?;
    let mut image = AlignedBytes::from_slice(&out);
    crate::derive::fill(reader.prefix(), &plan.ranges, image.as_mut_slice())?;
    Ok(image)
}

/// A verified bundle's image held in memory with its parsed view: the
/// in-memory counterpart of a mapped slot (tests and tools).
#[derive(Debug, Clone)]
pub struct OwnedImage {
    bytes: AlignedBytes,
    view: ImageView,
}

impl OwnedImage {
    /// Verifies `bundle` (see [`from_bundle_bytes`]) and parses its image.
    pub fn from_bundle_bytes(
        bundle: &[u8],
        keys: &crate::TrustedKeys,
        limits: &Limits,
    ) -> Result<OwnedImage> {
        let bytes = from_bundle_bytes(bundle, keys, limits)?;
        let view = ImageView::parse(&bytes, crate::sections::include_in_image)?;
        Ok(OwnedImage { bytes, view })
    }

    pub fn section(&self, name: &str) -> Option<&[u8]> {
        self.view.section(&self.bytes, name)
    }

    /// Typed views of the graph.
    pub fn kg(&self) -> Result<crate::Kg<'_>> {
        crate::Kg::from_sections(|name| self.section(name))
    }
}

/// A validated view of image bytes (mapped or owned).
#[derive(Debug, Clone)]
pub struct ImageView {
    pub prefix: Prefix,
    ranges: HashMap<String, Range<usize>>,
}

impl ImageView {
    /// Checks the image header, parses the embedded prefix and checks that every
    /// section lies inside the image at its planned, aligned offset. Constant work
    /// in the size of the graph.
    pub fn parse(bytes: &[u8], include: impl Fn(&SectionEntry) -> bool) -> Result<ImageView> {
        let bad = |m: String| BundleError::Image(m);
        if bytes.len() < IMAGE_HEADER_LEN as usize || bytes[0..8] != IMAGE_MAGIC {
            return Err(bad("not a kgbox image (bad magic or too short)".into()));
        }
        let version = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
        if version != IMAGE_VERSION {
            return Err(bad(format!(
                "image version {version}, this build reads {IMAGE_VERSION}"
            )));
        }
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(w)
        };
        let prefix_len = word(16);
        let total_len = word(24);
        if total_len != bytes.len() as u64 {
            return Err(bad(format!(
                "image is {} bytes, its header says {total_len} (incomplete write?)",
                bytes.len()
            )));
        }
        let prefix_end = IMAGE_HEADER_LEN
            .checked_add(prefix_len)
            .filter(|&e| e <= total_len)
            .ok_or_else(|| bad("prefix length out of bounds".into()))?;
        let prefix = Prefix::parse(bytes[IMAGE_HEADER_LEN as usize..prefix_end as usize].to_vec())?;
        if prefix.bytes.len() as u64 != prefix_len {
            return Err(bad("prefix length does not match its contents".into()));
        }
        let plan = plan(&prefix, include);
        if plan.total_len != total_len {
            return Err(bad(format!(
                "layout needs {} bytes, image has {total_len}",
                plan.total_len
            )));
        }
        let ranges = prefix
            .sections
            .iter()
            .zip(plan.ranges)
            .filter_map(|(s, r)| r.map(|r| (s.name.clone(), r.start as usize..r.end as usize)))
            .collect();
        Ok(ImageView { prefix, ranges })
    }

    /// The bytes of a section, if the image holds it.
    pub fn section<'a>(&self, bytes: &'a [u8], name: &str) -> Option<&'a [u8]> {
        bytes.get(self.ranges.get(name)?.clone())
    }

    /// Re-hashes every section against the signed table (linear in size; for
    /// `status --verify`, not for startup).
    pub fn verify_hashes(&self, bytes: &[u8]) -> Result<()> {
        for entry in &self.prefix.sections {
            let Some(data) = self.section(bytes, &entry.name) else {
                continue;
            };
            let found: [u8; 32] = Sha256::digest(data).into();
            if found != entry.sha256_raw {
                return Err(BundleError::ChecksumMismatch {
                    name: entry.name.clone(),
                    what: "installed",
                    expected: hex::encode(entry.sha256_raw),
                    found: hex::encode(found),
                });
            }
        }
        Ok(())
    }
}

/// Owned bytes with 8-byte alignment, for images held in memory.
#[derive(Debug, Clone, Default)]
pub struct AlignedBytes {
    words: Vec<u64>,
    len: usize,
}

impl AlignedBytes {
    pub fn from_slice(bytes: &[u8]) -> AlignedBytes {
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..bytes.len()].copy_from_slice(bytes);
        AlignedBytes {
            words,
            len: bytes.len(),
        }
    }
}

impl AlignedBytes {
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut::<u64, u8>(&mut self.words)[..self.len]
    }
}

impl std::ops::Deref for AlignedBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &bytemuck::cast_slice::<u64, u8>(&self.words)[..self.len]
    }
}
