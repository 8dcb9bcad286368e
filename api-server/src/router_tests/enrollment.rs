//! Enrollment tokens through the router: created, listed and revoked by
//! admins only; an agent's enrollment with one needs no bearer token,
//! takes one use, and is refused with a 4xx that says why.

use chrono::{Duration, SubsecRound, Utc};
use odp_api_types::{
    AgentIdentityList, CreatedEnrollmentToken, EnrollmentToken, EnrollmentTokenList,
    EnrollmentTokenState, IssuedAgentIdentity,
};
use odp_core::command::public_pem_of;
use odp_core::identity::{AgentKey, MessageVerifier};
use odp_store::{EnrollmentTokens, NewEnrollmentToken};
use sha2::{Digest, Sha256};

use super::*;

const TOKENS: &str = "/api/v1/agents/enrollment-tokens";
const ENROLL: &str = "/api/v1/agents/enroll";

impl InProcess {
    async fn create_token(&self, body: Value) -> CreatedEnrollmentToken {
        let (status, body) = self.call(Method::POST, TOKENS, Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        serde_json::from_value(body).unwrap()
    }

    async fn tokens(&self) -> Vec<EnrollmentToken> {
        let (status, body) = self.call(Method::GET, TOKENS, None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        serde_json::from_value::<EnrollmentTokenList>(body)
            .unwrap()
            .tokens
    }

    /// `POST /api/v1/agents/enroll` as the agent sends it: no bearer token.
    async fn enroll(&self, token: &str, host: &str, key: &AgentKey) -> (StatusCode, Value) {
        // An SPKI PEM, as the agent sends it.
        let public_key = public_pem_of(&key.to_pem()).unwrap();
        let body = json!({"token": token, "host": host, "public_key": public_key});
        self.send(Method::POST, ENROLL, Some(body), None).await
    }

    /// Enrolls and expects `status`, with `says` in the error message.
    async fn refused(&self, token: &str, host: &str, status: StatusCode, says: &str) {
        let (got, body) = self
            .enroll(token, host, &AgentKey::generate().unwrap())
            .await;
        assert_eq!(got, status, "{body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{says:?} in {body}");
    }
}

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[tokio::test]
async fn only_admins_create_list_and_revoke_tokens() {
    let api = InProcess::start().await;
    let created = api.create_token(json!({"host": "web-1"})).await;
    let revoke = format!("{TOKENS}/{}", created.token.id);
    api.assert_admin_only(&[
        (Method::POST, TOKENS, Some(json!({"host": "web-1"}))),
        (Method::GET, TOKENS, None),
        (Method::DELETE, revoke.as_str(), None),
    ])
    .await;
    let listed = api.tokens().await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].state, EnrollmentTokenState::Unused);
}

#[tokio::test]
async fn bad_hosts_lifetimes_and_uses_are_422_with_a_message() {
    let api = InProcess::start().await;
    for (body, says) in [
        (json!({"host": "a b"}), "`host`"),
        (json!({"host": ""}), "`host`"),
        (
            json!({"host": "h", "expires_in_secs": 59}),
            "`expires_in_secs`",
        ),
        (
            json!({"host": "h", "expires_in_secs": 604_801}),
            "`expires_in_secs`",
        ),
        (json!({"host": "h", "uses": 0}), "`uses`"),
        (json!({"host": "h", "uses": 1001}), "`uses`"),
    ] {
        let (status, reply) = api.call(Method::POST, TOKENS, Some(body.clone())).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {reply}");
        let error: ErrorBody = serde_json::from_value(reply).unwrap();
        assert!(error.error.message.contains(says), "{body}: {error:?}");
    }
    for query in ["?host=a%20b", "?limit=0", "?limit=501"] {
        let (status, reply) = api
            .call(Method::GET, &format!("{TOKENS}{query}"), None)
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{query}: {reply}");
    }
    let unknown = format!("{TOKENS}/{}", uuid::Uuid::new_v4());
    let (status, _) = api.call(Method::DELETE, &unknown, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(api.tokens().await.is_empty(), "nothing created");
}

#[tokio::test]
async fn a_token_enrolls_its_hosts_agent_once_and_is_listed_without_its_secret() {
    let api = InProcess::start().await;
    let created = api
        .create_token(json!({"host": "web-1", "expires_in_secs": 600}))
        .await;
    let secret = created.secret.clone();
    assert!(secret.starts_with("odp-enroll-"), "{secret}");
    let token = &created.token;
    assert_eq!(
        (token.uses, token.used, token.created_by.as_str()),
        (1, 0, "ci")
    );
    assert_eq!((token.expires_at - token.created_at).num_seconds(), 600);
    // Only the hash is kept.
    let stored: Option<String> = match &api.state.pool {
        odp_store::Database::Postgres(pool) => {
            sqlx::query_scalar("select secret_hash from agent_enrollment_tokens")
                .fetch_optional(pool)
                .await
                .unwrap()
        }
        odp_store::Database::MySql(_) => unreachable!("the router tests run on Postgres"),
    };
    assert_eq!(stored, Some(sha256_hex(&secret)));

    // Another host's agent may not use it, and takes no use trying.
    api.refused(&secret, "web-2", StatusCode::FORBIDDEN, "another host")
        .await;
    let key = AgentKey::generate().unwrap();
    let (status, body) = api.enroll(&secret, "web-1", &key).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let issued: IssuedAgentIdentity = serde_json::from_value(body).unwrap();
    assert_eq!(
        (issued.host.as_str(), issued.issued_by.as_str()),
        ("web-1", "ci")
    );
    assert_eq!(issued.private_key_pem, None);
    let verifier =
        MessageVerifier::from_public_pem(&public_pem_of(&api.private_key).unwrap()).unwrap();
    let certificate = verifier
        .certificate(&issued.certificate, Utc::now().timestamp())
        .unwrap();
    assert_eq!(
        (certificate.id, certificate.host.as_str()),
        (issued.id, "web-1")
    );
    assert_eq!(certificate.public_key, key.public_key());
    // Once.
    api.refused(&secret, "web-1", StatusCode::CONFLICT, "used already")
        .await;

    let (_, raw) = api.call(Method::GET, TOKENS, None).await;
    assert!(!raw.to_string().contains(&secret), "{raw}");
    let [listed] = api.tokens().await.try_into().unwrap();
    assert_eq!(listed.state, EnrollmentTokenState::Used);
    assert_eq!(
        (listed.used, listed.identities.as_slice()),
        (1, [issued.id].as_slice())
    );
    // The identity says which token enrolled it.
    let (_, identities) = api
        .call(Method::GET, "/api/v1/agents/identities?host=web-1", None)
        .await;
    let identities: AgentIdentityList = serde_json::from_value(identities).unwrap();
    assert_eq!(identities.identities.len(), 1);
    assert_eq!(identities.identities[0].enrollment_token, Some(token.id));
}

#[tokio::test]
async fn refusals_are_4xx_and_an_unknown_token_says_only_that() {
    let api = InProcess::start().await;
    for garbage in ["odp-enroll-nothing", "x", &"a".repeat(5000)] {
        api.refused(garbage, "web-1", StatusCode::UNAUTHORIZED, "not valid")
            .await;
    }
    let revoked = api.create_token(json!({"host": "web-1", "uses": 3})).await;
    let path = format!("{TOKENS}/{}", revoked.token.id);
    let (status, body) = api.call(Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let record: EnrollmentToken = serde_json::from_value(body).unwrap();
    assert_eq!(record.state, EnrollmentTokenState::Revoked);
    assert_eq!(record.revoked_by.as_deref(), Some("ci"));
    api.refused(&revoked.secret, "web-1", StatusCode::FORBIDDEN, "revoked")
        .await;

    // The API makes no expired token; the store does.
    let secret = "odp-enroll-an-expired-one";
    let now = Utc::now().trunc_subsecs(0);
    EnrollmentTokens::new(api.state.pool.clone())
        .create(
            &sha256_hex(secret),
            &NewEnrollmentToken {
                id: uuid::Uuid::new_v4(),
                host: "web-1".into(),
                uses: 1,
                created_at: now - Duration::hours(2),
                created_by: "ci".into(),
                expires_at: now - Duration::hours(1),
            },
        )
        .await
        .unwrap();
    api.refused(secret, "web-1", StatusCode::FORBIDDEN, "expired")
        .await;
    let states: Vec<_> = api.tokens().await.iter().map(|t| t.state).collect();
    assert!(
        states.contains(&EnrollmentTokenState::Expired),
        "{states:?}"
    );

    // A bad key or host is 422 before the token is looked at, and takes
    // no use.
    let live = api.create_token(json!({"host": "web-1"})).await;
    for body in [
        json!({"token": live.secret, "host": "web-1", "public_key": "AAAA"}),
        json!({"token": live.secret, "host": "a b", "public_key": "AAAA"}),
    ] {
        let (status, reply) = api.call(Method::POST, ENROLL, Some(body)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{reply}");
    }
    let (status, body) = api
        .call(Method::POST, ENROLL, Some(json!({"token": 1})))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let key = AgentKey::generate().unwrap();
    let (status, body) = api.enroll(&live.secret, "web-1", &key).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

#[tokio::test]
async fn of_two_agents_racing_for_a_single_use_exactly_one_enrolls() {
    let api = InProcess::start().await;
    let created = api.create_token(json!({"host": "web-1"})).await;
    let (a, b) = (AgentKey::generate().unwrap(), AgentKey::generate().unwrap());
    let ((first, _), (second, _)) = tokio::join!(
        api.enroll(&created.secret, "web-1", &a),
        api.enroll(&created.secret, "web-1", &b),
    );
    let mut statuses = [first, second];
    statuses.sort();
    assert_eq!(statuses, [StatusCode::CREATED, StatusCode::CONFLICT]);
    let [listed] = api.tokens().await.try_into().unwrap();
    assert_eq!((listed.used, listed.identities.len()), (1, 1));
}
