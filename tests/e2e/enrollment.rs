//! One-time enrollment tokens: an agent started with one and no identity
//! makes its key pair, trades the token for a certificate and speaks for
//! its host (its signed heartbeats make the host live); the token is then
//! used, and a second agent holding the same secret is refused and exits.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use odp_client::types::{CreateEnrollmentTokenRequest, EnrollmentTokenState};
use odp_devstack::{mint_scoped_token, workspace_binary, ServiceProcess, TANSU_KAFKA_OPTIONS};

use crate::common::{self, Harness};
use crate::security_wire::wait_live;

const HOST: &str = "enrolled-1";

/// An agent for [`HOST`] with no identity, holding enrollment `secret`.
fn enrolling_agent(h: &Harness, name: &str, state: &Path, secret: &str) -> ServiceProcess {
    ServiceProcess::builder(name, workspace_binary("odp-profiler-service").unwrap())
        .env("ODP_STATE_DIR", state)
        .env("ODP_ENROLLMENT_TOKEN", secret)
        .args(["--kafka-bootstrap", h.stack.kafka_bootstrap()])
        .args(h.stack.topics().cli_args())
        .args(["--host-id", HOST])
        .arg("--command-public-key")
        .arg(&h.platform.public_key)
        .args(["--heartbeat-secs", "2"])
        .args(["--api-url", &h.platform.api_url])
        .arg("--cacert")
        .arg(&h.platform.ca_path)
        .env("ODP_KAFKA_OPTIONS", TANSU_KAFKA_OPTIONS)
        .log_dir(h.stack.log_dir())
        .spawn()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_enrolls_itself_once_with_a_token() {
    let h = common::start_without_agent("enroll").await;
    let admin = h.platform.client();
    let request = CreateEnrollmentTokenRequest {
        host: HOST.into(),
        expires_in_secs: None,
        uses: None,
    };
    let viewer = h
        .platform
        .client_for(&mint_scoped_token(&h.platform.jwt_secret, "v", "viewer", &[]).unwrap());
    assert!(
        viewer.create_enrollment_token(&request).await.is_err(),
        "a viewer made an enrollment token"
    );
    let created = admin.create_enrollment_token(&request).await.unwrap();
    assert_eq!(created.token.state, EnrollmentTokenState::Unused);

    let state = h.stack.state_dir().join("enrolled-agent");
    let _agent = enrolling_agent(&h, "enrolled-agent", &state, &created.secret);
    wait_live(&h, HOST).await;
    let key = state.join("identity").join("agent-key.pem");
    let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", key.display());

    let identities = admin.agent_identities(Some(HOST), 10).await.unwrap();
    assert_eq!(identities.identities.len(), 1, "{identities:?}");
    assert_eq!(
        identities.identities[0].enrollment_token,
        Some(created.token.id)
    );
    let tokens = admin.enrollment_tokens(10).await.unwrap();
    let token = tokens
        .tokens
        .iter()
        .find(|t| t.id == created.token.id)
        .unwrap();
    assert_eq!(token.state, EnrollmentTokenState::Used, "{token:?}");
    assert_eq!(token.identities, vec![identities.identities[0].id]);

    // The same secret again, on another machine's agent: refused, and it
    // exits saying why; no second identity is issued.
    let mut second = enrolling_agent(
        &h,
        "second-agent",
        &h.stack.state_dir().join("second-agent"),
        &created.secret,
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = second.try_status().unwrap() {
            break status;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the second agent still runs:\n{}",
            second.log_tail(40)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(!status.success());
    let log = common::plain_log(&second.log_tail(40));
    assert!(log.contains("409"), "{log}");
    let after = admin.agent_identities(Some(HOST), 10).await.unwrap();
    assert_eq!(after.identities.len(), 1, "{after:?}");
}
