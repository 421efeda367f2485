//! What a rollout (`kgbox-pack rollout`, docs/fleet.md) asks of a device
//! beyond a bundle push, and what the device reports back in its status:
//!
//! - [`CheckRequest`] on `kgbox/{id}/bundle/check`: answer these golden
//!   questions (and the device's own, `health.golden_file`) with the bundle
//!   served now; the [`GoldenResults`] come back in the retained status
//!   (`golden`, per bundle), which the device republishes at once, with
//!   fresh `since_deploy` figures.
//! - [`RollbackRequest`] on `kgbox/{id}/bundle/rollback`: go back to the
//!   previous slot, but only while the bundle of digest `from` is served
//!   (so a request repeated after a restart or a resume undoes nothing
//!   else).

use serde::{Deserialize, Serialize};

/// Most golden questions in one check request.
pub const MAX_GOLDEN: usize = 1000;
/// Longest golden question or query, bytes.
pub const MAX_GOLDEN_TEXT: usize = 4096;
/// Most failures listed in [`GoldenResults::failed`].
pub const MAX_FAILURES_LISTED: usize = 10;

/// A question (answered as by `POST /v1/ask`) or a query (`POST
/// /v1/query`), and the names every one of which its answers must include.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoldenQuestion {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    pub expect: Vec<String>,
}

impl GoldenQuestion {
    /// The text asked, for messages.
    pub fn text(&self) -> &str {
        self.question
            .as_deref()
            .or(self.query.as_deref())
            .unwrap_or("")
    }

    /// Why it cannot be asked, if it cannot.
    pub fn problem(&self) -> Option<String> {
        let text = match (&self.question, &self.query) {
            (Some(_), Some(_)) => return Some("give a question or a query, not both".into()),
            (None, None) => return Some("give a question or a query".into()),
            (Some(t), None) | (None, Some(t)) => t,
        };
        if text.trim().is_empty() {
            return Some("the question is empty".into());
        }
        if text.len() > MAX_GOLDEN_TEXT {
            return Some(format!("longer than {MAX_GOLDEN_TEXT} bytes"));
        }
        if self.expect.is_empty() {
            return Some(format!("`{}`: no expected answer (expect)", self.text()));
        }
        None
    }
}

/// Golden questions from text: one JSON object per line, blank lines and
/// `#` comments skipped; each checked ([`GoldenQuestion::problem`]).
/// `Err((line, why))` names the first bad line (from 1).
pub fn parse_golden_lines(text: &str) -> Result<Vec<GoldenQuestion>, (usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let q: GoldenQuestion = serde_json::from_str(line).map_err(|e| (i + 1, e.to_string()))?;
        if let Some(p) = q.problem() {
            return Err((i + 1, p));
        }
        out.push(q);
        if out.len() > MAX_GOLDEN {
            return Err((i + 1, format!("more than {MAX_GOLDEN} golden questions")));
        }
    }
    Ok(out)
}

/// `kgbox/{id}/bundle/check`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRequest {
    /// Echoed in [`GoldenResults::check`]: 1-64 characters of `A-Za-z0-9_-.`.
    pub check: String,
    #[serde(default)]
    pub questions: Vec<GoldenQuestion>,
}

/// `kgbox/{id}/bundle/rollback`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RollbackRequest {
    /// The digest of the bundle to roll back from (`DeviceStatus::digest`).
    pub from: String,
    /// Who asks (a rollout id), for the device's log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// One golden question its bundle got wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoldenFailure {
    pub question: String,
    /// Expected names that were not among the answers.
    pub missing: Vec<String>,
    /// The first answers given (at most 5).
    pub got: Vec<String>,
    /// `plan` (sent with the check) or `device` (`health.golden_file`).
    pub from: String,
    /// Why it could not be answered (an error code and message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A bundle's golden-question results, in the device's status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoldenResults {
    /// The check request answered.
    pub check: String,
    /// The digest of the bundle that answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    pub total: usize,
    pub passed: usize,
    /// The first failures ([`MAX_FAILURES_LISTED`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<GoldenFailure>,
    /// When it was checked (Unix seconds).
    pub checked_unix: u64,
    pub ms: f64,
}

impl GoldenResults {
    /// One line: `3 of 4 golden questions answered; `q`: missing X`.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{} of {} golden questions answered",
            self.passed, self.total
        );
        for f in &self.failed {
            s.push_str(&format!("; `{}` ({})", f.question, f.from));
            match &f.error {
                Some(e) => s.push_str(&format!(": {e}")),
                None => s.push_str(&format!(": not {}", f.missing.join(", "))),
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_questions_are_checked() {
        let q = |question: Option<&str>, query: Option<&str>, expect: &[&str]| GoldenQuestion {
            question: question.map(str::to_string),
            query: query.map(str::to_string),
            expect: expect.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(q(Some("who?"), None, &["A"]).problem(), None);
        assert_eq!(q(None, Some("[A] -> r"), &["B"]).problem(), None);
        assert!(q(Some("a"), Some("b"), &["A"]).problem().is_some());
        assert!(q(None, None, &["A"]).problem().is_some());
        assert!(q(Some(" "), None, &["A"]).problem().is_some());
        assert!(q(Some("who?"), None, &[])
            .problem()
            .unwrap()
            .contains("expect"));
        let long = "x".repeat(MAX_GOLDEN_TEXT + 1);
        assert!(q(Some(&long), None, &["A"]).problem().is_some());
        let bad: Result<GoldenQuestion, _> =
            serde_json::from_str(r#"{"question": "q", "expect": ["a"], "answer": 1}"#);
        assert!(bad.is_err(), "unknown fields are refused");
    }

    #[test]
    fn golden_lines_parse_and_name_the_bad_one() {
        let qs = parse_golden_lines(
            "# site\n{\"query\": \"[A] -> r\", \"expect\": [\"B\"]}\n\n{\"question\": \"q\", \"expect\": [\"C\"]}\n",
        )
        .unwrap();
        assert_eq!(qs.len(), 2);
        let (line, why) = parse_golden_lines("{\"query\": \"x\", \"expect\": []}\n").unwrap_err();
        assert_eq!(line, 1);
        assert!(why.contains("expect"), "{why}");
        assert_eq!(parse_golden_lines("\n{").unwrap_err().0, 2);
    }

    #[test]
    fn results_describe_their_failures() {
        let r = GoldenResults {
            check: "c1".into(),
            digest: None,
            total: 3,
            passed: 1,
            failed: vec![
                GoldenFailure {
                    question: "who directed X".into(),
                    missing: vec!["Y".into()],
                    got: vec![],
                    from: "plan".into(),
                    error: None,
                },
                GoldenFailure {
                    question: "[P-7] -> feeds".into(),
                    missing: vec!["Line 3".into()],
                    got: vec![],
                    from: "device".into(),
                    error: Some("unknown_entity: P-7".into()),
                },
            ],
            checked_unix: 0,
            ms: 1.0,
        };
        assert_eq!(
            r.describe(),
            "1 of 3 golden questions answered; `who directed X` (plan): not Y; \
             `[P-7] -> feeds` (device): unknown_entity: P-7"
        );
    }
}
