//! The formats of a local model's weights, and the setting that rewrites
//! them at load time into one llama.cpp runs faster
//! (`llm.local_requantize`; the rewriting is `local::requantize`, behind
//! the `local-llm` feature).

use serde::{Deserialize, Serialize};

/// What to do with a model's weights when it is loaded
/// (`llm.local_requantize`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Requantize {
    /// Rewrite Q4_1 weights as Q8_0; leave every other format.
    #[default]
    #[serde(rename = "auto")]
    Auto,
    /// Run the weights as the file has them.
    #[serde(rename = "off")]
    Off,
    /// Rewrite any other format as Q4_0 (smaller and faster than Q8_0, but
    /// lossy from Q4_1, and its batched kernels round differently for
    /// different splits of a prompt, so a kept prompt start may change a
    /// near-tie).
    #[serde(rename = "q4_0")]
    Q4_0,
    /// Rewrite any other format as Q8_0 (within 1/17 of a Q4_1 step of
    /// the weights as shipped; larger and slower than Q4_0).
    #[serde(rename = "q8_0")]
    Q8_0,
}

/// llama.cpp's file types (`enum llama_ftype`, the GGUF key
/// `general.file_type`) that are named here.
const FILE_TYPES: &[(u32, &str)] = &[
    (0, "F32"),
    (1, "F16"),
    (2, "Q4_0"),
    (3, "Q4_1"),
    (7, "Q8_0"),
    (8, "Q5_0"),
    (9, "Q5_1"),
    (10, "Q2_K"),
    (11, "Q3_K_S"),
    (12, "Q3_K_M"),
    (13, "Q3_K_L"),
    (14, "Q4_K_S"),
    (15, "Q4_K_M"),
    (16, "Q5_K_S"),
    (17, "Q5_K_M"),
    (18, "Q6_K"),
    (25, "IQ4_NL"),
    (32, "BF16"),
];
pub(crate) const Q4_0: u32 = 2;
pub(crate) const Q4_1: u32 = 3;
pub(crate) const Q8_0: u32 = 7;

/// The name of llama.cpp file type `t` (`unknown` for none).
pub fn file_type_name(t: Option<u32>) -> String {
    let Some(t) = t else {
        return "unknown".to_string();
    };
    FILE_TYPES
        .iter()
        .find(|(n, _)| *n == t)
        .map_or_else(|| format!("file type {t}"), |(_, name)| name.to_string())
}

impl Requantize {
    /// The file type to rewrite weights of `from` into, if any.
    pub fn target(self, from: Option<u32>) -> Option<u32> {
        let to = match self {
            Requantize::Off => return None,
            Requantize::Auto => return (from == Some(Q4_1)).then_some(Q8_0),
            Requantize::Q4_0 => Q4_0,
            Requantize::Q8_0 => Q8_0,
        };
        (from != Some(to)).then_some(to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_rewrites_q4_1_only_and_the_explicit_formats_anything_else() {
        assert_eq!(Requantize::Auto.target(Some(Q4_1)), Some(Q8_0));
        for other in [None, Some(Q4_0), Some(Q8_0), Some(15), Some(1)] {
            assert_eq!(Requantize::Auto.target(other), None, "{other:?}");
        }
        assert_eq!(Requantize::Off.target(Some(Q4_1)), None);
        assert_eq!(Requantize::Q8_0.target(Some(Q4_1)), Some(Q8_0));
        assert_eq!(Requantize::Q8_0.target(Some(Q8_0)), None);
        assert_eq!(Requantize::Q4_0.target(Some(15)), Some(Q4_0));
        assert_eq!(Requantize::Q4_0.target(None), Some(Q4_0));
    }

    #[test]
    fn settings_read_as_written_and_types_are_named() {
        let read = |s: &str| serde_json::from_str::<Requantize>(&format!("\"{s}\"")).ok();
        assert_eq!(read("auto"), Some(Requantize::Auto));
        assert_eq!(read("off"), Some(Requantize::Off));
        assert_eq!(read("q4_0"), Some(Requantize::Q4_0));
        assert_eq!(read("q8_0"), Some(Requantize::Q8_0));
        assert_eq!(read("Q4_1"), None);
        assert_eq!(file_type_name(Some(3)), "Q4_1");
        assert_eq!(file_type_name(Some(99)), "file type 99");
        assert_eq!(file_type_name(None), "unknown");
    }
}
