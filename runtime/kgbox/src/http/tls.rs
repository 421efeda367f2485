//! HTTPS with rustls (`[http.tls]`): a listener that hands axum TLS
//! streams, certificates reread on SIGHUP without dropping a connection,
//! and client certificates when `client_ca_file` is set.
//!
//! Handshakes run on their own tasks (at most [`HANDSHAKE_TIMEOUT`] each),
//! so a slow or silent client holds up no one else. A client that speaks
//! plain HTTP to the TLS port gets a plain `400` saying so and is closed.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{self, RootCertStore, ServerConfig};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::config::TlsConfig;

/// How long a client may take over its handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Accepted connections waiting for axum, at most.
const QUEUE: usize = 1024;

/// Why the TLS setup cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("http.tls: cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("http.tls: {path}: {message}")]
    Pem { path: String, message: String },
    #[error("http.tls: {0}")]
    Config(String),
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.display().to_string(),
        source,
    })
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read(path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Pem {
            path: path.display().to_string(),
            message: "no PEM certificate in it".into(),
        });
    }
    Ok(certs)
}

/// The rustls configuration of `tls`: its files read and checked now.
pub fn server_config(tls: &TlsConfig) -> Result<Arc<ServerConfig>, TlsError> {
    let chain = certificates(&tls.cert_file)?;
    let key_pem = read(&tls.key_file)?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| TlsError::Pem {
        path: tls.key_file.display().to_string(),
        message: format!("no private key (PKCS#8, PKCS#1 or SEC1 PEM): {e}"),
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?;
    let builder = match &tls.client_ca_file {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            for cert in certificates(ca)? {
                roots.add(cert).map_err(|e| TlsError::Pem {
                    path: ca.display().to_string(),
                    message: format!("not a CA certificate rustls takes: {e}"),
                })?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| TlsError::Config(format!("client_ca_file: {e}")))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(chain, key).map_err(|e| {
        TlsError::Config(format!(
            "{} and {} do not make a certificate and its key: {e}",
            tls.cert_file.display(),
            tls.key_file.display()
        ))
    })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The TLS configuration in force, swapped whole by a reload.
pub type Current = Arc<ArcSwap<ServerConfig>>;

/// Rereads the files of `tls` on every SIGHUP; a failed reload keeps the
/// configuration in force (and is logged). Connections already open keep
/// theirs.
pub fn reload_on_sighup(tls: TlsConfig, current: Current) {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut hangups) = signal(SignalKind::hangup()) else {
        tracing::warn!("no SIGHUP handler: certificates are read at start only");
        return;
    };
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            match server_config(&tls) {
                Ok(config) => {
                    current.store(config);
                    tracing::info!(cert = %tls.cert_file.display(), "TLS certificate reloaded");
                }
                Err(e) => {
                    tracing::error!(error = %e, "TLS reload failed; the certificate in use stays")
                }
            }
        }
    });
}

/// Without TLS: SIGHUP (`systemctl reload`) is logged and changes nothing,
/// rather than ending the process as it would by default.
pub fn ignore_sighup() {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut hangups) = signal(SignalKind::hangup()) else {
        return;
    };
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            tracing::info!("SIGHUP: nothing to reload (no http.tls)");
        }
    });
}

/// A listener of TLS connections for `axum::serve`.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    addr: SocketAddr,
}

impl TlsListener {
    /// Accepts on `tcp` with the configuration in `current` at each handshake.
    pub fn new(tcp: TcpListener, current: Current) -> std::io::Result<TlsListener> {
        let addr = tcp.local_addr()?;
        let (tx, ready) = mpsc::channel(QUEUE);
        tokio::spawn(accept_loop(tcp, current, tx));
        Ok(TlsListener { ready, addr })
    }
}

async fn accept_loop(
    tcp: TcpListener,
    current: Current,
    tx: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    loop {
        let (stream, peer) = match tcp.accept().await {
            Ok(c) => c,
            Err(e) => {
                // Out of file descriptors, say: wait rather than spin.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if tx.is_closed() {
            return;
        }
        let acceptor = TlsAcceptor::from(current.load_full());
        let tx = tx.clone();
        tokio::spawn(async move {
            if let Some(tls) = handshake(stream, peer, acceptor).await {
                let _ = tx.send((tls, peer)).await;
            }
        });
    }
}

async fn handshake(
    stream: TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
) -> Option<TlsStream<TcpStream>> {
    let mut first = [0u8; 8];
    let plain = matches!(
        tokio::time::timeout(HANDSHAKE_TIMEOUT, stream.peek(&mut first)).await,
        Ok(Ok(n)) if looks_like_http(&first[..n])
    );
    if plain {
        refuse_plain_http(stream).await;
        tracing::debug!(%peer, "plain HTTP on the TLS port: refused");
        return None;
    }
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => Some(tls),
        Ok(Err(e)) => {
            tracing::debug!(%peer, error = %e, "TLS handshake failed");
            None
        }
        Err(_) => {
            tracing::debug!(%peer, "TLS handshake timed out");
            None
        }
    }
}

/// Whether a connection's first bytes are an HTTP/1 request line.
fn looks_like_http(first: &[u8]) -> bool {
    const METHODS: &[&[u8]] = &[
        b"GET ",
        b"POST ",
        b"PUT ",
        b"HEAD ",
        b"DELETE ",
        b"OPTIONS ",
        b"PATCH ",
        b"CONNECT ",
        b"TRACE ",
    ];
    METHODS
        .iter()
        .any(|m| first.len() >= 4 && m.starts_with(&first[..first.len().min(m.len())]))
}

async fn refuse_plain_http(mut stream: TcpStream) {
    let body =
        r#"{"error":{"code":"tls_required","message":"this port speaks HTTPS: use https://"}}"#;
    let reply = format!(
        "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(HANDSHAKE_TIMEOUT, async {
        let _ = stream.write_all(reply.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(conn) => conn,
            // The accept loop never ends while the listener lives.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_is_told_from_a_client_hello() {
        assert!(looks_like_http(b"GET / HT"));
        assert!(looks_like_http(b"POST /v1"));
        assert!(looks_like_http(b"OPTI"));
        assert!(!looks_like_http(&[
            0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01
        ]));
        assert!(!looks_like_http(b"GE"));
    }
}
