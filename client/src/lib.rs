//! A small async client of ODP's REST API, shared by `odpctl`, the quick
//! start and the end-to-end tests.

use std::fmt::Display;
use std::time::Duration;

pub use odp_api_types as types;
use odp_api_types::{
    AgentIdentityList, AgentIdentityRecord, CreateEnrollmentTokenRequest, CreatedEnrollmentToken,
    EnrollAgentRequest, EnrollmentToken, EnrollmentTokenList, IssueAgentIdentityRequest,
    IssuedAgentIdentity, Profile, ProfileStatus, ProfilesPage, Run, RunPrecision, TopResponse,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{0}")]
    Setup(String),
    #[error("{path}: {message}")]
    Transport { path: String, message: String },
    /// The API answered with another status than the call expects; the
    /// message is the API's JSON error message when it sent one.
    #[error("{path}: HTTP {status}: {message}")]
    Status {
        path: String,
        status: u16,
        message: String,
    },
    #[error("timed out after {timeout:?} waiting for {what}{detail}")]
    Timeout {
        what: String,
        timeout: Duration,
        detail: String,
    },
    #[error("{0}")]
    Unexpected(String),
}

impl ClientError {
    /// The HTTP status, when the API answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

pub type Result<T, E = ClientError> = std::result::Result<T, E>;

pub use reqwest::Method;

#[derive(Clone)]
pub struct ApiClient {
    base: String,
    token: String,
    http: reqwest::Client,
}

/// A response's status and body, for callers that check error paths.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub text: String,
}

/// An HTTP client that also trusts the certificates of `ca_pem` (one, or
/// a bundle) when given.
pub fn http_client(ca_pem: Option<&[u8]>) -> Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder().timeout(Duration::from_secs(30));
    if let Some(pem) = ca_pem {
        let certs = reqwest::Certificate::from_pem_bundle(pem)
            .map_err(|e| ClientError::Setup(format!("reading the API's CA certificate: {e}")))?;
        if certs.is_empty() {
            return Err(ClientError::Setup(
                "reading the API's CA certificate: no certificate in it".into(),
            ));
        }
        for cert in certs {
            builder = builder.add_root_certificate(cert);
        }
    }
    builder
        .build()
        .map_err(|e| ClientError::Setup(format!("building an HTTP client: {e}")))
}

/// Sends `request` and reads the answer as text and, when it parses, JSON.
async fn reply(path: &str, request: reqwest::RequestBuilder) -> Result<Reply> {
    let transport = |message: String| ClientError::Transport {
        path: path.to_owned(),
        message,
    };
    let response = request.send().await.map_err(|e| transport(e.to_string()))?;
    let status = response.status().as_u16();
    let text = response
        .text()
        .await
        .map_err(|e| transport(format!("reading body: {e}")))?;
    let body = json_body(&text);
    Ok(Reply { status, body, text })
}

/// `text` as JSON, `null` when it is none. Without serde_json's default
/// nesting limit (128): a flame graph nests two levels a frame, and a
/// deep stack (CPython's, through perf) passes 64 frames.
fn json_body(text: &str) -> Value {
    let mut reader = serde_json::Deserializer::from_str(text);
    reader.disable_recursion_limit();
    serde::Deserialize::deserialize(&mut reader)
        .ok()
        .filter(|_| reader.end().is_ok())
        .unwrap_or(Value::Null)
}

impl ApiClient {
    /// A client of a plain-HTTP API (or one with a publicly trusted
    /// certificate).
    pub fn new(base: &str, token: &str) -> Self {
        Self::with_http(
            base,
            token,
            http_client(None).expect("a client without extra roots always builds"),
        )
    }

    /// A client that trusts `ca_pem` (the API's self-signed certificate).
    pub fn with_ca(base: &str, token: &str, ca_pem: &[u8]) -> Result<Self> {
        Ok(Self::with_http(base, token, http_client(Some(ca_pem))?))
    }

    fn with_http(base: &str, token: &str, http: reqwest::Client) -> Self {
        ApiClient {
            base: base.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
            http,
        }
    }

    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// Sends a request with the bearer token (or none when `token` is
    /// empty) and returns whatever came back.
    pub async fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Reply> {
        let mut request = self.authorized(method, path);
        if let Some(body) = body {
            request = request.json(body);
        }
        reply(path, request).await
    }

    /// A request to `path` with the bearer token, when there is one.
    fn authorized(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let request = self.http.request(method, format!("{}{path}", self.base));
        if self.token.is_empty() {
            request
        } else {
            request.bearer_auth(&self.token)
        }
    }

    /// Sends a request and returns the JSON body when the API answers
    /// `status`; any other answer is a [`ClientError::Status`] carrying
    /// the API's error message.
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        status: u16,
    ) -> Result<Value> {
        Ok(self.expect(method, path, body, status).await?.body)
    }

    async fn expect(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        status: u16,
    ) -> Result<Reply> {
        let reply = self.request(method, path, body).await?;
        if reply.status != status {
            let message = reply.body["error"]["message"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| reply.text.clone());
            return Err(ClientError::Status {
                path: path.to_owned(),
                status: reply.status,
                message,
            });
        }
        Ok(reply)
    }

    /// Sends a request (`body` any of the API's request types, or JSON of
    /// their shape) and decodes the answer as `T` when the API answers
    /// `status`; any other answer is a [`ClientError::Status`].
    pub async fn send<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&impl Serialize>,
        status: u16,
    ) -> Result<T> {
        let body = body
            .map(serde_json::to_value)
            .transpose()
            .map_err(|e| ClientError::Setup(format!("{path}: request body: {e}")))?;
        self.typed(method, path, body.as_ref(), status).await
    }

    /// `GET path`, decoded as `T` when the API answers 200.
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T> {
        self.typed(reqwest::Method::GET, path, None, 200).await
    }

    async fn typed<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        status: u16,
    ) -> Result<T> {
        decode(path, self.expect(method, path, body, status).await?)
    }

    /// Starts a profile (a [`StartRequest`](types::StartRequest), or any
    /// JSON of its shape); returns it as dispatched.
    pub async fn start_profile(&self, request: &impl Serialize) -> Result<Profile> {
        let path = "/api/v1/profiles";
        self.send(reqwest::Method::POST, path, Some(request), 202)
            .await
    }

    pub async fn stop_profile(&self, id: impl Display) -> Result<Profile> {
        let path = format!("/api/v1/profiles/{id}/stop");
        self.typed(reqwest::Method::POST, &path, None, 202).await
    }

    pub async fn profile(&self, id: impl Display) -> Result<Profile> {
        let path = format!("/api/v1/profiles/{id}");
        self.typed(reqwest::Method::GET, &path, None, 200).await
    }

    /// Polls until the profile reaches a terminal status; returns the
    /// profile. `progress` is told each status seen.
    pub async fn wait_finished(
        &self,
        id: impl Display,
        timeout: Duration,
        mut progress: impl FnMut(ProfileStatus),
    ) -> Result<Profile> {
        let mut last = None;
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let profile = self.profile(&id).await?;
            if last != Some(profile.status) {
                progress(profile.status);
                last = Some(profile.status);
            }
            if profile.status.is_terminal() {
                return Ok(profile);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ClientError::Timeout {
                    what: format!("profile {id} to finish"),
                    timeout,
                    detail: format!(" (last status {})", profile.status),
                });
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Polls until the profile has `status`; fails early if it reaches a
    /// different terminal status.
    pub async fn wait_for_status(
        &self,
        id: impl Display,
        status: ProfileStatus,
        timeout: Duration,
    ) -> Result<Profile> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let profile = self.profile(&id).await?;
            let now = profile.status;
            if now == status {
                return Ok(profile);
            }
            if now.is_terminal() || tokio::time::Instant::now() >= deadline {
                return Err(ClientError::Unexpected(format!(
                    "profile {id} is {now}, waited for {status}: {profile:?}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// One page of `GET /api/v1/profiles` for an already encoded query.
    pub async fn list_profiles(&self, query: &str) -> Result<ProfilesPage> {
        let path = format!("/api/v1/profiles?{query}");
        self.typed(reqwest::Method::GET, &path, None, 200).await
    }

    /// The profile's `limit` hottest functions.
    pub async fn top(&self, id: impl Display, limit: usize) -> Result<TopResponse> {
        let path = format!("/api/v1/profiles/{id}/top?limit={limit}");
        self.typed(reqwest::Method::GET, &path, None, 200).await
    }

    /// Starts a run of a service (a [`CreateRunRequest`](types::CreateRunRequest),
    /// or any JSON of its shape); returns it with the hosts chosen and its
    /// members as dispatched.
    pub async fn start_run(&self, request: &impl Serialize) -> Result<Run> {
        self.send(reqwest::Method::POST, "/api/v1/runs", Some(request), 202)
            .await
    }

    pub async fn run(&self, id: impl Display) -> Result<Run> {
        let path = format!("/api/v1/runs/{id}");
        self.typed(reqwest::Method::GET, &path, None, 200).await
    }

    /// Stops every member of the run still profiling; 409 when it ended.
    pub async fn stop_run(&self, id: impl Display) -> Result<Run> {
        let path = format!("/api/v1/runs/{id}/stop");
        self.typed(reqwest::Method::POST, &path, None, 202).await
    }

    /// The run's top shares now, with their standard errors, and whether
    /// its stop rule holds.
    pub async fn run_precision(&self, id: impl Display) -> Result<RunPrecision> {
        let path = format!("/api/v1/runs/{id}/precision");
        self.typed(reqwest::Method::GET, &path, None, 200).await
    }

    /// Issues an agent identity (admin): a certificate for the request's
    /// public key, or for a key pair the API generates and answers once.
    pub async fn issue_agent_identity(
        &self,
        request: &IssueAgentIdentityRequest,
    ) -> Result<IssuedAgentIdentity> {
        let path = "/api/v1/agents/identities";
        self.send(reqwest::Method::POST, path, Some(request), 201)
            .await
    }

    /// Issued agent identities, newest first, of `host` when given (admin).
    /// `host` must be a plain host name (the API refuses others).
    pub async fn agent_identities(
        &self,
        host: Option<&str>,
        limit: u32,
    ) -> Result<AgentIdentityList> {
        let mut path = format!("/api/v1/agents/identities?limit={limit}");
        if let Some(host) = host {
            path.push_str(&format!("&host={host}"));
        }
        self.get(&path).await
    }

    /// Revokes an agent identity (admin); returns it as revoked.
    pub async fn revoke_agent_identity(&self, id: impl Display) -> Result<AgentIdentityRecord> {
        let path = format!("/api/v1/agents/identities/{id}");
        self.typed(reqwest::Method::DELETE, &path, None, 200).await
    }

    /// Creates an enrollment token for a host (admin); its secret is in
    /// the answer only.
    pub async fn create_enrollment_token(
        &self,
        request: &CreateEnrollmentTokenRequest,
    ) -> Result<CreatedEnrollmentToken> {
        let path = "/api/v1/agents/enrollment-tokens";
        self.send(reqwest::Method::POST, path, Some(request), 201)
            .await
    }

    /// Enrollment tokens, newest first (admin).
    pub async fn enrollment_tokens(&self, limit: u32) -> Result<EnrollmentTokenList> {
        let path = format!("/api/v1/agents/enrollment-tokens?limit={limit}");
        self.get(&path).await
    }

    /// Revokes an enrollment token (admin); returns it as revoked.
    pub async fn revoke_enrollment_token(&self, id: impl Display) -> Result<EnrollmentToken> {
        let path = format!("/api/v1/agents/enrollment-tokens/{id}");
        self.typed(reqwest::Method::DELETE, &path, None, 200).await
    }

    /// Enrolls an agent with an enrollment token: the request's public key
    /// certified for its host. Needs no bearer token (a client made with
    /// an empty one sends none).
    pub async fn enroll_agent(&self, request: &EnrollAgentRequest) -> Result<IssuedAgentIdentity> {
        let path = "/api/v1/agents/enroll";
        self.send(reqwest::Method::POST, path, Some(request), 201)
            .await
    }

    /// Sends `body` as it is (`content_type`), with the bearer token when
    /// there is one, and returns whatever came back.
    pub async fn send_bytes(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Vec<u8>,
        content_type: &str,
    ) -> Result<Reply> {
        let request = self
            .authorized(method, path)
            .header(reqwest::header::CONTENT_TYPE, content_type)
            .body(body);
        reply(path, request).await
    }

    /// `GET path` when the answer is binary (a pprof file): its bytes when
    /// the API answers 200.
    pub async fn get_bytes(&self, path: &str) -> Result<Vec<u8>> {
        let request = self.authorized(reqwest::Method::GET, path);
        let transport = |e: reqwest::Error| ClientError::Transport {
            path: path.to_owned(),
            message: e.to_string(),
        };
        let response = request.send().await.map_err(transport)?;
        let status = response.status().as_u16();
        let bytes = response.bytes().await.map_err(transport)?;
        if status != 200 {
            let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let message = body["error"]["message"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned());
            return Err(ClientError::Status {
                path: path.to_owned(),
                status,
                message,
            });
        }
        Ok(bytes.to_vec())
    }

    /// A profile's flame graph in any format, as bytes (pprof is binary).
    pub async fn flamegraph_bytes(&self, id: impl Display, format: &str) -> Result<Vec<u8>> {
        self.get_bytes(&format!("/api/v1/profiles/{id}/flamegraph?format={format}"))
            .await
    }

    /// Imports a pprof or folded file (`POST /api/v1/profiles/import` with
    /// the already encoded `query`); returns the new profile.
    pub async fn import_profile(&self, query: &str, file: Vec<u8>) -> Result<Profile> {
        let path = format!("/api/v1/profiles/import?{query}");
        let reply = self
            .send_bytes(
                reqwest::Method::POST,
                &path,
                file,
                "application/octet-stream",
            )
            .await?;
        if reply.status != 201 {
            let message = reply.body["error"]["message"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| reply.text.clone());
            return Err(ClientError::Status {
                path,
                status: reply.status,
                message,
            });
        }
        decode(&path, reply)
    }

    pub async fn flamegraph(&self, id: impl Display, format: &str) -> Result<String> {
        let path = format!("/api/v1/profiles/{id}/flamegraph?format={format}");
        Ok(self
            .expect(reqwest::Method::GET, &path, None, 200)
            .await?
            .text)
    }
}

/// A reply's body as `T`, or what did not match.
fn decode<T: DeserializeOwned>(path: &str, reply: Reply) -> Result<T> {
    serde_json::from_value(reply.body).map_err(|e| {
        ClientError::Unexpected(format!("{path}: unexpected reply ({e}): {}", reply.text))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_flame_graphs_parse() {
        let depth = 400;
        let text = format!(
            "{}{}",
            r#"{"name":"f","children":["#.repeat(depth),
            "]}".repeat(depth)
        );
        let body = json_body(&text);
        assert_eq!(body["name"], "f", "{depth} frames deep");
        assert!(
            serde_json::from_str::<Value>(&text).is_err(),
            "serde_json's default limit refuses it"
        );
        assert_eq!(json_body("not json"), Value::Null);
        assert_eq!(json_body("{} trailing"), Value::Null);
    }
}
