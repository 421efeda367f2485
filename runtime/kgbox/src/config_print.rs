//! The configuration as TOML, for `kgbox config defaults` and
//! `kgbox config check`.
//!
//! The output has every key, in the order of the config structs: a table's
//! plain keys, then its sub-tables. An optional key that is not set is a
//! comment, `# key = (not set)`; a key whose value came from a `KGBOX_*`
//! variable (or a flag) ends with a note, `listen = "0.0.0.0:8080"  # from
//! KGBOX_HTTP__LISTEN`. The output is itself a valid config file. Secrets never
//! appear: the configuration holds only the names of the variables that
//! hold them, and those variables are not configuration keys.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use figment::{Figment, Provider};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::config::{config_env, Config};
use crate::error::{Error, Result};

/// What an optional key that is not set shows as its value (in a comment).
pub const NOT_SET: &str = "(not set)";

/// Where keys' values came from: dotted key (`http.listen`) to a source
/// (`KGBOX_HTTP__LISTEN`, `--data-dir`). Keys not listed have their default
/// or the file's value.
pub type Notes = BTreeMap<String, String>;

/// A configuration as `serve` loads it, with the keys set by `KGBOX_*`
/// variables.
#[derive(Debug, Clone)]
pub struct Effective {
    pub config: Config,
    /// The file read, if any (see [`Config::file_path`]).
    pub file: Option<PathBuf>,
    pub notes: Notes,
}

impl Effective {
    /// Loads and checks as [`Config::load`] does, noting the keys whose value
    /// came from the environment.
    pub fn load(file: Option<&Path>) -> Result<Effective> {
        let fig = Config::figment(file)?;
        let config = Config::from_figment(&fig)?;
        let notes = env_notes(&fig, &config)?;
        Ok(Effective {
            config,
            file: Config::file_path(file),
            notes,
        })
    }

    /// The configuration as TOML, with the notes.
    pub fn to_toml(&self) -> Result<String> {
        to_toml(&self.config, &self.notes)
    }
}

/// Checks what [`Config::load`] leaves to the moment a file is used: the
/// trusted keys parse, the MQTT TLS files (when MQTT is on), the local
/// planner's model (when it is the planner) and the SPARQL store's auth
/// header and CA files can be read.
pub fn check_files(cfg: &Config) -> Result<()> {
    cfg.trusted_keys()?;
    let m = &cfg.mqtt;
    if m.enabled {
        for (key, path) in [
            ("mqtt.ca_file", &m.ca_file),
            ("mqtt.client_cert", &m.client_cert),
            ("mqtt.client_key", &m.client_key),
        ] {
            if let Some(path) = path {
                readable(key, path)?;
            }
        }
    }
    if cfg.planner.kind.chat() == Some(kgbox_qa::PlannerKind::Local) {
        if let Some(path) = &cfg.llm.local_model {
            readable("llm.local_model", path)?;
        }
    }
    let store = &cfg.sparql_store;
    for (key, path) in [
        ("auth_header_file", &store.auth_header_file),
        ("ca_file", &store.ca_file),
    ] {
        if let Some(path) = path {
            readable(&format!("sparql_store.{key}"), path)?;
        }
    }
    for (name, o) in &store.bundles {
        for (key, path) in [
            ("auth_header_file", &o.auth_header_file),
            ("ca_file", &o.ca_file),
        ] {
            if let Some(path) = path {
                readable(&format!("sparql_store.bundles.{name}.{key}"), path)?;
            }
        }
    }
    Ok(())
}

fn readable(key: &str, path: &Path) -> Result<()> {
    std::fs::File::open(path)
        .and_then(|f| f.metadata())
        .and_then(|md| {
            if md.is_file() {
                Ok(())
            } else {
                Err(std::io::Error::other("not a file"))
            }
        })
        .map_err(|e| Error::Config(format!("{key} {}: {e}", path.display())))
}

/// The variables holding secrets (`admin.token_env`, `mqtt.password_env`,
/// `llm.api_key_env`, `sparql_store.auth_header_env`), each with whether it
/// is set; never their values.
pub fn secrets(cfg: &Config) -> Vec<(&'static str, String, bool)> {
    [
        ("admin.token_env", &cfg.admin.token_env),
        ("mqtt.password_env", &cfg.mqtt.password_env),
        ("llm.api_key_env", &cfg.llm.api_key_env),
        (
            "sparql_store.auth_header_env",
            &cfg.sparql_store.auth_header_env,
        ),
    ]
    .into_iter()
    .map(|(key, var)| {
        let set = std::env::var_os(var).is_some_and(|v| !v.is_empty());
        (key, var.clone(), set)
    })
    .collect()
}

/// The keys of `cfg` whose value in `fig` came from a `KGBOX_*` variable,
/// each with that variable's name.
pub fn env_notes(fig: &Figment, cfg: &Config) -> Result<Notes> {
    let env = config_env(Vec::new()).metadata().name;
    let vars: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .collect();
    Ok(keys(cfg)?
        .into_iter()
        .filter(|key| fig.find_metadata(key).is_some_and(|m| m.name == env))
        .map(|key| {
            let var = env_var_for(&key, &vars);
            (key, var)
        })
        .collect())
}

/// The variable among `vars` that sets `key` (`http.listen`): the one for
/// the key itself or for a table holding it, else the canonical name.
fn env_var_for(key: &str, vars: &[String]) -> String {
    let parts: Vec<&str> = key.split('.').collect();
    for n in (1..=parts.len()).rev() {
        let want = parts[..n].join("__");
        let found = vars.iter().find(|v| {
            v.get(..6).is_some_and(|p| p.eq_ignore_ascii_case("KGBOX_"))
                && v.get(6..)
                    .is_some_and(|rest| rest.eq_ignore_ascii_case(&want))
        });
        if let Some(v) = found {
            return v.clone();
        }
    }
    format!("KGBOX_{}", parts.join("__").to_ascii_uppercase())
}

/// Every key of `cfg` as a dotted path (`http.listen`), optional keys that
/// are not set included, in the order [`to_toml`] prints them.
pub fn keys(cfg: &Config) -> Result<Vec<String>> {
    fn walk(prefix: &str, entries: &[(String, Node)], out: &mut Vec<String>) {
        for (k, node) in entries {
            if !matches!(node, Node::Table(_)) {
                out.push(join(prefix, k));
            }
        }
        for (k, node) in entries {
            if let Node::Table(sub) = node {
                walk(&join(prefix, k), sub, out);
            }
        }
    }
    let mut out = Vec::new();
    walk("", &tree(cfg)?, &mut out);
    Ok(out)
}

/// `cfg` as TOML (see the module docs), each key in `notes` followed by
/// `# from SOURCE`.
pub fn to_toml(cfg: &Config, notes: &Notes) -> Result<String> {
    let mut out = String::new();
    render(&mut out, "", "", &tree(cfg)?, notes);
    Ok(out)
}

fn render(out: &mut String, dotted: &str, header: &str, entries: &[(String, Node)], notes: &Notes) {
    for (k, node) in entries {
        match node {
            Node::Unset => out.push_str(&format!("# {} = {NOT_SET}\n", bare_key(k))),
            Node::Value(v) => {
                out.push_str(&format!("{} = {v}", bare_key(k)));
                if let Some(source) = notes.get(&join(dotted, k)) {
                    out.push_str(&format!("  # from {source}"));
                }
                out.push('\n');
            }
            Node::Table(_) => {}
        }
    }
    for (k, node) in entries {
        if let Node::Table(sub) = node {
            let header = if header.is_empty() {
                bare_key(k)
            } else {
                format!("{header}.{}", bare_key(k))
            };
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&format!("[{header}]\n"));
            render(out, &join(dotted, k), &header, sub, notes);
        }
    }
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

/// `key` as a TOML key: bare when it can be, else quoted.
fn bare_key(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if bare {
        key.to_string()
    } else {
        toml::Value::String(key.to_string()).to_string()
    }
}

/// The configuration as a tree in struct order, optional keys included.
/// (`toml::Value` drops `None` and sorts keys, so it goes through JSON,
/// which keeps both.)
fn tree(cfg: &Config) -> Result<Vec<(String, Node)>> {
    let bad = |e: String| Error::Config(format!("cannot print the configuration as TOML: {e}"));
    let json = serde_json::to_string(cfg).map_err(|e| bad(e.to_string()))?;
    match serde_json::from_str::<Node>(&json).map_err(|e| bad(e.to_string()))? {
        Node::Table(entries) => Ok(entries),
        _ => Err(bad("not a table".into())),
    }
}

/// A configuration value in struct order.
#[derive(Debug)]
enum Node {
    /// An optional key that is not set.
    Unset,
    Value(toml::Value),
    Table(Vec<(String, Node)>),
}

impl Node {
    fn into_value<E: de::Error>(self) -> Result<toml::Value, E> {
        match self {
            Node::Unset => Err(E::custom("an unset value inside an array")),
            Node::Value(v) => Ok(v),
            Node::Table(entries) => {
                let mut t = toml::Table::new();
                for (k, n) in entries {
                    if !matches!(n, Node::Unset) {
                        t.insert(k, n.into_value()?);
                    }
                }
                Ok(toml::Value::Table(t))
            }
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a configuration value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Value(toml::Value::Boolean(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Value(toml::Value::Integer(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        i64::try_from(v)
            .map(|v| Node::Value(toml::Value::Integer(v)))
            .map_err(|_| E::custom(format!("{v} is larger than a TOML integer")))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Value(toml::Value::Float(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Value(toml::Value::String(v.to_string())))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Unset)
    }

    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Unset)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        Node::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(n) = seq.next_element::<Node>()? {
            items.push(n.into_value()?);
        }
        Ok(Node::Value(toml::Value::Array(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Node>()? {
            entries.push((k, v));
        }
        Ok(Node::Table(entries))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use figment::providers::{Format, Serialized, Toml};

    use super::*;

    fn parse(text: &str) -> Config {
        Figment::from(Serialized::defaults(Config::default()))
            .merge(Toml::string(text))
            .extract()
            .unwrap()
    }

    #[test]
    fn defaults_round_trip() {
        let text = to_toml(&Config::default(), &Notes::new()).unwrap();
        let back = parse(&text);
        assert_eq!(
            serde_json::to_value(&back).unwrap(),
            serde_json::to_value(Config::default()).unwrap()
        );
    }

    #[test]
    fn order_tables_and_unset_keys() {
        let text = to_toml(&Config::default(), &Notes::new()).unwrap();
        // Plain keys first, in struct order, then the tables in struct order.
        assert!(text.starts_with("data_dir = \"/var/lib/kgbox\"\ncompatible = "));
        let trust = text.find("\n[trust]\n").unwrap();
        let http = text.find("\n[http]\n").unwrap();
        let mqtt = text.find("\n[mqtt]\n").unwrap();
        assert!(trust < http && http < mqtt);
        assert!(text.contains("\n# device_id = (not set)\n"));
        assert!(text.contains("\nlisten = \"127.0.0.1:8080\"\n"));
        assert!(!text.contains("# from"));
    }

    #[test]
    fn set_options_and_notes() {
        let mut cfg = Config::default();
        cfg.mqtt.device_id = Some("edge-7".into());
        cfg.trust.keys = vec!["/etc/kgbox/keys/a.pub".into()];
        let notes = Notes::from([("http.listen".to_string(), "KGBOX_HTTP__LISTEN".to_string())]);
        let text = to_toml(&cfg, &notes).unwrap();
        assert!(text.contains("\ndevice_id = \"edge-7\"\n"));
        assert!(text.contains("\nkeys = [\"/etc/kgbox/keys/a.pub\"]\n"));
        assert!(text.contains("\nlisten = \"127.0.0.1:8080\"  # from KGBOX_HTTP__LISTEN\n"));
        let back = parse(&text);
        assert_eq!(back.mqtt.device_id.as_deref(), Some("edge-7"));
    }

    #[test]
    fn keys_are_dotted_and_complete() {
        let keys = keys(&Config::default()).unwrap();
        for k in [
            "data_dir",
            "demo",
            "trust.keys",
            "http.listen",
            "mqtt.device_id",
            "llm.endpoint",
        ] {
            assert!(keys.iter().any(|x| x == k), "{k} missing from {keys:?}");
        }
        assert!(!keys.iter().any(|k| k == "http" || k == "mqtt"));
    }

    #[test]
    fn too_large_integers_are_an_error() {
        let mut cfg = Config::default();
        cfg.query.max_edge_visits = u64::MAX;
        let e = to_toml(&cfg, &Notes::new()).unwrap_err().to_string();
        assert!(e.contains("larger than a TOML integer"), "{e}");
    }

    #[test]
    fn load_errors_name_the_key_and_the_source() {
        let fig = Figment::from(Serialized::defaults(Config::default()))
            .merge(Toml::string("[http]\nlisen = \"x\"\n"));
        let e = Config::from_figment(&fig).unwrap_err().to_string();
        assert!(
            e.starts_with("configuration: http.lisen: unknown field"),
            "{e}"
        );
        let fig = Figment::from(Serialized::defaults(Config::default()))
            .merge(Toml::string("[mqtt]\nbroker = \"tcp://x\"\n"));
        let e = Config::from_figment(&fig).unwrap_err().to_string();
        assert!(e.contains("mqtt.broker \"tcp://x\": unknown scheme"), "{e}");
    }

    #[test]
    fn env_var_names() {
        let vars = vec!["KGBOX_HTTP__LISTEN".to_string(), "kgbox_mqtt".to_string()];
        assert_eq!(env_var_for("http.listen", &vars), "KGBOX_HTTP__LISTEN");
        assert_eq!(env_var_for("mqtt.broker", &vars), "kgbox_mqtt");
        assert_eq!(env_var_for("log.level", &vars), "KGBOX_LOG__LEVEL");
    }
}
