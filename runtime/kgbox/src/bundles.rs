//! Several bundles on one device. The default bundle lives in the data
//! directory's own slots, as on a one-bundle device; each other one in
//! `DATA_DIR/bundles/NAME/` (NAME: its manifest's name) with slots,
//! install, health check, hot swap and rollback of its own, so one bundle's
//! deployment never touches another. [`Bundles`] is what `serve` answers
//! from: requests choose a bundle by name (`/b/NAME/...`, the OpenAI
//! facade's `model`), the default when they name none.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::Config;
use crate::deploy::Deployer;

/// The folder of the bundles beside the default one.
pub const BESIDE: &str = "bundles";

/// Whether `name` can name a bundle's folder and route: 1 to 128 of
/// `A-Z a-z 0-9 . _ -` (as kgbox-pack allows), not starting with a dot
/// (`..` would leave `bundles/`).
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = (1..=128).contains(&name.len())
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "the bundle name {name:?} cannot be served beside others: use 1 to 128 letters, digits, '.', '_' or '-', not starting with '.' (kgbox-pack build --name)"
        ))
    }
}

/// The data directory of the bundle `name` beside the default one.
pub fn data_dir_of(data_dir: &Path, name: &str) -> PathBuf {
    data_dir.join(BESIDE).join(name)
}

/// `cfg` for the bundle `name` beside the default one: the same settings
/// over that bundle's own data directory.
pub fn config_for(cfg: &Config, name: &str) -> Config {
    Config {
        data_dir: data_dir_of(&cfg.data_dir, name),
        ..cfg.clone()
    }
}

/// The names of the bundles installed beside the default one, sorted.
pub fn installed_beside(data_dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(data_dir.join(BESIDE)) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| check_name(n).is_ok())
        .collect();
    names.sort();
    names
}

/// The bundles a server answers from.
pub struct Bundles {
    default: Arc<Deployer>,
    beside: BTreeMap<String, Arc<Deployer>>,
}

impl Bundles {
    pub fn new(default: Arc<Deployer>, beside: BTreeMap<String, Arc<Deployer>>) -> Bundles {
        Bundles { default, beside }
    }

    /// The bundle requests that name none get.
    pub fn default(&self) -> &Arc<Deployer> {
        &self.default
    }

    /// The bundle called `name`: one beside the default, or the default by
    /// the name of the bundle it serves now.
    pub fn get(&self, name: &str) -> Option<&Arc<Deployer>> {
        self.beside.get(name).or_else(|| {
            (self.default.served().bundle.manifest().name == name).then_some(&self.default)
        })
    }

    /// Every bundle: the default first, then the others by name.
    pub fn all(&self) -> impl Iterator<Item = &Arc<Deployer>> {
        std::iter::once(&self.default).chain(self.beside.values())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_leave_the_folder_are_refused() {
        for ok in ["plant", "office-2", "a.b_c", &"x".repeat(128)] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            ".hidden",
            "a/b",
            "a b",
            "ü",
            &"x".repeat(129),
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
