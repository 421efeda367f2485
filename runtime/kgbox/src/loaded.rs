//! The bundle being served: an image, memory-mapped from a slot or held in
//! memory (the built-in demo), with its sections validated once at load.

use std::fs::File;
use std::path::{Path, PathBuf};

use kgbox_bundle::sections::include_in_image;
use kgbox_bundle::{
    image, AlignedBytes, BundleError, ImageView, Kg, Limits, Manifest, TrustedKeys,
};
use memmap2::Mmap;

use crate::error::{Error, Result};
use crate::store::Slot;

/// Where the served bundle came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Slot {
        slot: Slot,
        path: PathBuf,
    },
    /// A bundle file loaded into memory without installing it.
    File(PathBuf),
    Demo,
}

impl Source {
    pub fn label(&self) -> String {
        match self {
            Source::Slot { slot, .. } => format!("slot-{slot}"),
            Source::File(_) => "file".into(),
            Source::Demo => "demo".into(),
        }
    }
}

enum Backing {
    Mapped(Mmap),
    Owned(AlignedBytes),
}

impl std::ops::Deref for Backing {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Backing::Mapped(m) => m,
            Backing::Owned(b) => b,
        }
    }
}

pub struct LoadedBundle {
    backing: Backing,
    view: ImageView,
    pub source: Source,
}

impl LoadedBundle {
    /// Memory-maps an installed image and validates its layout and the KG
    /// sections' lengths (constant work in the graph's size).
    pub fn open_image(path: &Path, slot: Slot) -> Result<LoadedBundle> {
        let bad = |source: BundleError| Error::BadImage {
            path: path.to_path_buf(),
            source,
        };
        let file =
            File::open(path).map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        // SAFETY: images are written once to a temporary file, fsynced and
        // renamed into place; kgbox never writes to or truncates an image
        // afterwards (a newer install writes a new file and unlinks the old
        // one, which keeps this mapping's inode alive). Another program
        // truncating the file under us is outside that contract.
        let map = unsafe { Mmap::map(&file) }
            .map_err(|e| Error::io(format!("mapping {}", path.display()), e))?;
        let loaded = LoadedBundle::from_backing(
            Backing::Mapped(map),
            Source::Slot {
                slot,
                path: path.to_path_buf(),
            },
        )
        .map_err(bad)?;
        Ok(loaded)
    }

    /// Verifies a whole bundle held in memory (signature, hashes, limits,
    /// the lexical index walked as install walks it) and builds its image
    /// in memory. Used for the built-in demo.
    pub fn from_bundle_bytes(
        bytes: &[u8],
        keys: &TrustedKeys,
        limits: &Limits,
        source: Source,
    ) -> Result<LoadedBundle> {
        let image = image::from_bundle_bytes(bytes, keys, limits)?;
        let b = LoadedBundle::from_backing(Backing::Owned(image), source)?;
        b.kg()?.check_index()?;
        Ok(b)
    }

    fn from_backing(backing: Backing, source: Source) -> Result<LoadedBundle, BundleError> {
        let view = ImageView::parse(&backing, include_in_image)?;
        let loaded = LoadedBundle {
            backing,
            view,
            source,
        };
        loaded.kg()?;
        Ok(loaded)
    }

    pub fn manifest(&self) -> &Manifest {
        &self.view.prefix.manifest
    }

    pub fn view(&self) -> &ImageView {
        &self.view
    }

    pub fn image_len(&self) -> usize {
        self.backing.len()
    }

    /// The bytes of a section of the image (`None` when it has none).
    pub fn section(&self, name: &str) -> Option<&[u8]> {
        self.view.section(&self.backing, name)
    }

    /// Typed views of the graph (cheap: a few slice casts).
    pub fn kg(&self) -> Result<Kg<'_>, BundleError> {
        let bytes: &[u8] = &self.backing;
        Kg::from_sections(|name| self.view.section(bytes, name))
    }

    /// Re-hashes every section against the signed table (linear in size).
    pub fn verify_hashes(&self) -> Result<(), BundleError> {
        self.view.verify_hashes(&self.backing)
    }
}
