//! Attacks on the running stack: see issue 27. The HTTP edge: bearer
//! tokens that mark header extensions critical are refused, `aud` arrays
//! are read as RFC 7519 defines them, and every response — API JSON,
//! errors, the web UI, SVG flame graphs — carries the security headers.

use base64::Engine as _;
use odp_core::token::{Grant, Role, AUDIENCE};
use reqwest::Method;
use serde_json::{json, Value};

use crate::common;

/// An HS256 token signed with the platform's secret whose header and
/// claims are exactly the given JSON, so it may carry what a well-behaved
/// minter never writes.
fn sign_raw(secret: &str, header: &Value, claims: &Value) -> String {
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let input = format!("{}.{}", b64(header), b64(claims));
    let key = jsonwebtoken::EncodingKey::from_secret(secret.as_bytes());
    let signature =
        jsonwebtoken::crypto::sign(input.as_bytes(), &key, jsonwebtoken::Algorithm::HS256).unwrap();
    format!("{input}.{signature}")
}

/// The claims of a valid viewer token, as JSON to tamper with.
fn viewer_claims() -> Value {
    let grant = Grant {
        subject: "edge-attacker".into(),
        role: Role::Viewer,
        services: Vec::new(),
    };
    serde_json::to_value(grant.claims(chrono::Utc::now().timestamp(), 300)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn critical_header_extensions_are_refused_and_audience_arrays_understood() {
    let h = common::start_without_agent("edge-jwt").await;
    let secret = h.platform.jwt_secret.clone();
    let status = |token: String| {
        let client = h.platform.client_for(&token);
        async move {
            let reply = client
                .request(Method::GET, "/api/v1/profiles", None)
                .await
                .unwrap();
            (reply.status, reply.text)
        }
    };
    let plain = json!({"alg": "HS256", "typ": "JWT"});

    // The same claims without `crit` are fine: the refusals below are
    // for `crit` alone.
    let (code, text) = status(sign_raw(&secret, &plain, &viewer_claims())).await;
    assert_eq!(code, 200, "{text}");
    for crit in [json!(["exp"]), json!(["x"])] {
        let header = json!({"alg": "HS256", "typ": "JWT", "crit": crit, "x": true});
        let (code, text) = status(sign_raw(&secret, &header, &viewer_claims())).await;
        assert_eq!(code, 401, "crit {crit}: {text}");
        assert!(text.contains("critical"), "{text}");
    }

    let with_audience = |aud: Value| {
        let mut claims = viewer_claims();
        claims["aud"] = aud;
        sign_raw(&secret, &plain, &claims)
    };
    let (code, text) = status(with_audience(json!(["other-api", AUDIENCE]))).await;
    assert_eq!(code, 200, "an aud array naming ODP: {text}");
    let (code, text) = status(with_audience(json!([AUDIENCE]))).await;
    assert_eq!(code, 200, "an aud array of ODP alone: {text}");
    for refused in [json!(["other-api"]), json!([]), json!(["other-api", "x"])] {
        let (code, text) = status(with_audience(refused.clone())).await;
        assert_eq!(code, 401, "aud {refused}: {text}");
    }
}

const PAGE_CSP_PARTS: [&str; 4] = [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "frame-ancestors 'none'",
];
const SVG_CSP: &str =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; sandbox allow-scripts";

/// Asserts the headers every response carries (the test stack serves
/// HTTPS, so HSTS too) and returns its Content-Security-Policy.
fn assert_security_headers(what: &str, response: &reqwest::Response) -> String {
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .unwrap_or_else(|| panic!("{what}: no {name} header in {:?}", response.headers()))
            .to_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(header("x-content-type-options"), "nosniff", "{what}");
    assert_eq!(header("referrer-policy"), "no-referrer", "{what}");
    assert_eq!(header("x-frame-options"), "DENY", "{what}");
    assert!(
        header("strict-transport-security").starts_with("max-age="),
        "{what}"
    );
    header("content-security-policy")
}

fn assert_page_policy(what: &str, policy: &str) {
    let directives: Vec<&str> = policy.split(';').map(str::trim).collect();
    for part in PAGE_CSP_PARTS {
        assert!(directives.contains(&part), "{what}: {part} not in {policy}");
    }
    assert!(
        !policy.contains("'unsafe-eval'") && !policy.contains("script-src 'self' 'unsafe-inline'"),
        "{what}: {policy}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_response_carries_the_security_headers() {
    // A web UI shaped like the built one (web/dist): one module script and
    // one stylesheet from /assets, nothing inline.
    let web_dir =
        std::env::temp_dir().join(format!("odp-edge-web-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(web_dir.join("assets")).unwrap();
    std::fs::write(
        web_dir.join("index.html"),
        "<!doctype html><html><head>\
         <script type=\"module\" crossorigin src=\"/assets/index.js\"></script>\
         <link rel=\"stylesheet\" crossorigin href=\"/assets/index.css\"></head>\
         <body><div id=\"app\">edge ui marker</div></body></html>",
    )
    .unwrap();
    std::fs::write(web_dir.join("assets/index.js"), "export const ok = 1;").unwrap();
    let dir = web_dir.clone();
    let h = common::start_configured("edge-headers", move |options| {
        options.with_agent = false;
        options
            .api_env
            .push(("ODP_WEB_DIR".into(), dir.display().to_string()));
    })
    .await;
    let http = h.platform.http();
    let url = |path: &str| format!("{}{path}", h.platform.api_url);
    let authed = |path: &str| http.get(url(path)).bearer_auth(&h.platform.token).send();

    let json_list = authed("/api/v1/profiles").await.unwrap();
    assert_eq!(json_list.status(), 200);
    assert_page_policy("JSON", &assert_security_headers("JSON", &json_list));

    let index = http.get(url("/")).send().await.unwrap();
    assert_eq!(index.status(), 200);
    assert_page_policy("index", &assert_security_headers("index", &index));
    assert!(index.text().await.unwrap().contains("edge ui marker"));
    let asset = http.get(url("/assets/index.js")).send().await.unwrap();
    assert_eq!(asset.status(), 200);
    assert_page_policy("asset", &assert_security_headers("asset", &asset));

    let not_found = authed("/api/v1/no-such-route").await.unwrap();
    assert_eq!(not_found.status(), 404);
    assert_page_policy("404", &assert_security_headers("404", &not_found));
    let anonymous = http.get(url("/api/v1/profiles")).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    assert_page_policy("401", &assert_security_headers("401", &anonymous));

    // An SVG flame graph: its inline script runs, sandboxed.
    let reply = h
        .platform
        .client()
        .send_bytes(
            Method::POST,
            "/api/v1/profiles/import?service=edge&format=folded",
            b"main;hot 6\nmain;warm 3\n".to_vec(),
            "application/octet-stream",
        )
        .await
        .expect("import a profile");
    assert_eq!(reply.status, 201, "{}", reply.text);
    let id = reply.body["id"].as_str().unwrap().to_owned();
    let svg = authed(&format!("/api/v1/profiles/{id}/flamegraph?format=svg"))
        .await
        .unwrap();
    assert_eq!(svg.status(), 200);
    assert!(svg.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("image/svg+xml"));
    assert_eq!(assert_security_headers("SVG", &svg), SVG_CSP);
    let text = svg.text().await.unwrap();
    assert!(text.contains("<script") && text.contains("hot"), "{text}");

    let _ = std::fs::remove_dir_all(&web_dir);
}
