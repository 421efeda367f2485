//! Broker URLs: `mqtt://host[:port]` (plain TCP, port 1883 by default) and
//! `mqtts://host[:port]` (TLS, port 8883 by default), parsed by the `url`
//! crate (WHATWG URL). An IPv6 host is written in brackets
//! (`mqtt://[::1]:1883`); a trailing `/` is ignored. Credentials do not
//! belong in the URL (they would end up in logs and `status` output): the
//! user name and the password's environment variable are settings of their own.

use std::fmt;
use std::str::FromStr;

use url::{Host, Url};

/// The default port of `mqtt://`.
pub const MQTT_PORT: u16 = 1883;
/// The default port of `mqtts://`.
pub const MQTTS_PORT: u16 = 8883;

/// A parsed broker URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerUrl {
    /// A name, an IPv4 address, or an IPv6 address without its brackets.
    pub host: String,
    pub port: u16,
    /// `mqtts://`.
    pub tls: bool,
}

/// Why a broker URL is not one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BrokerUrlError {
    #[error("unknown scheme (expected mqtt://host:port or mqtts://host:port)")]
    UnknownScheme,
    #[error("the port is not a number (expected mqtt://host:port or mqtts://host:port)")]
    BadPort,
    #[error("no host (expected mqtt://host:port or mqtts://host:port)")]
    NoHost,
    #[error("a broker URL carries no user name or password (set the MQTT user name and password environment variable instead)")]
    Credentials,
    #[error("a broker URL has no path, query or fragment (expected mqtt://host:port or mqtts://host:port)")]
    Path,
    #[error("not a URL: {0} (expected mqtt://host:port or mqtts://host:port)")]
    Invalid(url::ParseError),
}

impl BrokerUrl {
    pub fn parse(s: &str) -> Result<BrokerUrl, BrokerUrlError> {
        let url = Url::parse(s).map_err(|e| match e {
            url::ParseError::InvalidPort => BrokerUrlError::BadPort,
            url::ParseError::EmptyHost => BrokerUrlError::NoHost,
            url::ParseError::RelativeUrlWithoutBase => BrokerUrlError::UnknownScheme,
            other => BrokerUrlError::Invalid(other),
        })?;
        let tls = match url.scheme() {
            "mqtt" => false,
            "mqtts" => true,
            _ => return Err(BrokerUrlError::UnknownScheme),
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err(BrokerUrlError::Credentials);
        }
        if !matches!(url.path(), "" | "/") || url.query().is_some() || url.fragment().is_some() {
            return Err(BrokerUrlError::Path);
        }
        let host = match url.host() {
            Some(Host::Domain(d)) => d.to_string(),
            Some(Host::Ipv4(a)) => a.to_string(),
            Some(Host::Ipv6(a)) => a.to_string(),
            None => String::new(),
        };
        if host.is_empty() {
            return Err(BrokerUrlError::NoHost);
        }
        let port = url
            .port()
            .unwrap_or(if tls { MQTTS_PORT } else { MQTT_PORT });
        Ok(BrokerUrl { host, port, tls })
    }
}

impl FromStr for BrokerUrl {
    type Err = BrokerUrlError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BrokerUrl::parse(s)
    }
}

impl fmt::Display for BrokerUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.tls { "mqtts" } else { "mqtt" };
        if self.host.contains(':') {
            write!(f, "{scheme}://[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{scheme}://{}:{}", self.host, self.port)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(url: &str) -> (String, u16, bool) {
        let b = BrokerUrl::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
        (b.host, b.port, b.tls)
    }

    #[test]
    fn parses_schemes_ports_and_hosts() {
        assert_eq!(ok("mqtt://10.0.0.1:1884"), ("10.0.0.1".into(), 1884, false));
        assert_eq!(ok("mqtt://broker"), ("broker".into(), 1883, false));
        assert_eq!(ok("mqtts://broker"), ("broker".into(), 8883, true));
        assert_eq!(ok("mqtts://broker:9000/"), ("broker".into(), 9000, true));
        assert_eq!(ok("mqtt://[::1]:1883"), ("::1".into(), 1883, false));
        assert_eq!(ok("mqtts://[::1]"), ("::1".into(), 8883, true));
        assert_eq!(
            ok("mqtt://[2001:DB8::0:1]:1884"),
            ("2001:db8::1".into(), 1884, false)
        );
        assert_eq!(ok("mqtt://127.0.0.1:1883").0, "127.0.0.1");
        assert_eq!(ok("MQTT://broker.lan:1"), ("broker.lan".into(), 1, false));
    }

    #[test]
    fn refuses_credentials_in_the_url() {
        for url in [
            "mqtt://user@host:1883",
            "mqtt://user:secret@host:1883",
            "mqtts://:secret@[::1]",
        ] {
            assert_eq!(
                BrokerUrl::parse(url),
                Err(BrokerUrlError::Credentials),
                "{url}"
            );
        }
    }

    #[test]
    fn refuses_paths_queries_fragments_and_junk() {
        for url in ["mqtt://host/topic", "mqtt://host?x=1", "mqtt://host#f"] {
            assert_eq!(BrokerUrl::parse(url), Err(BrokerUrlError::Path), "{url}");
        }
        assert_eq!(
            BrokerUrl::parse("mqtt://host:65536"),
            Err(BrokerUrlError::BadPort)
        );
        assert_eq!(
            BrokerUrl::parse("broker:1883"),
            Err(BrokerUrlError::UnknownScheme)
        );
        assert_eq!(BrokerUrl::parse(""), Err(BrokerUrlError::UnknownScheme));
        assert!(matches!(
            BrokerUrl::parse("mqtt://[::1:1883"),
            Err(BrokerUrlError::Invalid(_))
        ));
        assert!(matches!(
            BrokerUrl::parse("mqtt://bro ker:1883"),
            Err(BrokerUrlError::Invalid(_))
        ));
    }

    #[test]
    fn refuses_what_is_not_a_broker() {
        assert_eq!(
            BrokerUrl::parse("tcp://x:1"),
            Err(BrokerUrlError::UnknownScheme)
        );
        assert_eq!(
            BrokerUrl::parse("mqtt://x:port"),
            Err(BrokerUrlError::BadPort)
        );
        assert_eq!(
            BrokerUrl::parse("mqtt://:1883"),
            Err(BrokerUrlError::NoHost)
        );
        assert_eq!(BrokerUrl::parse("mqtt://"), Err(BrokerUrlError::NoHost));
        assert_eq!(
            BrokerUrlError::BadPort.to_string(),
            "the port is not a number (expected mqtt://host:port or mqtts://host:port)"
        );
    }

    #[test]
    fn displays_a_url_that_parses_back() {
        for url in ["mqtt://h:1", "mqtts://[::1]:8883"] {
            let b = BrokerUrl::parse(url).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(b.to_string(), url);
            assert_eq!(BrokerUrl::parse(&b.to_string()), Ok(b));
        }
    }
}
