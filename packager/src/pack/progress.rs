//! The stages' progress bars on stderr, hidden when progress is off.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar on stderr (hidden when `enabled` is false) drawn with
/// `template`.
fn bar_with(enabled: bool, template: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(
        None,
        if enabled {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// The reading bar: bytes of the input file, rate and ETA.
pub(super) fn read_bar(enabled: bool) -> ProgressBar {
    bar_with(
        enabled,
        "{spinner} {msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
    )
}

/// The progress bar of the graph build's phases and of the write (hidden
/// when `enabled` is false): a message per phase, a bar with a rate and ETA
/// where the phase has a known length.
pub(super) fn phase_bar(enabled: bool) -> ProgressBar {
    bar_with(
        enabled,
        "{spinner} {msg} [{bar:30}] {human_pos}/{human_len} ({per_sec}, {eta})",
    )
}
