//! Security headers on every response the api-server sends: API JSON,
//! errors, the web UI's files and the SVG flame graphs.
//!
//! - `Content-Security-Policy`: the web UI (`web/dist`) loads its one
//!   module script and stylesheet from the server itself and sets a few
//!   inline `style` attributes (timeline bars), so scripts and style
//!   sheets come from `'self'` only, inline style attributes are allowed,
//!   and no page may frame it (`frame-ancestors 'none'`). SVG flame graphs
//!   instead get [`SVG_POLICY`]: their inline script (click to zoom,
//!   search) runs, but sandboxed in an opaque origin without network
//!   access, so it cannot call the API with the user's credentials.
//! - `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`,
//!   `X-Frame-Options: DENY`.
//! - `Strict-Transport-Security` only when the server itself serves TLS.

use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::response::Response;
use axum::Router;

/// The policy of everything but SVG: the web UI and the API.
pub(crate) const PAGE_POLICY: &str = "default-src 'self'; script-src 'self'; \
style-src 'self'; style-src-attr 'unsafe-inline'; img-src 'self'; connect-src 'self'; \
object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The policy of SVG responses: the flame graph's inline script and style
/// run in a sandbox (an opaque origin) and may load nothing.
pub(crate) const SVG_POLICY: &str =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; sandbox allow-scripts";

/// HSTS for a year, sent only over TLS.
const HSTS: &str = "max-age=31536000";

/// Adds the security headers to every response of `router` (its routes
/// and its fallback, so call this last); `tls` says whether the server
/// serves HTTPS itself, which HSTS needs.
pub(crate) fn with_security_headers(router: Router, tls: bool) -> Router {
    router.layer(axum::middleware::map_response(
        move |mut response: Response| async move {
            add(response.headers_mut(), tls);
            response
        },
    ))
}

fn add(headers: &mut HeaderMap, tls: bool) {
    let svg = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("image/svg+xml"))
        });
    let policy = if svg { SVG_POLICY } else { PAGE_POLICY };
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(policy),
    );
    let fixed: [(HeaderName, &'static str); 3] = [
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ];
    for (name, value) in fixed {
        headers.insert(name, HeaderValue::from_static(value));
    }
    if tls {
        headers.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static(HSTS),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::extract::Request;
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    use axum::routing::get;
    use tower::ServiceExt;

    fn router(tls: bool) -> Router {
        let api = Router::new()
            .route("/json", get(|| async { axum::Json(serde_json::json!({})) }))
            .route(
                "/svg",
                get(|| async {
                    (
                        [(header::CONTENT_TYPE, "image/svg+xml; charset=utf-8")],
                        "<svg/>",
                    )
                }),
            )
            .fallback(|| async { (StatusCode::NOT_FOUND, "gone").into_response() });
        with_security_headers(api, tls)
    }

    async fn headers(router: Router, path: &str) -> (StatusCode, HeaderMap) {
        let response = router
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        (response.status(), response.headers().clone())
    }

    fn value<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
        headers.get(name).map(|v| v.to_str().unwrap())
    }

    #[tokio::test]
    async fn routes_and_the_fallback_get_the_headers() {
        for path in ["/json", "/nowhere"] {
            let (_, h) = headers(router(false), path).await;
            assert_eq!(value(&h, "content-security-policy"), Some(PAGE_POLICY));
            assert_eq!(value(&h, "x-content-type-options"), Some("nosniff"));
            assert_eq!(value(&h, "referrer-policy"), Some("no-referrer"));
            assert_eq!(value(&h, "x-frame-options"), Some("DENY"));
            assert_eq!(value(&h, "strict-transport-security"), None, "{path}");
        }
        let (status, _) = headers(router(false), "/nowhere").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn svg_is_sandboxed() {
        let (_, h) = headers(router(false), "/svg").await;
        assert_eq!(value(&h, "content-security-policy"), Some(SVG_POLICY));
        assert_eq!(value(&h, "x-content-type-options"), Some("nosniff"));
    }

    #[tokio::test]
    async fn hsts_only_over_tls() {
        let (_, h) = headers(router(true), "/json").await;
        assert_eq!(value(&h, "strict-transport-security"), Some(HSTS));
    }

    #[test]
    fn the_page_policy_forbids_framing_and_inline_scripts() {
        assert!(PAGE_POLICY.contains("frame-ancestors 'none'"));
        let script = PAGE_POLICY
            .split(';')
            .find(|d| d.trim().starts_with("script-src"))
            .unwrap();
        assert_eq!(script.trim(), "script-src 'self'");
    }
}
