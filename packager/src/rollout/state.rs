//! The rollout's state file: the devices, their waves and what happened to
//! each, written whole (temporary file, sync, rename) after every step, so
//! that a rollout resumes where the workstation stopped.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// The state file's format.
const FORMAT: u32 = 1;

/// A bundle as a device runs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Running {
    pub name: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

impl std::fmt::Display for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.name, self.version)
    }
}

/// Where a device stands in the rollout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Its wave has not come (yet).
    Pending,
    /// It installed the bundle; its criteria are not read yet.
    Installed,
    /// It runs the bundle and met the criteria.
    Updated,
    /// It ran the bundle before the rollout began.
    AlreadyCurrent,
    /// It went back to its previous bundle (its probes, its criteria, or
    /// an abort).
    RolledBack,
    /// The update failed on the device; it kept its bundle.
    Failed,
    /// It could not be reached (offline, or no answer in time).
    Unreachable,
    /// The rollout stopped before its wave.
    NotTouched,
    /// The rollout stopped and the plan said to leave updated devices.
    LeftUpdated,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pending => "pending",
            Outcome::Installed => "installed",
            Outcome::Updated => "updated",
            Outcome::AlreadyCurrent => "already_current",
            Outcome::RolledBack => "rolled_back",
            Outcome::Failed => "failed",
            Outcome::Unreachable => "unreachable",
            Outcome::NotTouched => "not_touched",
            Outcome::LeftUpdated => "left_updated",
        }
    }

    /// Counts against `max_failed_percent`.
    pub fn is_failure(self) -> bool {
        matches!(self, Outcome::RolledBack | Outcome::Failed)
    }
}

/// What was sent to a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sent {
    Full,
    Delta,
}

/// One device's record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceRecord {
    pub device_id: String,
    /// Its wave, from 0 (the canary, when there is one).
    pub wave: usize,
    /// What it ran when the rollout began (`None`: no status then).
    pub from: Option<Running>,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent: Option<Sent>,
    /// Bytes of chunks sent to it (over all attempts).
    pub bytes: u64,
    /// Seconds spent on it (push, check, rollback).
    pub seconds: f64,
    /// Why it ended as it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Its golden-question results, in a line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub golden: Option<String>,
    /// What it runs, as last reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_on: Option<Running>,
    /// Whether it was online when last heard of.
    #[serde(default)]
    pub online: bool,
    /// A rollback was asked for (why) and not yet seen done: asked again
    /// when the device is back, and by a later run of the same rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback_pending: Option<String>,
}

/// The whole rollout.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct State {
    pub format: u32,
    /// The rollout's id: from the plan's text and the bundle's sha256.
    pub rollout: String,
    pub bundle: Running,
    pub started_unix: u64,
    pub wave_sizes: Vec<usize>,
    /// Waves finished.
    pub waves_done: usize,
    /// Why the rollout stopped early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted: Option<String>,
    pub finished: bool,
    pub devices: Vec<DeviceRecord>,
}

impl State {
    pub fn new(rollout: String, bundle: Running, wave_sizes: Vec<usize>) -> State {
        State {
            format: FORMAT,
            rollout,
            bundle,
            started_unix: now_unix(),
            wave_sizes,
            waves_done: 0,
            aborted: None,
            finished: false,
            devices: Vec::new(),
        }
    }

    /// Reads a state file; `Ok(None)` when there is none.
    pub fn read(path: &Path) -> Result<Option<State>> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let s: State = serde_json::from_slice(&bytes).with_context(|| {
            format!(
                "the state file {} is damaged (remove it to start the rollout afresh)",
                path.display()
            )
        })?;
        if s.format != FORMAT {
            bail!(
                "the state file {} has format {}, this kgbox-pack reads {FORMAT}",
                path.display(),
                s.format
            );
        }
        Ok(Some(s))
    }

    /// Writes the state whole: never a half-written file.
    pub fn save(&self, path: &Path) -> Result<()> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut tmp = tempfile::NamedTempFile::new_in(&dir)
            .with_context(|| format!("cannot write a state file in {}", dir.display()))?;
        serde_json::to_writer_pretty(&mut tmp, self)?;
        tmp.write_all(b"\n")?;
        tmp.as_file().sync_all()?;
        tmp.persist(path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    pub fn device_mut(&mut self, id: &str) -> Option<&mut DeviceRecord> {
        self.devices.iter_mut().find(|d| d.device_id == id)
    }

    /// Devices of waves up to `wave` (inclusive) that count for the abort
    /// thresholds: (tried, failed, unreachable).
    pub fn tally(&self, wave: usize) -> (usize, usize, usize) {
        let mine = self.devices.iter().filter(|d| d.wave <= wave);
        let (mut tried, mut failed, mut unreachable) = (0, 0, 0);
        for d in mine {
            tried += 1;
            failed += usize::from(d.outcome.is_failure());
            unreachable += usize::from(d.outcome == Outcome::Unreachable);
        }
        (tried, failed, unreachable)
    }
}

pub fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn saves_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.state.json");
        assert!(State::read(&p).unwrap().is_none());
        let b = Running {
            name: "films".into(),
            version: "1.1.0".into(),
            digest: Some("ab".into()),
        };
        let mut s = State::new("r1".into(), b, vec![1, 2]);
        s.devices.push(DeviceRecord {
            device_id: "d1".into(),
            wave: 0,
            from: None,
            outcome: Outcome::RolledBack,
            sent: Some(Sent::Delta),
            bytes: 10,
            seconds: 1.5,
            reason: Some("golden".into()),
            golden: None,
            ended_on: None,
            online: true,
            rollback_pending: None,
        });
        s.save(&p).unwrap();
        let back = State::read(&p).unwrap().unwrap();
        assert_eq!(back.devices[0].outcome, Outcome::RolledBack);
        assert_eq!(back.tally(0), (1, 1, 0));
        std::fs::write(&p, "{").unwrap();
        let e = format!("{:#}", State::read(&p).unwrap_err());
        assert!(e.contains("damaged"), "{e}");
        // No temporary files left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
