//! The transforms of a `patch` instruction: the reference a payload is
//! decoded against, and how decoded bytes become the section (and, for the
//! packager, the other way round).
//!
//! | transform      | reference                          | payload decodes to                         |
//! |----------------|------------------------------------|--------------------------------------------|
//! | `raw`          | the base's section of that name    | the section                                |
//! | `predict`      | the section predicted from the base | the section                               |
//! | `lengths`      | the base's offsets as lengths      | the new offsets as lengths                 |
//! | `offsets-diff` | none                               | new lengths − predicted lengths (wrapping) |
//!
//! Every transform keeps the length: a payload decodes to exactly the
//! section's `raw_len` bytes, the bound the decoder enforces.

use std::borrow::Cow;

use super::format::Transform;
use super::maps::{u64_bytes, u64s, Maps};
use super::predict::{is_offsets, predicts, NewTables, Predictor, Sections};
use crate::error::{BundleError, Result};
use crate::sections as s;

/// Whether `t` can make section `name`.
pub fn applies(t: Transform, name: &str) -> bool {
    match t {
        Transform::Raw => true,
        Transform::Predict => predicts(name),
        Transform::Lengths => is_offsets(name),
        Transform::OffsetsDiff => is_offsets(name) && predicts(name),
    }
}

/// u64 offsets as their consecutive differences (wrapping): `out[0] =
/// v[0]`, `out[i] = v[i] - v[i-1]`.
pub fn lengths(name: &str, offsets: &[u8]) -> Result<Vec<u64>> {
    let v = u64s(name, offsets)?;
    let mut prev = 0u64;
    Ok(v.iter()
        .map(|&x| {
            let d = x.wrapping_sub(prev);
            prev = x;
            d
        })
        .collect())
}

/// The inverse of [`lengths`].
pub fn accumulate(lengths: &[u64]) -> Vec<u8> {
    let mut sum = 0u64;
    let v: Vec<u64> = lengths
        .iter()
        .map(|&d| {
            sum = sum.wrapping_add(d);
            sum
        })
        .collect();
    u64_bytes(&v)
}

/// `offsets-diff`'s forward: the new offsets' lengths minus the predicted
/// ones' (an entry past the prediction's end counts 0).
pub fn offsets_diff(name: &str, new: &[u8], predicted: &[u8]) -> Result<Vec<u8>> {
    let (n, p) = (lengths(name, new)?, lengths(name, predicted)?);
    let d: Vec<u64> = n
        .iter()
        .enumerate()
        .map(|(i, &x)| x.wrapping_sub(p.get(i).copied().unwrap_or(0)))
        .collect();
    Ok(u64_bytes(&d))
}

/// `offsets-diff`'s inverse.
pub fn offsets_undiff(name: &str, diff: &[u8], predicted: &[u8]) -> Result<Vec<u8>> {
    let (d, p) = (u64s(name, diff)?, lengths(name, predicted)?);
    let l: Vec<u64> = d
        .iter()
        .enumerate()
        .map(|(i, &x)| x.wrapping_add(p.get(i).copied().unwrap_or(0)))
        .collect();
    Ok(accumulate(&l))
}

/// What both sides know while a delta is made or applied: the base, and
/// once the new name tables exist, the id maps and the predictions.
pub struct Context<'a> {
    base: &'a Sections<'a>,
    /// The new bundle's sections made first (name and alias tables).
    new: NewTables,
    predictor: Option<Predictor<'a>>,
    max_bytes: u64,
}

impl<'a> Context<'a> {
    /// The new bundle's sections made before the others, in this order:
    /// the name tables (the id maps need them), then the alias tables
    /// (the index's prediction reads them).
    pub const EARLY: [&'static str; 7] = [
        s::ENTITY_OFFSETS,
        s::ENTITY_NAMES,
        s::RELATION_OFFSETS,
        s::RELATION_NAMES,
        s::ALIAS_OWNERS,
        s::ALIAS_OFFSETS,
        s::ALIAS_NAMES,
    ];
    /// How many of [`Context::EARLY`] the maps need.
    pub const NAME_TABLES: usize = 4;

    /// `max_bytes`: the largest prediction allowed (the section limit).
    pub fn new(base: &'a Sections<'a>, max_bytes: u64) -> Context<'a> {
        Context {
            base,
            new: NewTables::new(),
            predictor: None,
            max_bytes,
        }
    }

    /// Keeps a section of the new bundle that predictions read (see
    /// [`Context::EARLY`]).
    pub fn add_new(&mut self, name: &str, raw: Vec<u8>) {
        self.new.insert(name.to_string(), raw);
    }

    /// A section kept by [`Context::add_new`].
    pub fn new_section(&self, name: &str) -> Option<&[u8]> {
        self.new.get(name).map(Vec::as_slice)
    }

    /// Enables `predict` and `offsets-diff`: the id maps, from the base's
    /// name tables and the new ones (added first).
    pub fn enable_maps(&mut self) -> Result<()> {
        let new = &self.new;
        let maps = super::predict::maps(self.base, &|n: &str| new.get(n).map(Vec::as_slice))?;
        self.predictor = Some(Predictor::new(self.base, maps, self.max_bytes));
        Ok(())
    }

    pub fn maps(&self) -> Option<&Maps> {
        self.predictor.as_ref().map(Predictor::maps)
    }

    /// The base's section `name`.
    pub fn base(&self, name: &str) -> Result<&'a [u8]> {
        (self.base)(name).ok_or_else(|| {
            BundleError::DeltaCorrupt(format!("the base has no section `{name}` to patch"))
        })
    }

    fn predicted(&mut self, name: &str) -> Result<&[u8]> {
        match self.predictor.as_mut() {
            Some(p) => p.get(name, &self.new),
            None => Err(BundleError::DeltaCorrupt(format!(
                "section `{name}`: a prediction needs the id maps, which need the new name tables"
            ))),
        }
    }

    /// Frees what was kept for section `name`.
    pub fn release(&mut self, name: &str) {
        if let Some(p) = self.predictor.as_mut() {
            p.release(name);
        }
    }

    fn check(t: Transform, name: &str) -> Result<()> {
        if applies(t, name) {
            Ok(())
        } else {
            Err(BundleError::DeltaCorrupt(format!(
                "transform `{}` does not apply to section `{name}`",
                t.name()
            )))
        }
    }

    /// The zstd reference (prefix) of section `name`'s payload.
    pub fn reference(&mut self, t: Transform, name: &str) -> Result<Cow<'_, [u8]>> {
        Self::check(t, name)?;
        Ok(match t {
            Transform::Raw => Cow::Borrowed(self.base(name)?),
            Transform::Predict => Cow::Borrowed(self.predicted(name)?),
            Transform::Lengths => Cow::Owned(u64_bytes(&lengths(name, self.base(name)?)?)),
            Transform::OffsetsDiff => Cow::Borrowed(&[]),
        })
    }

    /// Whether decoded bytes are the section as they are (else [`Context::finish`]).
    pub fn is_identity(t: Transform) -> bool {
        matches!(t, Transform::Raw | Transform::Predict)
    }

    /// Turns decoded bytes into the section.
    pub fn finish(&mut self, t: Transform, name: &str, decoded: Vec<u8>) -> Result<Vec<u8>> {
        Self::check(t, name)?;
        match t {
            Transform::Raw | Transform::Predict => Ok(decoded),
            Transform::Lengths => Ok(accumulate(&u64s(name, &decoded)?)),
            Transform::OffsetsDiff => {
                let predicted = self.predicted(name)?;
                offsets_undiff(name, &decoded, predicted)
            }
        }
    }

    /// The packager's side: the bytes the payload must decode to for the
    /// section `raw`.
    pub fn encode<'r>(&mut self, t: Transform, name: &str, raw: &'r [u8]) -> Result<Cow<'r, [u8]>> {
        Self::check(t, name)?;
        match t {
            Transform::Raw | Transform::Predict => Ok(Cow::Borrowed(raw)),
            Transform::Lengths => Ok(Cow::Owned(u64_bytes(&lengths(name, raw)?))),
            Transform::OffsetsDiff => {
                let predicted = self.predicted(name)?;
                Ok(Cow::Owned(offsets_diff(name, raw, predicted)?))
            }
        }
    }
}
