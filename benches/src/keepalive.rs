//! A keep-alive HTTP/1.1 client for load generation: hyper's
//! `client::conn::http1` over one tokio `TcpStream` (TCP_NODELAY), driven
//! by a current-thread tokio runtime that the [`Client`] owns, so that
//! callers stay synchronous (one `Client` per thread). Requests are
//! prepared once ([`post_json`], [`get`]) and sent any number of times;
//! each response body is read into a reusable buffer ([`Client::body`]),
//! up to a size limit. One exchange as a whole (connecting included) is
//! bounded by the client's timeout. No HTTP is parsed here: hyper reads the
//! heads and the `Content-Length` or chunked bodies.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Body as _;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{HeaderMap, HeaderValue, ACCEPT, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Method, Uri, Version};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::runtime::Runtime;

/// Largest response body accepted unless [`Client::body_limit`] says otherwise.
pub const DEFAULT_BODY_LIMIT: usize = 64 << 20;

/// A request prepared once and sent any number of times (cloning it shares
/// the body).
#[derive(Debug, Clone)]
pub struct Request {
    method: Method,
    /// The origin-form target, or why it is not one (reported by [`Client::exchange`]).
    uri: Result<Uri, String>,
    headers: HeaderMap,
    body: Bytes,
}

impl Request {
    /// `host` is the `Host` header; an invalid path or host is reported by
    /// [`Client::exchange`].
    fn new(method: Method, host: &str, path: &str, body: Bytes) -> Request {
        let mut headers = HeaderMap::new();
        let mut uri = Uri::try_from(path).map_err(|e| format!("bad request path {path:?}: {e}"));
        match HeaderValue::from_str(host) {
            Ok(v) => {
                headers.insert(hyper::header::HOST, v);
            }
            Err(_) => uri = Err(format!("bad Host {host:?}")),
        }
        Request {
            method,
            uri,
            headers,
            body,
        }
    }

    /// The body.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// A header's value, if it is set and visible ASCII.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name)?.to_str().ok()
    }

    fn to_hyper(&self) -> io::Result<hyper::Request<Full<Bytes>>> {
        let uri = self
            .uri
            .as_ref()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.clone()))?;
        let mut req = hyper::Request::new(Full::new(self.body.clone()));
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = uri.clone();
        *req.headers_mut() = self.headers.clone();
        Ok(req)
    }
}

/// A `POST` of a JSON body to `path` (`host` is the `Host` header).
pub fn post_json(host: &str, path: &str, body: &[u8]) -> Request {
    let mut r = Request::new(Method::POST, host, path, Bytes::copy_from_slice(body));
    let h = &mut r.headers;
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    h.insert(ACCEPT, HeaderValue::from_static("application/json"));
    h.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
    r
}

/// A `GET` of `path` (`host` is the `Host` header).
pub fn get(host: &str, path: &str) -> Request {
    Request::new(Method::GET, host, path, Bytes::new())
}

/// What one exchange returned; the body is [`Client::body`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// Body length in bytes (after de-chunking).
    pub body_len: usize,
    /// The server closes the connection (`Connection: close`, HTTP/1.0
    /// without keep-alive, or it already has); the client has dropped it
    /// and reconnects on the next request.
    pub closed: bool,
}

/// hyper's side of one connection: it reads and writes the socket while polled.
type Connection = Pin<Box<dyn Future<Output = hyper::Result<()>> + Send>>;

/// One open connection.
struct Conn {
    sender: SendRequest<Full<Bytes>>,
    driver: Connection,
}

/// One persistent connection, (re)opened on demand.
pub struct Client {
    addr: SocketAddr,
    timeout: Duration,
    body_limit: usize,
    /// Built on the first exchange (building it can fail; `new` cannot).
    rt: Option<Runtime>,
    conn: Option<Conn>,
    /// The last response's body.
    body: Vec<u8>,
    /// TCP connections opened so far.
    pub connects: u64,
    /// When the first TCP connection was established.
    pub first_connect: Option<Instant>,
}

fn timed_out() -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        "response not complete within the timeout",
    )
}

/// hyper's error as an `io::Error`, of the kind of the I/O error under it if any.
fn from_hyper(e: hyper::Error) -> io::Error {
    let mut source = std::error::Error::source(&e);
    let mut kind = io::ErrorKind::Other;
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<io::Error>() {
            kind = io.kind();
            break;
        }
        source = s.source();
    }
    if e.is_incomplete_message() {
        kind = io::ErrorKind::UnexpectedEof;
    }
    io::Error::new(kind, e)
}

/// Whether the response says the server closes the connection after it.
fn closes(resp: &hyper::Response<hyper::body::Incoming>) -> bool {
    let mut close = resp.version() <= Version::HTTP_10;
    for value in resp.headers().get_all(CONNECTION) {
        for token in value.to_str().unwrap_or_default().split(',') {
            let token = token.trim();
            if token.eq_ignore_ascii_case("close") {
                close = true;
            } else if token.eq_ignore_ascii_case("keep-alive") {
                close = false;
            }
        }
    }
    close
}

impl Client {
    pub fn new(addr: SocketAddr, timeout: Duration) -> Client {
        Client {
            addr,
            timeout,
            body_limit: DEFAULT_BODY_LIMIT,
            rt: None,
            conn: None,
            body: Vec::new(),
            connects: 0,
            first_connect: None,
        }
    }

    /// Refuses (with an error) response bodies over `limit` bytes.
    pub fn body_limit(mut self, limit: usize) -> Client {
        self.body_limit = limit;
        self
    }

    /// Whether a connection is open.
    pub fn connected(&self) -> bool {
        self.conn.is_some()
    }

    /// Drops the connection (closing its socket); the next request reconnects.
    pub fn disconnect(&mut self) {
        self.conn = None;
    }

    /// The body of the last response.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// The body of the last response, taken out of the client.
    pub fn take_body(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.body)
    }

    /// Sends one request (see [`post_json`], [`get`]) and reads the whole
    /// response, connecting first if needed. On an error the connection is
    /// dropped; the request is never sent twice.
    pub fn exchange(&mut self, request: &Request) -> io::Result<Response> {
        let r = self.exchange_inner(request);
        if r.is_err() {
            self.disconnect();
        }
        r
    }

    fn exchange_inner(&mut self, request: &Request) -> io::Result<Response> {
        self.body.clear();
        let req = request.to_hyper()?;
        let deadline = tokio::time::Instant::now() + self.timeout;
        if self.rt.is_none() {
            self.rt = Some(
                tokio::runtime::Builder::new_current_thread()
                    .enable_io()
                    .enable_time()
                    .build()?,
            );
        }
        let Client {
            addr,
            body_limit,
            rt,
            conn,
            body,
            connects,
            first_connect,
            ..
        } = self;
        let (addr, limit) = (*addr, *body_limit);
        let Some(rt) = rt.as_ref() else {
            return Err(io::Error::other("no runtime"));
        };
        rt.block_on(async {
            if conn.as_ref().is_some_and(|c| c.sender.is_closed()) {
                *conn = None;
            }
            let c = match conn {
                Some(c) => c,
                None => {
                    let stream = tokio::time::timeout_at(deadline, TcpStream::connect(addr))
                        .await
                        .map_err(|_| timed_out())??;
                    stream.set_nodelay(true)?;
                    *connects += 1;
                    first_connect.get_or_insert_with(Instant::now);
                    let (sender, driver) =
                        tokio::time::timeout_at(deadline, http1::handshake(TokioIo::new(stream)))
                            .await
                            .map_err(|_| timed_out())?
                            .map_err(from_hyper)?;
                    conn.insert(Conn {
                        sender,
                        driver: Box::pin(driver),
                    })
                }
            };
            let Conn { sender, driver } = c;
            let work = async {
                let resp = sender.send_request(req).await.map_err(from_hyper)?;
                let status = resp.status().as_u16();
                let close = closes(&resp);
                let mut incoming = resp.into_body();
                if incoming.size_hint().lower() > limit as u64 {
                    return Err(too_large(limit));
                }
                while let Some(frame) = incoming.frame().await {
                    if let Ok(data) = frame.map_err(from_hyper)?.into_data() {
                        if body.len() + data.len() > limit {
                            return Err(too_large(limit));
                        }
                        body.extend_from_slice(&data);
                    }
                }
                Ok((status, close))
            };
            let mut ended = false;
            let both = async {
                tokio::pin!(work);
                loop {
                    tokio::select! {
                        biased;
                        r = &mut work => break r,
                        _ = driver.as_mut(), if !ended => ended = true,
                    }
                }
            };
            let (status, close) = tokio::time::timeout_at(deadline, both)
                .await
                .map_err(|_| timed_out())??;
            let closed = close || ended;
            if closed {
                *conn = None;
            }
            Ok(Response {
                status,
                body_len: body.len(),
                closed,
            })
        })
    }
}

fn too_large(limit: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("response body over the limit of {limit} bytes"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    /// A test server: for each request (head and `Content-Length` body) it
    /// writes the next canned response, split in two writes. It closes the
    /// connection after a response that says `Connection: close` (or when
    /// the client does), and returns how many connections it accepted.
    fn serve(responses: Vec<&'static [u8]>) -> (SocketAddr, std::thread::JoinHandle<usize>) {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = l.local_addr().expect("addr");
        let t = std::thread::spawn(move || {
            let mut accepted = 0;
            let mut responses = responses.into_iter();
            'outer: while let Ok((mut s, _)) = l.accept() {
                accepted += 1;
                loop {
                    if !read_request(&mut s) {
                        continue 'outer;
                    }
                    let Some(r) = responses.next() else {
                        break 'outer;
                    };
                    let (a, b) = r.split_at(r.len() / 2);
                    let _ = s.write_all(a);
                    let _ = s.flush();
                    std::thread::sleep(Duration::from_millis(2));
                    let _ = s.write_all(b);
                    if responses.len() == 0 {
                        // Hold the connection until the client drops it.
                        read_request(&mut s);
                        break 'outer;
                    }
                    if r.windows(17).any(|w| w == b"Connection: close") {
                        continue 'outer;
                    }
                }
            }
            accepted
        });
        (addr, t)
    }

    /// Reads one request (the test's own, so this reading is simple: the
    /// head up to the empty line, then `Content-Length` bytes); false at EOF.
    fn read_request(s: &mut TcpStream) -> bool {
        let mut got = Vec::new();
        let mut b = [0u8; 1024];
        loop {
            if let Some(i) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&got[..i]).to_ascii_lowercase();
                let len: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                if got.len() >= i + 4 + len {
                    return true;
                }
            }
            match s.read(&mut b) {
                Ok(0) | Err(_) => return false,
                Ok(n) => got.extend_from_slice(&b[..n]),
            }
        }
    }

    #[test]
    fn prepared_requests() {
        let r = post_json("127.0.0.1:1", "/v1/query", br#"{"a":1}"#);
        assert_eq!(r.body(), br#"{"a":1}"#);
        assert_eq!(r.header("host"), Some("127.0.0.1:1"));
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.header("content-length"), Some("7"));
        let h = r.to_hyper().expect("valid");
        assert_eq!((h.method(), h.uri().path()), (&Method::POST, "/v1/query"));
        let g = get("127.0.0.1:1", "/v1/entities/The%20Prowler?x=1");
        let h = g.to_hyper().expect("valid");
        assert_eq!(h.method(), Method::GET);
        assert_eq!(h.uri().query(), Some("x=1"));
        assert!(g.body().is_empty());
    }

    #[test]
    fn content_length_chunked_and_close() {
        let (addr, server) = serve(vec![
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
            b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        ]);
        let req = post_json(&addr.to_string(), "/x", br#"{"a":1}"#);
        let mut c = Client::new(addr, Duration::from_secs(5));
        let r = c.exchange(&req).expect("first");
        assert_eq!((r.status, r.body_len, r.closed), (200, 5, false));
        assert_eq!(c.body(), b"hello");
        let r = c.exchange(&req).expect("chunked");
        assert_eq!((r.status, r.body_len, r.closed), (200, 5, false));
        assert_eq!(c.body(), b"abcde");
        let r = c.exchange(&req).expect("close");
        assert_eq!((r.status, r.body_len, r.closed), (503, 0, true));
        assert!(!c.connected());
        let r = c.exchange(&req).expect("after reconnect");
        assert_eq!(c.body(), b"ok");
        assert_eq!(r.status, 200);
        assert_eq!(c.connects, 2);
        drop(c);
        assert_eq!(server.join().expect("server thread"), 2);
    }

    #[test]
    fn get_and_http10() {
        let (addr, server) = serve(vec![
            b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\none",
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo",
        ]);
        let mut c = Client::new(addr, Duration::from_secs(5));
        let req = get(&addr.to_string(), "/readyz");
        let r = c.exchange(&req).expect("HTTP/1.0");
        assert_eq!((r.status, r.closed), (200, true));
        assert_eq!(c.take_body(), b"one");
        let r = c.exchange(&req).expect("after reconnect");
        assert_eq!((r.status, r.closed), (200, false));
        assert_eq!(c.body(), b"two");
        assert_eq!(c.connects, 2);
        drop(c);
        assert_eq!(server.join().expect("server thread"), 2);
    }

    #[test]
    fn eof_is_an_error() {
        let (addr, _server) = serve(vec![]);
        let req = post_json(&addr.to_string(), "/x", br#"{"a":1}"#);
        let mut c = Client::new(addr, Duration::from_secs(5));
        assert!(c.exchange(&req).is_err());
        assert!(!c.connected());
    }

    #[test]
    fn silent_server_times_out() {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = l.local_addr().expect("addr");
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().expect("accept");
            let mut b = [0u8; 1024];
            // Read the request, answer nothing, wait for the client to hang up.
            while matches!(s.read(&mut b), Ok(n) if n > 0) {}
        });
        let mut c = Client::new(addr, Duration::from_millis(200));
        let t = Instant::now();
        let e = c
            .exchange(&get(&addr.to_string(), "/"))
            .expect_err("no answer");
        let took = t.elapsed();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
        assert!(took >= Duration::from_millis(200), "{took:?}");
        assert!(took < Duration::from_secs(3), "{took:?}");
        assert!(!c.connected());
        // The socket was closed on the error: the server sees EOF.
        server.join().expect("server thread");
    }

    #[test]
    fn body_limit() {
        let (addr, _server) = serve(vec![
            b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nfour",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfive!",
        ]);
        let req = get(&addr.to_string(), "/");
        let mut c = Client::new(addr, Duration::from_secs(5)).body_limit(4);
        c.exchange(&req).expect("at the limit");
        assert_eq!(c.body(), b"four");
        let e = c.exchange(&req).expect_err("over the limit");
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
        assert!(!c.connected());

        let (addr, _server) = serve(vec![
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n",
        ]);
        let mut c = Client::new(addr, Duration::from_secs(5)).body_limit(4);
        let e = c
            .exchange(&get(&addr.to_string(), "/"))
            .expect_err("chunked over the limit");
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
    }

    #[test]
    fn refused_and_bad_path() {
        let addr = TcpListener::bind("127.0.0.1:0")
            .expect("bind")
            .local_addr()
            .expect("addr");
        let mut c = Client::new(addr, Duration::from_secs(5));
        assert!(c.exchange(&get(&addr.to_string(), "/")).is_err());
        assert_eq!(c.connects, 0);
        let e = c
            .exchange(&get(&addr.to_string(), "no path"))
            .expect_err("bad path");
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
    }
}
