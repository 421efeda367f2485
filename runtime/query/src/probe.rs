//! Probe queries: a bundle's health check (the manifest's `probes`), run by
//! the packager before signing and by a device before it marks an install
//! good.

use std::time::Instant;

use kgbox_bundle::{Kg, Probe};

use crate::exec::{ExecOptions, Projector};
use crate::parse::ParseLimits;
use crate::run::run_query_with;

/// What one probe found (a protocol type: it travels in deployment reports).
pub use kgbox_protocol::ProbeOutcome;

/// Runs one probe: it passes when the query runs, returns at least one
/// answer, and every expected name is among its answers.
pub fn run_probe(
    kg: &Kg<'_>,
    probe: &Probe,
    limits: &ParseLimits,
    opts: &ExecOptions,
    projector: Option<&dyn Projector>,
) -> ProbeOutcome {
    let t = Instant::now();
    // Every answer, so an expected name is found at any rank.
    let opts = ExecOptions {
        top_k: kg.entity_count().max(1),
        max_paths: 0,
        ..opts.clone()
    };
    let result = run_query_with(kg, &probe.query, limits, &opts, projector);
    let ms = t.elapsed().as_secs_f64() * 1e3;
    match result {
        Err(e) => ProbeOutcome {
            query: probe.query.clone(),
            passed: false,
            answers: 0,
            missing: probe.expect.clone(),
            error: Some(e.to_string()),
            ms,
        },
        Ok((answers, _)) => {
            let names: std::collections::HashSet<&str> = answers
                .answers
                .iter()
                .filter_map(|a| kg.entity_name(a.entity))
                .collect();
            let missing: Vec<String> = probe
                .expect
                .iter()
                .filter(|e| !names.contains(e.as_str()))
                .cloned()
                .collect();
            ProbeOutcome {
                query: probe.query.clone(),
                passed: !answers.answers.is_empty() && missing.is_empty(),
                answers: answers.answers.len(),
                missing,
                error: None,
                ms,
            }
        }
    }
}

/// Parses a probes file: one probe per line, `QUERY` or
/// `QUERY<TAB>expected name|another name`; blank lines and `#` comments
/// are skipped. Errors name the line.
pub fn parse_probes(text: &str) -> Result<Vec<Probe>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let (query, expect) = match line.split_once('\t') {
            Some((q, e)) => (q, e),
            None => (line, ""),
        };
        let query = query.trim();
        if query.is_empty() {
            return Err(format!("line {}: empty query", i + 1));
        }
        let expect: Vec<String> = expect
            .split('|')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        out.push(Probe {
            query: query.to_string(),
            expect,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_queries_and_expectations() {
        let p = parse_probes("# comment\n\n\"A\" -> r\tB|C \n\"X\" -> s\n").expect("parses");
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].query, "\"A\" -> r");
        assert_eq!(p[0].expect, vec!["B".to_string(), "C".to_string()]);
        assert!(p[1].expect.is_empty());
        assert_eq!(
            parse_probes("ok\n\t\tB\n").unwrap_err(),
            "line 2: empty query"
        );
    }
}
