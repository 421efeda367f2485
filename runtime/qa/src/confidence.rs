//! How far to trust a question's answers ([`Confidence`]), which every
//! interface says alongside them: answers of a repaired query are a guess
//! (the planned query found nothing, or too much, and repair changed it),
//! and answers whose best score is under the pipeline's low-confidence
//! bound (the one that sends an LLM query to the retrieval strategies,
//! [`crate::strategies::StrategyOptions::min_score`]) are a weak match.

use kgbox_query::repair::{RepairKind, RepairReport};
use serde::Serialize;

/// How far to trust the answers of a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// The planned query answered, its best answer scoring at least the
    /// low-confidence bound.
    High,
    /// No answer, or the best one scores under the low-confidence bound.
    Low,
    /// The answers come from a repaired query, not the planned one.
    Repaired,
}

impl Confidence {
    /// The name on the wire: `high`, `low` or `repaired`.
    pub fn name(self) -> &'static str {
        match self {
            Confidence::High => "high",
            Confidence::Low => "low",
            Confidence::Repaired => "repaired",
        }
    }
}

impl std::fmt::Display for Confidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The confidence of answers whose best score is `best` (`None`: no
/// answer), and the caveat that says why it is not high. `repair` is the
/// repair whose query gave the answers, when one did; `min_score` the
/// low-confidence bound.
pub fn judge(
    best: Option<f32>,
    repair: Option<&RepairReport>,
    min_score: f32,
) -> (Confidence, Option<String>) {
    let Some(best) = best else {
        return (Confidence::Low, Some("no answer was found".to_string()));
    };
    if let Some(r) = repair {
        if let Some(repaired) = &r.repaired {
            let why = match r.kind {
                RepairKind::Relax => "found nothing; this is a guess".to_string(),
                RepairKind::Tighten => format!(
                    "found {} answers and was narrowed by the question's other entities",
                    r.answers_before
                ),
            };
            return (
                Confidence::Repaired,
                Some(format!(
                    "repaired query: {repaired} — the question's query {} {why}",
                    r.original
                )),
            );
        }
    }
    if best < min_score {
        return (
            Confidence::Low,
            Some(format!(
                "the best answer scores {best:.2}, under {min_score}: a weak match"
            )),
        );
    }
    (Confidence::High, None)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn report(kind: RepairKind, repaired: Option<&str>) -> RepairReport {
        RepairReport {
            kind,
            original: "\"X\" -> member".into(),
            repaired: repaired.map(str::to_string),
            edits: Vec::new(),
            answers_before: if kind == RepairKind::Tighten { 80 } else { 0 },
            answers_after: 1,
            candidates: 1,
            edge_visits: 0,
            exhausted: false,
            ms: 0.0,
            excluded: Vec::new(),
        }
    }

    #[test]
    fn repaired_answers_are_labelled_before_their_score() {
        let relaxed = report(RepairKind::Relax, Some("\"X\" -> employs"));
        let (c, caveat) = judge(Some(1.0), Some(&relaxed), 0.5);
        assert_eq!(c, Confidence::Repaired);
        assert_eq!(
            caveat.as_deref(),
            Some(
                "repaired query: \"X\" -> employs — the question's query \"X\" -> member found nothing; this is a guess"
            )
        );
        let tightened = report(
            RepairKind::Tighten,
            Some("AND(\"X\" -> member, \"Y\" -> r)"),
        );
        let (c, caveat) = judge(Some(0.2), Some(&tightened), 0.5);
        assert_eq!(c, Confidence::Repaired);
        assert!(caveat.unwrap().contains("found 80 answers"));
    }

    #[test]
    fn otherwise_the_score_decides() {
        let nothing = report(RepairKind::Relax, None);
        assert_eq!(
            judge(Some(1.0), Some(&nothing), 0.5),
            (Confidence::High, None)
        );
        assert_eq!(judge(Some(0.5), None, 0.5), (Confidence::High, None));
        let (c, caveat) = judge(Some(0.25), None, 0.5);
        assert_eq!(c, Confidence::Low);
        assert!(caveat.unwrap().contains("0.25, under 0.5"));
        assert_eq!(judge(None, Some(&nothing), 0.5).0, Confidence::Low);
        assert_eq!(Confidence::Repaired.to_string(), "repaired");
        assert_eq!(
            serde_json::to_value(Confidence::Low).unwrap(),
            serde_json::json!("low")
        );
    }
}
