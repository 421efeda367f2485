//! Who gets in: API keys with scopes and rates, refused by the documented
//! status, and the refusal to serve an open network without them.

mod exposure;
mod keys;
mod tls;
