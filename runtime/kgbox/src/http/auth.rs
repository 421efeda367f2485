//! Who may read: API keys (`Authorization: Bearer kgb_...`, see
//! [`crate::keys`]) with their scopes and request rates, on every route
//! but health, the OpenAPI description and the console page.
//!
//! - No key: 401 `missing_key`, unless anonymous reads are on
//!   (`http.allow_anonymous`; by default only on a loopback address).
//! - A key (`kgb_...`) that is unknown, wrong or revoked: 401 `invalid_key`,
//!   anonymous reads or not (a client that sends a key means to use it).
//!   Any other credential is `invalid_key` where keys are needed and ignored
//!   where anonymous reads are on (OpenAI clients send some `api_key`
//!   whatever the server).
//! - A key without a read scope for the served bundle: 403 `forbidden`.
//! - Past its rate: 429 `rate_limited` with `Retry-After`.
//! - A key in the URL: 400 `key_in_url` (URLs end up in logs and histories).
//!
//! The admin token and admin keys read everything. MQTT requests, which the
//! broker has already admitted, are not checked here. The access log names
//! the key by its id ([`KeyId`]), never by its text.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::Clock;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use subtle::ConstantTimeEq;

use super::access_log::{InProcess, KeyId};
use super::{ApiError, AppState, Selected};
use crate::config::HttpConfig;
use crate::keys::{KeyRecord, Keyring, Rate, Refusal, Token};

/// Keys, the anonymous policy and the per-key rate limiters of a server.
pub struct Auth {
    pub ring: Keyring,
    /// Whether requests without a key may read.
    pub anonymous: bool,
    default_rate: Option<Rate>,
    limiters: Mutex<HashMap<String, (Rate, Arc<DefaultDirectRateLimiter>)>>,
}

/// What a request presented.
enum Presented<'a> {
    Nothing,
    Bearer(&'a str),
    /// A credential not in a form kgbox takes (another scheme, `X-API-Key`).
    Other(&'static str),
}

/// The caller, once admitted.
pub enum Caller {
    Anonymous,
    AdminToken,
    Key(KeyRecord),
}

impl Auth {
    pub fn new(ring: Keyring, anonymous: bool, default_rate: Option<Rate>) -> Auth {
        Auth {
            ring,
            anonymous,
            default_rate,
            limiters: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one request from `key`'s rate; `Err(seconds to wait)` past it.
    fn take(&self, key: &KeyRecord) -> Result<(), u64> {
        let Some(rate) = key.rate.or(self.default_rate) else {
            return Ok(());
        };
        let limiter = {
            let mut map = match self.limiters.lock() {
                Ok(m) => m,
                Err(poisoned) => poisoned.into_inner(),
            };
            let entry = map
                .entry(key.id.clone())
                .or_insert_with(|| (rate, limiter(rate)));
            if entry.0 != rate {
                *entry = (rate, limiter(rate));
            }
            entry.1.clone()
        };
        limiter.check().map_err(|not_until| {
            let wait = not_until.wait_time_from(limiter.clock().now());
            wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
        })
    }
}

/// Why `serve` must not start as configured, if it must not. On an address
/// other than loopback: reads need keys and one must exist, unless
/// `http.allow_anonymous = true`; and the traffic needs TLS (`[http.tls]`),
/// unless `http.allow_plaintext = true` (a proxy terminates it).
pub fn exposure_error(http: &HttpConfig, ring: &Keyring) -> Option<String> {
    if http.listens_on_loopback() {
        return None;
    }
    if http.allow_anonymous != Some(true) && !ring.any_active() {
        return Some(format!(
            "http.listen = {:?} is not a loopback address and no API key exists, so anyone who can reach the port could read the graph: \
             add a key (`kgbox keys add --name NAME --scope read`) and give it to the clients, \
             or set http.allow_anonymous = true to serve without keys",
            http.listen
        ));
    }
    if http.tls.is_none() && !http.allow_plaintext {
        return Some(format!(
            "http.listen = {:?} is not a loopback address and there is no TLS, so keys and answers would cross the network in clear: \
             set http.tls.cert_file and http.tls.key_file, \
             or http.allow_plaintext = true when a proxy in front terminates TLS",
            http.listen
        ));
    }
    None
}

fn limiter(rate: Rate) -> Arc<DefaultDirectRateLimiter> {
    let period = rate.per / rate.count.get();
    let quota = Quota::with_period(period)
        .unwrap_or_else(|| Quota::per_second(rate.count))
        .allow_burst(rate.count);
    Arc::new(RateLimiter::direct(quota))
}

fn presented(headers: &HeaderMap) -> Presented<'_> {
    if let Some(value) = headers.get(header::AUTHORIZATION) {
        let Ok(text) = value.to_str() else {
            return Presented::Other("an Authorization header that is not text");
        };
        return match text.trim().split_once(' ') {
            Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => {
                Presented::Bearer(token.trim())
            }
            _ => Presented::Other("an Authorization header that is not `Bearer <key>`"),
        };
    }
    for odd in ["x-api-key", "api-key", "x-auth-token"] {
        if headers.contains_key(odd) {
            return Presented::Other("a key in a header other than Authorization");
        }
    }
    Presented::Nothing
}

/// A refused request: its status, code, message and the key named in the
/// access log and metrics (`-`: none, `invalid`: one not known).
pub struct Refused {
    pub status: StatusCode,
    code: &'static str,
    message: String,
    key: String,
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        metrics::counter!("kgbox_key_requests_total", "key" => self.key.clone(), "outcome" => self.code)
            .increment(1);
        let mut resp = ApiError::new(self.status, self.code, self.message).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"kgbox\""),
            );
        }
        resp.extensions_mut().insert(KeyId(self.key));
        resp
    }
}

fn refuse(status: StatusCode, code: &'static str, message: String, key: &str) -> Refused {
    Refused {
        status,
        code,
        message,
        key: key.to_string(),
    }
}

/// Who `headers` say the caller is, or the refusal. `admin_token` is the
/// device's admin token, which counts as an admin key; `anonymous`: whether
/// a request without a key is let through.
pub fn identify(
    auth: &Auth,
    admin_token: Option<&str>,
    anonymous: bool,
    headers: &HeaderMap,
) -> Result<Caller, Refused> {
    match presented(headers) {
        Presented::Nothing if anonymous => Ok(Caller::Anonymous),
        // Where anonymous reads are on, a credential that is not a kgbox key
        // is no claim to be one: OpenAI clients always send some `api_key`.
        Presented::Other(_) if anonymous => Ok(Caller::Anonymous),
        Presented::Bearer(token)
            if anonymous
                && Token::parse(token).is_none()
                && admin_token.is_none_or(|t| !same_secret(t, token)) =>
        {
            Ok(Caller::Anonymous)
        }
        Presented::Nothing => Err(refuse(
            StatusCode::UNAUTHORIZED,
            "missing_key",
            "this endpoint needs an API key: `Authorization: Bearer <key>` (kgbox keys add)".into(),
            "-",
        )),
        Presented::Other(what) => Err(refuse(
            StatusCode::UNAUTHORIZED,
            "invalid_key",
            format!("{what}: send the key as `Authorization: Bearer <key>`"),
            "-",
        )),
        Presented::Bearer(token) => {
            if admin_token.is_some_and(|t| same_secret(t, token)) {
                return Ok(Caller::AdminToken);
            }
            auth.ring
                .check(token)
                .map(Caller::Key)
                .map_err(|(why, id)| {
                    let id = id.unwrap_or_else(|| "-".into());
                    tracing::info!(key = %id, reason = ?why, "API key refused");
                    let message = match why {
                        Refusal::Malformed => "this is not a kgbox API key (kgb_<id>_<secret>)",
                        Refusal::Unknown | Refusal::Revoked => "unknown or revoked API key",
                    };
                    refuse(
                        StatusCode::UNAUTHORIZED,
                        "invalid_key",
                        message.into(),
                        if why == Refusal::Malformed {
                            "-"
                        } else {
                            "invalid"
                        },
                    )
                })
        }
    }
}

/// The middleware of the read routes.
pub async fn require_read(
    State(state): State<Arc<AppState>>,
    req: Request,
    next: Next,
) -> Response {
    if req.extensions().get::<InProcess>().is_some() {
        return next.run(req).await;
    }
    if req.uri().query().is_some_and(Token::appears_in) {
        return refuse(
            StatusCode::BAD_REQUEST,
            "key_in_url",
            "an API key in the URL: send it as `Authorization: Bearer <key>` (URLs end up in logs and browser histories; revoke this key)".into(),
            "-",
        )
        .into_response();
    }
    let caller = match identify(
        &state.auth,
        state.admin_token.as_deref(),
        state.auth.anonymous,
        req.headers(),
    ) {
        Ok(c) => c,
        Err(refusal) => return refusal.into_response(),
    };
    let key = match caller {
        Caller::Anonymous => return next.run(req).await,
        Caller::AdminToken => return with_key(next.run(req).await, "admin-token"),
        Caller::Key(key) => key,
    };
    // The bundle `/b/NAME/` chose, else the default. The OpenAI facade
    // outside `/b/NAME/` picks the bundle by its `model` (and lists those a
    // key may read): its handlers check [`ReadKey`] themselves.
    let selected = req.extensions().get::<Selected>();
    let handler_chooses =
        selected.is_none() && matches!(req.uri().path(), "/v1/chat/completions" | "/v1/models");
    let bundle = match selected {
        Some(s) => s.0.served().bundle.manifest().name.clone(),
        None => state.served().bundle.manifest().name.clone(),
    };
    // The metrics are the whole device's (every bundle, every key).
    let whole_device = req.uri().path() == "/metrics";
    let allowed = if whole_device {
        key.reads_all()
    } else {
        handler_chooses || key.reads(&bundle)
    };
    if !allowed {
        return refuse(
            StatusCode::FORBIDDEN,
            "forbidden",
            // Not named: a key learns nothing of a bundle it may not read.
            format!("key {} may not read this bundle", key.id),
            &key.id,
        )
        .into_response();
    }
    if let Err(wait) = state.auth.take(&key) {
        let mut resp = refuse(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!("key {} is past its request rate; retry in {wait} s", key.id),
            &key.id,
        )
        .into_response();
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(wait.max(1)));
        return resp;
    }
    metrics::counter!("kgbox_key_requests_total", "key" => key.id.clone(), "outcome" => "ok")
        .increment(1);
    let id = key.id.clone();
    let mut req = req;
    req.extensions_mut().insert(ReadKey(key));
    with_key(next.run(req).await, &id)
}

/// Whether `presented` is the admin token, in time that depends on
/// neither (their hashes are compared: not even the length leaks).
fn same_secret(token: &str, presented: &str) -> bool {
    use sha2::{Digest, Sha256};
    let a = Sha256::digest(token.as_bytes());
    let b = Sha256::digest(presented.as_bytes());
    bool::from(a.as_slice().ct_eq(b.as_slice()))
}

/// The key a read was admitted with (absent: anonymous or the admin token,
/// which read everything), for a handler that chooses the bundle itself.
#[derive(Clone)]
pub struct ReadKey(pub KeyRecord);

impl ReadKey {
    /// `Err(403 forbidden)` unless this key may read `bundle`.
    pub fn check(key: Option<&ReadKey>, bundle: &str) -> Result<(), ApiError> {
        match key {
            Some(ReadKey(k)) if !k.reads(bundle) => Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                format!("key {} may not read this bundle", k.id),
            )),
            _ => Ok(()),
        }
    }
}

fn with_key(mut resp: Response, id: &str) -> Response {
    resp.extensions_mut().insert(KeyId(id.to_string()));
    resp
}
