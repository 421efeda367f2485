//! Sections a bundle may leave out and the device computes when it
//! installs it ([`COMPRESSION_DERIVED`]): the in-edge CSR (`kg.in.*`),
//! which is the out-edge CSR (`kg.out.*`) turned around. Leaving it out
//! halves the graph's share of a large bundle (at 10M triples it is 46 %
//! of the bytes) for a few seconds of work per 100M triples at install.
//!
//! The image writers ([`crate::image::write_image`], the delta's) leave
//! zeros where a derived section goes; [`fill`] then computes it in place
//! in the written image and checks it against the signed `sha256_raw`, so
//! a derived section is trusted exactly as far as a stored one.

use std::ops::Range;

use sha2::{Digest, Sha256};

use crate::error::{BundleError, Result};
use crate::format::{Prefix, SectionEntry, COMPRESSION_DERIVED};
use crate::sections as s;

/// The sections that can be derived: all three or none.
pub const DERIVABLE: [&str; 3] = [s::IN_OFFSETS, s::IN_RELATIONS, s::IN_SOURCES];

/// Whether `entry` is computed at install rather than stored.
pub fn is_derived(entry: &SectionEntry) -> bool {
    entry.compression == COMPRESSION_DERIVED
}

/// Writes a derived section's place in an image: `raw_len` zeros, which
/// [`fill`] replaces once the whole image is written.
pub fn write_placeholder(
    entry: &SectionEntry,
    out: &mut (impl std::io::Write + ?Sized),
) -> Result<()> {
    std::io::copy(
        &mut std::io::Read::take(std::io::repeat(0), entry.raw_len),
        out,
    )
    .map(|_| ())
    .map_err(|e| BundleError::io(format!("writing section `{}`", entry.name), e))
}

/// Whether the bundle of `prefix` has derived sections (its image needs
/// [`fill`] after it is written).
pub fn any(prefix: &Prefix) -> bool {
    prefix.sections.iter().any(is_derived)
}

/// Checks that the derived sections of `prefix` are ones this build can
/// compute (the whole in-edge CSR, from an out-edge CSR that is stored).
pub fn check(prefix: &Prefix) -> Result<()> {
    let derived: Vec<&str> = prefix
        .sections
        .iter()
        .filter(|e| is_derived(e))
        .map(|e| e.name.as_str())
        .collect();
    if derived.is_empty() {
        return Ok(());
    }
    if let Some(other) = derived.iter().find(|n| !DERIVABLE.contains(n)) {
        return Err(BundleError::Corrupt(format!(
            "section `{other}` is marked derived, but only {} can be derived",
            DERIVABLE.join(", ")
        )));
    }
    if derived.len() != DERIVABLE.len() {
        return Err(BundleError::Corrupt(format!(
            "only some of {} are marked derived (all three or none)",
            DERIVABLE.join(", ")
        )));
    }
    for name in [s::OUT_OFFSETS, s::OUT_RELATIONS, s::OUT_TARGETS] {
        match prefix.section(name) {
            Some(e) if !is_derived(e) => {}
            _ => {
                return Err(BundleError::Corrupt(format!(
                    "the in-edges are derived, but `{name}` is not stored"
                )))
            }
        }
    }
    Ok(())
}

/// Computes the derived sections of an image written by one of the image
/// writers (zeros where they go) in `image`, its sections at `placed`
/// (`image::Plan::ranges`, in table order), and checks each against its
/// signed sha256. Does nothing for a bundle without derived sections.
pub fn fill(prefix: &Prefix, placed: &[Option<Range<u64>>], image: &mut [u8]) -> Result<()> {
    if !any(prefix) {
        return Ok(());
    }
    check(prefix)?;
    let names = [
        s::OUT_OFFSETS,
        s::OUT_RELATIONS,
        s::OUT_TARGETS,
        s::IN_OFFSETS,
        s::IN_RELATIONS,
        s::IN_SOURCES,
    ];
    let mut ranges = Vec::with_capacity(names.len());
    for name in names {
        let range = prefix
            .sections
            .iter()
            .position(|e| e.name == name)
            .and_then(|i| placed.get(i).cloned().flatten())
            .ok_or_else(|| BundleError::Image(format!("section `{name}` is not in the image")))?;
        let range = range.start as usize..range.end as usize;
        if range.end > image.len() {
            return Err(BundleError::Image(format!(
                "section `{name}` lies past the end of the image"
            )));
        }
        ranges.push(range);
    }
    let [out_off, out_rel, out_dst, in_off, in_rel, in_src] = split(image, &ranges)?;
    let csr = Csr {
        offsets: words::<u64>(s::OUT_OFFSETS, out_off)?,
        relations: words::<u32>(s::OUT_RELATIONS, out_rel)?,
        others: words::<u32>(s::OUT_TARGETS, out_dst)?,
    };
    let into = CsrMut {
        offsets: words_mut::<u64>(s::IN_OFFSETS, in_off)?,
        relations: words_mut::<u32>(s::IN_RELATIONS, in_rel)?,
        others: words_mut::<u32>(s::IN_SOURCES, in_src)?,
    };
    reverse(&csr, into)?;
    // The three hashes on their own threads: at a billion triples the
    // in-edges are 9 GB.
    let results: Vec<Result<()>> = std::thread::scope(|scope| {
        let handles: Vec<_> = [s::IN_OFFSETS, s::IN_RELATIONS, s::IN_SOURCES]
            .into_iter()
            .zip(&ranges[3..])
            .map(|(name, range)| {
                let bytes = &image[range.clone()];
                scope.spawn(move || check_hash(prefix, name, bytes))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(BundleError::Image("a hashing thread panicked".into())))
            })
            .collect()
    });
    results.into_iter().collect()
}

/// The derived sections of `prefix` computed from the stored ones that
/// `section` gives (raw bytes, any alignment), each checked against its
/// signed sha256: for tools that hold a bundle's sections in memory rather
/// than as an image. Empty for a bundle without derived sections.
pub fn owned<'a>(
    prefix: &Prefix,
    section: impl Fn(&str) -> Option<&'a [u8]>,
) -> Result<Vec<(&'static str, Vec<u8>)>> {
    if !any(prefix) {
        return Ok(Vec::new());
    }
    check(prefix)?;
    let get =
        |name: &str| section(name).ok_or_else(|| BundleError::MissingSection(name.to_string()));
    let unaligned = |name: &str, len: usize, word: usize| {
        if !len.is_multiple_of(word) {
            return Err(BundleError::Corrupt(format!(
                "section `{name}` is not a whole number of {word}-byte words"
            )));
        }
        Ok(())
    };
    let (o, r, t) = (
        get(s::OUT_OFFSETS)?,
        get(s::OUT_RELATIONS)?,
        get(s::OUT_TARGETS)?,
    );
    unaligned(s::OUT_OFFSETS, o.len(), 8)?;
    unaligned(s::OUT_RELATIONS, r.len(), 4)?;
    unaligned(s::OUT_TARGETS, t.len(), 4)?;
    let u64s = |b: &[u8]| -> Vec<u64> {
        b.chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect()
    };
    let u32s = |b: &[u8]| -> Vec<u32> {
        b.chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    };
    let (offsets, relations, others) = (u64s(o), u32s(r), u32s(t));
    let into = reversed(&Csr {
        offsets: &offsets,
        relations: &relations,
        others: &others,
    })?;
    let out = vec![
        (s::IN_OFFSETS, bytemuck::cast_slice(&into.0).to_vec()),
        (s::IN_RELATIONS, bytemuck::cast_slice(&into.1).to_vec()),
        (s::IN_SOURCES, bytemuck::cast_slice(&into.2).to_vec()),
    ];
    for (name, bytes) in &out {
        let entry = prefix
            .section(name)
            .ok_or_else(|| BundleError::MissingSection(name.to_string()))?;
        if entry.raw_len != bytes.len() as u64 {
            return Err(BundleError::Corrupt(format!(
                "section `{name}` declares {} bytes, its derivation makes {}",
                entry.raw_len,
                bytes.len()
            )));
        }
        check_hash(prefix, name, bytes)?;
    }
    Ok(out)
}

fn check_hash(prefix: &Prefix, name: &str, bytes: &[u8]) -> Result<()> {
    let entry = prefix
        .section(name)
        .ok_or_else(|| BundleError::Image(format!("section `{name}` is not in the table")))?;
    let found: [u8; 32] = Sha256::digest(bytes).into();
    if found != entry.sha256_raw {
        return Err(BundleError::ChecksumMismatch {
            name: name.to_string(),
            what: "derived",
            expected: hex::encode(entry.sha256_raw),
            found: hex::encode(found),
        });
    }
    Ok(())
}

/// Disjoint mutable slices of `bytes` for non-overlapping `ranges`, in
/// the order of `ranges`.
fn split<'a, const N: usize>(
    bytes: &'a mut [u8],
    ranges: &[Range<usize>],
) -> Result<[&'a mut [u8]; N]> {
    let mut order: Vec<usize> = (0..ranges.len()).collect();
    order.sort_by_key(|&i| ranges[i].start);
    let mut parts: Vec<Option<&'a mut [u8]>> = (0..ranges.len()).map(|_| None).collect();
    let mut rest = bytes;
    let mut at = 0usize;
    for i in order {
        let r = &ranges[i];
        if r.start < at {
            return Err(BundleError::Image("derived sections overlap".into()));
        }
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(r.start - at);
        let (part, tail) = tail.split_at_mut(r.end - r.start);
        parts[i] = Some(part);
        rest = tail;
        at = r.end;
    }
    let parts: Vec<&'a mut [u8]> = parts.into_iter().flatten().collect();
    parts
        .try_into()
        .map_err(|_| BundleError::Image("section ranges do not match".into()))
}

fn words<'a, T: bytemuck::Pod>(name: &str, bytes: &'a [u8]) -> Result<&'a [T]> {
    bytemuck::try_cast_slice(bytes).map_err(|_| {
        BundleError::Corrupt(format!(
            "section `{name}` is not a whole number of aligned words"
        ))
    })
}

fn words_mut<'a, T: bytemuck::Pod>(name: &str, bytes: &'a mut [u8]) -> Result<&'a mut [T]> {
    bytemuck::try_cast_slice_mut(bytes).map_err(|_| {
        BundleError::Corrupt(format!(
            "section `{name}` is not a whole number of aligned words"
        ))
    })
}

/// A CSR: `offsets` (nodes + 1), and per edge its relation and other end,
/// sorted by (node, relation, other end).
pub struct Csr<'a> {
    pub offsets: &'a [u64],
    pub relations: &'a [u32],
    pub others: &'a [u32],
}

/// The reverse of `csr` ([`reverse`]) in new arrays: (offsets, relations,
/// other ends).
pub fn reversed(csr: &Csr<'_>) -> Result<(Vec<u64>, Vec<u32>, Vec<u32>)> {
    let mut into = (
        vec![0u64; csr.offsets.len()],
        vec![0u32; csr.relations.len()],
        vec![0u32; csr.relations.len()],
    );
    reverse(
        csr,
        CsrMut {
            offsets: &mut into.0,
            relations: &mut into.1,
            others: &mut into.2,
        },
    )?;
    Ok(into)
}

/// Where [`reverse`] writes.
pub struct CsrMut<'a> {
    pub offsets: &'a mut [u64],
    pub relations: &'a mut [u32],
    pub others: &'a mut [u32],
}

/// Writes the reverse of `csr` (each edge `a -r-> b` as `b -r-> a`) into
/// `into`, sorted by (node, relation, other end) as the packager sorts it.
/// Checks the shape of `csr` first: bad sizes or ids are an error, never a
/// panic. Counting sort: no memory beyond `into` but a small buffer.
pub fn reverse(csr: &Csr<'_>, into: CsrMut<'_>) -> Result<()> {
    reverse_in_passes(csr, into, PASS_BYTES / 8)
}

/// In-edge bytes (a relation and a source, 8 bytes an edge) one scatter
/// pass of [`reverse`] writes.
pub const PASS_BYTES: u64 = 512 << 20;

/// [`reverse`], scattering at most `pass_edges` edges' worth of targets a pass.
pub fn reverse_in_passes(csr: &Csr<'_>, into: CsrMut<'_>, pass_edges: u64) -> Result<()> {
    let bad = |m: String| BundleError::Corrupt(format!("cannot derive the in-edges: {m}"));
    let CsrMut {
        offsets,
        relations,
        others,
    } = into;
    let edges = csr.relations.len();
    if csr.others.len() != edges || relations.len() != edges || others.len() != edges {
        return Err(bad(format!(
            "edge arrays differ in length ({}, {}, {}, {})",
            edges,
            csr.others.len(),
            relations.len(),
            others.len()
        )));
    }
    if csr.offsets.is_empty() || offsets.len() != csr.offsets.len() {
        return Err(bad(format!(
            "offset arrays of {} and {} entries",
            csr.offsets.len(),
            offsets.len()
        )));
    }
    let nodes = csr.offsets.len() - 1;
    if csr.offsets[0] != 0 || csr.offsets[nodes] != edges as u64 {
        return Err(bad("out-edge offsets do not span the edges".into()));
    }
    if csr.offsets.windows(2).any(|w| w[0] > w[1]) {
        return Err(bad("out-edge offsets decrease".into()));
    }
    // Count in-degrees at [node + 1], then prefix sums: offsets[b] is
    // where node b's in-edges start.
    offsets.fill(0);
    for &b in csr.others {
        let slot = offsets
            .get_mut(b as usize + 1)
            .ok_or_else(|| bad(format!("edge to node {b}, past the {nodes} nodes")))?;
        *slot += 1;
    }
    for i in 0..nodes {
        offsets[i + 1] += offsets[i];
    }
    // Scatter in source order, so each node's in-edges come out sorted by
    // source; offsets[b] moves to the end of b's run (the start of b+1's).
    // In passes over windows of targets whose in-edges fill at most
    // `pass_edges`: the writes of a pass stay in one window of the image,
    // so a mapped image far larger than the page cache is written in
    // place, not at random (at a billion triples one pass over the whole
    // 8 GB took more than ten minutes; windows of 512 MiB take seconds).
    let mut t0 = 0usize;
    while t0 < nodes {
        let limit = offsets[t0].saturating_add(pass_edges.max(1));
        let fits = offsets[t0..=nodes].partition_point(|&o| o <= limit);
        let t1 = (t0 + fits - 1).clamp(t0 + 1, nodes);
        let window = t0 as u64..t1 as u64;
        for a in 0..nodes {
            let (lo, hi) = (csr.offsets[a] as usize, csr.offsets[a + 1] as usize);
            for k in lo..hi {
                let b = csr.others[k];
                if !window.contains(&u64::from(b)) {
                    continue;
                }
                let b = b as usize;
                let at = offsets[b] as usize;
                relations[at] = csr.relations[k];
                others[at] = a as u32;
                offsets[b] += 1;
            }
        }
        t0 = t1;
    }
    offsets.copy_within(0..nodes, 1);
    offsets[0] = 0;
    sort_runs(offsets, relations, others);
    Ok(())
}

/// Sorts each node's in-edges by (relation, source) on all cores (they
/// arrive sorted by source).
fn sort_runs(offsets: &[u64], relations: &mut [u32], others: &mut [u32]) {
    let nodes = offsets.len() - 1;
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(nodes.max(1));
    let per = offsets[nodes] / threads as u64 + 1;
    // Cut the edges at node boundaries into about `threads` equal parts.
    let mut cuts = vec![0usize];
    for t in 1..threads {
        let want = per * t as u64;
        let node = offsets.partition_point(|&o| o < want).min(nodes);
        if node > *cuts.last().unwrap_or(&0) {
            cuts.push(node);
        }
    }
    cuts.push(nodes);
    std::thread::scope(|scope| {
        let (mut rel_rest, mut oth_rest) = (relations, others);
        for w in cuts.windows(2) {
            let (n0, n1) = (w[0], w[1]);
            let len = (offsets[n1] - offsets[n0]) as usize;
            let (rel, r) = std::mem::take(&mut rel_rest).split_at_mut(len);
            let (oth, o) = std::mem::take(&mut oth_rest).split_at_mut(len);
            rel_rest = r;
            oth_rest = o;
            let offsets = &offsets[n0..=n1];
            scope.spawn(move || {
                let base = offsets[0];
                let mut pairs: Vec<(u32, u32)> = Vec::new();
                for w in offsets.windows(2) {
                    let run = (w[0] - base) as usize..(w[1] - base) as usize;
                    if rel[run.clone()].windows(2).all(|p| p[0] <= p[1]) {
                        continue;
                    }
                    pairs.clear();
                    pairs.extend(
                        rel[run.clone()]
                            .iter()
                            .copied()
                            .zip(oth[run.clone()].iter().copied()),
                    );
                    pairs.sort_unstable();
                    for (k, (r, o)) in run.zip(pairs.iter()) {
                        rel[k] = *r;
                        oth[k] = *o;
                    }
                }
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reverse of a CSR built from `edges`, by sorting.
    fn by_sorting(nodes: usize, edges: &[(u32, u32, u32)]) -> (Vec<u64>, Vec<u32>, Vec<u32>) {
        let mut rev: Vec<(u32, u32, u32)> = edges.iter().map(|&(a, r, b)| (b, r, a)).collect();
        rev.sort_unstable();
        csr_of(nodes, &rev)
    }

    fn csr_of(nodes: usize, sorted: &[(u32, u32, u32)]) -> (Vec<u64>, Vec<u32>, Vec<u32>) {
        let mut offsets = vec![0u64; nodes + 1];
        for &(a, _, _) in sorted {
            offsets[a as usize + 1] += 1;
        }
        for i in 0..nodes {
            offsets[i + 1] += offsets[i];
        }
        (
            offsets,
            sorted.iter().map(|t| t.1).collect(),
            sorted.iter().map(|t| t.2).collect(),
        )
    }

    type Reversed = (Vec<u64>, Vec<u32>, Vec<u32>);

    fn derive(nodes: usize, edges: &[(u32, u32, u32)]) -> Result<Reversed> {
        derive_in_passes(nodes, edges, PASS_BYTES / 8)
    }

    fn derive_in_passes(nodes: usize, edges: &[(u32, u32, u32)], pass: u64) -> Result<Reversed> {
        let mut sorted = edges.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let (o, r, t) = csr_of(nodes, &sorted);
        let (mut io, mut ir, mut is) = (vec![7u64; nodes + 1], vec![7; r.len()], vec![7; r.len()]);
        reverse_in_passes(
            &Csr {
                offsets: &o,
                relations: &r,
                others: &t,
            },
            CsrMut {
                offsets: &mut io,
                relations: &mut ir,
                others: &mut is,
            },
            pass,
        )?;
        Ok((io, ir, is))
    }

    #[test]
    fn reverse_matches_a_sort_of_the_turned_edges() {
        // A hub (node 0) with many relations, self loops, isolated nodes.
        let mut edges = Vec::new();
        let mut x = 12345u64;
        for _ in 0..5000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let a = (x >> 33) as u32 % 300;
            let r = (x >> 20) as u32 % 17;
            let b = if x & 3 == 0 {
                0
            } else {
                (x >> 40) as u32 % 300
            };
            edges.push((a, r, b));
        }
        edges.push((5, 3, 5));
        let mut unique = edges.clone();
        unique.sort_unstable();
        unique.dedup();
        let want = by_sorting(310, &unique);
        assert_eq!(derive(310, &edges).unwrap(), want);
        // In windows smaller than the hub's in-edges, of one edge, and more.
        for pass in [0, 1, 7, 100, 1000, u64::MAX] {
            assert_eq!(derive_in_passes(310, &edges, pass).unwrap(), want, "{pass}");
        }
    }

    #[test]
    fn empty_graphs_derive() {
        assert_eq!(derive(0, &[]).unwrap(), (vec![0], vec![], vec![]));
        assert_eq!(derive(3, &[]).unwrap(), (vec![0; 4], vec![], vec![]));
    }

    #[test]
    fn bad_out_edges_are_errors() {
        let (io, ir, is) = (&mut [0u64; 3], &mut [0u32; 2], &mut [0u32; 2]);
        let cases: [(&[u64], &[u32], &str); 3] = [
            (&[0, 1, 2], &[0, 9], "past the 2 nodes"),
            (&[0, 3, 2], &[0, 1], "decrease"),
            (&[0, 1, 3], &[0, 1], "do not span"),
        ];
        for (offsets, others, want) in cases {
            let e = reverse(
                &Csr {
                    offsets,
                    relations: &[1, 1],
                    others,
                },
                CsrMut {
                    offsets: io,
                    relations: ir,
                    others: is,
                },
            )
            .unwrap_err()
            .to_string();
            assert!(e.contains(want), "{e}");
        }
    }
}
