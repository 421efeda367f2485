//! The MQTT 5 event loop: response topic and correlation data come as
//! publish properties.

use rumqttc::v5::mqttbytes::v5::{LastWill, Packet, Publish, SubscribeReasonCode};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{AsyncClient, Event, EventLoop, MqttOptions, Request};
use rumqttc::{Outgoing, TlsConfiguration, Transport};

use super::publisher::Publisher;
use super::requests::Incoming;
use super::{Connection, Polled, Settings};

pub(crate) struct V5 {
    el: EventLoop,
    /// Publishes the lost connection took with it, sent again after the next
    /// ConnAck (a clean session: rumqttc itself would drop them).
    salvage: Vec<Publish>,
}

impl V5 {
    fn keep_pending(&mut self) {
        let pending = self.el.pending.drain(..).filter_map(|r| match r {
            Request::Publish(p) => Some(p),
            _ => None,
        });
        super::salvage(&mut self.salvage, pending, |p| p.retain);
    }

    fn requeue(&mut self) {
        for mut p in self.salvage.drain(..) {
            p.pkid = 0;
            p.dup = false;
            self.el.pending.push_back(Request::Publish(p));
        }
    }
}

/// The client (not yet connected: the first poll connects).
pub(crate) fn connect(s: &Settings) -> (Publisher, V5) {
    let mut o = MqttOptions::new(s.client_id.clone(), s.host.clone(), s.port);
    o.set_keep_alive(s.keep_alive)
        .set_clean_start(true)
        .set_request_channel_capacity(s.channel_capacity)
        .set_max_packet_size(Some(u32::try_from(s.max_incoming).unwrap_or(u32::MAX)))
        .set_last_will(LastWill::new(
            s.will_topic.clone(),
            s.will_payload.clone(),
            QoS::AtLeastOnce,
            true,
            None,
        ));
    if let Some((user, password)) = &s.credentials {
        o.set_credentials(user.clone(), password.clone());
    }
    if let Some(tls) = &s.tls {
        o.set_transport(Transport::Tls(TlsConfiguration::Rustls(tls.clone())));
    }
    // Requests and replies are small: without TCP_NODELAY, Nagle and
    // delayed ACKs add ~40 ms to a round trip.
    let mut net = o.network_options();
    net.set_tcp_nodelay(true);
    o.set_network_options(net);
    let (client, eventloop) = AsyncClient::new(o, s.channel_capacity);
    (
        Publisher::V5(client),
        V5 {
            el: eventloop,
            salvage: Vec::new(),
        },
    )
}

fn incoming(p: Publish) -> Option<Incoming> {
    let topic = String::from_utf8(p.topic.to_vec()).ok()?;
    let (response_topic, correlation) = match p.properties {
        Some(props) => (props.response_topic, props.correlation_data),
        None => (None, None),
    };
    Some(Incoming {
        topic,
        payload: p.payload,
        response_topic,
        correlation,
    })
}

impl Connection for V5 {
    async fn poll(&mut self) -> Result<Polled, String> {
        match self.el.poll().await {
            Ok(Event::Incoming(Packet::ConnAck(_))) => {
                self.requeue();
                Ok(Polled::ConnAck)
            }
            Ok(Event::Incoming(Packet::Publish(p))) => Ok(match incoming(p) {
                Some(m) => Polled::Message(m),
                None => {
                    tracing::warn!("ignoring a message whose topic is not UTF-8");
                    Polled::Other
                }
            }),
            Ok(Event::Incoming(Packet::SubAck(ack))) => {
                let refused = ack
                    .return_codes
                    .iter()
                    .filter(|c| !matches!(c, SubscribeReasonCode::Success(_)))
                    .collect::<Vec<_>>();
                if !refused.is_empty() {
                    tracing::warn!(?refused, "the broker refused a subscription (ACL?)");
                }
                Ok(Polled::Other)
            }
            Ok(Event::Outgoing(Outgoing::Disconnect)) => Ok(Polled::DisconnectSent),
            Ok(_) => Ok(Polled::Other),
            Err(e) => {
                self.keep_pending();
                Err(e.to_string())
            }
        }
    }
}
