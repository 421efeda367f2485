//! The MQTT 3.1.1 event loop: requests carry `reply_to` and
//! `correlation_id` in a JSON envelope, unwrapped after routing.

use rumqttc::{
    AsyncClient, Event, EventLoop, LastWill, MqttOptions, Outgoing, Packet, Publish, QoS, Request,
    SubscribeReasonCode, TlsConfiguration, Transport,
};

use super::publisher::Publisher;
use super::requests::Incoming;
use super::{Connection, Polled, Settings};

/// Largest packet sent: MQTT's own limit (the broker may set a lower one).
const MAX_OUTGOING: usize = 268_435_455;

pub(crate) struct V311 {
    el: EventLoop,
    /// Publishes the lost connection took with it, sent again after the next
    /// ConnAck (a clean session: rumqttc itself would drop them).
    salvage: Vec<Publish>,
}

impl V311 {
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
pub(crate) fn connect(s: &Settings) -> (Publisher, V311) {
    let mut o = MqttOptions::new(s.client_id.clone(), s.host.clone(), s.port);
    o.set_keep_alive(s.keep_alive)
        .set_clean_session(true)
        .set_request_channel_capacity(s.channel_capacity)
        .set_max_packet_size(s.max_incoming, MAX_OUTGOING)
        .set_last_will(LastWill::new(
            s.will_topic.clone(),
            s.will_payload.clone(),
            QoS::AtLeastOnce,
            true,
        ));
    if let Some((user, password)) = &s.credentials {
        o.set_credentials(user.clone(), password.clone());
    }
    if let Some(tls) = &s.tls {
        o.set_transport(Transport::Tls(TlsConfiguration::Rustls(tls.clone())));
    }
    let (client, mut eventloop) = AsyncClient::new(o, s.channel_capacity);
    // Small requests and replies: no Nagle delay (see transport_v5.rs).
    let mut net = eventloop.network_options();
    net.set_tcp_nodelay(true);
    eventloop.set_network_options(net);
    (
        Publisher::V311(client),
        V311 {
            el: eventloop,
            salvage: Vec::new(),
        },
    )
}

impl Connection for V311 {
    async fn poll(&mut self) -> Result<Polled, String> {
        match self.el.poll().await {
            Ok(Event::Incoming(Packet::ConnAck(_))) => {
                self.requeue();
                Ok(Polled::ConnAck)
            }
            Ok(Event::Incoming(Packet::Publish(p))) => Ok(Polled::Message(Incoming {
                topic: p.topic,
                payload: p.payload,
                response_topic: None,
                correlation: None,
            })),
            Ok(Event::Incoming(Packet::SubAck(ack))) => {
                if ack.return_codes.contains(&SubscribeReasonCode::Failure) {
                    tracing::warn!("the broker refused a subscription (ACL?)");
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
