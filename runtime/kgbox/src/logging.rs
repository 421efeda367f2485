//! The log of `kgbox serve`: `tracing` events to stderr, as text or JSON
//! lines (`[log]`, see docs/operations.md, "Logs").

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use crate::config::{LogConfig, LogFormat};

/// The filter: `RUST_LOG` when set and valid, else `log.level`, else `info`.
fn filter(level: &str) -> EnvFilter {
    EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(level))
        .unwrap_or_else(|_| EnvFilter::new("info"))
}

/// Whether lines carry ANSI colour: text lines on a terminal, unless
/// `NO_COLOR` is set (<https://no-color.org>); JSON lines never.
pub fn use_colour(format: LogFormat, terminal: bool, no_color: bool) -> bool {
    format == LogFormat::Text && terminal && !no_color
}

/// Installs the global subscriber (once; later calls change nothing).
pub fn init(cfg: &LogConfig) {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let colour = use_colour(cfg.format, std::io::stderr().is_terminal(), no_color);
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter(&cfg.level))
        .with_writer(std::io::stderr)
        .with_ansi(colour);
    let _ = match cfg.format {
        LogFormat::Text => builder.try_init(),
        // The event's fields at the top level: {"timestamp", "level",
        // "message", fields..., "target", "span", "spans"}.
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_for_text_on_a_terminal() {
        assert!(use_colour(LogFormat::Text, true, false));
        assert!(!use_colour(LogFormat::Text, false, false));
        assert!(!use_colour(LogFormat::Text, true, true));
        for (terminal, no_color) in [(true, false), (false, false), (true, true)] {
            assert!(!use_colour(LogFormat::Json, terminal, no_color));
        }
    }
}
