//! Reading a delta update and applying it: the new bundle's image, built
//! from the base's sections and the payloads, every section checked
//! against the new bundle's signed `sha256_raw`.
//!
//! Order of checks: structure ([`DeltaReader::open`]) → the delta's and the
//! new bundle's signatures → limits and payload hashes
//! ([`DeltaReader::check_payloads`]) → the base's digest → decoding, each
//! payload bounded by its section's `raw_len`, each section hashed.
//!
//! [`DeltaReader::write_image`] makes the name tables first (then
//! `Context::enable_maps`: the id maps), then the alias tables, then every
//! section in table order (`produce`: `same` from the base, `full` through
//! the stored decoder, `patch` through [`patch_decoder`] against
//! `Context::reference`, turned back by `Context::finish`), each hashed
//! against the new bundle's signed table.

use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};

use sha2::{Digest, Sha256};

use super::format::{DeltaPrefix, Instruction, Op, DELTA_HEADER_LEN};
use super::predict::Sections;
use super::transform::Context;
use crate::error::{BundleError, Result};
use crate::format::{Prefix, SectionEntry, SIGNATURE_LEN};
use crate::image::{plan, ImageOut, Plan};
use crate::keys::{PublicKey, TrustedKeys};
use crate::kg::iris::Collected;
use crate::reader::{pump, stored_decoder, Limits};

const CHUNK: usize = 64 * 1024;

/// A delta update opened for verification or application.
pub struct DeltaReader<R> {
    inner: R,
    prefix: DeltaPrefix,
    file_len: u64,
}

impl<R: Read + Seek> DeltaReader<R> {
    /// Reads and checks the structure: header, info, the new prefix, the
    /// instructions and the payload extents against the file length. The
    /// signatures are not checked (see [`DeltaReader::open_verified`]).
    pub fn open(inner: R) -> Result<DeltaReader<R>> {
        DeltaReader::open_with(inner, None)
    }

    /// [`DeltaReader::open`] that checks the delta's signature as soon as
    /// the signed part is read, before anything in it is interpreted (a
    /// flipped byte there is a bad signature, not some other complaint),
    /// then the new bundle's signature. Returns the reader and the key that
    /// signed the new bundle.
    pub fn open_verified(inner: R, keys: &TrustedKeys) -> Result<(DeltaReader<R>, PublicKey)> {
        let r = DeltaReader::open_with(inner, Some(keys))?;
        let key = r.verify_signatures(keys)?.clone();
        Ok((r, key))
    }

    fn open_with(mut inner: R, keys: Option<&TrustedKeys>) -> Result<DeltaReader<R>> {
        let io_err = |what: &str, e| BundleError::io(format!("{what} the delta"), e);
        let file_len = inner
            .seek(SeekFrom::End(0))
            .map_err(|e| io_err("reading the length of", e))?;
        inner
            .seek(SeekFrom::Start(0))
            .map_err(|e| io_err("seeking in", e))?;
        let mut head = vec![0u8; DELTA_HEADER_LEN.min(file_len as usize)];
        inner
            .read_exact(&mut head)
            .map_err(|e| io_err("reading", e))?;
        let header = super::format::DeltaHeader::decode_lengths(&head)?;
        let prefix_len = header.prefix_len();
        if prefix_len > file_len {
            return Err(BundleError::DeltaCorrupt(format!(
                "truncated: the file is {file_len} bytes, its header and tables need {prefix_len}"
            )));
        }
        head.resize(prefix_len as usize, 0);
        inner
            .read_exact(&mut head[DELTA_HEADER_LEN..])
            .map_err(|e| io_err("reading", e))?;
        if let Some(keys) = keys {
            let signed = head.len() - SIGNATURE_LEN;
            keys.verify_delta(header.key_id, &head[..signed], &head[signed..])?;
        }
        let prefix = DeltaPrefix::parse(head)?;
        if prefix.data_end != file_len {
            return Err(BundleError::DeltaCorrupt(format!(
                "the file is {file_len} bytes, its instructions need {}",
                prefix.data_end
            )));
        }
        Ok(DeltaReader {
            inner,
            prefix,
            file_len,
        })
    }

    pub fn prefix(&self) -> &DeltaPrefix {
        &self.prefix
    }

    /// The new bundle's prefix: what the delta makes.
    pub fn new_prefix(&self) -> &Prefix {
        &self.prefix.new
    }

    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// The delta's signature, then the new bundle's; returns the key that
    /// signed the new bundle.
    pub fn verify_signatures<'k>(&self, keys: &'k TrustedKeys) -> Result<&'k PublicKey> {
        self.prefix.verify_signatures(keys)
    }

    /// Checks the new bundle's declared sizes against the limits and every
    /// payload's sha256, before anything is decoded.
    pub fn check_payloads(
        &mut self,
        limits: &Limits,
        include: impl Fn(&SectionEntry) -> bool,
    ) -> Result<()> {
        let new = &self.prefix.new;
        crate::derive::check(new)?;
        let total = new.raw_total(&include);
        if total > limits.max_total_bytes {
            return Err(BundleError::TotalTooLarge {
                total,
                limit: limits.max_total_bytes,
            });
        }
        if let Some(e) = new
            .sections
            .iter()
            .find(|e| include(e) && e.raw_len > limits.max_section_bytes)
        {
            return Err(BundleError::SectionTooLarge {
                name: e.name.clone(),
                declared: e.raw_len,
                limit: limits.max_section_bytes,
            });
        }
        for i in 0..self.prefix.instructions.len() {
            let (ins, name) = (
                self.prefix.instructions[i].clone(),
                self.prefix.new.sections[i].name.clone(),
            );
            let mut hasher = Sha256::new();
            let mut payload = self.payload(&ins, &name)?;
            let mut buf = vec![0u8; CHUNK];
            loop {
                let n = payload
                    .read(&mut buf)
                    .map_err(|e| BundleError::io(format!("reading the payload of `{name}`"), e))?;
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
            }
            let found: [u8; 32] = hasher.finalize().into();
            if found != ins.sha256 {
                return Err(BundleError::ChecksumMismatch {
                    name,
                    what: "delta payload",
                    expected: hex::encode(ins.sha256),
                    found: hex::encode(found),
                });
            }
        }
        Ok(())
    }

    fn payload(&mut self, ins: &Instruction, name: &str) -> Result<io::Take<&mut R>> {
        self.inner
            .seek(SeekFrom::Start(ins.offset))
            .map_err(|e| BundleError::io(format!("seeking to the payload of `{name}`"), e))?;
        Ok((&mut self.inner).take(ins.len))
    }

    /// Refuses a base other than the one the delta was made against.
    pub fn check_base(&self, base_digest: &[u8; 32]) -> Result<()> {
        if *base_digest != self.prefix.header.base_digest {
            return Err(BundleError::DeltaWrongBase {
                delta_base: self.prefix.info.base.to_string(),
                found: format!("the bundle with digest {}", hex::encode(base_digest)),
            });
        }
        Ok(())
    }

    /// Writes the new bundle's image to `out` (the layout of
    /// [`crate::image::write_image`]) from the base's sections: every
    /// section decoded with its size bound, hashed against the new
    /// bundle's signed table, the source IRI sections checked in full;
    /// derived sections left as zeros for [`crate::derive::fill`].
    /// Call [`DeltaReader::check_payloads`] first.
    pub fn write_image<'b, W: Write>(
        &mut self,
        base: &'b Sections<'b>,
        base_digest: &[u8; 32],
        limits: &Limits,
        include: impl Fn(&SectionEntry) -> bool,
        out: &mut W,
    ) -> Result<Plan> {
        self.check_base(base_digest)?;
        let new = self.prefix.new.clone();
        let plan = plan(&new, &include);
        let mut ctx = Context::new(base, limits.max_section_bytes);
        // The name tables first (the id maps need them), then the alias
        // tables (the index's prediction reads them).
        let mut early = Vec::new();
        for (k, table) in Context::EARLY.iter().enumerate() {
            if k == Context::NAME_TABLES && Context::EARLY[..k].iter().all(|n| early.contains(n)) {
                ctx.enable_maps()?;
            }
            let found = new.sections.iter().position(|e| e.name == *table);
            if let Some(i) = found.filter(|&i| include(&new.sections[i])) {
                let mut raw = Vec::new();
                self.produce(&mut ctx, i, limits, &mut raw)?;
                ctx.add_new(table, raw);
                early.push(*table);
            }
        }
        let mut image = ImageOut::start(out, &new, &plan)?;
        let mut collected = Collected::default();
        for (i, (entry, range)) in new.sections.iter().zip(&plan.ranges).enumerate() {
            let Some(range) = range else { continue };
            image.pad_to(range)?;
            let out = &mut *image.out;
            let wr = |e| BundleError::io("writing the image", e);
            if crate::derive::is_derived(entry) {
                crate::derive::write_placeholder(entry, out)?;
            } else if let Some(raw) = ctx.new_section(&entry.name) {
                out.write_all(raw).map_err(wr)?;
            } else if Collected::wants(&entry.name) {
                let mut raw = Vec::new();
                self.produce(&mut ctx, i, limits, &mut raw)?;
                out.write_all(&raw).map_err(wr)?;
                collected.keep(&entry.name, raw);
            } else {
                self.produce(&mut ctx, i, limits, out)?;
            }
        }
        image.finish()?;
        collected.check(&new)?;
        Ok(plan)
    }

    /// Makes section `i` of the new bundle into `out` and checks its sha256.
    fn produce(
        &mut self,
        ctx: &mut Context<'_>,
        i: usize,
        limits: &Limits,
        out: &mut dyn Write,
    ) -> Result<()> {
        let entry = self.prefix.new.sections[i].clone();
        let ins = self.prefix.instructions[i].clone();
        let name = entry.name.as_str();
        let found = match ins.op {
            Op::Same => {
                let bytes = ctx.base(name)?;
                pump(name, &mut &*bytes, entry.raw_len, out)?
            }
            Op::Full => {
                let payload = self.payload(&ins, name)?;
                let mut source = stored_decoder(name, entry.compression, payload, limits)?;
                pump(name, &mut source, entry.raw_len, out)?
            }
            Op::Patch => {
                let identity = Context::is_identity(ins.transform);
                let mut decoded = Vec::new();
                let direct = {
                    let reference = ctx.reference(ins.transform, name)?;
                    let payload = self.payload(&ins, name)?;
                    let mut d = patch_decoder(name, payload, &reference, limits)?;
                    if identity {
                        Some(pump(name, &mut d, entry.raw_len, out)?)
                    } else {
                        pump(name, &mut d, entry.raw_len, &mut decoded)?;
                        None
                    }
                };
                match direct {
                    Some(found) => found,
                    None => {
                        let raw = ctx.finish(ins.transform, name, decoded)?;
                        pump(name, &mut raw.as_slice(), entry.raw_len, out)?
                    }
                }
            }
        };
        ctx.release(name);
        if found != entry.sha256_raw {
            return Err(BundleError::DeltaMismatch {
                name: entry.name,
                expected: hex::encode(entry.sha256_raw),
                found: hex::encode(found),
            });
        }
        Ok(())
    }
}

/// A zstd decoder of one frame with `reference` as its prefix ("patch
/// from"), its window bounded by the limits.
pub fn patch_decoder<'a>(
    name: &str,
    payload: impl Read + 'a,
    reference: &'a [u8],
    limits: &Limits,
) -> Result<impl Read + 'a> {
    let bad = |source| BundleError::Decompress {
        name: name.to_string(),
        source,
    };
    let mut d = zstd::stream::read::Decoder::with_ref_prefix(
        BufReader::with_capacity(CHUNK, payload),
        reference,
    )
    .map_err(bad)?
    .single_frame();
    d.window_log_max(limits.window_log_max).map_err(bad)?;
    Ok(d)
}
