//! `f32` values as little-endian bytes: the encoding of the bundle's float
//! sections (`model.ultra.relreps`) and of an ONNX tensor's `raw_data`.

use crate::{NeuralError, Result};

/// Decodes `f32` little-endian values.
pub fn decode_f32s(bytes: &[u8]) -> Result<Vec<f32>> {
    if !bytes.len().is_multiple_of(4) {
        return Err(NeuralError::Invalid(format!(
            "{} bytes is not a whole number of f32 values",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// Encodes `f32` values little-endian (the `model.ultra.relreps` section).
pub fn encode_f32s(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}
