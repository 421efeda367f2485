//! One SPARQL 1.1 Protocol query: `POST` with an `application/sparql-query`
//! body, results read as JSON (or XML or TSV, by the reply's
//! `Content-Type`) with sparesults, within the reply and row bounds, and
//! every failure as an [`ExecError`] that names the endpoint.

use std::io::Read;
use std::time::{Duration, Instant};

use kgbox_query::{ExecError, RemoteFailure};
use oxrdf::Term;
use sparesults::{QueryResultsFormat, QueryResultsParser, ReaderQueryResultsParserOutput};

use tokio_rustls::rustls;

use crate::config::StoreSettings;

/// What the client asks for, best first. Not XML: its parser (quick-xml
/// through sparesults) has known quadratic-time and unbounded-allocation
/// defects on hostile input (RUSTSEC-2026-0194, -0195), and every SPARQL
/// 1.1 store answers JSON.
const ACCEPT: &str = "application/sparql-results+json, text/tab-separated-values;q=0.8";

/// The part of an error reply's body quoted in the error message.
const ERROR_BODY_BYTES: u64 = 300;

/// A store's endpoint with its settings and a connection pool.
pub struct Client {
    settings: StoreSettings,
    agent: ureq::Agent,
}

impl Client {
    /// The client for `settings`; an error when its CA file cannot be used.
    pub fn new(settings: StoreSettings) -> Result<Client, String> {
        // Each exchange within the store's timeout (a request bound by an
        // earlier deadline sets its own); error statuses come back as
        // replies, whose body is quoted; no proxy from the environment.
        let mut config = ureq::Agent::config_builder()
            .timeout_global(Some(settings.timeout))
            .timeout_connect(Some(settings.timeout))
            .http_status_as_error(false)
            .proxy(None);
        if let Some(ca) = &settings.ca_file {
            config = config.tls_config(tls_config(ca)?);
        }
        Ok(Client {
            settings,
            agent: config.build().new_agent(),
        })
    }

    pub fn endpoint(&self) -> &str {
        &self.settings.endpoint
    }

    pub fn max_rows(&self) -> usize {
        self.settings.max_rows
    }

    /// Sends `query` and returns, for each solution, the values of `vars`
    /// (names without `?`), at most `max_rows` solutions (more is
    /// [`RemoteFailure::TooLarge`]). The request ends at the store's
    /// timeout or at `deadline`, whichever comes first; past `deadline` the
    /// error is the query's own [`ExecError::Timeout`].
    pub fn select(
        &self,
        query: &str,
        vars: &[&str],
        deadline: Option<Instant>,
    ) -> Result<Vec<Vec<Option<Term>>>, ExecError> {
        let start = Instant::now();
        let mut limit = self.settings.timeout;
        let mut deadline_bound = false;
        if let Some(d) = deadline {
            let left = d.checked_duration_since(start).unwrap_or(Duration::ZERO);
            if left.is_zero() {
                return Err(ExecError::Timeout);
            }
            if left < limit {
                (limit, deadline_bound) = (left, true);
            }
        }
        let timeout = |e: &dyn std::fmt::Display| {
            if deadline_bound {
                ExecError::Timeout
            } else {
                self.fail(
                    RemoteFailure::Timeout,
                    format!(
                        "no reply within {} ms (sparql_store.timeout_ms): {e}",
                        limit.as_millis()
                    ),
                )
            }
        };
        let mut req = self
            .agent
            .post(&self.settings.endpoint)
            .header("Content-Type", "application/sparql-query; charset=utf-8")
            .header("Accept", ACCEPT);
        if deadline_bound {
            req = req.config().timeout_global(Some(limit)).build();
        }
        if let Some(g) = &self.settings.default_graph {
            req = req.query("default-graph-uri", g);
        }
        if let Some(auth) = &self.settings.auth {
            req = req.header("Authorization", auth);
        }
        let resp = match req.send(query) {
            Ok(r) if r.status().as_u16() >= 400 => {
                let code = r.status().as_u16();
                let mut body = Vec::new();
                let _ = r
                    .into_body()
                    .into_reader()
                    .take(ERROR_BODY_BYTES)
                    .read_to_end(&mut body);
                let body = String::from_utf8_lossy(&body)
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                return Err(self.fail(
                    RemoteFailure::BadReply,
                    format!("answered HTTP {code}: {body}"),
                ));
            }
            Ok(r) => r,
            Err(e) => {
                if timed_out(&e) || start.elapsed() >= limit {
                    return Err(timeout(&e));
                }
                use ureq::Error as E;
                let failure = match e {
                    E::Protocol(_)
                    | E::LargeResponseHeader(..)
                    | E::TooManyRedirects
                    | E::RedirectFailed => RemoteFailure::BadReply,
                    _ => RemoteFailure::Unavailable,
                };
                let what = match failure {
                    RemoteFailure::BadReply => "sent a reply that is not HTTP",
                    _ => "cannot be reached",
                };
                return Err(self.fail(failure, format!("{what}: {e}")));
            }
        };
        // The media type without its parameters ("" when none is given).
        let media = resp.body().mime_type().unwrap_or("").to_string();
        let format = match QueryResultsFormat::from_media_type(&media) {
            Some(QueryResultsFormat::Csv) => {
                return Err(self.fail(
                    RemoteFailure::BadReply,
                    format!("answered {media}, which cannot tell IRIs from literals"),
                ))
            }
            Some(QueryResultsFormat::Xml) => {
                return Err(self.fail(
                    RemoteFailure::BadReply,
                    format!("answered {media}; kgbox reads SPARQL results as JSON or TSV (it asks for them in Accept)"),
                ))
            }
            Some(f) => f,
            // No or an unknown Content-Type: read it as what was asked for.
            None => QueryResultsFormat::Json,
        };
        let mut reader = Capped {
            inner: resp.into_body().into_reader(),
            left: self.settings.max_reply_bytes,
            over: false,
        };
        let parsed = read_rows(&mut reader, format, vars, self.settings.max_rows);
        match parsed {
            Ok(rows) => Ok(rows),
            Err(_) if reader.over => Err(self.fail(
                RemoteFailure::TooLarge,
                format!(
                    "sent a reply over {} bytes (sparql_store.max_reply_bytes)",
                    self.settings.max_reply_bytes
                ),
            )),
            Err(ReadError::TooMany) => Err(self.fail(
                RemoteFailure::TooLarge,
                format!(
                    "has more than {} solutions for this query (sparql_store.max_rows)",
                    self.settings.max_rows
                ),
            )),
            Err(ReadError::Io(e)) if io_timed_out(&e) => Err(timeout(&e)),
            Err(ReadError::Io(e)) => Err(self.fail(
                RemoteFailure::Unavailable,
                format!("broke off its reply: {e}"),
            )),
            Err(ReadError::Syntax(m)) => Err(self.fail(
                RemoteFailure::BadReply,
                format!("sent results that do not parse as {format}: {m}"),
            )),
        }
    }

    fn fail(&self, failure: RemoteFailure, what: String) -> ExecError {
        ExecError::Remote {
            failure,
            message: format!("the SPARQL store at {} {what}", self.settings.endpoint),
        }
    }
}

enum ReadError {
    TooMany,
    Io(std::io::Error),
    Syntax(String),
}

impl From<sparesults::QueryResultsParseError> for ReadError {
    fn from(e: sparesults::QueryResultsParseError) -> Self {
        match e {
            sparesults::QueryResultsParseError::Io(e) => ReadError::Io(e),
            other => ReadError::Syntax(other.to_string()),
        }
    }
}

/// The values of `vars` in each solution of a results document.
fn read_rows<R: Read>(
    reader: R,
    format: QueryResultsFormat,
    vars: &[&str],
    max_rows: usize,
) -> Result<Vec<Vec<Option<Term>>>, ReadError> {
    let solutions = match QueryResultsParser::from_format(format).for_reader(reader)? {
        ReaderQueryResultsParserOutput::Solutions(s) => s,
        ReaderQueryResultsParserOutput::Boolean(_) => {
            return Err(ReadError::Syntax(
                "a boolean where solutions were asked for".into(),
            ))
        }
    };
    let mut rows = Vec::new();
    for solution in solutions {
        let solution = solution?;
        if rows.len() >= max_rows {
            return Err(ReadError::TooMany);
        }
        rows.push(vars.iter().map(|v| solution.get(*v).cloned()).collect());
    }
    Ok(rows)
}

/// TLS that trusts the CA certificates of `ca_file` (rustls, ring).
fn tls_config(ca_file: &std::path::Path) -> Result<ureq::tls::TlsConfig, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let what =
        |e: &dyn std::fmt::Display| format!("sparql_store ca_file {}: {e}", ca_file.display());
    let pem = std::fs::read(ca_file).map_err(|e| what(&e))?;
    // Each certificate is checked as a trust anchor here (ureq would skip
    // one it cannot use); ureq builds its rustls config from their DER.
    let mut roots = rustls::RootCertStore::empty();
    let mut certs = Vec::new();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| what(&e))?;
        roots.add(cert.clone()).map_err(|e| what(&e))?;
        certs.push(ureq::tls::Certificate::from_der(cert.as_ref()).to_owned());
    }
    if roots.is_empty() {
        return Err(what(&"no PEM certificate in it"));
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    Ok(ureq::tls::TlsConfig::builder()
        .provider(ureq::tls::TlsProvider::Rustls)
        .root_certs(ureq::tls::RootCerts::Specific(std::sync::Arc::new(certs)))
        .unversioned_rustls_crypto_provider(provider)
        .build())
}

/// Whether a request's error is a timeout (ureq's own, or one from the socket).
fn timed_out(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::Timeout(_) => true,
        ureq::Error::Io(io) => io_timed_out(io),
        _ => false,
    }
}

/// Whether an error reading the reply is a timeout: the socket's, or ureq's
/// (which its body reader wraps in an `io::Error`).
fn io_timed_out(e: &std::io::Error) -> bool {
    if matches!(
        e.kind(),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
    ) {
        return true;
    }
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<ureq::Error>())
        .is_some_and(timed_out)
}

/// A reader that fails past `left` bytes (and says so in `over`).
struct Capped<R> {
    inner: R,
    left: u64,
    over: bool,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            // One more byte would be over the bound; at the end is fine.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => {
                    self.over = true;
                    Err(std::io::Error::other("the reply is over the size bound"))
                }
            };
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(doc: &str, format: QueryResultsFormat) -> Result<Vec<Vec<Option<Term>>>, ReadError> {
        read_rows(doc.as_bytes(), format, &["x", "v1"], 2)
    }

    #[test]
    fn json_and_tsv_results_are_read_by_variable() {
        let json = r#"{"head":{"vars":["x","v1"]},"results":{"bindings":[
            {"x":{"type":"uri","value":"http://e/a"}},
            {"x":{"type":"literal","value":"1982"},"v1":{"type":"uri","value":"http://e/b"}}]}}"#;
        let r = rows(json, QueryResultsFormat::Json).ok().expect("parses");
        assert_eq!(r.len(), 2);
        assert_eq!(r[0][1], None);
        assert_eq!(
            r[1][0].as_ref().map(ToString::to_string).as_deref(),
            Some("\"1982\"")
        );
        let tsv = "?x\t?v1\n<http://e/a>\t\n";
        let r = rows(tsv, QueryResultsFormat::Tsv).ok().expect("parses");
        assert_eq!(r[0][1], None);
    }

    #[test]
    fn garbage_booleans_and_too_many_rows_are_errors() {
        assert!(matches!(
            rows("<html>oops</html>", QueryResultsFormat::Json),
            Err(ReadError::Syntax(_))
        ));
        assert!(matches!(
            rows(r#"{"head":{},"boolean":true}"#, QueryResultsFormat::Json),
            Err(ReadError::Syntax(_))
        ));
        let three = r#"{"head":{"vars":["x"]},"results":{"bindings":[{},{},{}]}}"#;
        assert!(matches!(
            rows(three, QueryResultsFormat::Json),
            Err(ReadError::TooMany)
        ));
        let truncated = r#"{"head":{"vars":["x"]},"results":{"bindings":[{"x":"#;
        assert!(rows(truncated, QueryResultsFormat::Json).is_err());
    }

    #[test]
    fn a_ca_file_without_certificates_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pem = dir.path().join("ca.pem");
        std::fs::write(&pem, "not a certificate\n").expect("write");
        let settings = |ca: &std::path::Path| StoreSettings {
            endpoint: "https://store/q".into(),
            timeout: Duration::from_secs(1),
            default_graph: None,
            auth: None,
            ca_file: Some(ca.to_path_buf()),
            max_rows: 1,
            max_reply_bytes: 1,
        };
        let err = Client::new(settings(&pem)).err().unwrap_or_default();
        assert!(err.contains("no PEM certificate"), "{err}");
        assert!(Client::new(settings(&dir.path().join("missing.pem"))).is_err());
    }

    /// The test kit's throwaway CA and its certificate for 127.0.0.1 (made
    /// with the `openssl` command): the PKI and the server's rustls config.
    fn test_pki() -> (
        kgbox_testkit::mosquitto::TestPki,
        std::sync::Arc<rustls::ServerConfig>,
    ) {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let pki = kgbox_testkit::mosquitto::TestPki::new();
        let certs = CertificateDer::pem_file_iter(&pki.server_cert)
            .expect("server certificate")
            .collect::<Result<Vec<_>, _>>()
            .expect("certificates");
        let key = PrivateKeyDer::from_pem_file(&pki.server_key).expect("server key");
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .expect("server config");
        (pki, std::sync::Arc::new(config))
    }

    #[test]
    fn https_stores_are_verified_against_the_ca_file() {
        use std::io::Write as _;
        let (pki, server_config) = test_pki();
        let ca = pki.ca.clone();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        // Two connections: one from a client trusting the CA, one from a
        // client with the webpki roots only (its handshake fails).
        let server = std::thread::spawn(move || {
            let mut requests = Vec::new();
            for _ in 0..2 {
                let (tcp, _) = listener.accept().expect("accept");
                let conn = rustls::ServerConnection::new(server_config.clone()).expect("conn");
                let mut tls = rustls::StreamOwned::new(conn, tcp);
                let seen = kgbox_testkit::read_http_request(&mut tls);
                if seen.contains("\r\n\r\n") {
                    let body = r#"{"head":{"vars":["x"]},"results":{"bindings":[{"x":{"type":"uri","value":"http://e/a"}}]}}"#;
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/sparql-results+json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = tls.write_all(reply.as_bytes());
                    tls.conn.send_close_notify();
                    let _ = tls.flush();
                }
                requests.push(seen);
            }
            requests
        });
        let settings = |ca_file: Option<std::path::PathBuf>| StoreSettings {
            endpoint: format!("https://127.0.0.1:{port}/q"),
            timeout: Duration::from_secs(10),
            default_graph: None,
            auth: None,
            ca_file,
            max_rows: 10,
            max_reply_bytes: 1 << 20,
        };
        let client = Client::new(settings(Some(ca))).expect("client");
        let rows = client
            .select("SELECT ?x WHERE { ?x ?p ?o }", &["x"], None)
            .expect("rows");
        assert_eq!(
            rows[0][0].as_ref().map(ToString::to_string).as_deref(),
            Some("<http://e/a>")
        );
        let unknown_ca = Client::new(settings(None)).expect("client");
        match unknown_ca.select("SELECT ?x WHERE { ?x ?p ?o }", &["x"], None) {
            Err(ExecError::Remote { failure, message }) => {
                assert_eq!(failure, RemoteFailure::Unavailable, "{message}");
                assert!(message.contains("cannot be reached"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let requests = server.join().expect("server");
        assert!(
            requests[0].starts_with("POST /q HTTP/1.1\r\n")
                && requests[0].ends_with("SELECT ?x WHERE { ?x ?p ?o }"),
            "{requests:?}"
        );
    }

    #[test]
    fn timeouts_are_told_from_other_failures() {
        use std::io::{Error as IoError, ErrorKind};
        assert!(timed_out(&ureq::Error::Timeout(ureq::Timeout::Global)));
        assert!(timed_out(&ureq::Error::Io(ErrorKind::TimedOut.into())));
        assert!(!timed_out(&ureq::Error::ConnectionFailed));
        // ureq's body reader wraps its own errors in an io::Error.
        let wrapped = ureq::Error::Timeout(ureq::Timeout::Global).into_io();
        assert!(io_timed_out(&wrapped));
        assert!(io_timed_out(&IoError::from(ErrorKind::WouldBlock)));
        assert!(!io_timed_out(&ureq::Error::HostNotFound.into_io()));
        assert!(!io_timed_out(&IoError::other(
            "the reply is over the size bound"
        )));
    }

    #[test]
    fn the_reply_bound_is_enforced() {
        let mut r = Capped {
            inner: &b"0123456789"[..],
            left: 4,
            over: false,
        };
        let mut out = Vec::new();
        assert!(r.read_to_end(&mut out).is_err());
        assert!(r.over);
        let mut r = Capped {
            inner: &b"0123"[..],
            left: 4,
            over: false,
        };
        let mut out = Vec::new();
        assert_eq!(r.read_to_end(&mut out).ok(), Some(4));
    }
}
