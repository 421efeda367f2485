//! Home Assistant MQTT discovery (docs/mqtt.md, "Home Assistant"): with
//! `mqtt.homeassistant_discovery` on, the device publishes one retained
//! config per entity on every ConnAck, each reading the retained status
//! topic with a Jinja template. Nothing here talks to the broker: [`configs`]
//! only builds the messages.

use serde_json::{json, Map, Value};

/// The entities, in publishing order: (component, entity, name, template
/// giving the state from the status JSON; `None` is Home Assistant's
/// "unknown"). Extra keys: [`extra`].
const ENTITIES: [(&str, &str, &str, &str); 6] = [
    (
        "binary_sensor",
        "online",
        "Online",
        "{{ 'ON' if value_json.online is defined and value_json.online else 'OFF' }}",
    ),
    (
        "sensor",
        "bundle",
        "Bundle",
        "{{ value_json.bundle.name if value_json.bundle is defined else None }}",
    ),
    (
        "sensor",
        "bundle_version",
        "Bundle version",
        "{{ value_json.bundle.version if value_json.bundle is defined else None }}",
    ),
    (
        "sensor",
        "health",
        "Health",
        "{{ value_json.health if value_json.health is defined else None }}",
    ),
    (
        "sensor",
        "source",
        "Source",
        "{{ value_json.source if value_json.source is defined else None }}",
    ),
    (
        "sensor",
        "uptime",
        "Uptime",
        "{{ value_json.uptime_s if value_json.uptime_s is defined else None }}",
    ),
];

/// The availability template: `online` while the status says so, else
/// `offline` (Home Assistant's default payloads).
pub(crate) const AVAILABILITY_TEMPLATE: &str =
    "{{ 'online' if value_json.online is defined and value_json.online else 'offline' }}";

/// `device_id` with every character outside `A-Za-z0-9_-` replaced by `_`:
/// the node id in discovery topics (device ids may hold `.`, which Home
/// Assistant does not take there).
pub(crate) fn object_id(device_id: &str) -> String {
    device_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The entity id Home Assistant is asked to give `entity` (without its
/// domain): entity ids take only `a-z0-9_`.
fn entity_slug(device_id: &str, entity: &str) -> String {
    let id = object_id(device_id).to_ascii_lowercase().replace('-', "_");
    format!("kgbox_{id}_{entity}")
}

/// The extra keys of one entity's config.
fn extra(entity: &str) -> Value {
    match entity {
        "online" => json!({"device_class": "connectivity"}),
        "uptime" => json!({
            "device_class": "duration",
            "unit_of_measurement": "s",
            "state_class": "measurement",
            "entity_category": "diagnostic",
        }),
        "source" => json!({"entity_category": "diagnostic"}),
        _ => json!({}),
    }
}

/// The retained discovery messages, (topic, payload), one per entity:
/// `{prefix}/{component}/kgbox_{object id}/{entity}/config`, each reading
/// `status_topic`. `version` is the runtime's (the device's and origin's
/// `sw_version`).
pub(crate) fn configs(
    prefix: &str,
    device_id: &str,
    status_topic: &str,
    version: &str,
) -> Vec<(String, Vec<u8>)> {
    let node = format!("kgbox_{}", object_id(device_id));
    let device = json!({
        "identifiers": [node],
        "name": format!("kgbox {device_id}"),
        "manufacturer": "kgbox",
        "model": "kgbox runtime",
        "sw_version": version,
    });
    let origin = json!({"name": "kgbox", "sw_version": version});
    ENTITIES
        .iter()
        .map(|&(component, entity, name, template)| {
            let unique_id = format!("{node}_{entity}");
            let mut config = Map::new();
            config.insert("name".into(), name.into());
            config.insert("unique_id".into(), unique_id.clone().into());
            // The entity id: `object_id` for Home Assistant before 2025.10,
            // `default_entity_id` for later ones (which ignore the other).
            let slug = entity_slug(device_id, entity);
            config.insert(
                "default_entity_id".into(),
                format!("{component}.{slug}").into(),
            );
            config.insert("object_id".into(), slug.into());
            config.insert("state_topic".into(), status_topic.into());
            config.insert("value_template".into(), template.into());
            // The connectivity sensor stays available so that it shows
            // "disconnected" when the last will arrives; the others turn
            // unavailable then.
            if entity != "online" {
                config.insert(
                    "availability".into(),
                    json!([{"topic": status_topic, "value_template": AVAILABILITY_TEMPLATE}]),
                );
            }
            if let Value::Object(more) = extra(entity) {
                config.extend(more);
            }
            config.insert("device".into(), device.clone());
            config.insert("origin".into(), origin.clone());
            let topic = format!("{prefix}/{component}/{node}/{entity}/config");
            (topic, Value::Object(config).to_string().into_bytes())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn parsed(prefix: &str, device_id: &str) -> Vec<(String, Value)> {
        configs(
            prefix,
            device_id,
            &format!("kgbox/{device_id}/status"),
            "1.2.3",
        )
        .into_iter()
        .map(|(t, p)| (t, serde_json::from_slice(&p).unwrap_or_default()))
        .collect()
    }

    #[test]
    fn object_ids_keep_only_topic_safe_characters() {
        assert_eq!(object_id("edge-7_a"), "edge-7_a");
        assert_eq!(object_id("edge.7"), "edge_7");
        assert_eq!(object_id("a.b/c+d#é"), "a_b_c_d__");
        // Entity ids: lower case, no `-`.
        assert_eq!(entity_slug("Edge-7.b", "uptime"), "kgbox_edge_7_b_uptime");
        let configs = configs("ha", "Edge-7", "kgbox/Edge-7/status", "1");
        let c: Value = serde_json::from_slice(&configs[5].1).unwrap_or_default();
        assert_eq!(c["unique_id"], "kgbox_Edge-7_uptime");
        assert_eq!(c["object_id"], "kgbox_edge_7_uptime");
        assert_eq!(c["default_entity_id"], "sensor.kgbox_edge_7_uptime");
        assert_eq!(configs[5].0, "ha/sensor/kgbox_Edge-7/uptime/config");
    }

    #[test]
    fn one_config_per_entity_under_the_prefix() {
        let topics: Vec<String> = parsed("homeassistant", "edge.7")
            .into_iter()
            .map(|(t, _)| t)
            .collect();
        assert_eq!(
            topics,
            [
                "homeassistant/binary_sensor/kgbox_edge_7/online/config",
                "homeassistant/sensor/kgbox_edge_7/bundle/config",
                "homeassistant/sensor/kgbox_edge_7/bundle_version/config",
                "homeassistant/sensor/kgbox_edge_7/health/config",
                "homeassistant/sensor/kgbox_edge_7/source/config",
                "homeassistant/sensor/kgbox_edge_7/uptime/config",
            ]
        );
        let (t, _) = &parsed("site/ha", "x")[0];
        assert_eq!(t, "site/ha/binary_sensor/kgbox_x/online/config");
    }

    #[test]
    fn every_config_reads_the_status_and_names_the_device() {
        let configs = parsed("homeassistant", "edge.7");
        let mut ids = BTreeSet::new();
        for (topic, c) in &configs {
            let entity = topic.split('/').nth(3).unwrap_or_default();
            let component = topic.split('/').nth(1).unwrap_or_default();
            let unique = format!("kgbox_edge_7_{entity}");
            assert_eq!(c["unique_id"], unique.as_str(), "{c}");
            assert_eq!(c["object_id"], unique.as_str(), "{c}");
            assert_eq!(
                c["default_entity_id"],
                format!("{component}.{unique}").as_str()
            );
            assert!(ids.insert(unique));
            assert_eq!(c["state_topic"], "kgbox/edge.7/status", "{c}");
            assert!(c["name"].as_str().is_some_and(|n| !n.is_empty()), "{c}");
            let template = c["value_template"].as_str().unwrap_or_default();
            assert!(template.contains("value_json."), "{c}");
            assert_eq!(
                c["device"],
                json!({
                    "identifiers": ["kgbox_edge_7"],
                    "name": "kgbox edge.7",
                    "manufacturer": "kgbox",
                    "model": "kgbox runtime",
                    "sw_version": "1.2.3",
                }),
                "{c}"
            );
            assert_eq!(c["origin"], json!({"name": "kgbox", "sw_version": "1.2.3"}));
            if entity == "online" {
                assert_eq!(c["device_class"], "connectivity", "{c}");
                assert!(c.get("availability").is_none(), "{c}");
            } else {
                assert_eq!(
                    c["availability"],
                    json!([{"topic": "kgbox/edge.7/status", "value_template": AVAILABILITY_TEMPLATE}]),
                    "{c}"
                );
            }
        }
        assert_eq!(ids.len(), 6);
        let uptime = &configs[5].1;
        assert_eq!(uptime["device_class"], "duration");
        assert_eq!(uptime["unit_of_measurement"], "s");
        assert_eq!(uptime["state_class"], "measurement");
        assert!(configs[2].1["value_template"]
            .as_str()
            .is_some_and(|t| t.contains("value_json.bundle.version")));
    }
}
