//! Verifying and installing bundles into the inactive slot, loading the
//! active one, and rolling back. A delta update (`kgbox_bundle::delta`,
//! told apart by its magic) goes the same way: its image is built from the
//! active slot's image and the delta, then checked, written and committed
//! exactly as a bundle's.
//!
//! [`install`]: `open_incoming` (the magic picks a `BundleReader` or a
//! `DeltaReader`) → `Incoming::check` (signature(s) → `check_policy` →
//! limits and stored or payload hashes; nothing decompressed yet) → the
//! downgrade check under `install.lock` → for a delta, `delta_base` (the
//! active slot's image, when its digest is the delta's base) and
//! `build_delta_image` (the whole image built and checked in
//! `DATA_DIR/incoming/` before a slot is touched) → `Store::begin_install`
//! on the inactive slot → `write_slot` (`Incoming::write_image` or the
//! built image, fsync, rename, `open_new_image`: the image opened and its
//! lexical index walked whole by `Kg::check_index`) →
//! `Store::commit_install`. [`verify`] runs the same checks into a
//! temporary file.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use kgbox_bundle::delta::{is_delta, BundleId, DeltaReader};
use kgbox_bundle::sections::{check_known, include_in_image};
use kgbox_bundle::{image, BundleReader, Limits, Manifest, Prefix, TrustedKeys};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::loaded::LoadedBundle;
use crate::store::{Health, Slot, SlotRecord, SlotStatus, Store};

/// This runtime's version, compared with a manifest's `min_runtime`.
pub const RUNTIME_VERSION: &str = env!("CARGO_PKG_VERSION");

/// What a successful verification found.
#[derive(Debug, Clone)]
pub struct Verified {
    pub manifest: Manifest,
    pub key_id: String,
    pub digest: String,
    pub bytes: u64,
    /// For a delta update: the base it applies to (the active bundle).
    pub delta_base: Option<String>,
}

type Reader = BufReader<File>;

/// A file offered for installation: a bundle, or a delta update.
enum Incoming {
    Bundle(Box<BundleReader<Reader>>),
    Delta(Box<DeltaReader<Reader>>),
}

/// Opens a bundle or delta file for reading, told apart by its magic.
/// Anything but a regular file (a FIFO, a device, a directory) is refused
/// at once: it is opened without blocking, then checked, so a FIFO with no
/// writer cannot hang us.
fn open_incoming(path: &Path, keys: &TrustedKeys) -> Result<Incoming> {
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
    let mut r = BufReader::with_capacity(64 * 1024, file);
    let mut magic = Vec::with_capacity(8);
    (&mut r)
        .take(8)
        .read_to_end(&mut magic)
        .and_then(|_| r.seek(SeekFrom::Start(0)))
        .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    Ok(if is_delta(&magic) {
        // Its signature first: nothing in a delta is read before it holds.
        Incoming::Delta(Box::new(DeltaReader::open_verified(r, keys)?.0))
    } else {
        Incoming::Bundle(Box::new(BundleReader::open(r)?))
    })
}

impl Incoming {
    /// The bundle it installs.
    fn prefix(&self) -> &Prefix {
        match self {
            Incoming::Bundle(r) => r.prefix(),
            Incoming::Delta(d) => d.new_prefix(),
        }
    }

    fn file_len(&self) -> u64 {
        match self {
            Incoming::Bundle(r) => r.file_len(),
            Incoming::Delta(d) => d.file_len(),
        }
    }

    /// The signature (a delta's own, then the new bundle's), the policy,
    /// the limits and the stored (or payload) hashes: everything that
    /// needs no decompression. Returns the new bundle's key id.
    fn check(&mut self, keys: &TrustedKeys, cfg: &Config, limits: &Limits) -> Result<String> {
        let key_id = match self {
            Incoming::Bundle(r) => r.verify_signature(keys)?.key_id(),
            Incoming::Delta(d) => d.verify_signatures(keys)?.key_id(),
        };
        check_policy(self.prefix(), cfg)?;
        match self {
            Incoming::Bundle(r) => r.check_stored(limits, include_in_image)?,
            Incoming::Delta(d) => d.check_payloads(limits, include_in_image)?,
        }
        Ok(key_id.to_string())
    }

    /// Writes the image: a bundle's sections decompressed, or a delta
    /// applied to `base` (the active image); then, in the written file,
    /// the sections the bundle leaves to the device (`derive`).
    fn write_image<F: Write + std::os::fd::AsFd>(
        &mut self,
        base: Option<&LoadedBundle>,
        limits: &Limits,
        out: &mut BufWriter<F>,
    ) -> Result<()> {
        let plan = match (&mut *self, base) {
            (Incoming::Bundle(r), _) => {
                image::write_image(&mut **r, limits, include_in_image, out)?
            }
            (Incoming::Delta(d), Some(base)) => {
                let sections = |n: &str| base.section(n);
                let digest = base.view().prefix.digest();
                d.write_image(&sections, &digest, limits, include_in_image, out)?
            }
            (Incoming::Delta(d), None) => {
                return Err(Error::DeltaNoBase {
                    delta_base: d.prefix().info.base.to_string(),
                })
            }
        };
        if !kgbox_bundle::derive::any(self.prefix()) {
            return Ok(());
        }
        out.flush()
            .map_err(|e| Error::io("writing the image".to_string(), e))?;
        let fd = out.get_ref().as_fd().as_raw_fd();
        // SAFETY: the file was just written by this process and is not yet
        // visible as an image to anyone else (a temporary or .tmp file).
        let mut map = unsafe { memmap2::MmapOptions::new().map_mut(fd) }
            .map_err(|e| Error::io("mapping the image to derive its in-edges".to_string(), e))?;
        kgbox_bundle::derive::fill(self.prefix(), &plan.ranges, &mut map)?;
        map.flush()
            .map_err(|e| Error::io("writing the derived in-edges".to_string(), e))?;
        Ok(())
    }
}

/// How a slot record names its bundle (as a delta names its base).
fn record_id(r: &SlotRecord) -> BundleId {
    BundleId {
        name: r.name.clone(),
        version: r.version.clone(),
        digest: r.bundle_digest.clone(),
    }
}

/// The image a delta applies to: the active slot's, when its bundle is
/// the delta's base. `active`: the active slot's record, if any.
fn delta_base(
    incoming: &Incoming,
    store: Option<&Store>,
    active: Option<&SlotRecord>,
) -> Result<Option<LoadedBundle>> {
    let Incoming::Delta(d) = incoming else {
        return Ok(None);
    };
    let wanted = &d.prefix().info.base;
    let (Some(store), Some(rec)) = (store, active) else {
        return Err(Error::DeltaNoBase {
            delta_base: wanted.to_string(),
        });
    };
    if rec.bundle_digest != wanted.digest {
        return Err(Error::DeltaBase {
            delta_base: wanted.to_string(),
            active: record_id(rec).to_string(),
        });
    }
    LoadedBundle::open_image(&store.image_path(rec), rec.slot).map(Some)
}

/// Builds the image of a verified bundle in a temporary file and opens it
/// as `serve` would: the structural checks of the sections (offsets,
/// lengths, UTF-8, indexes) that only the decompressed bytes can show.
/// `verify` runs it so that it refuses every bundle `install` refuses.
fn check_image(
    incoming: &mut Incoming,
    base: Option<&LoadedBundle>,
    limits: &Limits,
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
    incoming.write_image(base, limits, &mut w)?;
    w.flush()
        .map_err(|e| Error::io(format!("writing {}", tmp.path().display()), e))?;
    drop(w);
    open_new_image(tmp.path(), Slot::A)?;
    Ok(())
}

/// Opens an image just built from a bundle and runs the checks that are
/// linear in its size, which `serve` does not repeat at start: the whole
/// lexical index walked ([`kgbox_bundle::Kg::check_index`]).
fn open_new_image(path: &Path, slot: Slot) -> Result<LoadedBundle> {
    let b = LoadedBundle::open_image(path, slot).map_err(image_error)?;
    b.kg()
        .and_then(|kg| kg.check_index())
        .map_err(Error::Bundle)?;
    Ok(b)
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
fn check_policy(prefix: &Prefix, cfg: &Config) -> Result<()> {
    let m = &prefix.manifest;
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
    check_known(prefix)?;
    Ok(())
}

/// Everything `install` checks, without touching the data dir. A delta
/// is applied to the active slot's image (read only) into a temporary file.
pub fn verify(path: &Path, keys: &TrustedKeys, cfg: &Config) -> Result<Verified> {
    if keys.is_empty() {
        return Err(Error::NoTrustedKeys);
    }
    let mut incoming = open_incoming(path, keys)?;
    // The same checks as `install`, in the same order: signature, policy,
    // stored hashes and limits, then every section decompressed into an
    // image (raw hashes, limits) that is opened as `serve` opens it.
    let limits = cfg.limits();
    let key_id = incoming.check(keys, cfg, &limits)?;
    // A delta reads the active image: the install lock, held until its
    // image is built, keeps a concurrent install from recycling that slot
    // under the map.
    let (_lock, store) = match &incoming {
        Incoming::Delta(_) if cfg.data_dir.is_dir() => (
            Some(lock_installs(&cfg.data_dir)?),
            Store::open(&cfg.data_dir, false)?,
        ),
        Incoming::Delta(_) | Incoming::Bundle(_) => (None, None),
    };
    let state = store.as_ref().map(Store::state).transpose()?;
    let active = state.as_ref().and_then(|s| s.active_record());
    let base = delta_base(&incoming, store.as_ref(), active)?;
    check_image(&mut incoming, base.as_ref(), &limits)?;
    let p = incoming.prefix();
    Ok(Verified {
        manifest: p.manifest.clone(),
        key_id,
        digest: hex::encode(p.digest()),
        bytes: incoming.file_len(),
        delta_base: base.and(active).map(|a| record_id(a).to_string()),
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
    /// Installed from a delta update of this many bytes.
    pub delta_bytes: Option<u64>,
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
    let mut incoming = open_incoming(path, &keys)?;
    let key_id = incoming.check(&keys, cfg, &limits)?;
    let manifest = incoming.prefix().manifest.clone();

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
    // A delta's image is built completely, every section hash checked,
    // before the inactive slot is touched: a refused delta leaves both
    // slots, their records and the rollback target as they were.
    let source = match delta_base(&incoming, Some(&store), active.as_ref())? {
        Some(base) => {
            let built = build_delta_image(&mut incoming, &base, data_dir, &limits)?;
            drop(base);
            ImageSource::Built(built)
        }
        None => {
            ImageSource::Write(|w: &mut BufWriter<File>| incoming.write_image(None, &limits, w))
        }
    };
    let target = state.active.map(Slot::other).unwrap_or(Slot::A);
    let slot_dir = store.slot_dir(target);
    std::fs::create_dir_all(&slot_dir).map_err(|source| Error::NotWritable {
        path: slot_dir.clone(),
        source,
    })?;
    let generation = store.begin_install(target)?;
    let result = write_slot(&store, target, generation, source);
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
        bundle_digest: hex::encode(incoming.prefix().digest()),
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
        delta_bytes: matches!(incoming, Incoming::Delta(_)).then(|| incoming.file_len()),
    })
}

/// How a slot's image is made: written in place by `fill`, or already
/// built and checked (a delta's, in `DATA_DIR/incoming/`).
enum ImageSource<F> {
    Write(F),
    Built(tempfile::NamedTempFile),
}

/// Applies a delta to `base` (the active image) into a temporary file in
/// `DATA_DIR/incoming/` (the data dir's filesystem, so that it can be
/// renamed into a slot), checking every section's hash, fsyncs it and
/// checks that it loads. On failure the file is removed, and the incoming
/// dir too if this made it (and it is empty).
fn build_delta_image(
    incoming: &mut Incoming,
    base: &LoadedBundle,
    data_dir: &Path,
    limits: &Limits,
) -> Result<tempfile::NamedTempFile> {
    let dir = data_dir.join("incoming");
    let made_dir = !dir.is_dir();
    std::fs::create_dir_all(&dir).map_err(|source| Error::NotWritable {
        path: dir.clone(),
        source,
    })?;
    let result = (|| {
        let tmp = tempfile::Builder::new()
            .prefix(".delta-image-")
            .suffix(".tmp")
            .tempfile_in(&dir)
            .map_err(|source| Error::NotWritable {
                path: dir.clone(),
                source,
            })?;
        let mut w = BufWriter::with_capacity(1 << 20, tmp.as_file());
        incoming.write_image(Some(base), limits, &mut w)?;
        w.flush()
            .map_err(|e| Error::io(format!("writing {}", tmp.path().display()), e))?;
        drop(w);
        tmp.as_file()
            .sync_all()
            .map_err(|e| Error::io(format!("syncing {}", tmp.path().display()), e))?;
        open_new_image(tmp.path(), Slot::A)?;
        Ok(tmp)
    })();
    if result.is_err() && made_dir {
        // Only if empty: an upload being assembled there stays.
        let _ = std::fs::remove_dir(&dir);
    }
    result
}

/// Clears the slot directory, then either writes `image-<gen>.tmp` with
/// `fill`, fsyncs it and renames it to `image-<gen>.kgbi`, or renames an
/// already built image there; fsyncs the directory and checks that the
/// image loads. On failure nothing of it is left in the slot.
fn write_slot<F>(
    store: &Store,
    slot: Slot,
    generation: u64,
    source: ImageSource<F>,
) -> Result<PathBuf>
where
    F: FnOnce(&mut BufWriter<File>) -> Result<()>,
{
    let dir = store.slot_dir(slot);
    let entries =
        std::fs::read_dir(&dir).map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
    for entry in entries.flatten() {
        let _ = std::fs::remove_file(entry.path());
    }
    let tmp = dir.join(format!("image-{generation}.tmp"));
    let done = dir.join(format!("image-{generation}.kgbi"));
    // A built (delta) image was walked in full when it was built.
    let walked = matches!(source, ImageSource::Built(_));
    let result = (|| {
        match source {
            ImageSource::Write(fill) => {
                // Readable too: derived sections are computed in a map of it.
                let file = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(&tmp)
                    .map_err(|source| Error::NotWritable {
                        path: dir.clone(),
                        source,
                    })?;
                let mut w = BufWriter::with_capacity(1 << 20, file);
                fill(&mut w)?;
                w.flush()
                    .map_err(|e| Error::io(format!("writing {}", tmp.display()), e))?;
                let file = w
                    .into_inner()
                    .map_err(|e| Error::io(format!("writing {}", tmp.display()), e.into_error()))?;
                file.sync_all()
                    .map_err(|e| Error::io(format!("syncing {}", tmp.display()), e))?;
                std::fs::rename(&tmp, &done)
                    .map_err(|e| Error::io(format!("renaming {}", tmp.display()), e))?;
            }
            ImageSource::Built(built) => {
                let from = built.path().to_path_buf();
                // On failure the temporary file is dropped, so removed.
                built
                    .persist(&done)
                    .map_err(|e| Error::io(format!("renaming {}", from.display()), e.error))?;
                if let Some(parent) = from.parent() {
                    let _ = fsync_dir(parent);
                }
            }
        }
        fsync_dir(&dir)?;
        if walked {
            LoadedBundle::open_image(&done, slot).map_err(image_error)?;
        } else {
            open_new_image(&done, slot)?;
        }
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

/// Marks the active bundle good (its trial is over): the record it now has.
pub fn mark_good(data_dir: &Path) -> Result<SlotRecord> {
    let (store, slot, _lock) = active_slot_locked(data_dir)?;
    store.set_health(slot, Health::Good, "")?;
    active_record(&store, slot)
}

/// Marks the active bundle bad with `reason`, and in the same transaction
/// makes the previous slot active when it holds a bundle that is not bad:
/// the bad record, and the record now active (if another).
pub fn mark_bad(data_dir: &Path, reason: &str) -> Result<(SlotRecord, Option<SlotRecord>)> {
    let (store, slot, _lock) = active_slot_locked(data_dir)?;
    let back = store.fail_active(reason)?;
    let bad = active_record(&store, slot)?;
    let now = back.map(|b| active_record(&store, b)).transpose()?;
    Ok((bad, now))
}

/// The store, its active slot and the install lock, for a change of the
/// active slot's health.
fn active_slot_locked(data_dir: &Path) -> Result<(Store, Slot, InstallLock)> {
    let nothing = || Error::NothingInstalled(data_dir.to_path_buf());
    let store = Store::open(data_dir, false)?.ok_or_else(nothing)?;
    let lock = lock_installs(data_dir)?;
    let slot = store.state()?.active.ok_or_else(nothing)?;
    Ok((store, slot, lock))
}

fn active_record(store: &Store, slot: Slot) -> Result<SlotRecord> {
    store
        .state()?
        .record(slot)
        .cloned()
        .ok_or_else(|| Error::Rollback(format!("slot {slot} has no record")))
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
