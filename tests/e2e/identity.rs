//! Tokens from an identity provider: the api-server verifies RS256 and
//! EdDSA tokens against the public keys of a JWKS file, beside its own
//! HS256 tokens, and refuses tokens from keys it does not hold.

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use odp_core::token::{Grant, Role};
use reqwest::Method;
use ring::signature::KeyPair as _;

use crate::common;

const RSA_PRIVATE_PEM: &[u8] = include_bytes!("../../core/src/token/test_rsa_private.pem");
const RSA_PUBLIC_JWK: &str = include_str!("../../core/src/token/test_rsa_public.jwk.json");

/// A fresh Ed25519 signing key and its public JWK.
fn ed25519(kid: &str) -> (EncodingKey, serde_json::Value) {
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
    let pair = ring::signature::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
    let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
    let jwk = serde_json::json!({"kty": "OKP", "crv": "Ed25519", "kid": kid, "x": x});
    (EncodingKey::from_ed_der(pkcs8.as_ref()), jwk)
}

fn token(algorithm: Algorithm, kid: &str, key: &EncodingKey, role: Role) -> String {
    let grant = Grant {
        subject: format!("idp-{kid}"),
        role,
        services: Vec::new(),
    };
    let mut header = Header::new(algorithm);
    header.kid = Some(kid.to_owned());
    let claims = grant.claims(chrono::Utc::now().timestamp(), 300);
    jsonwebtoken::encode(&header, &claims, key).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_signed_by_jwks_keys_are_accepted_and_others_refused() {
    let (ed_key, ed_jwk) = ed25519("idp-ed");
    let rsa_jwk: serde_json::Value = serde_json::from_str(RSA_PUBLIC_JWK).unwrap();
    let jwks = serde_json::json!({ "keys": [rsa_jwk, ed_jwk] });
    let jwks_path = std::env::temp_dir().join(format!("odp-jwks-{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&jwks_path, jwks.to_string()).unwrap();
    let h = common::start_configured("jwks", |options| {
        options.with_agent = false;
        let path = jwks_path.display().to_string();
        options.api_env.push(("ODP_JWKS_FILE".into(), path));
    })
    .await;
    let get = |token: String, path: &'static str| {
        let client = h.platform.client_for(&token);
        async move {
            let response = client.request(Method::GET, path, None).await.unwrap();
            response.status
        }
    };

    let rsa_key = EncodingKey::from_rsa_pem(RSA_PRIVATE_PEM).unwrap();
    let rs256_viewer = token(Algorithm::RS256, "test-rsa", &rsa_key, Role::Viewer);
    assert_eq!(get(rs256_viewer.clone(), "/api/v1/profiles").await, 200);
    let start = h
        .platform
        .client_for(&rs256_viewer)
        .request(
            Method::POST,
            "/api/v1/profiles",
            Some(&serde_json::json!({"host": "h", "pid": 1, "duration_secs": 5})),
        )
        .await
        .unwrap();
    assert_eq!(start.status, 403, "the role in the claims applies");

    let eddsa_admin = token(Algorithm::EdDSA, "idp-ed", &ed_key, Role::Admin);
    assert_eq!(get(eddsa_admin, "/api/v1/hosts").await, 200);

    let (stranger, _) = ed25519("idp-ed");
    let forged = token(Algorithm::EdDSA, "idp-ed", &stranger, Role::Admin);
    assert_eq!(get(forged, "/api/v1/hosts").await, 401);
    let unknown_kid = token(Algorithm::RS256, "rotated-away", &rsa_key, Role::Admin);
    assert_eq!(get(unknown_kid, "/api/v1/hosts").await, 401);
    // The platform's own HS256 tokens keep working beside the key set.
    assert_eq!(get(h.platform.token.clone(), "/api/v1/hosts").await, 200);
    let _ = std::fs::remove_file(&jwks_path);
}
