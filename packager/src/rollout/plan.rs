//! A rollout plan (TOML, docs/fleet.md): what to send, to whom, in which
//! waves, what a device must show to pass, and when to stop.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use kgbox_protocol::topics::valid_topic_level;
use kgbox_protocol::GoldenQuestion;
use serde::Deserialize;

/// Most bytes of golden questions sent in one check request.
pub const MAX_CHECK_BYTES: usize = 256 << 10;

/// The plan file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// The new bundle (paths are relative to the plan file).
    pub bundle: PathBuf,
    /// Make a delta from this bundle (signed with `key`) for the devices
    /// that run it.
    #[serde(default)]
    pub delta_from: Option<PathBuf>,
    #[serde(default)]
    pub key: Option<PathBuf>,
    /// Ready-made deltas (`kgbox-pack delta`), each sent to the devices
    /// that run its base.
    #[serde(default)]
    pub deltas: Vec<PathBuf>,
    pub broker: BrokerPlan,
    pub targets: Targets,
    #[serde(default)]
    pub waves: Waves,
    #[serde(default)]
    pub criteria: Criteria,
    #[serde(default)]
    pub abort: Abort,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrokerPlan {
    pub url: String,
    #[serde(default)]
    pub username: Option<String>,
    /// The environment variable that holds the password.
    #[serde(default)]
    pub password_env: Option<String>,
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
}

/// Which devices: a list, a group (`mqtt.group`), or every device with a
/// status on the broker.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Targets {
    #[serde(default)]
    pub devices: Vec<String>,
    #[serde(default)]
    pub group: Option<String>,
    #[serde(default)]
    pub all: bool,
    /// Wait at the start until this many targets reported a status.
    #[serde(default)]
    pub expect: Option<usize>,
    /// `sorted` (by id, the default), or `listed` (as in `devices`).
    #[serde(default)]
    pub order: Order,
    /// How long to collect statuses at the start.
    #[serde(default = "default_discover", deserialize_with = "duration")]
    pub discover_timeout: Duration,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    #[default]
    Sorted,
    Listed,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Waves {
    /// Devices in the first wave (0: none).
    pub canary: usize,
    /// These devices go first (in the canary, which grows to hold them
    /// all): the lab's, say.
    pub canary_devices: Vec<String>,
    /// The share of all targets updated after each further wave, percent,
    /// rising; the last is 100.
    pub percent: Vec<f64>,
    /// After a wave is installed, serve this long before its criteria are
    /// read (errors and latency since deploy need traffic).
    #[serde(deserialize_with = "duration")]
    pub wait: Duration,
    /// Give one device's push up after this long.
    #[serde(deserialize_with = "duration")]
    pub push_timeout: Duration,
    /// Devices pushed to at once.
    pub max_parallel: usize,
    /// Chunk size, bytes.
    pub chunk_bytes: u64,
    /// Let devices install a version older than theirs.
    pub allow_downgrade: bool,
}

impl Default for Waves {
    fn default() -> Waves {
        Waves {
            canary: 1,
            canary_devices: Vec::new(),
            percent: vec![10.0, 50.0, 100.0],
            wait: Duration::from_secs(60),
            push_timeout: Duration::from_secs(600),
            max_parallel: 16,
            chunk_bytes: 262_144,
            allow_downgrade: false,
        }
    }
}

/// What a device must show after its update.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Criteria {
    /// Golden questions, one JSON object per line (`question` or `query`,
    /// and `expect`).
    pub golden_file: Option<PathBuf>,
    /// Or inline.
    pub golden: Vec<GoldenQuestion>,
    /// The share of golden questions (plan's and device's) that must be
    /// answered, 0 to 1.
    pub min_golden_share: f64,
    /// Most server errors per request since the deploy, 0 to 1.
    pub max_error_rate: Option<f64>,
    /// Highest p99 latency since the deploy, milliseconds.
    pub max_p99_ms: Option<f64>,
    /// The error rate and p99 count only from this many requests on.
    pub min_requests: u64,
    /// How long a device has to answer the golden check.
    #[serde(deserialize_with = "duration")]
    pub check_timeout: Duration,
}

impl Default for Criteria {
    fn default() -> Criteria {
        Criteria {
            golden_file: None,
            golden: Vec::new(),
            min_golden_share: 1.0,
            max_error_rate: None,
            max_p99_ms: None,
            min_requests: 1,
            check_timeout: Duration::from_secs(120),
        }
    }
}

/// When to stop, and what then.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Abort {
    /// Stop when more than this share of the devices tried so far failed,
    /// percent (0: any failure stops the rollout).
    pub max_failed_percent: f64,
    /// Stop when more than this share could not be reached, percent.
    pub max_unreachable_percent: f64,
    /// `rollback` (every device this rollout updated goes back) or
    /// `leave` (they keep the new bundle; the rest are not touched).
    pub on_abort: OnAbort,
}

impl Default for Abort {
    fn default() -> Abort {
        Abort {
            max_failed_percent: 0.0,
            max_unreachable_percent: 50.0,
            on_abort: OnAbort::Rollback,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnAbort {
    Rollback,
    Leave,
}

/// A duration as people write it: `90s`, `10m`, `1h 30m`.
fn duration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(d)?;
    humantime::parse_duration(&text)
        .map_err(|e| serde::de::Error::custom(format!("{text:?}: {e} (e.g. 90s, 10m)")))
}

fn default_discover() -> Duration {
    Duration::from_secs(10)
}

impl Plan {
    /// Reads and checks a plan; its paths become relative to the caller.
    pub fn read(path: &Path) -> Result<(Plan, String)> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the plan {}", path.display()))?;
        let mut plan: Plan =
            toml::from_str(&text).with_context(|| format!("plan {}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let at = |p: &PathBuf| base.join(p);
        plan.bundle = base.join(&plan.bundle);
        plan.delta_from = plan.delta_from.as_ref().map(at);
        plan.key = plan.key.as_ref().map(at);
        plan.deltas = plan.deltas.iter().map(at).collect();
        plan.broker.ca_file = plan.broker.ca_file.as_ref().map(at);
        plan.criteria.golden_file = plan.criteria.golden_file.as_ref().map(at);
        plan.check()
            .with_context(|| format!("plan {}", path.display()))?;
        Ok((plan, text))
    }

    fn check(&self) -> Result<()> {
        let t = &self.targets;
        let ways = usize::from(!t.devices.is_empty())
            + usize::from(t.group.is_some())
            + usize::from(t.all);
        if ways != 1 {
            bail!("[targets]: give exactly one of devices = [...], group = \"G\" or all = true");
        }
        for d in t.devices.iter().chain(t.group.iter()) {
            if !valid_topic_level(d) {
                bail!("[targets]: {d:?} is not a device id or group (1-64 of A-Z a-z 0-9 _ - .)");
            }
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(d) = t.devices.iter().find(|d| !seen.insert(*d)) {
            bail!("[targets]: {d} is listed twice");
        }
        if t.order == Order::Listed && t.devices.is_empty() {
            bail!("[targets]: order = \"listed\" needs devices = [...]");
        }
        let w = &self.waves;
        let mut named = std::collections::HashSet::new();
        if let Some(d) = w.canary_devices.iter().find(|d| !named.insert(*d)) {
            bail!("[waves] canary_devices: {d} is listed twice");
        }
        for d in &w.canary_devices {
            if !valid_topic_level(d) {
                bail!("[waves] canary_devices: {d:?} is not a device id");
            }
            if !t.devices.is_empty() && !t.devices.contains(d) {
                bail!("[waves] canary_devices: {d} is not among the targets' devices");
            }
        }
        let mut last = 0.0;
        for &p in &w.percent {
            if !(p > last && p <= 100.0) {
                bail!(
                    "[waves] percent: each share must rise, between 0 and 100 ({p} after {last})"
                );
            }
            last = p;
        }
        if last != 100.0 {
            bail!("[waves] percent: the last wave must reach 100");
        }
        if w.max_parallel == 0 {
            bail!("[waves] max_parallel must be at least 1");
        }
        if w.chunk_bytes < 1024 || w.chunk_bytes > 64 << 20 {
            bail!("[waves] chunk_bytes must be between 1024 and 67108864");
        }
        if w.push_timeout.is_zero() {
            bail!("[waves] push_timeout must be more than 0");
        }
        let c = &self.criteria;
        if !(0.0..=1.0).contains(&c.min_golden_share) {
            bail!("[criteria] min_golden_share must be between 0 and 1");
        }
        if c.max_error_rate.is_some_and(|r| !(0.0..=1.0).contains(&r)) {
            bail!("[criteria] max_error_rate must be between 0 and 1");
        }
        if c.golden_file.is_some() && !c.golden.is_empty() {
            bail!("[criteria]: golden_file or golden = [...], not both");
        }
        for q in &c.golden {
            if let Some(p) = q.problem() {
                bail!("[criteria] golden: {p}");
            }
        }
        if c.golden.len() > kgbox_protocol::fleet::MAX_GOLDEN {
            bail!(
                "[criteria] golden: at most {} questions",
                kgbox_protocol::fleet::MAX_GOLDEN
            );
        }
        let a = &self.abort;
        for (name, v) in [
            ("max_failed_percent", a.max_failed_percent),
            ("max_unreachable_percent", a.max_unreachable_percent),
        ] {
            if !(0.0..=100.0).contains(&v) {
                bail!("[abort] {name} must be between 0 and 100");
            }
        }
        if self.delta_from.is_some() && self.key.is_none() {
            bail!("delta_from needs key (the secret key that signs the delta)");
        }
        if self.delta_from.is_some() && !self.deltas.is_empty() {
            bail!("delta_from or deltas = [...], not both");
        }
        Ok(())
    }

    /// The targets in rollout order: sorted (or as listed), the named
    /// canaries first.
    pub fn order(&self, mut ids: Vec<String>) -> Result<Vec<String>> {
        if self.targets.order == Order::Sorted {
            ids.sort();
        }
        let canaries = &self.waves.canary_devices;
        if let Some(c) = canaries.iter().find(|c| !ids.contains(c)) {
            bail!("[waves] canary_devices: {c} is not among the targets found");
        }
        ids.retain(|d| !canaries.contains(d));
        ids.splice(0..0, canaries.iter().cloned());
        Ok(ids)
    }

    /// The golden questions sent with each check.
    pub fn golden(&self) -> Result<Vec<GoldenQuestion>> {
        let Some(path) = &self.criteria.golden_file else {
            return Ok(self.criteria.golden.clone());
        };
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the golden questions {}", path.display()))?;
        kgbox_protocol::fleet::parse_golden_lines(&text)
            .map_err(|(line, why)| anyhow::anyhow!("{} line {line}: {why}", path.display()))
    }

    /// The golden questions, checked to fit in one check request a device
    /// takes (well under its MQTT packet limit).
    pub fn golden_checked(&self) -> Result<Vec<GoldenQuestion>> {
        let golden = self.golden()?;
        let bytes = serde_json::to_vec(&golden).map_or(0, |v| v.len());
        if bytes > MAX_CHECK_BYTES {
            bail!(
                "the golden questions take {bytes} bytes: at most {MAX_CHECK_BYTES} go in one check"
            );
        }
        Ok(golden)
    }
}

/// The size of each wave for `n` targets: the canary, then what each
/// percentage adds (waves that would add nobody are left out).
pub fn wave_sizes(waves: &Waves, n: usize) -> Vec<usize> {
    let mut sizes = Vec::new();
    let mut done = waves.canary.max(waves.canary_devices.len()).min(n);
    if done > 0 {
        sizes.push(done);
    }
    for &p in &waves.percent {
        let upto = ((p * n as f64 / 100.0).ceil() as usize).clamp(done, n);
        if upto > done {
            sizes.push(upto - done);
            done = upto;
        }
    }
    sizes
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn plan(text: &str) -> Result<Plan> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("plan.toml");
        std::fs::write(&p, text).unwrap();
        Plan::read(&p).map(|(p, _)| p)
    }

    const MIN: &str = "bundle = \"b.kgb\"\n[broker]\nurl = \"mqtt://h\"\n";

    #[test]
    fn reads_a_plan_with_defaults() {
        let p = plan(&format!("{MIN}[targets]\ngroup = \"plant\"\n")).unwrap();
        assert!(p.bundle.ends_with("b.kgb") && p.bundle.is_absolute());
        assert_eq!(p.waves.canary, 1);
        assert_eq!(p.abort.on_abort, OnAbort::Rollback);
        assert_eq!(p.criteria.min_golden_share, 1.0);
        let p = plan(&format!(
            "{MIN}[targets]\ndevices = [\"a\", \"b\"]\norder = \"listed\"\n\
             [waves]\ncanary = 2\npercent = [50, 100]\nwait = \"2s\"\n\
             [criteria]\nmax_p99_ms = 200\n[[criteria.golden]]\nquery = \"[X] -> r\"\nexpect = [\"Y\"]\n\
             [abort]\nmax_failed_percent = 5\non_abort = \"leave\"\n"
        ))
        .unwrap();
        assert_eq!(p.waves.wait, Duration::from_secs(2));
        assert_eq!(p.criteria.golden.len(), 1);
        assert_eq!(p.abort.on_abort, OnAbort::Leave);
    }

    #[test]
    fn refuses_bad_plans() {
        for (text, why) in [
            ("[targets]\n", "exactly one of"),
            ("[targets]\ngroup = \"a\"\nall = true\n", "exactly one of"),
            ("[targets]\ndevices = [\"a/b\"]\n", "not a device id"),
            ("[targets]\ndevices = [\"a\", \"a\"]\n", "twice"),
            (
                "[targets]\nall = true\n[waves]\npercent = [50, 20, 100]\n",
                "rise",
            ),
            (
                "[targets]\nall = true\n[waves]\npercent = [50]\n",
                "reach 100",
            ),
            (
                "[targets]\nall = true\n[abort]\nmax_failed_percent = 101\n",
                "between 0 and 100",
            ),
            (
                "[targets]\nall = true\n[[criteria.golden]]\nquery = \"x\"\nexpect = []\n",
                "expect",
            ),
            ("[targets]\nall = true\nsurprise = 1\n", "unknown field"),
            (
                "[targets]\nall = true\n[waves]\ncanary_devices = [\"a\", \"a\"]\n",
                "twice",
            ),
            (
                "delta_from = \"a.kgb\"\n[targets]\nall = true\n",
                "needs key",
            ),
        ] {
            let text = if why == "needs key" {
                format!("delta_from = \"a.kgb\"\n{MIN}[targets]\nall = true\n")
            } else {
                format!("{MIN}{text}")
            };
            let e = format!("{:#}", plan(&text).unwrap_err());
            assert!(e.contains(why), "{text}: {e}");
        }
    }

    #[test]
    fn orders_targets_canaries_first() {
        let mut p = plan(&format!(
            "{MIN}[targets]\nall = true\n[waves]\ncanary_devices = [\"lab-2\", \"lab-1\"]\n"
        ))
        .unwrap();
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            p.order(ids(&["b", "lab-1", "a", "lab-2"])).unwrap(),
            ids(&["lab-2", "lab-1", "a", "b"])
        );
        let e = p.order(ids(&["a", "lab-2"])).unwrap_err();
        assert!(e.to_string().contains("lab-1"), "{e}");
        p.waves.canary_devices.clear();
        p.targets.order = Order::Listed;
        assert_eq!(p.order(ids(&["b", "a"])).unwrap(), ids(&["b", "a"]));
    }

    #[test]
    fn sizes_waves() {
        let w = |canary, percent: &[f64]| Waves {
            canary,
            percent: percent.to_vec(),
            ..Waves::default()
        };
        assert_eq!(wave_sizes(&w(5, &[50.0, 100.0]), 50), [5, 20, 25]);
        assert_eq!(wave_sizes(&w(2, &[10.0, 50.0, 100.0]), 50), [2, 3, 20, 25]);
        assert_eq!(wave_sizes(&w(0, &[100.0]), 7), [7]);
        assert_eq!(wave_sizes(&w(3, &[10.0, 100.0]), 2), [2]);
        assert_eq!(wave_sizes(&w(1, &[100.0]), 0), Vec::<usize>::new());
        let lab = Waves {
            canary_devices: vec!["lab-1".into(), "lab-2".into(), "lab-3".into()],
            ..w(1, &[50.0, 100.0])
        };
        assert_eq!(wave_sizes(&lab, 10), [3, 2, 5]);
        assert_eq!(
            wave_sizes(&w(1, &[10.0, 20.0, 100.0]), 1000)
                .iter()
                .sum::<usize>(),
            1000
        );
    }
}
