//! What a rollout asks of a device besides a bundle push (docs/fleet.md):
//! golden-question checks (`kgbox/{id}/bundle/check`) and guarded
//! rollbacks (`kgbox/{id}/bundle/rollback`). Only with `mqtt.bundle_push`
//! on (they share its subscription and its trust in the broker's ACLs).
//!
//! A check answers the request's questions and the device's own
//! (`health.golden_file`, JSON lines) through the HTTP router in process,
//! as MQTT requests are, and keeps the results with the served bundle:
//! they appear under `golden` in its status, republished at once.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use kgbox_protocol::fleet::{MAX_FAILURES_LISTED, MAX_GOLDEN};
use kgbox_protocol::topics::valid_topic_level;
use kgbox_protocol::{CheckRequest, GoldenFailure, GoldenQuestion, GoldenResults, RollbackRequest};
use serde_json::json;

use super::requests::call_as;
use crate::deploy::Deployer;
use crate::request_id::RequestId;

/// Largest check or rollback request, bytes.
const MAX_REQUEST_BYTES: usize = 1 << 20;

/// What the rollout requests need.
pub(crate) struct FleetRequests {
    pub router: axum::Router,
    pub deployer: Arc<Deployer>,
    /// The check running (one at a time) and the last one done.
    pub checks: Mutex<Checks>,
}

#[derive(Default)]
pub(crate) struct Checks {
    running: Option<String>,
    done: Option<String>,
}

/// A golden question with where it came from.
struct Asked {
    q: GoldenQuestion,
    from: &'static str,
}

impl FleetRequests {
    /// `kgbox/{id}/bundle/check`: runs on its own task, one at a time. A
    /// request for the check running is ignored; one for the check last
    /// done republishes the status (its results are in it); another while
    /// one runs is dropped (the rollout asks again).
    pub(crate) fn check(self: &Arc<Self>, payload: &[u8]) {
        let Some(req) = parse::<CheckRequest>(payload, "golden-question check") else {
            return;
        };
        if !valid_topic_level(&req.check) {
            tracing::warn!(check = %req.check, "a check id must be 1-64 characters of A-Z a-z 0-9 _ - .: ignored");
            return;
        }
        {
            let mut c = lock(&self.checks);
            if c.done.as_deref() == Some(req.check.as_str()) {
                drop(c);
                self.deployer.republish();
                return;
            }
            if let Some(running) = &c.running {
                if *running != req.check {
                    tracing::info!(check = %req.check, %running, "another golden-question check is running: this one is dropped");
                }
                return;
            }
            c.running = Some(req.check.clone());
        }
        let me = self.clone();
        tokio::spawn(async move {
            let id = req.check.clone();
            me.run_check(req).await;
            let mut c = lock(&me.checks);
            c.running = None;
            c.done = Some(id);
        });
    }

    async fn run_check(&self, req: CheckRequest) {
        let started = Instant::now();
        let digest = self.deployer.status().digest;
        let mut asked: Vec<Asked> = Vec::new();
        let mut failed: Vec<GoldenFailure> = Vec::new();
        let mut total = 0usize;
        if req.questions.len() > MAX_GOLDEN {
            total += 1;
            failed.push(refused(
                "(the check request)",
                "plan",
                format!(
                    "{} golden questions: at most {MAX_GOLDEN} in one check",
                    req.questions.len()
                ),
            ));
        } else {
            asked.extend(req.questions.into_iter().map(|q| Asked { q, from: "plan" }));
        }
        if let Some(path) = &self.deployer.config().health.golden_file {
            match read_golden_file(path) {
                Ok(qs) => asked.extend(qs.into_iter().map(|q| Asked { q, from: "device" })),
                Err(e) => {
                    total += 1;
                    failed.push(refused("(health.golden_file)", "device", e));
                }
            }
        }
        let mut passed = 0usize;
        for a in &asked {
            total += 1;
            match self.answer(&a.q).await {
                Ok(names) => {
                    let missing: Vec<String> =
                        a.q.expect
                            .iter()
                            .filter(|e| !names.iter().any(|n| same_name(n, e)))
                            .cloned()
                            .collect();
                    if missing.is_empty() {
                        passed += 1;
                    } else {
                        failed.push(GoldenFailure {
                            question: a.q.text().to_string(),
                            missing,
                            got: names.into_iter().take(5).collect(),
                            from: a.from.into(),
                            error: None,
                        });
                    }
                }
                Err(e) => failed.push(refused(a.q.text(), a.from, e)),
            }
        }
        let results = GoldenResults {
            check: req.check.clone(),
            digest,
            total,
            passed,
            failed: failed.into_iter().take(MAX_FAILURES_LISTED).collect(),
            checked_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            ms: started.elapsed().as_secs_f64() * 1e3,
        };
        tracing::info!(check = %req.check, passed, total, "golden-question check: {}", results.describe());
        if !self.deployer.set_golden(results) {
            tracing::info!(check = %req.check, "the bundle changed during the golden-question check: results dropped");
        }
    }

    /// The answers' names, or why there are none.
    async fn answer(&self, q: &GoldenQuestion) -> Result<Vec<String>, String> {
        if let Some(problem) = q.problem() {
            return Err(problem);
        }
        let (path, body) = match (&q.question, &q.query) {
            (Some(text), _) => ("/v1/ask", json!({ "question": text })),
            (None, Some(text)) => ("/v1/query", json!({ "query": text })),
            (None, None) => return Err("give a question or a query".into()),
        };
        let id = RequestId::generate();
        let body = Bytes::from(body.to_string());
        let (status, reply) = call_as(&self.router, path, body, &id, true).await;
        let v: serde_json::Value = serde_json::from_slice(&reply).unwrap_or_default();
        if status != 200 {
            let code = v["error"]["code"].as_str().unwrap_or("error");
            let message = v["error"]["message"].as_str().unwrap_or("");
            return Err(format!("{status} {code}: {message}"));
        }
        Ok(v["answers"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// `kgbox/{id}/bundle/rollback`: rolls back on a blocking thread when
    /// the bundle named is the one served.
    pub(crate) fn rollback(self: &Arc<Self>, payload: &[u8]) {
        let Some(req) = parse::<RollbackRequest>(payload, "rollback") else {
            return;
        };
        let by = req.by.clone().unwrap_or_default();
        let deployer = self.deployer.clone();
        // The digest is compared again under the deployment lock.
        tokio::task::spawn_blocking(move || match deployer.rollback_if_serving(&req.from) {
            Ok(Some(s)) => tracing::warn!(%by, serving = %s.bundle, "rolled back on request"),
            Ok(None) => {
                tracing::info!(from = %req.from, %by, "rollback request for a bundle not served (already rolled back?): ignored");
                // The requester learns what is served from the status.
                deployer.republish();
            }
            Err(e) => tracing::error!(%by, error = %e, "cannot roll back on request"),
        });
    }
}

/// A request's JSON, or `None` (logged) when it is too large or not valid.
fn parse<T: serde::de::DeserializeOwned>(payload: &[u8], what: &str) -> Option<T> {
    if payload.len() > MAX_REQUEST_BYTES {
        tracing::warn!(
            bytes = payload.len(),
            "a {what} request over 1 MiB: ignored"
        );
        return None;
    }
    match serde_json::from_slice(payload) {
        Ok(r) => Some(r),
        Err(e) => {
            tracing::warn!(error = %e, "a {what} request is not valid: ignored");
            None
        }
    }
}

fn lock(m: &Mutex<Checks>) -> MutexGuard<'_, Checks> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn refused(question: &str, from: &str, error: String) -> GoldenFailure {
    GoldenFailure {
        question: question.to_string(),
        missing: Vec::new(),
        got: Vec::new(),
        from: from.to_string(),
        error: Some(error),
    }
}

/// Names compare without case and surrounding space.
fn same_name(a: &str, b: &str) -> bool {
    a.trim().to_lowercase() == b.trim().to_lowercase()
}

/// `health.golden_file`: one golden question per line (JSON; blank lines
/// and `#` comments skipped).
pub(crate) fn read_golden_file(path: &Path) -> Result<Vec<GoldenQuestion>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read health.golden_file {}: {e}", path.display()))?;
    kgbox_protocol::fleet::parse_golden_lines(&text)
        .map_err(|(line, why)| format!("health.golden_file {} line {line}: {why}", path.display()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_golden_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("golden.jsonl");
        std::fs::write(
            &p,
            "# site questions\n{\"query\": \"[P-7] -> feeds\", \"expect\": [\"Line 3\"]}\n\n\
             {\"question\": \"what does P-7 feed\", \"expect\": [\"Line 3\"]}\n",
        )
        .unwrap();
        let qs = read_golden_file(&p).unwrap();
        assert_eq!(qs.len(), 2);
        assert_eq!(qs[0].text(), "[P-7] -> feeds");
        std::fs::write(&p, "{\"query\": \"x\"}\n").unwrap();
        let e = read_golden_file(&p).unwrap_err();
        assert!(e.contains("line 1") && e.contains("expect"), "{e}");
        std::fs::write(&p, "{\"query\": \"x\", \"expect\": []}\n").unwrap();
        assert!(read_golden_file(&p)
            .unwrap_err()
            .contains("no expected answer"));
        let e = read_golden_file(&dir.path().join("none")).unwrap_err();
        assert!(e.contains("cannot read health.golden_file"), "{e}");
        assert!(same_name(" Line 3", "line 3"));
    }
}
