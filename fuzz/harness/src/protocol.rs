//! The MQTT side's small parsers: broker URLs (config and `KGBOX_MQTT__BROKER`),
//! topics a broker delivers, and bundle transfer manifests.

use kgbox_protocol::broker::BrokerUrl;
use kgbox_protocol::push::Manifest;
use kgbox_protocol::topics::{BundleTopic, DeviceTopics};

/// A broker URL; one that parses must print as a URL that parses to the same.
pub fn broker_url(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(url) = BrokerUrl::parse(text) {
        let printed = url.to_string();
        match BrokerUrl::parse(&printed) {
            Ok(again) => assert_eq!(again, url, "{text:?} printed as {printed:?}"),
            Err(e) => panic!("{text:?} printed as {printed:?}, which does not parse: {e}"),
        }
    }
}

/// A topic routed by a device with a group and bundle push on.
pub fn topic(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let topics = DeviceTopics::new("dev-1", Some("fleet"), true);
    let _ = topics.route(text);
    let _ = BundleTopic::parse(text);
}

/// A transfer manifest (`.../bundle/begin`) against a device's default
/// limits; one that is accepted must describe chunks that add up to its size.
pub fn push_manifest(data: &[u8]) {
    const MAX_SIZE: u64 = 4 << 30;
    const MAX_CHUNK: u64 = 1 << 20;
    let Ok(m) = Manifest::parse(data, MAX_SIZE, MAX_CHUNK) else {
        return;
    };
    let n = m.chunks();
    assert!(n >= 1);
    let last = m.chunk_len(n - 1).expect("the last chunk is in range");
    assert!(last >= 1 && last <= m.chunk_bytes);
    assert_eq!((n - 1) * m.chunk_bytes + last, m.size);
    assert_eq!(m.chunk_len(n), None);
}
