//! The web UI: static files of the built single-page app (`web/dist`),
//! served for every path outside `/api`. Unknown paths get `index.html`,
//! since the UI routes by URL hash; unknown `/api/...` paths keep their
//! JSON 404.

use std::path::Path;

use axum::extract::Request;
use axum::response::{Html, IntoResponse};
use axum::Router;
use tower::ServiceExt;
use tower_http::services::{ServeDir, ServeFile};

use crate::error::ApiError;

const NOT_BUILT: &str = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>ODP</title></head><body><h1>ODP</h1><p>The web UI was not built or not configured: \
run <code>npm ci &amp;&amp; npm run build</code> in <code>web/</code> and start the \
api-server with <code>--web-dir web/dist</code>. The REST API is under <code>/api/v1</code>.</p>\
</body></html>";

fn is_api_path(path: &str) -> bool {
    path == "/api" || path.starts_with("/api/")
}

/// Replaces `router`'s fallback: `/api/...` answers a JSON 404, anything
/// else a file of `web_dir` (or `index.html`), or a short note when no
/// web directory is configured.
pub(crate) fn with_web_ui(router: Router, web_dir: Option<&Path>) -> Router {
    let files =
        web_dir.map(|dir| ServeDir::new(dir).fallback(ServeFile::new(dir.join("index.html"))));
    router.fallback(move |request: Request| {
        let files = files.clone();
        async move {
            if is_api_path(request.uri().path()) {
                return ApiError::NotFound("no such route".into()).into_response();
            }
            match files {
                Some(files) => match files.oneshot(request).await {
                    Ok(response) => response.map(axum::body::Body::new),
                    Err(never) => match never {},
                },
                None => Html(NOT_BUILT).into_response(),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::StatusCode;
    use axum::response::Response;
    use axum::routing::get;
    use http_body_util::BodyExt;

    fn api() -> Router {
        Router::new()
            .route("/api/v1/ping", get(|| async { "pong" }))
            .fallback(|| async { ApiError::NotFound("no such route".into()) })
    }

    async fn get_text(router: Router, path: &str) -> (StatusCode, String, Option<String>) {
        let response: Response = router
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned());
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            String::from_utf8_lossy(&body).into_owned(),
            content_type,
        )
    }

    fn web_dir() -> TempDir {
        let dir = TempDir::new();
        std::fs::write(dir.path().join("index.html"), "<p>odp ui</p>").unwrap();
        std::fs::create_dir(dir.path().join("assets")).unwrap();
        std::fs::write(dir.path().join("assets/app.js"), "console.log(1)").unwrap();
        dir
    }

    #[tokio::test]
    async fn serves_files_and_index_for_unknown_paths() {
        let dir = web_dir();
        let app = with_web_ui(api(), Some(dir.path()));
        let (status, body, _) = get_text(app.clone(), "/").await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "<p>odp ui</p>"));
        let (status, body, content_type) = get_text(app.clone(), "/assets/app.js").await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "console.log(1)"));
        assert!(content_type.unwrap().contains("javascript"));
        let (status, body, _) = get_text(app.clone(), "/profiles/somewhere").await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "<p>odp ui</p>"));
        let (status, body, _) = get_text(app, "/api/v1/ping").await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "pong"));
    }

    #[tokio::test]
    async fn unknown_api_paths_stay_json_404() {
        let dir = web_dir();
        for app in [
            with_web_ui(api(), Some(dir.path())),
            with_web_ui(api(), None),
        ] {
            let (status, body, content_type) = get_text(app, "/api/v1/nothing-here").await;
            assert_eq!(status, StatusCode::NOT_FOUND);
            assert!(content_type.unwrap().starts_with("application/json"));
            assert!(body.contains("\"not_found\""), "{body}");
        }
    }

    #[tokio::test]
    async fn without_a_web_dir_the_root_explains_the_ui_is_not_built() {
        let (status, body, _) = get_text(with_web_ui(api(), None), "/").await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.contains("not built"), "{body}");
    }

    /// A directory removed on drop, without another dependency.
    struct TempDir(std::path::PathBuf);

    impl TempDir {
        fn new() -> TempDir {
            let path = std::env::temp_dir()
                .join(format!("odp-web-test-{}", uuid::Uuid::new_v4().simple()));
            std::fs::create_dir_all(&path).unwrap();
            TempDir(path)
        }

        fn path(&self) -> &std::path::Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
