//! MQTT against a real mosquitto: requests and replies (to the default
//! bundle and to those beside it), abuse, Home Assistant discovery, and
//! the fleet view (`kgbox-pack fleet status`). (Bundle push over MQTT: `deploy::push`.)

mod abuse;
mod beside;
mod fleet;
mod homeassistant;
mod requests;
mod rollout;
