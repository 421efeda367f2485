//! What must not break the device (docs/reliability.md): a kill at every
//! crash point and at random moments of an install, bad bundles and data
//! dirs, and an attacker's attempts. (MQTT abuse: `mqtt::abuse`.)

mod crash_points;
mod faults;
mod power_loss;
mod security;
