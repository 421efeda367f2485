//! MQTT against a real mosquitto: requests and replies, abuse, and Home
//! Assistant discovery. (Bundle push over MQTT: `deploy::push`.)

mod abuse;
mod homeassistant;
mod requests;
