//! Verifying and installing bundles into the inactive slot, loading the
//! active one, and rolling back.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use kgbox_bundle::sections::{check_known, include_in_image};
use kgbox_bundle::{image, BundleReader, Manifest, TrustedKeys};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::loaded::LoadedBundle;
use crate::store::{Slot, SlotRecord, SlotStatus, Store};

/// This runtime's version, compared with a manifest's `min_runtime`.
pub const RUNTIME_VERSION: &str = env!("CARGO_PKG_VERSION");

/// What a successful verification found.
#[derive(Debug, Clone)]
pub struct Verified {
    pub manifest: Manifest,
    pub key_id: String,
    pub digest: String,
    pub bytes: u64,
}

/// Opens a bundle file for reading. Anything but a regular file (a FIFO,
/// a device, a directory) is refused at once: it is opened without
/// blocking, then checked, so a FIFO with no writer cannot hang us.
fn open_bundle(path: &Path) -> Result<BundleReader<BufReader<File>>> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
    let meta = file
        .metadata()
        .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    if !meta.is_file() {
        return Err(Error::NotAFile {
            path: path.to_path_buf(),
        });
    }
    // O_NONBLOCK means nothing for a regular file's reads.
    Ok(BundleReader::open(BufReader::with_capacity(
        64 * 1024,
        file,
    ))?)
}

/// Builds the image of a verified bundle in a temporary file and opens it
/// as `serve` would: the structural checks of the sections (offsets,
/// lengths, UTF-8, indexes) that only the decompressed bytes can show.
/// `verify` runs it so that it refuses every bundle `install` refuses.
fn check_image(
    reader: &mut BundleReader<BufReader<File>>,
    limits: &kgbox_bundle::Limits,
) -> Result<()> {
    let dir = std::env::temp_dir();
    let tmp = tempfile::Builder::new()
        .prefix("kgbox-verify-")
        .suffix(".kgbi")
        .tempfile_in(&dir)
        .map_err(|source| Error::NotWritable {
            path: dir.clone(),
            source,
        })?;
    let mut w = BufWriter::with_capacity(1 << 20, tmp.as_file());
    image::write_image(reader, limits, include_in_image, &mut w)?;
    w.flush()
        .map_err(|e| Error::io(format!("writing {}", tmp.path().display()), e))?;
    drop(w);
    LoadedBundle::open_image(tmp.path(), Slot::A).map_err(image_error)?;
    Ok(())
}

/// A freshly built image that does not load: the bundle's fault (its
/// sections are structurally bad), reported as a bundle error.
fn image_error(e: Error) -> Error {
    match e {
        Error::BadImage { source, .. } => Error::Bundle(source),
        other => other,
    }
}

/// Checks what a bundle's prefix promises against this device: the
/// `compatible` string, the minimum runtime and the known sections.
fn check_policy(reader: &BundleReader<BufReader<File>>, cfg: &Config) -> Result<()> {
    let m = &reader.prefix().manifest;
    if m.compatible != cfg.compatible {
        return Err(Error::Incompatible {
            bundle: m.compatible.clone(),
            device: cfg.compatible.clone(),
        });
    }
    let running = semver::Version::parse(RUNTIME_VERSION)
        .map_err(|e| Error::Config(format!("runtime version: {e}")))?;
    if m.min_runtime > running {
        return Err(Error::RuntimeTooOld {
            needed: m.min_runtime.to_string(),
            running: running.to_string(),
        });
    }
    check_known(reader.prefix())?;
    Ok(())
}

/// Everything `install` checks, without touching the data dir.
pub fn verify(path: &Path, keys: &TrustedKeys, cfg: &Config) -> Result<Verified> {
    if keys.is_empty() {
        return Err(Error::NoTrustedKeys);
    }
    let mut reader = open_bundle(path)?;
    let key = reader.verify_signature(keys)?.key_id();
    check_policy(&reader, cfg)?;
    // The same checks as `install`, in the same order: stored hashes and
    // limits, then every section decompressed into an image (raw hashes,
    // limits) that is opened as `serve` opens it.
    let limits = cfg.limits();
    reader.check_stored(&limits, include_in_image)?;
    check_image(&mut reader, &limits)?;
    Ok(Verified {
        manifest: reader.prefix().manifest.clone(),
        key_id: key.to_string(),
        digest: hex::encode(reader.prefix().digest()),
        bytes: reader.file_len(),
    })
}

#[derive(Debug, Clone, Default)]
pub struct InstallOptions {
    pub allow_downgrade: bool,
}

#[derive(Debug, Clone)]
pub struct InstallReport {
    pub record: SlotRecord,
    pub replaced: Option<String>,
    pub elapsed: Duration,
}

/// An exclusive `flock` on `DATA_DIR/install.lock`, released on drop or death.
struct InstallLock(#[allow(dead_code)] File);

fn lock_installs(data_dir: &Path) -> Result<InstallLock> {
    let path = data_dir.join("install.lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|source| Error::NotWritable {
            path: data_dir.to_path_buf(),
            source,
        })?;
    // SAFETY: flock on a descriptor we own; no memory is involved.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        return Err(Error::Busy(data_dir.to_path_buf()));
    }
    Ok(InstallLock(file))
}

fn fsync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(format!("syncing {}", dir.display()), e))
}

/// Verifies a bundle against the config's trusted keys and policy, writes
/// its image into the inactive slot, fsyncs, and makes it active in one
/// state transaction. On any error the active bundle is untouched.
pub fn install(path: &Path, cfg: &Config, opts: &InstallOptions) -> Result<InstallReport> {
    let started = Instant::now();
    let keys = cfg.trusted_keys()?;
    if keys.is_empty() {
        return Err(Error::NoTrustedKeys);
    }
    let limits = cfg.limits();
    let mut reader = open_bundle(path)?;
    let key_id = reader.verify_signature(&keys)?.key_id().to_string();
    check_policy(&reader, cfg)?;
    reader.check_stored(&limits, include_in_image)?;
    let manifest = reader.prefix().manifest.clone();

    let data_dir = &cfg.data_dir;
    std::fs::create_dir_all(data_dir).map_err(|source| Error::NotWritable {
        path: data_dir.clone(),
        source,
    })?;
    let _lock = lock_installs(data_dir)?;
    let store =
        Store::open(data_dir, true)?.ok_or_else(|| Error::NothingInstalled(data_dir.clone()))?;
    let state = store.state()?;
    let active = state.active_record().cloned();
    if let Some(a) = &active {
        if let Ok(active_version) = semver::Version::parse(&a.version) {
            if manifest.version < active_version && !opts.allow_downgrade {
                return Err(Error::Downgrade {
                    active: active_version.to_string(),
                    offered: manifest.version.to_string(),
                });
            }
        }
    }
    let target = state.active.map(Slot::other).unwrap_or(Slot::A);
    let slot_dir = store.slot_dir(target);
    std::fs::create_dir_all(&slot_dir).map_err(|source| Error::NotWritable {
        path: slot_dir.clone(),
        source,
    })?;
    let generation = store.begin_install(target)?;
    let result = write_slot(&store, &mut reader, &limits, target, generation);
    let image_path = match result {
        Ok(p) => p,
        Err(e) => {
            let _ = store.mark_failed(target, &e.to_string());
            return Err(e);
        }
    };
    let image_bytes = std::fs::metadata(&image_path).map(|m| m.len()).unwrap_or(0);
    let record = SlotRecord {
        slot: target,
        status: SlotStatus::Ready,
        generation,
        image: format!("image-{generation}.kgbi"),
        name: manifest.name.clone(),
        version: manifest.version.to_string(),
        key_id,
        bundle_digest: hex::encode(reader.prefix().digest()),
        installed_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        image_bytes,
        error: String::new(),
        // Checked by the next start of `serve`, or at once by a live deploy.
        health: crate::store::Health::Pending,
    };
    store.commit_install(&record)?;
    Ok(InstallReport {
        record,
        replaced: active.map(|a| format!("{} {}", a.name, a.version)),
        elapsed: started.elapsed(),
    })
}

/// Clears the slot directory, writes `image-<gen>.tmp`, fsyncs it, renames it
/// to `image-<gen>.kgbi`, fsyncs the directory and checks that it loads.
fn write_slot(
    store: &Store,
    reader: &mut BundleReader<BufReader<File>>,
    limits: &kgbox_bundle::Limits,
    slot: Slot,
    generation: u64,
) -> Result<PathBuf> {
    let dir = store.slot_dir(slot);
    let entries =
        std::fs::read_dir(&dir).map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
    for entry in entries.flatten() {
        let _ = std::fs::remove_file(entry.path());
    }
    let tmp = dir.join(format!("image-{generation}.tmp"));
    let done = dir.join(format!("image-{generation}.kgbi"));
    let result = (|| {
        let file = File::create(&tmp).map_err(|source| Error::NotWritable {
            path: dir.clone(),
            source,
        })?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        image::write_image(reader, limits, include_in_image, &mut w)?;
        w.flush()
            .map_err(|e| Error::io(format!("writing {}", tmp.display()), e))?;
        let file = w
            .into_inner()
            .map_err(|e| Error::io(format!("writing {}", tmp.display()), e.into_error()))?;
        file.sync_all()
            .map_err(|e| Error::io(format!("syncing {}", tmp.display()), e))?;
        std::fs::rename(&tmp, &done)
            .map_err(|e| Error::io(format!("renaming {}", tmp.display()), e))?;
        fsync_dir(&dir)?;
        LoadedBundle::open_image(&done, slot).map_err(image_error)?;
        Ok(done.clone())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
        let _ = std::fs::remove_file(&done);
    }
    result
}

/// Loads the active slot's image; `Ok(None)` when nothing is installed.
pub fn load_active(data_dir: &Path) -> Result<Option<LoadedBundle>> {
    let Some(store) = Store::open(data_dir, false)? else {
        return Ok(None);
    };
    let state = store.state()?;
    let Some(record) = state.active_record() else {
        return Ok(None);
    };
    let path = store.image_path(record);
    LoadedBundle::open_image(&path, record.slot).map(Some)
}

/// Makes the previous slot active again, after checking that its image loads.
pub fn rollback(data_dir: &Path) -> Result<(SlotRecord, SlotRecord)> {
    let store = Store::open(data_dir, false)?
        .ok_or_else(|| Error::NothingInstalled(data_dir.to_path_buf()))?;
    let _lock = lock_installs(data_dir)?;
    let (from, to) = store
        .rollback(|rec| LoadedBundle::open_image(&store.image_path(rec), rec.slot).map(|_| ()))?;
    let state = store.state()?;
    let rec = |s: Slot| {
        state
            .record(s)
            .cloned()
            .ok_or_else(|| Error::Rollback(format!("slot {s} has no record")))
    };
    Ok((rec(from)?, rec(to)?))
}
