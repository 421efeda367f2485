//! Topic names and routing of incoming messages.

use super::requests::Kind;

/// Topic names for this device.
#[derive(Debug)]
pub(crate) struct Topics {
    pub device_id: String,
    pub status: String,
    pub progress: String,
    pub subscriptions: Vec<String>,
    /// `kgbox/{id}/`
    prefix: String,
    /// `kgbox/group/{group}/bundle/`
    group_bundle: Option<String>,
}

/// Where a message goes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Route<'a> {
    Request(Kind),
    /// The part after `bundle/`.
    Bundle(&'a str),
    Other,
}

impl Topics {
    pub(crate) fn new(device_id: &str, group: Option<&str>, bundle_push: bool) -> Topics {
        let prefix = format!("kgbox/{device_id}/");
        let mut subscriptions = vec![format!("{prefix}ask"), format!("{prefix}query")];
        if let Some(g) = group {
            subscriptions.push(format!("$share/{g}/kgbox/ask"));
            subscriptions.push(format!("$share/{g}/kgbox/query"));
        }
        if bundle_push {
            subscriptions.push(format!("{prefix}bundle/#"));
            if let Some(g) = group {
                subscriptions.push(format!("kgbox/group/{g}/bundle/#"));
            }
        }
        Topics {
            device_id: device_id.to_string(),
            status: format!("{prefix}status"),
            progress: format!("{prefix}bundle/progress"),
            subscriptions,
            group_bundle: group.map(|g| format!("kgbox/group/{g}/bundle/")),
            prefix,
        }
    }

    pub(crate) fn route<'a>(&self, topic: &'a str) -> Route<'a> {
        let own = topic.strip_prefix(self.prefix.as_str());
        match own.or_else(|| topic.strip_prefix("kgbox/")) {
            Some("ask") => return Route::Request(Kind::Ask),
            Some("query") => return Route::Request(Kind::Query),
            _ => {}
        }
        let bundle = own.and_then(|r| r.strip_prefix("bundle/")).or_else(|| {
            self.group_bundle
                .as_deref()
                .and_then(|g| topic.strip_prefix(g))
        });
        match bundle {
            // Our own progress messages are not for the receiver.
            Some(rest) if rest != "progress" => Route::Bundle(rest),
            _ => Route::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        let t = Topics::new("edge-7", Some("fleet"), true);
        assert_eq!(t.route("kgbox/edge-7/ask"), Route::Request(Kind::Ask));
        assert_eq!(t.route("kgbox/edge-7/query"), Route::Request(Kind::Query));
        assert_eq!(t.route("kgbox/ask"), Route::Request(Kind::Ask));
        assert_eq!(t.route("kgbox/query"), Route::Request(Kind::Query));
        assert_eq!(t.route("kgbox/edge-7/bundle/begin"), Route::Bundle("begin"));
        assert_eq!(
            t.route("kgbox/group/fleet/bundle/chunk/t1/3"),
            Route::Bundle("chunk/t1/3")
        );
        assert_eq!(t.route("kgbox/edge-7/bundle/progress"), Route::Other);
        assert_eq!(t.route("kgbox/other/ask"), Route::Other);
        assert_eq!(t.route("kgbox/group/else/bundle/begin"), Route::Other);
        assert_eq!(t.route("kgbox/edge-7/status"), Route::Other);
        assert_eq!(t.route(""), Route::Other);
        assert!(t
            .subscriptions
            .contains(&"$share/fleet/kgbox/ask".to_string()));
        assert!(t
            .subscriptions
            .contains(&"kgbox/group/fleet/bundle/#".to_string()));

        let t = Topics::new("d", None, false);
        assert_eq!(t.subscriptions, vec!["kgbox/d/ask", "kgbox/d/query"]);
        assert_eq!(t.status, "kgbox/d/status");
    }
}
