//! Getting a bundle onto a device and keeping it there: live deployment
//! over HTTP with health checks and rollback, pushes over MQTT, delta
//! updates, bundles that leave their in-edges to the device, and the
//! update-framework hooks; bundles installed beside the default one.

mod beside;
mod delta;
mod derived;
mod http;
mod push;
mod update_hooks;
