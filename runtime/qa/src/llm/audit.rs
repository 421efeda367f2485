//! The audit log of outbound LLM calls, and their counters for `/metrics`.
//!
//! Each call writes one JSON line *before* anything is sent: an id, the time,
//! the endpoint, the purpose, the number of bytes and the exact request body.
//! A second line with the same id records the outcome. If the first line
//! cannot be written the call is not made.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;

use super::LlmError;

/// Call counters by purpose.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallStats {
    pub calls: u64,
    pub errors: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
}

pub struct AuditLog {
    path: Option<PathBuf>,
    file: Mutex<Option<File>>,
    next_id: AtomicU64,
    stats: Mutex<BTreeMap<String, CallStats>>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("path", &self.path)
            .finish()
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl AuditLog {
    /// A log appending to `path` (created with mode 0600 if missing).
    pub fn open(path: &Path) -> Result<AuditLog, LlmError> {
        let mut opts = OpenOptions::new();
        opts.create(true).append(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let file = opts
            .open(path)
            .map_err(|e| LlmError::Audit(format!("{}: {e}", path.display())))?;
        Ok(AuditLog {
            path: Some(path.to_path_buf()),
            file: Mutex::new(Some(file)),
            next_id: AtomicU64::new(1),
            stats: Mutex::new(BTreeMap::new()),
        })
    }

    /// Counters only, no file (for in-process models, where nothing leaves).
    pub fn counters_only() -> AuditLog {
        AuditLog {
            path: None,
            file: Mutex::new(None),
            next_id: AtomicU64::new(1),
            stats: Mutex::new(BTreeMap::new()),
        }
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn write_line(&self, value: &serde_json::Value) -> Result<(), LlmError> {
        let mut guard = self
            .file
            .lock()
            .map_err(|_| LlmError::Audit("the audit log lock is poisoned".into()))?;
        if let Some(file) = guard.as_mut() {
            let mut line = value.to_string();
            line.push('\n');
            file.write_all(line.as_bytes())
                .and_then(|()| file.flush())
                .map_err(|e| {
                    LlmError::Audit(format!(
                        "{}: {e}",
                        self.path.as_deref().unwrap_or(Path::new("?")).display()
                    ))
                })?;
        }
        Ok(())
    }

    fn bump(&self, purpose: &str, f: impl FnOnce(&mut CallStats)) {
        if let Ok(mut stats) = self.stats.lock() {
            f(stats.entry(purpose.to_string()).or_default());
        }
    }

    /// Records a call about to be made; returns its id. The call must not be
    /// made when this fails.
    pub fn before(&self, endpoint: &str, purpose: &str, body: &[u8]) -> Result<u64, LlmError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let request: serde_json::Value =
            serde_json::from_slice(body).unwrap_or_else(|_| json!(String::from_utf8_lossy(body)));
        self.write_line(&json!({
            "id": id,
            "event": "request",
            "time_unix_ms": now_ms(),
            "endpoint": endpoint,
            "purpose": purpose,
            "bytes_sent": body.len(),
            "request": request,
        }))?;
        self.bump(purpose, |s| {
            s.calls += 1;
            s.bytes_sent += body.len() as u64;
        });
        Ok(id)
    }

    /// Records how call `id` ended (`Err` holds the error text).
    pub fn after(&self, id: u64, purpose: &str, outcome: Result<usize, &str>, elapsed: Duration) {
        let (status, received, error) = match outcome {
            Ok(n) => ("ok", n, None),
            Err(e) => ("error", 0, Some(e)),
        };
        self.bump(purpose, |s| {
            s.bytes_received += received as u64;
            if error.is_some() {
                s.errors += 1;
            }
        });
        let line = json!({
            "id": id,
            "event": "response",
            "time_unix_ms": now_ms(),
            "status": status,
            "bytes_received": received,
            "error": error,
            "ms": elapsed.as_secs_f64() * 1e3,
        });
        if let Err(e) = self.write_line(&line) {
            // The request line is there; a lost outcome line is only logged.
            eprintln!("kgbox: {e}");
        }
    }

    /// Counters by purpose.
    pub fn stats(&self) -> BTreeMap<String, CallStats> {
        self.stats.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_request_then_outcome() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path).expect("opens");
        let id = log
            .before("http://127.0.0.1:1/v1", "plan", br#"{"messages":[]}"#)
            .expect("written");
        log.after(id, "plan", Ok(42), Duration::from_millis(3));
        let id2 = log.before("x", "arbitrate", b"not json").expect("written");
        log.after(id2, "arbitrate", Err("boom"), Duration::ZERO);
        let text = std::fs::read_to_string(&path).expect("read");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("json line"))
            .collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0]["event"], "request");
        assert_eq!(lines[0]["bytes_sent"], 15);
        assert_eq!(lines[0]["request"]["messages"], json!([]));
        assert_eq!(lines[1]["id"], lines[0]["id"]);
        assert_eq!(lines[1]["bytes_received"], 42);
        assert_eq!(lines[2]["request"], "not json");
        assert_eq!(lines[3]["error"], "boom");
        let stats = log.stats();
        assert_eq!(stats["plan"].calls, 1);
        assert_eq!(stats["plan"].bytes_received, 42);
        assert_eq!(stats["arbitrate"].errors, 1);
    }

    #[test]
    fn an_unwritable_log_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let e = AuditLog::open(&dir.path().join("missing/audit.jsonl")).expect_err("no dir");
        assert!(e.to_string().contains("missing"), "{e}");
    }
}
