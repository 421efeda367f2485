//! What a key may do (`read`, `read:BUNDLE`, `admin`) and how often
//! (`20/s`, `600/min`, `10000/h`).

use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One permission of a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Ask, query, SPARQL, chat, entities, the console, status and metrics:
    /// of every bundle (`None`) or of the one named.
    Read(Option<String>),
    /// The admin API (deploy, roll back) and everything `read` may do.
    Admin,
}

impl Scope {
    /// Whether this scope lets its key read `bundle`.
    pub fn reads(&self, bundle: &str) -> bool {
        match self {
            Scope::Admin | Scope::Read(None) => true,
            Scope::Read(Some(name)) => name == bundle,
        }
    }
}

impl FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "admin" => Ok(Scope::Admin),
            "read" | "read:*" => Ok(Scope::Read(None)),
            other => match other.strip_prefix("read:") {
                Some(name) if !name.is_empty() && !name.contains(char::is_whitespace) => {
                    Ok(Scope::Read(Some(name.to_string())))
                }
                _ => Err(format!(
                    "unknown scope {other:?}: the scopes are read (every bundle), read:BUNDLE (one bundle's name) and admin"
                )),
            },
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Admin => f.write_str("admin"),
            Scope::Read(None) => f.write_str("read"),
            Scope::Read(Some(name)) => write!(f, "read:{name}"),
        }
    }
}

/// A request rate: `count` requests per `per`, in a burst of `count` at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub count: NonZeroU32,
    pub per: Duration,
}

impl FromStr for Rate {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!("bad rate {s:?}: write requests per second, minute or hour, e.g. 20/s, 600/min, 10000/h")
        };
        let (count, unit) = s.trim().split_once('/').ok_or_else(bad)?;
        let count: u32 = count.trim().parse().map_err(|_| bad())?;
        let count = NonZeroU32::new(count).ok_or_else(bad)?;
        let per = match unit.trim() {
            "s" | "sec" | "second" => Duration::from_secs(1),
            "m" | "min" | "minute" => Duration::from_secs(60),
            "h" | "hour" => Duration::from_secs(3600),
            _ => return Err(bad()),
        };
        Ok(Rate { count, per })
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.per.as_secs() {
            1 => "s",
            60 => "min",
            _ => "h",
        };
        write!(f, "{}/{unit}", self.count)
    }
}

macro_rules! serde_as_string {
    ($t:ty) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}
serde_as_string!(Scope);
serde_as_string!(Rate);
