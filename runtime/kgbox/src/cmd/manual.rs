//! `completions SHELL` and `man [--dir DIR]` of `kgbox` and `kgbox-pack`
//! (which includes this file): generated from the command line's
//! definition. Both write to a pipe that may close early (`| head`) without
//! an error.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

/// Prints the completion script of `command` for `shell`.
pub fn completions(shell: clap_complete::Shell, mut command: clap::Command) -> Result<()> {
    let name = command.get_name().to_string();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, name, &mut out);
    print_bytes(&out)
}

/// Prints the main man page, or with `dir` writes one page per command and
/// subcommand there (`kgbox.1`, `kgbox-serve.1`, `kgbox-eval-qa.1`, ...):
/// the pages the main one refers to.
pub fn man(command: clap::Command, dir: Option<&Path>) -> Result<()> {
    let Some(dir) = dir else {
        let mut out = Vec::new();
        clap_mangen::Man::new(command).render(&mut out)?;
        return print_bytes(&out);
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    clap_mangen::generate_to(command, dir)
        .with_context(|| format!("cannot write the man pages to {}", dir.display()))
}

/// Writes `bytes` to stdout; a reader that closed the pipe is not an error.
fn print_bytes(bytes: &[u8]) -> Result<()> {
    match std::io::stdout().lock().write_all(bytes) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}
