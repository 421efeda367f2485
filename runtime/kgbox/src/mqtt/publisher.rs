//! Publishing through either client (MQTT 5 or 3.1.1): the one place where
//! replies take their protocol-specific form.

use std::time::Duration;

use bytes::Bytes;
use rumqttc::v5::mqttbytes::v5::PublishProperties;
use serde_json::json;

use crate::request_id::RequestId;

/// How long a publish may wait for room in the client's request queue.
const ENQUEUE_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub(crate) enum PublishError {
    #[error("the MQTT client refused the request: {0}")]
    Client(String),
    #[error("the MQTT client's queue stayed full for {0:?}")]
    Timeout(Duration),
}

/// A handle on the connection's client, cheap to clone into request tasks.
#[derive(Clone)]
pub(crate) enum Publisher {
    V5(rumqttc::v5::AsyncClient),
    V311(rumqttc::AsyncClient),
}

fn v5_qos() -> rumqttc::v5::mqttbytes::QoS {
    rumqttc::v5::mqttbytes::QoS::AtLeastOnce
}

async fn bounded<F, E>(f: F) -> Result<(), PublishError>
where
    F: std::future::Future<Output = Result<(), E>>,
    E: std::fmt::Display,
{
    match tokio::time::timeout(ENQUEUE_TIMEOUT, f).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(PublishError::Client(e.to_string())),
        Err(_) => Err(PublishError::Timeout(ENQUEUE_TIMEOUT)),
    }
}

impl Publisher {
    /// Queues a QoS 1 publish of `payload` on `topic`.
    pub(crate) async fn publish(
        &self,
        topic: &str,
        payload: Vec<u8>,
        retain: bool,
    ) -> Result<(), PublishError> {
        match self {
            Publisher::V5(c) => bounded(c.publish(topic, v5_qos(), retain, payload)).await,
            Publisher::V311(c) => {
                bounded(c.publish(topic, rumqttc::QoS::AtLeastOnce, retain, payload)).await
            }
        }
    }

    /// Queues a QoS 1 subscription to `filter`.
    pub(crate) async fn subscribe(&self, filter: &str) -> Result<(), PublishError> {
        match self {
            Publisher::V5(c) => bounded(c.subscribe(filter, v5_qos())).await,
            Publisher::V311(c) => bounded(c.subscribe(filter, rumqttc::QoS::AtLeastOnce)).await,
        }
    }

    /// Publishes a reply: MQTT 5 carries the correlation data, content type,
    /// status and request id (user properties `status` and `request-id`) as
    /// properties; MQTT 3.1.1 wraps the body in an envelope.
    pub(crate) async fn reply(
        &self,
        topic: &str,
        correlation: Option<&Bytes>,
        request_id: &RequestId,
        status: u16,
        body: Bytes,
    ) -> Result<(), PublishError> {
        match self {
            Publisher::V5(c) => {
                let props = PublishProperties {
                    correlation_data: correlation.cloned(),
                    content_type: Some("application/json".into()),
                    user_properties: vec![
                        ("status".into(), status.to_string()),
                        ("request-id".into(), request_id.to_string()),
                    ],
                    ..Default::default()
                };
                bounded(c.publish_with_properties(topic, v5_qos(), false, body, props)).await
            }
            Publisher::V311(c) => {
                let payload = envelope_reply(correlation, request_id, status, &body);
                bounded(c.publish(topic, rumqttc::QoS::AtLeastOnce, false, payload)).await
            }
        }
    }

    /// Queues a clean DISCONNECT.
    pub(crate) async fn disconnect(&self) -> Result<(), PublishError> {
        match self {
            Publisher::V5(c) => bounded(c.disconnect()).await,
            Publisher::V311(c) => bounded(c.disconnect()).await,
        }
    }
}

/// The MQTT 3.1.1 reply:
/// `{"correlation_id": ..., "request_id": ..., "status": 200, "body": {...}}`.
pub(crate) fn envelope_reply(
    correlation: Option<&Bytes>,
    request_id: &RequestId,
    status: u16,
    body: &[u8],
) -> Vec<u8> {
    let correlation_id = correlation.map(|c| String::from_utf8_lossy(c).into_owned());
    let body: serde_json::Value = serde_json::from_slice(body)
        .unwrap_or_else(|_| serde_json::Value::String(String::from_utf8_lossy(body).into_owned()));
    json!({
        "correlation_id": correlation_id,
        "request_id": request_id.as_str(),
        "status": status,
        "body": body,
    })
    .to_string()
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_reply_embeds_the_body() {
        let c = Bytes::from_static(b"abc");
        let id = RequestId::generate();
        let out = envelope_reply(Some(&c), &id, 200, br#"{"answers":[]}"#);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap_or_default();
        assert_eq!(
            v,
            json!({"correlation_id": "abc", "request_id": id.as_str(), "status": 200, "body": {"answers": []}})
        );
        let out = envelope_reply(None, &id, 500, b"not json");
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap_or_default();
        assert_eq!(v["correlation_id"], serde_json::Value::Null);
        assert_eq!(v["body"], "not json");
    }
}
