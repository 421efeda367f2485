//! `[log]`: what `kgbox serve` logs to stderr, and in which form.

use serde::{Deserialize, Serialize};

/// `[log]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// `error`, `warn`, `info`, `debug`, `trace`, or a tracing filter; `RUST_LOG` wins.
    pub level: String,
    /// `text` (one human-readable line per event; colour only on a
    /// terminal) or `json` (one JSON object per line, never coloured).
    pub format: LogFormat,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            level: "info".into(),
            format: LogFormat::Text,
        }
    }
}

/// The form of the log lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

impl std::fmt::Display for LogFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_by_their_lowercase_names_only() {
        let parse = |s: &str| toml::from_str::<LogConfig>(s).map(|c| c.format);
        assert_eq!(parse("format = \"text\"").ok(), Some(LogFormat::Text));
        assert_eq!(parse("format = \"json\"").ok(), Some(LogFormat::Json));
        assert_eq!(parse("level = \"warn\"").ok(), Some(LogFormat::Text));
        for bad in ["\"JSON\"", "\"xml\"", "1"] {
            assert!(parse(&format!("format = {bad}")).is_err(), "{bad}");
        }
        for f in [LogFormat::Text, LogFormat::Json] {
            assert_eq!(serde_json::to_value(f).ok(), Some(f.to_string().into()));
        }
    }
}
