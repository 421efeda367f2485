//! Configuration: a TOML file and `KGBOX_*` variables, loaded and checked
//! as `kgbox config check` and `serve` load them.

use std::sync::OnceLock;

use kgbox::config_print::{check_files, Effective};

use crate::split_at_byte;

/// The input is `TOML \0 NAME=value \n NAME=value ...`: the file, then
/// variables set as `KGBOX_NAME` for this one load. A configuration that
/// loads must print (`config check`) as TOML that loads again.
pub fn config(data: &[u8]) {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    let dir = DIR.get_or_init(|| tempfile::tempdir().expect("a scratch folder"));
    let (file, vars) = split_at_byte(data, 0);
    let path = dir.path().join("config.toml");
    if std::fs::write(&path, file).is_err() {
        return;
    }
    let vars: Vec<(String, String)> = String::from_utf8_lossy(vars)
        .lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, v)| {
            !k.is_empty()
                && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                && !v.contains('\0')
        })
        .map(|(k, v)| (format!("KGBOX_{k}"), v.to_string()))
        .collect();
    for (k, v) in &vars {
        std::env::set_var(k, v);
    }
    load_and_print(&path, dir.path());
    for (k, _) in &vars {
        std::env::remove_var(k);
    }
}

fn load_and_print(path: &std::path::Path, dir: &std::path::Path) {
    let Ok(eff) = Effective::load(Some(path)) else {
        return;
    };
    let _ = check_files(&eff.config);
    let _ = eff.config.limits();
    let _ = eff.config.admin.token();
    let Ok(printed) = eff.to_toml() else {
        return;
    };
    let again = dir.join("printed.toml");
    if std::fs::write(&again, &printed).is_err() {
        return;
    }
    if let Err(e) = Effective::load(Some(&again)) {
        panic!("`config check` printed a configuration that does not load: {e}\n{printed}");
    }
}
