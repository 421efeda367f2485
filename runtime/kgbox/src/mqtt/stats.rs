//! The MQTT front end's counters, copied into `/metrics` at each scrape.

use std::sync::atomic::{AtomicU64, Ordering};

use metrics::Label;

use crate::metrics::{Source, Totals};

/// Counters for `/metrics` (all zero when MQTT is off).
#[derive(Debug, Default)]
pub struct MqttStats {
    /// Requests run through the handlers (any status, bad payloads included).
    answered: AtomicU64,
    /// Redelivered requests ignored.
    duplicate: AtomicU64,
    /// Requests dropped: nowhere to answer.
    no_response_topic: AtomicU64,
    /// Requests refused as larger than `mqtt.max_request_bytes`.
    too_large: AtomicU64,
    replies_sent: AtomicU64,
    replies_failed: AtomicU64,
    /// Successful connections (ConnAcks).
    connects: AtomicU64,
    /// 1 while connected.
    connected: AtomicU64,
}

/// What became of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Answered,
    Duplicate,
    NoResponseTopic,
    TooLarge,
}

impl MqttStats {
    pub(crate) fn request(&self, outcome: Outcome) {
        let c = match outcome {
            Outcome::Answered => &self.answered,
            Outcome::Duplicate => &self.duplicate,
            Outcome::NoResponseTopic => &self.no_response_topic,
            Outcome::TooLarge => &self.too_large,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a reply: handed to the client (`sent`) or not (`failed`).
    pub(crate) fn reply(&self, sent: bool) {
        let c = if sent {
            &self.replies_sent
        } else {
            &self.replies_failed
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn set_connected(&self, connected: bool) {
        if connected {
            self.connects.fetch_add(1, Ordering::Relaxed);
        }
        self.connected
            .store(u64::from(connected), Ordering::Relaxed);
    }

    pub(crate) fn is_connected(&self) -> bool {
        self.connected.load(Ordering::Relaxed) == 1
    }
}

impl Source for MqttStats {
    fn describe(&self) {
        describe();
    }

    /// Copies the counters into the `kgbox_mqtt_*` series (at a scrape).
    fn report(&self, totals: &Totals) {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        for (outcome, c) in [
            ("answered", &self.answered),
            ("duplicate", &self.duplicate),
            ("no_response_topic", &self.no_response_topic),
            ("too_large", &self.too_large),
        ] {
            totals.sync(
                "kgbox_mqtt_requests_total",
                vec![Label::new("outcome", outcome)],
                get(c),
            );
        }
        for (outcome, c) in [
            ("sent", &self.replies_sent),
            ("failed", &self.replies_failed),
        ] {
            totals.sync(
                "kgbox_mqtt_replies_total",
                vec![Label::new("outcome", outcome)],
                get(c),
            );
        }
        totals.sync("kgbox_mqtt_connects_total", Vec::new(), get(&self.connects));
        metrics::gauge!("kgbox_mqtt_connected").set(get(&self.connected) as f64);
    }
}

/// HELP texts of the `kgbox_mqtt_*` series.
fn describe() {
    use metrics::{describe_counter, describe_gauge};
    describe_counter!("kgbox_mqtt_requests_total", "MQTT requests by outcome.");
    describe_counter!(
        "kgbox_mqtt_replies_total",
        "MQTT replies handed to the client (sent) or not (failed)."
    );
    describe_counter!(
        "kgbox_mqtt_connects_total",
        "Connections to the MQTT broker."
    );
    describe_gauge!(
        "kgbox_mqtt_connected",
        "1 while connected to the MQTT broker."
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use metrics_exporter_prometheus::PrometheusBuilder;

    fn scrape(s: &MqttStats, totals: &Totals) -> String {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            s.describe();
            s.report(totals);
        });
        handle.render()
    }

    #[test]
    fn copies_every_series() {
        let s = MqttStats::default();
        s.request(Outcome::Answered);
        s.request(Outcome::Answered);
        s.request(Outcome::Duplicate);
        s.reply(false);
        s.set_connected(true);
        let out = scrape(&s, &Totals::default());
        assert!(
            out.contains("kgbox_mqtt_requests_total{outcome=\"answered\"} 2\n"),
            "{out}"
        );
        assert!(out.contains("kgbox_mqtt_requests_total{outcome=\"duplicate\"} 1\n"));
        assert!(out.contains("kgbox_mqtt_requests_total{outcome=\"too_large\"} 0\n"));
        assert!(out.contains("kgbox_mqtt_replies_total{outcome=\"failed\"} 1\n"));
        assert!(out.contains("kgbox_mqtt_connects_total 1\n"));
        assert!(out.contains("kgbox_mqtt_connected 1\n"));
        assert!(out.contains("# TYPE kgbox_mqtt_connected gauge\n"));
        s.set_connected(false);
        let out = scrape(&s, &Totals::default());
        assert!(out.contains("kgbox_mqtt_connected 0\n"), "{out}");
        assert!(out.contains("kgbox_mqtt_connects_total 1\n"));
    }
}
