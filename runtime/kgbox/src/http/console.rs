//! `GET /`: the web console, one self-contained page (HTML, CSS and script
//! inline, nothing fetched from another origin) that asks questions, runs
//! queries, browses entities and shows the device's status through the
//! public API.
//!
//! Its source is `console/`: `index.html`, `console.css` and `console.js`,
//! which the build script (`build.rs`) joins into the one page: the
//! stylesheet and the script go inline where `index.html` links them.

use std::sync::LazyLock;

use axum::http::header;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

/// The page, embedded in the binary: `console/index.html` with
/// `console/console.css` and `console/console.js` inline (joined by
/// `build.rs`).
pub const PAGE: &str = include_str!(concat!(env!("OUT_DIR"), "/console.html"));

/// The `Content-Security-Policy` the page is served with: everything from
/// this origin only, and of the inline code only the page's own `<script>`
/// and `<style>` blocks (by hash).
static CSP: LazyLock<String> = LazyLock::new(|| policy(PAGE));

/// The policy for `page`: its inline `<script>` and `<style>` blocks are
/// allowed by their SHA-256 hashes, nothing else inline is.
fn policy(page: &str) -> String {
    let hashes = |tag: &str| -> String {
        blocks(page, tag)
            .map(|b| format!(" 'sha256-{}'", base64(&Sha256::digest(b.as_bytes()))))
            .collect()
    };
    format!(
        "default-src 'self'; script-src{}; style-src{}; connect-src 'self'; \
         object-src 'none'; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'",
        hashes("script"),
        hashes("style"),
    )
}

/// The contents of every `<TAG>...</TAG>` block (the tag without attributes).
fn blocks<'p>(page: &'p str, tag: &str) -> impl Iterator<Item = &'p str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let mut rest = page;
    std::iter::from_fn(move || {
        let start = rest.find(&open)? + open.len();
        let len = rest[start..].find(&close)?;
        let block = &rest[start..start + len];
        rest = &rest[start + len + close.len()..];
        Some(block)
    })
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `GET /`: the console page.
#[utoipa::path(get, path = "/", tag = "operations",
    responses((status = 200, description = "The web console (one self-contained HTML page)", content_type = "text/html", body = String)))]
pub async fn page() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, CSP.as_str()),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        PAGE,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use axum::routing::get;
    use axum::Router;
    use tower::ServiceExt;

    async fn get_root() -> (StatusCode, axum::http::HeaderMap, String) {
        let app = Router::new().route("/", get(page));
        let req = Request::get("/").body(Body::empty());
        let resp = match req {
            Ok(req) => app.oneshot(req).await,
            Err(e) => panic!("request: {e}"),
        };
        let resp = match resp {
            Ok(r) => r,
            Err(e) => match e {},
        };
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = axum::body::to_bytes(resp.into_body(), usize::MAX).await;
        let body = match body {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) => panic!("body: {e}"),
        };
        (status, headers, body)
    }

    fn header(headers: &axum::http::HeaderMap, name: header::HeaderName) -> &str {
        headers
            .get(&name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("no {name} header"))
    }

    #[tokio::test]
    async fn serves_the_page_as_html_with_a_strict_csp() {
        let (status, headers, body) = get_root().await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            header(&headers, header::CONTENT_TYPE),
            "text/html; charset=utf-8"
        );
        assert_eq!(body, PAGE);
        assert!(body.starts_with("<!doctype html>"), "{}", &body[..40]);

        let csp = header(&headers, header::CONTENT_SECURITY_POLICY);
        let directives: Vec<&str> = csp.split(';').map(str::trim).collect();
        for d in [
            "default-src 'self'",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "frame-ancestors 'none'",
        ] {
            assert!(directives.contains(&d), "{d} missing from {csp}");
        }
        // Inline code is allowed by hash only: one script and one style block.
        for kind in ["script-src", "style-src"] {
            let d = directives
                .iter()
                .find(|d| d.starts_with(kind))
                .unwrap_or_else(|| panic!("{kind} missing from {csp}"));
            let sources: Vec<&str> = d.split_whitespace().skip(1).collect();
            assert_eq!(sources.len(), 1, "{d}");
            assert!(sources[0].starts_with("'sha256-"), "{d}");
        }
        assert!(!csp.contains("unsafe"), "{csp}");
        assert!(!csp.contains('*'), "{csp}");
        assert_eq!(header(&headers, header::X_CONTENT_TYPE_OPTIONS), "nosniff");
    }

    #[test]
    fn the_page_references_no_other_origin() {
        let lower = PAGE.to_ascii_lowercase();
        for scheme in ["http:", "https:", "ws:", "wss:", "//"] {
            // `//` only as a protocol-relative URL in an attribute or a string.
            let hits: Vec<&str> = match scheme {
                "//" => ["\"//", "'//", "`//", "(//"]
                    .into_iter()
                    .filter(|p| lower.contains(p))
                    .collect(),
                s => lower.contains(s).then_some(s).into_iter().collect(),
            };
            assert!(
                hits.is_empty(),
                "the page refers to another origin: {hits:?}"
            );
        }
        // Nothing loaded from elsewhere: no external scripts, styles,
        // frames or fonts.
        for tag in [
            "<script src",
            "<link",
            "<iframe",
            "<img",
            "@import",
            "@font-face",
        ] {
            assert!(!lower.contains(tag), "the page contains {tag}");
        }
        // Data goes into the DOM as text only.
        assert!(!PAGE.contains("innerHTML"), "the page uses innerHTML");
        assert!(!PAGE.contains("insertAdjacentHTML"));
        assert!(!PAGE.contains("document.write"));
        // Inline event handler attributes would be blocked by the CSP.
        assert!(!lower.contains(" onclick="));
        assert!(!lower.contains(" style=\""));
    }

    #[test]
    fn the_policy_hashes_the_inline_blocks() {
        let page = "<style>a{}</style><p>x</p><script>let a = 1;</script>";
        let p = policy(page);
        assert!(
            p.contains(&format!(
                "script-src 'sha256-{}';",
                base64(&Sha256::digest(b"let a = 1;"))
            )),
            "{p}"
        );
        assert!(
            p.contains(&format!(
                "style-src 'sha256-{}';",
                base64(&Sha256::digest(b"a{}"))
            )),
            "{p}"
        );
        assert_eq!(blocks(PAGE, "script").count(), 1);
        assert_eq!(blocks(PAGE, "style").count(), 1);
    }

    #[test]
    fn the_page_is_the_index_with_the_stylesheet_and_the_script_inline() {
        let css = include_str!("console/console.css");
        let js = include_str!("console/console.js");
        let linked = PAGE
            .replacen(
                &format!("<style>\n{css}</style>"),
                r#"<link rel="stylesheet" href="console.css">"#,
                1,
            )
            .replacen(
                &format!("<script>\n{js}</script>"),
                r#"<script src="console.js"></script>"#,
                1,
            );
        assert_eq!(linked, include_str!("console/index.html"));
    }
}
