//! MQTT against a real mosquitto: requests and replies (to the default
//! bundle and to those beside it), abuse, and Home Assistant discovery. (Bundle push over MQTT: `deploy::push`.)

mod abuse;
mod beside;
mod homeassistant;
mod requests;
