//! A table of UTF-8 strings stored as two sections: u64 offsets and bytes.

use super::view::cast;
use crate::error::{BundleError, Result};

/// A table of UTF-8 strings: `offsets` (u64, n + 1) into `bytes`.
#[derive(Clone, Copy)]
pub struct StringTable<'a> {
    offsets: &'a [u64],
    bytes: &'a [u8],
}

impl<'a> StringTable<'a> {
    pub(crate) fn new(offsets_name: &str, offsets: &'a [u8], bytes: &'a [u8]) -> Result<Self> {
        let offsets: &[u64] = cast(offsets_name, offsets)?;
        match (offsets.first(), offsets.last()) {
            (Some(0), Some(&last)) if last == bytes.len() as u64 => {
                Ok(StringTable { offsets, bytes })
            }
            _ => Err(BundleError::bad_section(
                offsets_name,
                format!(
                    "offsets must start at 0 and end at the string data length {}",
                    bytes.len()
                ),
            )),
        }
    }

    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, i: usize) -> Option<&'a str> {
        let a = usize::try_from(*self.offsets.get(i)?).ok()?;
        let b = usize::try_from(*self.offsets.get(i + 1)?).ok()?;
        std::str::from_utf8(self.bytes.get(a..b)?).ok()
    }

    /// Binary search, valid when the strings are sorted bytewise.
    pub fn find_sorted(&self, needle: &str) -> Option<usize> {
        let (mut lo, mut hi) = (0usize, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.get(mid)?.cmp(needle) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }
}
