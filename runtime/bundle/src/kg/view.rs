//! Section bytes viewed as typed arrays.

use crate::{BundleError, Result};

/// `bytes` viewed as an array of `T`, or an error naming section `name`.
pub(crate) fn cast<'a, T: bytemuck::Pod>(name: &str, bytes: &'a [u8]) -> Result<&'a [T]> {
    bytemuck::try_cast_slice(bytes).map_err(|e| {
        BundleError::bad_section(
            name,
            format!(
                "cannot view {} bytes as an array of {}-byte integers: {e:?}",
                bytes.len(),
                std::mem::size_of::<T>()
            ),
        )
    })
}
