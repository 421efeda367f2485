//! The MQTT topic scheme (docs/mqtt.md). `{id}` is a device id, `{group}` a
//! group name, both one topic level ([`valid_topic_level`]):
//!
//! ```text
//! kgbox/{id}/ask, kgbox/{id}/query                 requests to one device
//! kgbox/{id}/b/{bundle}/ask, .../query              the same, to a bundle beside the default
//! $share/{group}/kgbox/ask, .../kgbox/query         requests to one device of a group
//! $share/{group}/kgbox/b/{bundle}/ask, .../query    the same, to a bundle
//! kgbox/{id}/status                                 the retained status (and last will)
//! kgbox/{id}/bundle/begin                           a transfer manifest
//! kgbox/{id}/bundle/chunk/{transfer}/{index}        one chunk
//! kgbox/group/{group}/bundle/begin, .../chunk/...   the same, to every device of a group
//! kgbox/{id}/bundle/progress                        the device's transfer progress
//! kgbox/{id}/bundle/check                           a golden-question check (a rollout's)
//! kgbox/{id}/bundle/rollback                        a rollback, guarded by the digest served
//! ```

/// The first level of every topic.
pub const ROOT: &str = "kgbox";
/// The progress topics of every device (a pusher's subscription for a group).
pub const ANY_PROGRESS: &str = "kgbox/+/bundle/progress";

/// Whether `s` can be one level of a topic in this scheme (a device id, a
/// group): 1-64 characters of `A-Za-z0-9_-.`.
pub fn valid_topic_level(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// `kgbox/{id}/status`.
pub fn status_topic(device_id: &str) -> String {
    format!("{ROOT}/{device_id}/status")
}

/// `kgbox/{id}/bundle/progress`.
pub fn progress_topic(device_id: &str) -> String {
    format!("{ROOT}/{device_id}/bundle/progress")
}

/// The device a progress topic is from: `kgbox/{id}/bundle/progress` gives `{id}`.
pub fn progress_device(topic: &str) -> Option<&str> {
    topic
        .strip_prefix("kgbox/")
        .and_then(|r| r.strip_suffix("/bundle/progress"))
}

/// Which endpoint a request topic goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    Ask,
    Query,
}

impl RequestKind {
    /// The last topic level: `ask` or `query`.
    pub fn level(self) -> &'static str {
        match self {
            RequestKind::Ask => "ask",
            RequestKind::Query => "query",
        }
    }

    /// The HTTP endpoint that answers it.
    pub fn http_path(self) -> &'static str {
        match self {
            RequestKind::Ask => "/v1/ask",
            RequestKind::Query => "/v1/query",
        }
    }
}

/// What comes after `.../bundle/` on a topic a device receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BundleTopic<'a> {
    /// `begin`: a transfer manifest.
    Begin,
    /// `chunk/{transfer}/{index}` (the index as sent: not checked here).
    Chunk { transfer: &'a str, index: &'a str },
    /// `check`: a golden-question check (`fleet::CheckRequest`).
    Check,
    /// `rollback`: a guarded rollback (`fleet::RollbackRequest`).
    Rollback,
    /// Anything else.
    Unknown,
}

impl<'a> BundleTopic<'a> {
    pub fn parse(rest: &'a str) -> BundleTopic<'a> {
        match rest {
            "begin" => return BundleTopic::Begin,
            "check" => return BundleTopic::Check,
            "rollback" => return BundleTopic::Rollback,
            _ => {}
        }
        match rest.strip_prefix("chunk/").and_then(|r| r.split_once('/')) {
            Some((transfer, index)) => BundleTopic::Chunk { transfer, index },
            None => BundleTopic::Unknown,
        }
    }
}

/// Where a message a device receives goes.
#[derive(Debug, PartialEq, Eq)]
pub enum Route<'a> {
    /// A request, to the default bundle or (`b/{bundle}/...`) another.
    Request(RequestKind, Option<&'a str>),
    /// The part after `bundle/` (see [`BundleTopic`]).
    Bundle(&'a str),
    Other,
}

/// A device's topics: what it publishes to and subscribes to.
#[derive(Debug)]
pub struct DeviceTopics {
    pub device_id: String,
    /// The device's group, if it has one.
    pub group: Option<String>,
    /// `kgbox/{id}/status`.
    pub status: String,
    /// `kgbox/{id}/bundle/progress`.
    pub progress: String,
    pub subscriptions: Vec<String>,
    /// `kgbox/{id}/`
    prefix: String,
    /// `kgbox/group/{group}/bundle/`
    group_bundle: Option<String>,
}

impl DeviceTopics {
    pub fn new(device_id: &str, group: Option<&str>, bundle_push: bool) -> DeviceTopics {
        let prefix = format!("{ROOT}/{device_id}/");
        let kinds = [RequestKind::Ask, RequestKind::Query];
        let mut subscriptions: Vec<String> = Vec::new();
        for k in kinds {
            subscriptions.push(format!("{prefix}{}", k.level()));
            subscriptions.push(format!("{prefix}b/+/{}", k.level()));
        }
        if let Some(g) = group {
            for k in kinds {
                subscriptions.push(format!("$share/{g}/{ROOT}/{}", k.level()));
                subscriptions.push(format!("$share/{g}/{ROOT}/b/+/{}", k.level()));
            }
        }
        if bundle_push {
            subscriptions.push(format!("{prefix}bundle/#"));
            if let Some(g) = group {
                subscriptions.push(format!("{}#", group_bundle_prefix(g)));
            }
        }
        DeviceTopics {
            device_id: device_id.to_string(),
            group: group.map(str::to_string),
            status: status_topic(device_id),
            progress: progress_topic(device_id),
            subscriptions,
            group_bundle: group.map(group_bundle_prefix),
            prefix,
        }
    }

    /// Whether `topic` is under this device's own `kgbox/{id}/bundle/`
    /// (not its group's).
    pub fn is_own_bundle_topic(&self, topic: &str) -> bool {
        topic
            .strip_prefix(self.prefix.as_str())
            .is_some_and(|r| r.starts_with("bundle/"))
    }

    pub fn route<'a>(&self, topic: &'a str) -> Route<'a> {
        let own = topic.strip_prefix(self.prefix.as_str());
        let request = own.or_else(|| topic.strip_prefix("kgbox/"));
        let (bundle, last) = match request.and_then(|r| r.strip_prefix("b/")) {
            Some(r) => match r.split_once('/') {
                Some((b, last)) if valid_topic_level(b) => (Some(b), Some(last)),
                _ => (None, None),
            },
            None => (None, request),
        };
        match last {
            Some("ask") => return Route::Request(RequestKind::Ask, bundle),
            Some("query") => return Route::Request(RequestKind::Query, bundle),
            _ => {}
        }
        let bundle = own.and_then(|r| r.strip_prefix("bundle/")).or_else(|| {
            self.group_bundle
                .as_deref()
                .and_then(|g| topic.strip_prefix(g))
        });
        match bundle {
            // The device's own progress messages are not for its receiver.
            Some(rest) if rest != "progress" => Route::Bundle(rest),
            _ => Route::Other,
        }
    }
}

/// `kgbox/{id}/bundle/`.
fn device_bundle_prefix(device_id: &str) -> String {
    format!("{ROOT}/{device_id}/bundle/")
}

/// `kgbox/group/{group}/bundle/`.
fn group_bundle_prefix(group: &str) -> String {
    format!("{ROOT}/group/{group}/bundle/")
}

/// A pusher's topics for one device or one group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushTopics {
    /// `kgbox/{id}/bundle/` or `kgbox/group/{group}/bundle/`.
    pub prefix: String,
    /// The progress subscription: the device's progress topic, or
    /// [`ANY_PROGRESS`] for a group.
    pub progress: String,
}

impl PushTopics {
    pub fn device(device_id: &str) -> PushTopics {
        PushTopics {
            prefix: device_bundle_prefix(device_id),
            progress: progress_topic(device_id),
        }
    }

    pub fn group(group: &str) -> PushTopics {
        PushTopics {
            prefix: group_bundle_prefix(group),
            progress: ANY_PROGRESS.to_string(),
        }
    }

    /// `{prefix}begin`.
    pub fn begin(&self) -> String {
        format!("{}begin", self.prefix)
    }

    /// `{prefix}check`.
    pub fn check(&self) -> String {
        format!("{}check", self.prefix)
    }

    /// `{prefix}rollback`.
    pub fn rollback(&self) -> String {
        format!("{}rollback", self.prefix)
    }

    /// `{prefix}chunk/{transfer}/{index}`.
    pub fn chunk(&self, transfer: &str, index: u64) -> String {
        format!("{}chunk/{transfer}/{index}", self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        let t = DeviceTopics::new("edge-7", Some("fleet"), true);
        assert_eq!(
            t.route("kgbox/edge-7/ask"),
            Route::Request(RequestKind::Ask, None)
        );
        assert_eq!(
            t.route("kgbox/edge-7/query"),
            Route::Request(RequestKind::Query, None)
        );
        assert_eq!(t.route("kgbox/ask"), Route::Request(RequestKind::Ask, None));
        assert_eq!(
            t.route("kgbox/query"),
            Route::Request(RequestKind::Query, None)
        );
        assert_eq!(
            t.route("kgbox/edge-7/b/plant/ask"),
            Route::Request(RequestKind::Ask, Some("plant"))
        );
        assert_eq!(
            t.route("kgbox/b/office/query"),
            Route::Request(RequestKind::Query, Some("office"))
        );
        assert_eq!(t.route("kgbox/edge-7/b/plant/other"), Route::Other);
        assert_eq!(t.route("kgbox/edge-7/b/a b/ask"), Route::Other);
        assert_eq!(t.route("kgbox/edge-7/bundle/begin"), Route::Bundle("begin"));
        assert_eq!(
            t.route("kgbox/group/fleet/bundle/chunk/t1/3"),
            Route::Bundle("chunk/t1/3")
        );
        assert_eq!(t.route("kgbox/edge-7/bundle/progress"), Route::Other);
        assert!(t.is_own_bundle_topic("kgbox/edge-7/bundle/rollback"));
        assert!(!t.is_own_bundle_topic("kgbox/group/fleet/bundle/rollback"));
        assert!(!t.is_own_bundle_topic("kgbox/edge-7/ask"));
        assert_eq!(t.route("kgbox/other/ask"), Route::Other);
        assert_eq!(t.route("kgbox/group/else/bundle/begin"), Route::Other);
        assert_eq!(t.route("kgbox/edge-7/status"), Route::Other);
        assert_eq!(t.route(""), Route::Other);
        assert_eq!(
            t.subscriptions,
            [
                "kgbox/edge-7/ask",
                "kgbox/edge-7/b/+/ask",
                "kgbox/edge-7/query",
                "kgbox/edge-7/b/+/query",
                "$share/fleet/kgbox/ask",
                "$share/fleet/kgbox/b/+/ask",
                "$share/fleet/kgbox/query",
                "$share/fleet/kgbox/b/+/query",
                "kgbox/edge-7/bundle/#",
                "kgbox/group/fleet/bundle/#",
            ]
        );
        assert_eq!(t.progress, "kgbox/edge-7/bundle/progress");

        let t = DeviceTopics::new("d", None, false);
        assert_eq!(
            t.subscriptions,
            vec![
                "kgbox/d/ask",
                "kgbox/d/b/+/ask",
                "kgbox/d/query",
                "kgbox/d/b/+/query"
            ]
        );
        assert_eq!(t.status, "kgbox/d/status");
        assert_eq!(RequestKind::Query.http_path(), "/v1/query");
    }

    #[test]
    fn bundle_topics() {
        assert_eq!(BundleTopic::parse("begin"), BundleTopic::Begin);
        assert_eq!(
            BundleTopic::parse("chunk/t1/3"),
            BundleTopic::Chunk {
                transfer: "t1",
                index: "3"
            }
        );
        assert_eq!(BundleTopic::parse("chunk/t1"), BundleTopic::Unknown);
        assert_eq!(BundleTopic::parse("check"), BundleTopic::Check);
        assert_eq!(BundleTopic::parse("rollback"), BundleTopic::Rollback);
        assert_eq!(BundleTopic::parse("end"), BundleTopic::Unknown);
    }

    #[test]
    fn push_topics_meet_the_device_topics() {
        let d = PushTopics::device("dev1");
        assert_eq!(d.prefix, "kgbox/dev1/bundle/");
        assert_eq!(d.progress, "kgbox/dev1/bundle/progress");
        assert_eq!(d.begin(), "kgbox/dev1/bundle/begin");
        assert_eq!(d.chunk("t1", 7), "kgbox/dev1/bundle/chunk/t1/7");
        assert_eq!(d.check(), "kgbox/dev1/bundle/check");
        assert_eq!(d.rollback(), "kgbox/dev1/bundle/rollback");
        let g = PushTopics::group("fleet");
        assert_eq!(g.prefix, "kgbox/group/fleet/bundle/");
        assert_eq!(g.progress, "kgbox/+/bundle/progress");

        let dev = DeviceTopics::new("dev1", Some("fleet"), true);
        assert_eq!(dev.route(&d.begin()), Route::Bundle("begin"));
        assert_eq!(dev.route(&g.chunk("t1", 7)), Route::Bundle("chunk/t1/7"));
        assert_eq!(progress_device(&dev.progress), Some("dev1"));
        assert_eq!(progress_device("kgbox/dev1/status"), None);
    }

    #[test]
    fn topic_levels() {
        assert!(valid_topic_level("edge-7.a_b"));
        assert!(!valid_topic_level(""));
        assert!(!valid_topic_level("a/#"));
        assert!(!valid_topic_level(&"x".repeat(65)));
    }
}
