//! The router driven in-process (`tower::ServiceExt::oneshot`) against a
//! real Postgres, with the commands it signs recorded instead of sent to
//! Kafka: what a request stores and what it publishes, without a broker
//! or a listening socket.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use http_body_util::BodyExt as _;
use odp_api_types::{ErrorBody, ErrorCode, Profile};
use odp_core::command::{generate_keypair, Command, CommandAction, CommandSigner, CommandVerifier};
use odp_core::token::{mint_hs256, Grant, Role};
use odp_core::{ProfileStatus, Target};
use odp_devstack::{Stack, StackOptions};
use odp_store::Profiles;
use serde_json::{json, Value};
use tower::ServiceExt as _;

use crate::auth::Authenticator;
use crate::control::deploy::DeployOptions;
use crate::control::dispatch::{CommandPublisher, Dispatcher, PublishFuture};
use crate::control::Control;
use crate::metrics::ApiMetrics;
use crate::service::identities::IdentityIssuer;
use crate::{app, AppState};

const SECRET: &[u8] = b"an in-process test secret";

/// Keeps what it is given; fails every publish while `down`.
#[derive(Default)]
struct Recorder {
    published: Mutex<Vec<(String, String)>>,
    down: Mutex<bool>,
}

impl CommandPublisher for Recorder {
    fn publish<'a>(&'a self, host: &'a str, token: &'a str) -> PublishFuture<'a> {
        Box::pin(async move {
            if *self.down.lock().unwrap() {
                return Err("broker unreachable".to_owned());
            }
            let sent = (host.to_owned(), token.to_owned());
            self.published.lock().unwrap().push(sent);
            Ok(())
        })
    }
}

struct InProcess {
    state: AppState,
    recorder: Arc<Recorder>,
    /// Verifies the commands for host `h1`.
    public_key: String,
    /// The command signing key, PKCS#8 PEM.
    private_key: String,
    _stack: Stack,
}

impl InProcess {
    async fn start() -> InProcess {
        let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
        let pool = stack.store().await.unwrap();
        let (private, public_key) = generate_keypair().unwrap();
        let recorder = Arc::new(Recorder::default());
        let mut registry = odp_metrics::Registry::default();
        let metrics = ApiMetrics::register(&mut registry);
        let signer = CommandSigner::from_private_pem(&private).unwrap();
        let dispatcher = Dispatcher::new(recorder.clone(), signer, 300, metrics.clone());
        let identities = Arc::new(IdentityIssuer::new(&private, &pool).unwrap());
        let control = Control::new(
            pool.clone(),
            &DeployOptions::defaults(),
            60,
            identities.clone(),
        );
        let state = AppState {
            profiles: Profiles::new(pool.clone()),
            auth: Arc::new(Authenticator::from_secret(SECRET)),
            dispatcher: Arc::new(dispatcher),
            control: Arc::new(control.unwrap()),
            pool,
            metrics,
            exposition: Arc::new(odp_metrics::Metrics::new(registry)),
            request_timeout: Duration::from_secs(30),
            egress: Default::default(),
            read_limits: Default::default(),
            max_run_hosts_per_user: 2000,
            continuous_limits: Default::default(),
            identities,
        };
        InProcess {
            state,
            recorder,
            public_key,
            private_key: private,
            _stack: stack,
        }
    }

    /// Sends `body` (if any) as an admin (free of service scopes, which
    /// need agents' heartbeats) and returns the status and JSON.
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        self.call_as(Role::Admin, method, path, body).await
    }

    /// [`Self::call`] with a token of `role` for subject `ci`.
    async fn call_as(
        &self,
        role: Role,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let grant = Grant {
            subject: "ci".into(),
            role,
            services: vec!["*".into()],
        };
        let now = chrono::Utc::now().timestamp();
        let token = mint_hs256(SECRET, &grant, now, 300).unwrap();
        self.send(method, path, body, Some(&token)).await
    }

    /// Sends `body` (if any) with the bearer `token` (if any) and returns
    /// the status and JSON.
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        token: Option<&str>,
    ) -> (StatusCode, Value) {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::CONTENT_TYPE, "application/json");
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = request
            .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
            .unwrap();
        let response = app(self.state.clone()).oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// Every one of `calls` is a 403 for viewers and profilers.
    async fn assert_admin_only(&self, calls: &[(Method, &str, Option<Value>)]) {
        for role in [Role::Viewer, Role::Profiler] {
            for (method, path, body) in calls {
                let (status, body) = self.call_as(role, method.clone(), path, body.clone()).await;
                assert_eq!(
                    status,
                    StatusCode::FORBIDDEN,
                    "{role:?} {method} {path}: {body}"
                );
            }
        }
    }

    /// The commands published so far, verified as host `h1`'s agent would.
    fn commands(&self) -> Vec<Command> {
        let mut verifier = CommandVerifier::from_public_pem(&self.public_key, "h1").unwrap();
        let now = chrono::Utc::now().timestamp();
        let published = self.recorder.published.lock().unwrap().clone();
        published
            .iter()
            .map(|(key, token)| {
                assert_eq!(key, "h1", "commands are keyed by their host");
                verifier.verify(token, now).unwrap()
            })
            .collect()
    }
}

#[tokio::test]
async fn a_start_is_stored_and_its_signed_command_published() {
    let api = InProcess::start().await;
    let start = json!({"host": "h1", "process_name": "java", "duration_secs": 30,
                       "frequency_hz": 49, "labels": {"env": "prod"}});
    let (status, body) = api
        .call(Method::POST, "/api/v1/profiles", Some(start))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let profile: Profile = serde_json::from_value(body).unwrap();
    assert_eq!(profile.status, ProfileStatus::Dispatched);
    assert_eq!(profile.service, "java");

    let commands = api.commands();
    let [command] = commands.as_slice() else {
        panic!("one command: {commands:?}")
    };
    let CommandAction::Start(start) = &command.action else {
        panic!("a start: {command:?}")
    };
    assert_eq!(start.profile_id, profile.id);
    assert_eq!(start.target, Target::ProcessName("java".into()));
    assert_eq!((start.duration_ms, start.frequency_hz), (30_000, 49));

    // Stopping it publishes a stop for the same profile.
    let (status, _) = api
        .call(
            Method::POST,
            &format!("/api/v1/profiles/{}/stop", profile.id),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let commands = api.commands();
    assert!(
        matches!(commands.last().map(|c| &c.action),
                 Some(CommandAction::Stop { profile_id }) if *profile_id == profile.id),
        "{commands:?}"
    );
}

#[tokio::test]
async fn a_refused_start_stores_and_publishes_nothing() {
    let api = InProcess::start().await;
    let (status, body) = api
        .call(
            Method::POST,
            "/api/v1/profiles",
            Some(json!({"host": "h1", "pid": 7, "duration_secs": 0})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let error: ErrorBody = serde_json::from_value(body).unwrap();
    assert_eq!(error.error.code, ErrorCode::Invalid);
    assert!(error.error.message.contains("duration_secs"), "{error:?}");
    assert!(api.commands().is_empty());
    let stored = Profiles::new(&api.state.pool)
        .list(&odp_store::ProfileFilter {
            limit: 100,
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(stored.is_empty(), "{stored:?}");
}

#[tokio::test]
async fn a_start_the_broker_does_not_take_fails_and_says_so() {
    let api = InProcess::start().await;
    *api.recorder.down.lock().unwrap() = true;
    let start = json!({"host": "h1", "pid": 7, "duration_secs": 5});
    let (status, body) = api
        .call(Method::POST, "/api/v1/profiles", Some(start))
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("broker unreachable")));
    // Recorded as failed, so the target is free for the retry.
    let (status, list) = api.call(Method::GET, "/api/v1/profiles", None).await;
    assert_eq!(status, StatusCode::OK);
    let page: odp_api_types::ProfilesPage = serde_json::from_value(list).unwrap();
    let [failed] = page.profiles.as_slice() else {
        panic!("one profile: {page:?}")
    };
    assert_eq!(failed.status, ProfileStatus::Failed);
    assert_eq!(
        failed.status_reason.as_deref(),
        Some("command could not be published")
    );
    *api.recorder.down.lock().unwrap() = false;
    let retry = json!({"host": "h1", "pid": 7, "duration_secs": 5});
    let (status, _) = api
        .call(Method::POST, "/api/v1/profiles", Some(retry))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(api.commands().len(), 1);
}

mod enrollment;
mod identities;
mod ingest_limits;
