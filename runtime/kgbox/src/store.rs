//! A/B slots and the state database (LMDB via `heed`). The data directory
//! (`data_dir`, default `/var/lib/kgbox`):
//!
//! ```text
//! DATA_DIR/
//!   state/           LMDB environment, database `kgbox`:
//!                      active, previous   slot names (`a` / `b`)
//!                      generation         last image generation number
//!                      slot.a, slot.b     JSON `SlotRecord`s: status (installing / failed /
//!                                         ready), generation, image file, bundle name,
//!                                         version, key id, bundle digest, install time,
//!                                         image size, error, health (pending / trial /
//!                                         good / bad)
//!   slots/{a,b}/     image-<generation>.kgbi (image-<generation>.tmp while written)
//!   incoming/        uploads and MQTT transfers being assembled (<transfer>.part and
//!                    .json), delta images being built (`crate::install`)
//!   install.lock     flock held by a running install or rollback
//!   llm-audit.jsonl  outbound LLM calls (mode 0600; only with an `[llm]` endpoint;
//!                    `llm.audit_log` moves it)
//! ```
//!
//! Every change of state is one LMDB write transaction, so a crash leaves
//! either the old or the new state, never a mix.

use std::path::{Path, PathBuf};

use heed::types::Str;
use heed::{Database, Env, EnvOpenOptions};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

const DB_NAME: &str = "kgbox";
const KEY_ACTIVE: &str = "active";
const KEY_PREVIOUS: &str = "previous";
const KEY_GENERATION: &str = "generation";

pub use kgbox_protocol::{Health, Slot};

/// The database key of a slot's record.
fn slot_key(slot: Slot) -> String {
    format!("slot.{}", slot.name())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SlotStatus {
    /// An install into this slot began and did not finish.
    Installing,
    /// An install into this slot failed; see `error`.
    Failed,
    /// Holds a complete, verified image.
    Ready,
}

/// What a slot holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SlotRecord {
    pub slot: Slot,
    pub status: SlotStatus,
    pub generation: u64,
    /// Image file name inside the slot directory.
    pub image: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub key_id: String,
    /// sha256 of the bundle's signed prefix.
    #[serde(default)]
    pub bundle_digest: String,
    #[serde(default)]
    pub installed_at: String,
    #[serde(default)]
    pub image_bytes: u64,
    #[serde(default)]
    pub error: String,
    #[serde(default)]
    pub health: Health,
}

/// A snapshot of the state database.
#[derive(Debug, Clone, Default, Serialize)]
pub struct State {
    pub active: Option<Slot>,
    pub previous: Option<Slot>,
    pub a: Option<SlotRecord>,
    pub b: Option<SlotRecord>,
}

impl State {
    pub fn record(&self, slot: Slot) -> Option<&SlotRecord> {
        match slot {
            Slot::A => self.a.as_ref(),
            Slot::B => self.b.as_ref(),
        }
    }

    pub fn active_record(&self) -> Option<&SlotRecord> {
        self.active.and_then(|s| self.record(s))
    }
}

pub struct Store {
    data_dir: PathBuf,
    env: Env,
    db: Database<Str, Str>,
}

impl Store {
    fn state_dir(data_dir: &Path) -> PathBuf {
        data_dir.join("state")
    }

    pub fn slot_dir(&self, slot: Slot) -> PathBuf {
        self.data_dir.join("slots").join(slot.name())
    }

    pub fn image_path(&self, record: &SlotRecord) -> PathBuf {
        self.slot_dir(record.slot).join(&record.image)
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Opens the state database. With `create`, makes the data dir and the
    /// database when missing (and reports an unwritable data dir as such);
    /// without, returns `None` when nothing was ever installed.
    pub fn open(data_dir: &Path, create: bool) -> Result<Option<Store>> {
        let state_dir = Self::state_dir(data_dir);
        if !state_dir.join("data.mdb").exists() {
            if !create {
                return Ok(None);
            }
            std::fs::create_dir_all(&state_dir).map_err(|source| Error::NotWritable {
                path: data_dir.to_path_buf(),
                source,
            })?;
        }
        let map_err = |source| Error::State {
            path: state_dir.clone(),
            source,
        };
        // SAFETY: the environment is opened once per process (kgbox opens one
        // Store per command), and LMDB files are only touched through heed.
        let env = unsafe {
            EnvOpenOptions::new()
                .map_size(16 << 20)
                .max_dbs(4)
                .open(&state_dir)
        }
        .map_err(|e| match e {
            heed::Error::Io(source) if source.kind() == std::io::ErrorKind::PermissionDenied => {
                Error::NotWritable {
                    path: data_dir.to_path_buf(),
                    source,
                }
            }
            other => map_err(other),
        })?;
        // Readers (status, serve) only need a read transaction; the database
        // is created by the first install.
        let existing = {
            let rtxn = env.read_txn().map_err(map_err)?;
            let db = env
                .open_database::<Str, Str>(&rtxn, Some(DB_NAME))
                .map_err(map_err)?;
            rtxn.commit().map_err(map_err)?;
            db
        };
        let db = match existing {
            Some(db) => db,
            None if !create => return Ok(None),
            None => {
                let mut wtxn = env.write_txn().map_err(map_err)?;
                let db = env
                    .create_database::<Str, Str>(&mut wtxn, Some(DB_NAME))
                    .map_err(map_err)?;
                wtxn.commit().map_err(map_err)?;
                db
            }
        };
        Ok(Some(Store {
            data_dir: data_dir.to_path_buf(),
            env,
            db,
        }))
    }

    fn map_err(&self, source: heed::Error) -> Error {
        Error::State {
            path: Self::state_dir(&self.data_dir),
            source,
        }
    }

    fn corrupt(&self, problem: String) -> Error {
        Error::StateCorrupt {
            path: Self::state_dir(&self.data_dir),
            problem,
        }
    }

    pub fn state(&self) -> Result<State> {
        let rtxn = self.env.read_txn().map_err(|e| self.map_err(e))?;
        self.read_state(&rtxn)
    }

    fn read_state(&self, txn: &heed::RoTxn) -> Result<State> {
        let slot_at = |key: &str| -> Result<Option<Slot>> {
            match self.db.get(txn, key).map_err(|e| self.map_err(e))? {
                None => Ok(None),
                Some(v) => Slot::parse(v)
                    .map(Some)
                    .ok_or_else(|| self.corrupt(format!("`{key}` is {v:?}"))),
            }
        };
        let record = |slot: Slot| -> Result<Option<SlotRecord>> {
            match self
                .db
                .get(txn, &slot_key(slot))
                .map_err(|e| self.map_err(e))?
            {
                None => Ok(None),
                Some(v) => serde_json::from_str(v)
                    .map(Some)
                    .map_err(|e| self.corrupt(format!("record of slot {slot}: {e}"))),
            }
        };
        Ok(State {
            active: slot_at(KEY_ACTIVE)?,
            previous: slot_at(KEY_PREVIOUS)?,
            a: record(Slot::A)?,
            b: record(Slot::B)?,
        })
    }

    fn put_record(&self, wtxn: &mut heed::RwTxn, record: &SlotRecord) -> Result<()> {
        let json = serde_json::to_string(record)
            .map_err(|e| self.corrupt(format!("cannot encode slot record: {e}")))?;
        self.db
            .put(wtxn, &slot_key(record.slot), &json)
            .map_err(|e| self.map_err(e))
    }

    /// Marks `slot` as being installed (so a crash leaves it visibly
    /// incomplete) and returns a fresh generation number for its image.
    /// The slot stops being a rollback target.
    pub fn begin_install(&self, slot: Slot) -> Result<u64> {
        let mut wtxn = self.env.write_txn().map_err(|e| self.map_err(e))?;
        let state = self.read_state(&wtxn)?;
        if state.active == Some(slot) {
            return Err(self.corrupt(format!("refusing to install into the active slot {slot}")));
        }
        let generation = match self
            .db
            .get(&wtxn, KEY_GENERATION)
            .map_err(|e| self.map_err(e))?
        {
            Some(v) => v
                .parse::<u64>()
                .map_err(|_| self.corrupt(format!("`generation` is {v:?}")))?,
            None => 0,
        } + 1;
        self.db
            .put(&mut wtxn, KEY_GENERATION, &generation.to_string())
            .map_err(|e| self.map_err(e))?;
        if state.previous == Some(slot) {
            self.db
                .delete(&mut wtxn, KEY_PREVIOUS)
                .map_err(|e| self.map_err(e))?;
        }
        let record = SlotRecord {
            slot,
            status: SlotStatus::Installing,
            generation,
            image: format!("image-{generation}.kgbi"),
            name: String::new(),
            version: String::new(),
            key_id: String::new(),
            bundle_digest: String::new(),
            installed_at: String::new(),
            image_bytes: 0,
            error: String::new(),
            health: Health::Pending,
        };
        self.put_record(&mut wtxn, &record)?;
        wtxn.commit().map_err(|e| self.map_err(e))?;
        Ok(generation)
    }

    /// Records a failed install in its slot (best effort, for `status`).
    pub fn mark_failed(&self, slot: Slot, error: &str) -> Result<()> {
        let mut wtxn = self.env.write_txn().map_err(|e| self.map_err(e))?;
        let state = self.read_state(&wtxn)?;
        if let Some(mut rec) = state.record(slot).cloned() {
            if rec.status == SlotStatus::Installing {
                rec.status = SlotStatus::Failed;
                rec.error = error.to_string();
                self.put_record(&mut wtxn, &rec)?;
            }
        }
        wtxn.commit().map_err(|e| self.map_err(e))
    }

    /// In one transaction: the slot becomes ready and active, the formerly
    /// active slot becomes the rollback target.
    pub fn commit_install(&self, record: &SlotRecord) -> Result<()> {
        let mut wtxn = self.env.write_txn().map_err(|e| self.map_err(e))?;
        let state = self.read_state(&wtxn)?;
        self.put_record(&mut wtxn, record)?;
        match state.active {
            Some(old) if old != record.slot => self
                .db
                .put(&mut wtxn, KEY_PREVIOUS, old.name())
                .map_err(|e| self.map_err(e))?,
            _ => {
                self.db
                    .delete(&mut wtxn, KEY_PREVIOUS)
                    .map_err(|e| self.map_err(e))?;
            }
        }
        self.db
            .put(&mut wtxn, KEY_ACTIVE, record.slot.name())
            .map_err(|e| self.map_err(e))?;
        wtxn.commit().map_err(|e| self.map_err(e))
    }

    /// Swaps active and previous, after `check` accepts the previous slot's record.
    pub fn rollback(&self, check: impl Fn(&SlotRecord) -> Result<()>) -> Result<(Slot, Slot)> {
        let mut wtxn = self.env.write_txn().map_err(|e| self.map_err(e))?;
        let state = self.read_state(&wtxn)?;
        let active = state
            .active
            .ok_or_else(|| Error::Rollback("no bundle is installed".into()))?;
        let target = state
            .previous
            .ok_or_else(|| Error::Rollback("there is no previous bundle to return to".into()))?;
        let record = state
            .record(target)
            .filter(|r| r.status == SlotStatus::Ready)
            .ok_or_else(|| Error::Rollback(format!("slot {target} holds no complete bundle")))?;
        if record.health == Health::Bad {
            return Err(Error::Rollback(format!(
                "slot {target} holds {} {}, which failed its health check",
                record.name, record.version
            )));
        }
        check(record)?;
        self.db
            .put(&mut wtxn, KEY_ACTIVE, target.name())
            .map_err(|e| self.map_err(e))?;
        self.db
            .put(&mut wtxn, KEY_PREVIOUS, active.name())
            .map_err(|e| self.map_err(e))?;
        wtxn.commit().map_err(|e| self.map_err(e))?;
        Ok((active, target))
    }

    /// Sets the health of `slot`'s record (one transaction).
    pub fn set_health(&self, slot: Slot, health: Health, note: &str) -> Result<()> {
        let mut wtxn = self.env.write_txn().map_err(|e| self.map_err(e))?;
        let state = self.read_state(&wtxn)?;
        let mut rec = state
            .record(slot)
            .cloned()
            .ok_or_else(|| self.corrupt(format!("slot {slot} has no record")))?;
        rec.health = health;
        rec.error = note.to_string();
        self.put_record(&mut wtxn, &rec)?;
        wtxn.commit().map_err(|e| self.map_err(e))
    }

    /// The active bundle failed its health check: in one transaction it is
    /// marked bad and the previous slot (when it holds a bundle that is not
    /// bad) becomes active again. Returns the slot now active, if any.
    pub fn fail_active(&self, reason: &str) -> Result<Option<Slot>> {
        let mut wtxn = self.env.write_txn().map_err(|e| self.map_err(e))?;
        let state = self.read_state(&wtxn)?;
        let active = state
            .active
            .ok_or_else(|| Error::Rollback("no bundle is installed".into()))?;
        let mut rec = state
            .record(active)
            .cloned()
            .ok_or_else(|| self.corrupt(format!("slot {active} has no record")))?;
        rec.health = Health::Bad;
        rec.error = reason.to_string();
        self.put_record(&mut wtxn, &rec)?;
        let back = state.previous.filter(|p| {
            state
                .record(*p)
                .is_some_and(|r| r.status == SlotStatus::Ready && r.health != Health::Bad)
        });
        if let Some(back) = back {
            self.db
                .put(&mut wtxn, KEY_ACTIVE, back.name())
                .map_err(|e| self.map_err(e))?;
            self.db
                .delete(&mut wtxn, KEY_PREVIOUS)
                .map_err(|e| self.map_err(e))?;
        }
        wtxn.commit().map_err(|e| self.map_err(e))?;
        Ok(back)
    }
}
