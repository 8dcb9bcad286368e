//! Agent identities through the router: issued, listed and revoked by
//! admins only, their certificates verifying with the command key.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use odp_api_types::{AgentIdentityList, AgentIdentityRecord, IssuedAgentIdentity};
use odp_core::command::public_pem_of;
use odp_core::identity::{AgentKey, Certificate, MessageVerifier};
use odp_store::Identities;

use super::*;
use crate::control::deploy::IssueIdentity as _;

const IDENTITIES: &str = "/api/v1/agents/identities";

impl InProcess {
    /// Checks `certificate` with the server's public key, as agents and
    /// the pipeline do.
    fn verify_certificate(&self, certificate: &str) -> Certificate {
        let public = public_pem_of(&self.private_key).unwrap();
        let verifier = MessageVerifier::from_public_pem(&public).unwrap();
        let now = chrono::Utc::now().timestamp();
        verifier.certificate(certificate, now).unwrap()
    }

    async fn issue(&self, body: Value) -> IssuedAgentIdentity {
        let (status, body) = self.call(Method::POST, IDENTITIES, Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        serde_json::from_value(body).unwrap()
    }

    async fn identities(&self, query: &str) -> Vec<AgentIdentityRecord> {
        let path = format!("{IDENTITIES}{query}");
        let (status, body) = self.call(Method::GET, &path, None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        serde_json::from_value::<AgentIdentityList>(body)
            .unwrap()
            .identities
    }
}

#[tokio::test]
async fn only_admins_issue_list_and_revoke_identities() {
    let api = InProcess::start().await;
    let issued = api.issue(json!({"host": "web-1"})).await;
    let revoke = format!("{IDENTITIES}/{}", issued.id);
    api.assert_admin_only(&[
        (Method::POST, IDENTITIES, Some(json!({"host": "web-1"}))),
        (Method::GET, IDENTITIES, None),
        (Method::DELETE, revoke.as_str(), None),
    ])
    .await;
    let listed = api.identities("").await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].revoked_at, None);
}

#[tokio::test]
async fn bad_hosts_keys_and_lifetimes_are_422_with_a_message() {
    let api = InProcess::start().await;
    let (_, spki) = generate_keypair().unwrap();
    for (body, says) in [
        (json!({"host": "a b"}), "`host`"),
        (json!({"host": ""}), "`host`"),
        (
            json!({"host": "web-1", "public_key": "AAAA"}),
            "`public_key`",
        ),
        (
            json!({"host": "web-1", "public_key": "not a key!"}),
            "`public_key`",
        ),
        (json!({"host": "web-1", "valid_days": 0}), "`valid_days`"),
        (json!({"host": "web-1", "valid_days": 3651}), "`valid_days`"),
        (
            json!({"host": "web-1", "public_key": spki, "valid_days": -3}),
            "`valid_days`",
        ),
    ] {
        let (status, reply) = api.call(Method::POST, IDENTITIES, Some(body.clone())).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {reply}");
        let error: ErrorBody = serde_json::from_value(reply).unwrap();
        assert_eq!(error.error.code, ErrorCode::Invalid);
        assert!(error.error.message.contains(says), "{body}: {error:?}");
    }
    for query in ["?host=a%20b", "?limit=0", "?limit=501"] {
        let (status, reply) = api
            .call(Method::GET, &format!("{IDENTITIES}{query}"), None)
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{query}: {reply}");
    }
    let unknown = format!("{IDENTITIES}/{}", uuid::Uuid::new_v4());
    let (status, _) = api.call(Method::DELETE, &unknown, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = api
        .call(Method::DELETE, &format!("{IDENTITIES}/x"), None)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(api.identities("").await.is_empty(), "nothing issued");
}

#[tokio::test]
async fn a_generated_identity_verifies_and_certifies_the_key_it_answers() {
    let api = InProcess::start().await;
    let issued = api.issue(json!({"host": "web-1", "valid_days": 30})).await;
    let certificate = api.verify_certificate(&issued.certificate);
    assert_eq!(certificate.id, issued.id);
    assert_eq!(certificate.host, "web-1");
    assert_eq!(
        URL_SAFE_NO_PAD.encode(certificate.public_key),
        issued.public_key
    );
    assert_eq!(certificate.expires_at - certificate.issued_at, 30 * 86_400);
    assert_eq!(certificate.issued_at, issued.issued_at.timestamp());
    assert_eq!(issued.issued_by, "ci");
    let private = issued.private_key_pem.as_deref().expect("a generated key");
    let key = AgentKey::from_pem(private).unwrap();
    assert_eq!(key.public_key(), certificate.public_key);

    // Listed without the certificate or the private key, which are not kept.
    let (_, raw) = api.call(Method::GET, IDENTITIES, None).await;
    let text = raw.to_string();
    assert!(
        !text.contains("PRIVATE KEY") && !text.contains(&issued.certificate),
        "{text}"
    );
    let listed = api.identities("?host=web-1&limit=5").await;
    let [record] = listed.as_slice() else {
        panic!("one identity: {listed:?}")
    };
    assert_eq!(
        (record.id, &record.public_key),
        (issued.id, &issued.public_key)
    );
    assert_eq!(record.expires_at, issued.expires_at);
    assert!(api.identities("?host=web-2").await.is_empty());
}

#[tokio::test]
async fn an_enrolled_key_is_certified_and_its_private_half_never_seen() {
    let api = InProcess::start().await;
    let key = AgentKey::generate().unwrap();
    let raw = URL_SAFE_NO_PAD.encode(key.public_key());
    let issued = api.issue(json!({"host": "db-1", "public_key": raw})).await;
    assert_eq!(issued.private_key_pem, None);
    assert_eq!(issued.public_key, raw);
    let certificate = api.verify_certificate(&issued.certificate);
    assert_eq!(certificate.public_key, key.public_key());
    assert_eq!(
        certificate.expires_at - certificate.issued_at,
        odp_core::identity::DEFAULT_CERTIFICATE_DAYS * 86_400
    );
}

#[tokio::test]
async fn a_revoked_identity_is_listed_revoked_and_read_as_revoked() {
    let api = InProcess::start().await;
    let kept = api.issue(json!({"host": "web-1"})).await;
    let issued = api.issue(json!({"host": "web-1"})).await;
    let path = format!("{IDENTITIES}/{}", issued.id);
    let (status, body) = api.call(Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let revoked: AgentIdentityRecord = serde_json::from_value(body).unwrap();
    assert_eq!(revoked.id, issued.id);
    assert_eq!(revoked.revoked_by.as_deref(), Some("ci"));
    let revoked_at = revoked.revoked_at.expect("revoked");
    // Again: the first revocation stands.
    let (status, body) = api.call(Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["revoked_at"], json!(revoked_at));

    let listed = api.identities("?host=web-1").await;
    let by_id = |id| listed.iter().find(|r| r.id == id).unwrap();
    assert_eq!(by_id(issued.id).revoked_at, Some(revoked_at));
    assert_eq!(by_id(kept.id).revoked_at, None);
    // What the pipeline and the heartbeat follower read.
    let refused = Identities::new(api.state.pool.clone())
        .revoked()
        .await
        .unwrap();
    assert!(refused.contains_key(&issued.id) && !refused.contains_key(&kept.id));
}

#[tokio::test]
async fn deployers_identities_are_recorded_as_theirs() {
    let api = InProcess::start().await;
    let credentials = api
        .state
        .identities
        .issue_new("web-9", "deployer:local")
        .await
        .unwrap();
    let certificate = api.verify_certificate(&credentials.certificate);
    assert_eq!(certificate.host, "web-9");
    let key = AgentKey::from_pem(&credentials.key_pem).unwrap();
    assert_eq!(key.public_key(), certificate.public_key);
    let listed = api.identities("?host=web-9").await;
    let [record] = listed.as_slice() else {
        panic!("one identity: {listed:?}")
    };
    assert_eq!(record.id, certificate.id);
    assert_eq!(record.issued_by, "deployer:local");
}
