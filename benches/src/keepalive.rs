//! A keep-alive HTTP/1.1 client over one `std::net::TcpStream`, for load
//! generation: the caller hands it whole pre-serialized requests, it writes
//! each with one `write_all` and reads the response (status line, headers,
//! a `Content-Length` or chunked body) into a reusable buffer. Every read
//! has a timeout, and one exchange as a whole is bounded by the same limit.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Longest response head (status line and headers) accepted.
const MAX_HEAD: usize = 64 << 10;
/// Largest response body accepted.
const MAX_BODY: usize = 64 << 20;

/// Builds a complete `POST` request with a JSON body.
pub fn post_json(host: &str, path: &str, body: &[u8]) -> Vec<u8> {
    let mut req = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(body);
    req
}

/// What one exchange returned; the body is [`Client::body`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// Body length in bytes (after de-chunking).
    pub body_len: usize,
    /// The server will close the connection (`Connection: close` or HTTP/1.0);
    /// the client has already dropped it and reconnects on the next request.
    pub closed: bool,
}

/// One persistent connection, (re)opened on demand.
pub struct Client {
    addr: SocketAddr,
    timeout: Duration,
    stream: Option<TcpStream>,
    /// Received bytes; `buf[..len]` are valid.
    buf: Vec<u8>,
    len: usize,
    /// Where the last body lies in `buf` (Content-Length bodies).
    body: std::ops::Range<usize>,
    /// The last body when it came chunked.
    dechunked: Vec<u8>,
    chunked: bool,
    /// TCP connections opened so far.
    pub connects: u64,
}

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The parsed response head.
#[derive(Debug, PartialEq, Eq)]
struct Head {
    status: u16,
    content_length: Option<usize>,
    chunked: bool,
    close: bool,
}

/// Parses a response head (without the final empty line).
fn parse_head(head: &[u8]) -> io::Result<Head> {
    let text = std::str::from_utf8(head).map_err(|_| invalid("response head is not UTF-8"))?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        let shown: String = status_line.chars().take(64).collect();
        return Err(invalid(format!("not an HTTP/1.x response: {shown:?}")));
    }
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .filter(|s| (100..1000).contains(s))
        .ok_or_else(|| invalid(format!("bad status line {status_line:?}")))?;
    let mut h = Head {
        status,
        content_length: None,
        chunked: false,
        close: version == "HTTP/1.0",
    };
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(invalid(format!("bad header line {line:?}")));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            let n: usize = value
                .parse()
                .map_err(|_| invalid(format!("bad Content-Length {value:?}")))?;
            h.content_length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            h.chunked = value
                .rsplit(',')
                .next()
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("chunked"));
        } else if name.eq_ignore_ascii_case("connection") {
            for token in value.split(',') {
                let token = token.trim();
                if token.eq_ignore_ascii_case("close") {
                    h.close = true;
                } else if token.eq_ignore_ascii_case("keep-alive") {
                    h.close = false;
                }
            }
        }
    }
    Ok(h)
}

impl Client {
    pub fn new(addr: SocketAddr, timeout: Duration) -> Client {
        Client {
            addr,
            timeout,
            stream: None,
            buf: vec![0; 16 << 10],
            len: 0,
            body: 0..0,
            dechunked: Vec::new(),
            chunked: false,
            connects: 0,
        }
    }

    /// Whether a connection is open.
    pub fn connected(&self) -> bool {
        self.stream.is_some()
    }

    /// Drops the connection (after an error); the next request reconnects.
    pub fn disconnect(&mut self) {
        self.stream = None;
        self.len = 0;
    }

    fn connect(&mut self) -> io::Result<()> {
        let s = TcpStream::connect_timeout(&self.addr, self.timeout)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(self.timeout))?;
        s.set_write_timeout(Some(self.timeout))?;
        self.connects += 1;
        self.stream = Some(s);
        self.len = 0;
        Ok(())
    }

    /// The body of the last response.
    pub fn body(&self) -> &[u8] {
        if self.chunked {
            &self.dechunked
        } else {
            &self.buf[self.body.clone()]
        }
    }

    /// Sends one complete request (see [`post_json`]) and reads the
    /// response. On an error the connection is dropped.
    pub fn exchange(&mut self, request: &[u8]) -> io::Result<Response> {
        let r = self.exchange_inner(request);
        if r.is_err() {
            self.disconnect();
        }
        r
    }

    fn exchange_inner(&mut self, request: &[u8]) -> io::Result<Response> {
        if self.stream.is_none() {
            self.connect()?;
        }
        let deadline = Instant::now() + self.timeout;
        let stream = self
            .stream
            .as_mut()
            .ok_or_else(|| invalid("no connection"))?;
        stream.write_all(request)?;

        let head_end = loop {
            if let Some(i) = find(&self.buf[..self.len], b"\r\n\r\n") {
                break i;
            }
            if self.len >= MAX_HEAD {
                return Err(invalid("response head too long"));
            }
            self.fill(self.len + 1, deadline)?;
        };
        let head = parse_head(&self.buf[..head_end])?;
        let body_start = head_end + 4;
        let consumed;
        if head.chunked {
            self.chunked = true;
            consumed = self.read_chunked(body_start, deadline)?;
        } else if let Some(n) = head.content_length {
            if n > MAX_BODY {
                return Err(invalid(format!("response body of {n} bytes is too large")));
            }
            self.chunked = false;
            self.fill(body_start + n, deadline)?;
            self.body = body_start..body_start + n;
            consumed = body_start + n;
        } else if head.status == 204 || head.status == 304 || head.status < 200 {
            self.chunked = false;
            self.body = body_start..body_start;
            consumed = body_start;
        } else {
            return Err(invalid(
                "response has neither Content-Length nor chunked encoding",
            ));
        }
        let body_len = self.body().len();
        // Anything past this response (nothing, without pipelining) moves to the front.
        self.buf.copy_within(consumed..self.len, 0);
        self.len -= consumed;
        if head.close {
            self.disconnect();
        }
        Ok(Response {
            status: head.status,
            body_len,
            closed: head.close,
        })
    }

    /// Reads until `buf[..need]` is filled.
    fn fill(&mut self, need: usize, deadline: Instant) -> io::Result<()> {
        if need > self.buf.len() {
            let size = need.max(self.buf.len() * 2);
            self.buf.resize(size, 0);
        }
        while self.len < need {
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "response not complete within the timeout",
                ));
            }
            let stream = self
                .stream
                .as_mut()
                .ok_or_else(|| invalid("no connection"))?;
            let n = stream.read(&mut self.buf[self.len..])?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection",
                ));
            }
            self.len += n;
        }
        Ok(())
    }

    /// The end of the CRLF-terminated line that starts at `from`.
    fn line_end(&mut self, from: usize, deadline: Instant) -> io::Result<usize> {
        loop {
            if let Some(i) = find(&self.buf[from..self.len], b"\r\n") {
                return Ok(from + i);
            }
            if self.len - from > 4096 {
                return Err(invalid("chunk header line too long"));
            }
            self.fill(self.len + 1, deadline)?;
        }
    }

    /// Decodes a chunked body starting at `pos` into `dechunked`; returns
    /// the offset just past the body.
    fn read_chunked(&mut self, mut pos: usize, deadline: Instant) -> io::Result<usize> {
        self.dechunked.clear();
        loop {
            let end = self.line_end(pos, deadline)?;
            let line = std::str::from_utf8(&self.buf[pos..end])
                .map_err(|_| invalid("bad chunk size line"))?;
            let hex = line.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(hex, 16)
                .map_err(|_| invalid(format!("bad chunk size {hex:?}")))?;
            pos = end + 2;
            if size == 0 {
                // Trailers up to an empty line.
                loop {
                    let end = self.line_end(pos, deadline)?;
                    let empty = end == pos;
                    pos = end + 2;
                    if empty {
                        return Ok(pos);
                    }
                }
            }
            if self.dechunked.len() + size > MAX_BODY {
                return Err(invalid("chunked response body is too large"));
            }
            self.fill(pos + size + 2, deadline)?;
            self.dechunked.extend_from_slice(&self.buf[pos..pos + size]);
            if &self.buf[pos + size..pos + size + 2] != b"\r\n" {
                return Err(invalid("chunk not followed by CRLF"));
            }
            pos += size + 2;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn heads() {
        let h =
            parse_head(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 12")
                .expect("valid head");
        assert_eq!(
            h,
            Head {
                status: 200,
                content_length: Some(12),
                chunked: false,
                close: false
            }
        );
        let h = parse_head(
            b"HTTP/1.1 404 Not Found\r\nConnection: close\r\nTransfer-Encoding: chunked",
        )
        .expect("valid head");
        assert!(h.close && h.chunked && h.status == 404);
        assert!(parse_head(b"HTTP/1.0 200 OK").expect("valid head").close);
        assert!(parse_head(b"garbage").is_err());
        assert!(parse_head(b"HTTP/1.1 abc OK").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x").is_err());
    }

    #[test]
    fn request_bytes() {
        let r = post_json("127.0.0.1:1", "/v1/query", br#"{"a":1}"#);
        let text = String::from_utf8(r).expect("ascii");
        assert!(text.starts_with("POST /v1/query HTTP/1.1\r\nHost: 127.0.0.1:1\r\n"));
        assert!(text.ends_with("Content-Length: 7\r\n\r\n{\"a\":1}"));
    }

    /// A scripted server: for each request it reads the head and body, then
    /// writes the next canned response (split in two writes).
    fn serve(responses: Vec<&'static [u8]>) -> (SocketAddr, std::thread::JoinHandle<usize>) {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = l.local_addr().expect("addr");
        let t = std::thread::spawn(move || {
            let mut accepted = 0;
            let mut responses = responses.into_iter();
            'outer: while let Ok((mut s, _)) = l.accept() {
                accepted += 1;
                loop {
                    let mut got = Vec::new();
                    let mut b = [0u8; 1024];
                    loop {
                        let Ok(n) = s.read(&mut b) else { break 'outer };
                        if n == 0 {
                            continue 'outer;
                        }
                        got.extend_from_slice(&b[..n]);
                        if let Some(i) = find(&got, b"\r\n\r\n") {
                            if got.len() >= i + 4 + 7 {
                                break;
                            }
                        }
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
                        break 'outer;
                    }
                    if find(r, b"Connection: close").is_some() {
                        continue 'outer;
                    }
                }
            }
            accepted
        });
        (addr, t)
    }

    #[test]
    fn keep_alive_chunked_and_close() {
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
        assert_eq!((r.status, r.closed), (200, false));
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
    fn eof_is_an_error() {
        let (addr, _server) = serve(vec![]);
        let req = post_json(&addr.to_string(), "/x", br#"{"a":1}"#);
        let mut c = Client::new(addr, Duration::from_secs(5));
        assert!(c.exchange(&req).is_err());
        assert!(!c.connected());
    }
}
