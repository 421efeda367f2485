//! The built sections read back as a device reads them, for the
//! packager's later stages.

use kgbox_bundle::sections as s;

use crate::section::SectionData;

/// Built sections as the runtime's zero-copy views (`Kg`, the model
/// loaders) can read them before the bundle is written: sections in memory
/// copied to aligned memory, spilled ones mapped. What the packager's later
/// stages (training, the neural model, the fusion, the planner, the probes)
/// read the graph from.
pub struct Aligned(std::collections::HashMap<&'static str, AlignedSection>);

enum AlignedSection {
    Heap(kgbox_bundle::image::AlignedBytes),
    Mapped(memmap2::Mmap),
}

impl Aligned {
    pub fn new(built: &[(&'static str, SectionData)]) -> std::io::Result<Aligned> {
        let mut map = std::collections::HashMap::new();
        for (name, data) in built {
            let section = match data {
                SectionData::Heap(v) => {
                    AlignedSection::Heap(kgbox_bundle::image::AlignedBytes::from_slice(v))
                }
                SectionData::Spilled { file, .. } => {
                    AlignedSection::Mapped(crate::section::map(file.as_file())?)
                }
                SectionData::Digest { .. } => continue,
            };
            map.insert(*name, section);
        }
        let mut aligned = Aligned(map);
        if built
            .iter()
            .any(|(_, d)| matches!(d, SectionData::Digest { .. }))
        {
            aligned.derive_in_edges()?;
        }
        Ok(aligned)
    }

    /// The in-edges of a graph whose bundle leaves them to the device,
    /// computed here as the device computes them.
    fn derive_in_edges(&mut self) -> std::io::Result<()> {
        use kgbox_bundle::derive;
        let bad = |e: kgbox_bundle::BundleError| std::io::Error::other(e.to_string());
        let words = |name: &str| {
            self.get(name)
                .ok_or_else(|| bad(kgbox_bundle::BundleError::MissingSection(name.into())))
        };
        let (o, r, t) = (
            words(s::OUT_OFFSETS)?,
            words(s::OUT_RELATIONS)?,
            words(s::OUT_TARGETS)?,
        );
        let csr = derive::Csr {
            offsets: cast_words(o)?,
            relations: cast_words(r)?,
            others: cast_words(t)?,
        };
        let into = derive::reversed(&csr).map_err(bad)?;
        let aligned =
            |b: &[u8]| AlignedSection::Heap(kgbox_bundle::image::AlignedBytes::from_slice(b));
        let sections = [
            (s::IN_OFFSETS, aligned(bytemuck::cast_slice(&into.0))),
            (s::IN_RELATIONS, aligned(bytemuck::cast_slice(&into.1))),
            (s::IN_SOURCES, aligned(bytemuck::cast_slice(&into.2))),
        ];
        self.0.extend(sections);
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.0.get(name).map(|a| match a {
            AlignedSection::Heap(b) => &b[..],
            AlignedSection::Mapped(m) => &m[..],
        })
    }

    /// The graph, read back as a device reads it.
    pub fn kg(&self) -> anyhow::Result<kgbox_bundle::Kg<'_>> {
        use anyhow::Context;
        kgbox_bundle::Kg::from_sections(|name| self.get(name))
            .context("the built graph cannot be read back")
    }
}

fn cast_words<T: bytemuck::Pod>(bytes: &[u8]) -> std::io::Result<&[T]> {
    bytemuck::try_cast_slice(bytes).map_err(|e| std::io::Error::other(e.to_string()))
}
