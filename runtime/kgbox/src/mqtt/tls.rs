//! TLS for `mqtts://`: rustls with the ring provider, the CA from
//! `mqtt.ca_file`, optionally a client certificate and key.

use std::path::Path;
use std::sync::Arc;

use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{ClientConfig, RootCertStore};

use super::MqttError;
use crate::config::MqttConfig;

fn read(key: &str, path: &Path) -> Result<Vec<u8>, MqttError> {
    std::fs::read(path)
        .map_err(|e| MqttError::Config(format!("mqtt.{key} {}: {e}", path.display())))
}

fn certs(key: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>, MqttError> {
    let pem = read(key, path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| MqttError::Config(format!("mqtt.{key} {}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(MqttError::Config(format!(
            "mqtt.{key} {}: no PEM certificate in it",
            path.display()
        )));
    }
    Ok(certs)
}

/// The client's TLS configuration.
pub(crate) fn client_config(cfg: &MqttConfig) -> Result<Arc<ClientConfig>, MqttError> {
    let Some(ca_file) = &cfg.ca_file else {
        return Err(MqttError::Config(
            "mqtt.broker uses mqtts:// but mqtt.ca_file is not set".into(),
        ));
    };
    let mut roots = RootCertStore::empty();
    for cert in certs("ca_file", ca_file)? {
        roots
            .add(cert)
            .map_err(|e| MqttError::Config(format!("mqtt.ca_file {}: {e}", ca_file.display())))?;
    }
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| MqttError::Config(format!("TLS: {e}")))?
        .with_root_certificates(roots);
    let config = match (&cfg.client_cert, &cfg.client_key) {
        (Some(cert), Some(key)) => {
            let chain = certs("client_cert", cert)?;
            let pem = read("client_key", key)?;
            let key_der = PrivateKeyDer::from_pem_slice(&pem).map_err(|e| {
                MqttError::Config(format!("mqtt.client_key {}: {e}", key.display()))
            })?;
            builder
                .with_client_auth_cert(chain, key_der)
                .map_err(|e| MqttError::Config(format!("mqtt.client_cert / client_key: {e}")))?
        }
        (None, None) => builder.with_no_client_auth(),
        _ => {
            return Err(MqttError::Config(
                "mqtt.client_cert and mqtt.client_key go together".into(),
            ))
        }
    };
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreadable_or_empty_ca_is_a_config_error() {
        let dir = tempfile::tempdir().ok();
        let Some(dir) = dir else { return };
        let mut cfg = MqttConfig {
            broker: "mqtts://127.0.0.1:8883".into(),
            ca_file: Some(dir.path().join("missing.pem")),
            ..MqttConfig::default()
        };
        assert!(matches!(client_config(&cfg), Err(MqttError::Config(_))));
        let empty = dir.path().join("empty.pem");
        let _ = std::fs::write(&empty, "no certificate here\n");
        cfg.ca_file = Some(empty);
        let err = client_config(&cfg).err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("no PEM certificate")));
    }
}
