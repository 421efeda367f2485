//! Broker URLs: `mqtt://host[:port]` (plain TCP, port 1883 by default) and
//! `mqtts://host[:port]` (TLS, port 8883 by default). An IPv6 host may be
//! written in brackets (`mqtt://[::1]:1883`); a trailing `/` is ignored.

use std::fmt;
use std::str::FromStr;

/// The default port of `mqtt://`.
pub const MQTT_PORT: u16 = 1883;
/// The default port of `mqtts://`.
pub const MQTTS_PORT: u16 = 8883;

/// A parsed broker URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerUrl {
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
}

impl BrokerUrl {
    pub fn parse(url: &str) -> Result<BrokerUrl, BrokerUrlError> {
        let (tls, rest) = if let Some(r) = url.strip_prefix("mqtt://") {
            (false, r)
        } else if let Some(r) = url.strip_prefix("mqtts://") {
            (true, r)
        } else {
            return Err(BrokerUrlError::UnknownScheme);
        };
        let rest = rest.trim_end_matches('/');
        let (host, port) = match rest.rsplit_once(':') {
            Some((h, p)) => (h, p.parse::<u16>().map_err(|_| BrokerUrlError::BadPort)?),
            None => (rest, if tls { MQTTS_PORT } else { MQTT_PORT }),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(BrokerUrlError::NoHost);
        }
        Ok(BrokerUrl {
            host: host.to_string(),
            port,
            tls,
        })
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
        assert_eq!(ok("mqtt://127.0.0.1:1883").0, "127.0.0.1");
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
