use base64::Engine as _;
use ring::signature::KeyPair as _;

use super::*;

/// A 2048-bit RSA key generated with `openssl genrsa` for these tests only.
const RSA_PRIVATE_PEM: &[u8] = include_bytes!("test_rsa_private.pem");
const RSA_PUBLIC_JWK: &str = include_str!("test_rsa_public.jwk.json");

fn grant(role: Role) -> Grant {
    Grant {
        subject: "ci-pipeline".into(),
        role,
        services: vec!["checkout-*".into()],
    }
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn sign(algorithm: Algorithm, kid: Option<&str>, key: &EncodingKey, claims: &Claims) -> String {
    let mut header = Header::new(algorithm);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

fn rsa_key() -> EncodingKey {
    EncodingKey::from_rsa_pem(RSA_PRIVATE_PEM).unwrap()
}

/// A fresh Ed25519 key: its signing key and its public JWK.
fn ed25519_key(kid: &str) -> (EncodingKey, serde_json::Value) {
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
    let pair = ring::signature::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
    let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
    let jwk =
        serde_json::json!({"kty": "OKP", "crv": "Ed25519", "kid": kid, "alg": "EdDSA", "x": x});
    (EncodingKey::from_ed_der(pkcs8.as_ref()), jwk)
}

fn jwks(keys: &[serde_json::Value]) -> String {
    serde_json::json!({ "keys": keys }).to_string()
}

fn rsa_jwk() -> serde_json::Value {
    serde_json::from_str(RSA_PUBLIC_JWK).unwrap()
}

#[test]
fn hs256_tokens_check_signature_expiry_and_not_before() {
    let verifier = TokenVerifier::new(Some(b"secret-of-16-bytes"), None).unwrap();
    let token = mint_hs256(b"secret-of-16-bytes", &grant(Role::Viewer), now(), 60).unwrap();
    let claims = verifier.verify(&token).unwrap();
    assert_eq!(
        (claims.sub.as_str(), claims.role),
        ("ci-pipeline", Role::Viewer)
    );
    assert_eq!(claims.services, vec!["checkout-*".to_owned()]);

    let expired = mint_hs256(b"secret-of-16-bytes", &grant(Role::Admin), now() - 3600, 60);
    assert!(verifier.verify(&expired.unwrap()).is_err());
    let not_yet = mint_hs256(b"secret-of-16-bytes", &grant(Role::Admin), now() + 3600, 60);
    assert!(
        verifier.verify(&not_yet.unwrap()).is_err(),
        "nbf is enforced"
    );
    let other = mint_hs256(b"another-secret-16", &grant(Role::Admin), now(), 60).unwrap();
    assert!(verifier.verify(&other).is_err());
    assert!(verifier.verify("not-a-token").is_err());
}

#[test]
fn rs256_and_eddsa_tokens_verify_against_the_key_set() {
    let (ed_key, ed_jwk) = ed25519_key("ed-1");
    let verifier = TokenVerifier::new(None, Some(&jwks(&[rsa_jwk(), ed_jwk]))).unwrap();
    let claims = grant(Role::Profiler).claims(now(), 60);

    let rs = sign(Algorithm::RS256, Some("test-rsa"), &rsa_key(), &claims);
    assert_eq!(verifier.verify(&rs).unwrap(), claims);
    let ed = sign(Algorithm::EdDSA, Some("ed-1"), &ed_key, &claims);
    assert_eq!(verifier.verify(&ed).unwrap(), claims);
    // One key per algorithm: the kid may be left out.
    let ed_without_kid = sign(Algorithm::EdDSA, None, &ed_key, &claims);
    assert_eq!(verifier.verify(&ed_without_kid).unwrap(), claims);
}

#[test]
fn tokens_from_unknown_keys_or_with_wrong_claims_are_refused() {
    let (_, ed_jwk) = ed25519_key("ed-1");
    let (stranger, _) = ed25519_key("ed-1");
    let verifier = TokenVerifier::new(None, Some(&jwks(&[ed_jwk]))).unwrap();
    let claims = grant(Role::Admin).claims(now(), 60);
    let forged = sign(Algorithm::EdDSA, Some("ed-1"), &stranger, &claims);
    assert!(verifier.verify(&forged).is_err(), "signed by another key");

    let (ed_key, ed_jwk) = ed25519_key("ed-2");
    let verifier = TokenVerifier::new(None, Some(&jwks(&[ed_jwk]))).unwrap();
    let unknown_kid = sign(Algorithm::EdDSA, Some("ed-9"), &ed_key, &claims);
    assert!(verifier.verify(&unknown_kid).is_err());
    let mut wrong_audience = claims.clone();
    wrong_audience.aud = "someone-else".into();
    let token = sign(Algorithm::EdDSA, Some("ed-2"), &ed_key, &wrong_audience);
    assert!(verifier.verify(&token).is_err(), "aud is enforced");
    let mut wrong_issuer = claims;
    wrong_issuer.iss = "elsewhere".into();
    let token = sign(Algorithm::EdDSA, Some("ed-2"), &ed_key, &wrong_issuer);
    assert!(verifier.verify(&token).is_err(), "iss is enforced");
}

#[test]
fn hs256_is_refused_when_only_public_keys_are_configured() {
    // The classic algorithm confusion: an HS256 token "signed" with the
    // public key must not verify.
    let verifier = TokenVerifier::new(None, Some(&jwks(&[rsa_jwk()]))).unwrap();
    let public_key_bytes = RSA_PUBLIC_JWK.as_bytes();
    let token = mint_hs256(public_key_bytes, &grant(Role::Admin), now(), 60).unwrap();
    let error = verifier.verify(&token).unwrap_err();
    assert!(
        matches!(error, TokenError::NoKeyFor(Algorithm::HS256)),
        "{error}"
    );
}

#[test]
fn a_key_set_with_several_keys_of_one_algorithm_needs_a_kid() {
    let (key, first) = ed25519_key("a");
    let (_, second) = ed25519_key("b");
    let verifier = TokenVerifier::new(None, Some(&jwks(&[first, second]))).unwrap();
    let claims = grant(Role::Viewer).claims(now(), 60);
    assert!(verifier
        .verify(&sign(Algorithm::EdDSA, None, &key, &claims))
        .is_err());
    assert!(verifier
        .verify(&sign(Algorithm::EdDSA, Some("a"), &key, &claims))
        .is_ok());
}

#[test]
fn bad_key_sets_are_reported() {
    for (text, expected) in [
        ("not json", "invalid key set"),
        (
            r#"{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}"#,
            "symmetric",
        ),
        (
            r#"{"keys": [{"kty": "RSA", "alg": "ES256", "n": "AQAB", "e": "AQAB"}]}"#,
            "unsupported",
        ),
        (r#"{"keys": []}"#, "at least one key"),
    ] {
        let error = TokenVerifier::new(None, Some(text))
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains(expected), "{text}: {error}");
    }
}

#[test]
fn roles_parse_and_order() {
    assert_eq!("profiler".parse::<Role>().unwrap(), Role::Profiler);
    assert!("root".parse::<Role>().is_err());
    assert!(Role::Viewer < Role::Profiler && Role::Profiler < Role::Admin);
}
