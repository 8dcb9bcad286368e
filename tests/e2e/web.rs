//! The api-server serves the web UI's static files over HTTPS next to the
//! API: files from `--web-dir`, `index.html` for other non-API paths, and
//! JSON 404s for unknown `/api` paths.

use crate::common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_the_web_ui_and_keeps_api_errors_json() {
    let web_dir =
        std::env::temp_dir().join(format!("odp-web-e2e-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(web_dir.join("assets")).unwrap();
    std::fs::write(
        web_dir.join("index.html"),
        "<!doctype html><p>odp web ui marker</p>",
    )
    .unwrap();
    std::fs::write(web_dir.join("assets/app.js"), "export const ok = 1;").unwrap();
    let dir = web_dir.clone();
    let h = common::start_configured("web", move |options| {
        options.with_agent = false;
        options
            .api_env
            .push(("ODP_WEB_DIR".into(), dir.display().to_string()));
    })
    .await;
    let http = h.platform.http();
    let get = |path: &str| http.get(format!("{}{path}", h.platform.api_url)).send();

    let index = get("/").await.unwrap();
    assert_eq!(index.status(), 200);
    assert!(index.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert!(index.text().await.unwrap().contains("odp web ui marker"));

    let asset = get("/assets/app.js").await.unwrap();
    assert_eq!(asset.status(), 200);
    assert_eq!(asset.text().await.unwrap(), "export const ok = 1;");

    // Any other path is the single-page app's (it routes by URL hash).
    let deep = get("/profiles/somewhere").await.unwrap();
    assert_eq!(deep.status(), 200);
    assert!(deep.text().await.unwrap().contains("odp web ui marker"));

    let unknown_api = get("/api/v1/no-such-thing").await.unwrap();
    assert_eq!(unknown_api.status(), 404);
    let body: serde_json::Value = unknown_api.json().await.unwrap();
    assert_eq!(body["error"]["code"], "not_found", "{body}");

    // The API itself is unchanged: no token, 401.
    let anonymous = get("/api/v1/profiles").await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let _ = std::fs::remove_dir_all(&web_dir);
}
