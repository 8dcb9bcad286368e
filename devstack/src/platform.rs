//! The three ODP services running against a [`Stack`](crate::Stack): api-server,
//! pipeline and one profiler-service (agent) for this machine. Used by the
//! quick start and the end-to-end tests, so both run exactly the same way.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::agent_identity::{issue_identity, record_identity, IssuedIdentity};
use crate::error::{DevError, IoContext, Result};
use odp_plumbing::Topics;

use crate::kafka::TANSU_KAFKA_OPTIONS;
use crate::ports::pick_free_ports;
use crate::process::{wait_for, ServiceProcess};
use crate::tools::workspace_binary;
use odp_client::ApiClient;

#[derive(Debug, Clone)]
pub struct PlatformOptions {
    /// Where keys and service logs go.
    pub dir: PathBuf,
    /// The host id the agent answers to.
    pub host_id: String,
    /// The agent's aggregation window.
    pub window_secs: u64,
    /// Keep the services running after this process exits (quick start).
    pub detached: bool,
    /// Start the agent (tests of the agent's absence turn it off).
    pub with_agent: bool,
    /// How long the api-server waits for an agent to acknowledge a start
    /// (and how long commands live) before calling it expired.
    pub start_ack_timeout_secs: Option<u64>,
    /// More environment for the api-server (`ODP_*` settings such as
    /// `ODP_JWKS_FILE`), for tests of its configuration.
    pub api_env: Vec<(String, String)>,
    /// More environment for the pipeline (`ODP_ALERT_*` settings such as
    /// `ODP_ALERT_ALLOWED_DESTINATIONS`).
    pub pipeline_env: Vec<(String, String)>,
    /// More environment for the agent (`ODP_LABELS=zone=a`, …).
    pub agent_env: Vec<(String, String)>,
    /// Let the api-server deploy agents on this machine for hosts without
    /// one (`--deployer local`); off, starts for such hosts just wait.
    pub local_deployer: bool,
}

impl PlatformOptions {
    pub fn new(dir: impl Into<PathBuf>, host_id: impl Into<String>) -> Self {
        PlatformOptions {
            dir: dir.into(),
            host_id: host_id.into(),
            window_secs: 10,
            detached: false,
            with_agent: true,
            start_ack_timeout_secs: None,
            api_env: Vec::new(),
            pipeline_env: Vec::new(),
            agent_env: Vec::new(),
            local_deployer: false,
        }
    }
}

/// Connection details of a running stack, as the services need them.
#[derive(Debug, Clone)]
pub struct StackEndpoints {
    pub kafka_bootstrap: String,
    pub database_url: String,
    pub topics: Topics,
}

pub struct Platform {
    /// `https://127.0.0.1:PORT`, served with a self-signed certificate.
    pub api_url: String,
    /// The API's certificate (PEM), to trust in clients.
    pub ca_pem: Vec<u8>,
    pub ca_path: PathBuf,
    pub token: String,
    pub host_id: String,
    pub jwt_secret: String,
    /// The command signing key pair (private, public) PEM paths.
    pub signing_key: PathBuf,
    pub public_key: PathBuf,
    /// Prometheus endpoints (plain HTTP); the api-server's is
    /// `{api_url}/metrics`.
    pub pipeline_metrics_url: String,
    pub agent_metrics_url: Option<String>,
    pub api: ServiceProcess,
    pub pipeline: ServiceProcess,
    pub agent: Option<ServiceProcess>,
}

impl Platform {
    pub async fn start(stack: &StackEndpoints, options: PlatformOptions) -> Result<Platform> {
        let keys = options.dir.join("keys");
        let logs = options.dir.join("logs");
        for dir in [&keys, &logs] {
            std::fs::create_dir_all(dir).io_context(|| format!("creating {}", dir.display()))?;
        }
        let (signing_key, public_key) = write_signing_keys(&keys)?;
        let (tls_cert, tls_key) = write_dev_cert(&keys)?;
        let ca_pem =
            std::fs::read(&tls_cert).io_context(|| format!("reading {}", tls_cert.display()))?;
        let jwt_secret = random_secret();

        // Held open together, so the three are distinct.
        let ports = pick_free_ports(3)?;
        let port = ports[0];
        let api_url = format!("https://127.0.0.1:{port}");
        // The agents it deploys keep their state by host, not in the
        // stack's directory `odp-dev` may have put in ODP_STATE_DIR.
        let mut api = ServiceProcess::builder("api-server", workspace_binary("odp-api-server")?)
            .env_remove("ODP_STATE_DIR");
        if let Some(timeout) = options.start_ack_timeout_secs {
            api = api
                .env("ODP_START_ACK_TIMEOUT_SECS", timeout.to_string())
                .env("ODP_COMMAND_TTL_SECS", timeout.to_string());
        }
        // Serve the web UI when it was built (`npm run build` in web/);
        // `api_env` may override it.
        let web_dist = crate::tools::repo_root().join("web").join("dist");
        if web_dist.join("index.html").is_file() {
            api = api.env("ODP_WEB_DIR", &web_dist);
        }
        for (name, value) in &options.api_env {
            api = api.env(name, value);
        }
        let api = api
            .arg("serve")
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--database-url", &stack.database_url])
            .args(["--kafka-bootstrap", &stack.kafka_bootstrap])
            .args(["--topic-commands", &stack.topics.commands])
            .args(["--topic-events", &stack.topics.events])
            .arg("--command-signing-key")
            .arg(&signing_key)
            .arg("--tls-cert")
            .arg(&tls_cert)
            .arg("--tls-key")
            .arg(&tls_key)
            .env("ODP_JWT_SECRET", &jwt_secret)
            .env("ODP_KAFKA_OPTIONS", TANSU_KAFKA_OPTIONS)
            .args(if options.local_deployer {
                local_deployer_args(stack, &options, &public_key, &logs)
            } else {
                Vec::new()
            })
            .log_dir(&logs)
            .own_process_group(options.detached)
            .spawn()?;
        let pipeline_metrics = format!("127.0.0.1:{}", ports[1]);
        let mut pipeline = ServiceProcess::builder("pipeline", workspace_binary("odp-pipeline")?);
        for (name, value) in &options.pipeline_env {
            pipeline = pipeline.env(name, value);
        }
        let pipeline = pipeline
            .args(["--metrics-listen", &pipeline_metrics])
            .env("ODP_KAFKA_OPTIONS", TANSU_KAFKA_OPTIONS)
            .args(["--database-url", &stack.database_url])
            .args(["--kafka-bootstrap", &stack.kafka_bootstrap])
            .args(["--topic-stacks", &stack.topics.stacks])
            .args(["--topic-events", &stack.topics.events])
            .args(["--topic-dead-letter", &stack.topics.dead_letter])
            .arg("--command-public-key")
            .arg(&public_key)
            .args(["--batch-wait-ms", "100"])
            .log_dir(&logs)
            .own_process_group(options.detached)
            .spawn()?;
        let agent_metrics = format!("127.0.0.1:{}", ports[2]);
        let agent_identity = if options.with_agent {
            Some(issue_identity(&signing_key, &options.host_id, "odp-dev")?)
        } else {
            None
        };
        let agent = match &agent_identity {
            Some(identity) => Some(spawn_agent(
                stack,
                &options,
                &public_key,
                identity,
                &logs,
                &agent_metrics,
            )?),
            None => None,
        };
        let health = ApiClient::with_ca(&api_url, "", &ca_pem)?;
        wait_for("the api-server to answer /healthz", Duration::from_secs(60), || {
            let health = health.clone();
            async move { matches!(health.request(reqwest::Method::GET, "/healthz", None).await, Ok(r) if r.status == 200) }
        })
        .await
        .map_err(|e| with_log(e, &api))?;
        // Migrated by now: keep the agent's identity where operators list
        // and revoke identities.
        if let Some(identity) = &agent_identity {
            record_identity(&stack.database_url, &identity.record).await?;
        }
        let token = mint_token(&jwt_secret, "odp-dev")?;
        Ok(Platform {
            api_url,
            ca_pem,
            ca_path: tls_cert,
            token,
            host_id: options.host_id,
            jwt_secret,
            signing_key,
            public_key,
            pipeline_metrics_url: format!("http://{pipeline_metrics}/metrics"),
            agent_metrics_url: agent
                .as_ref()
                .map(|_| format!("http://{agent_metrics}/metrics")),
            api,
            pipeline,
            agent,
        })
    }

    /// A client with the admin token.
    pub fn client(&self) -> ApiClient {
        self.client_for(&self.token)
    }

    /// A client with another token (empty: none).
    pub fn client_for(&self, token: &str) -> ApiClient {
        ApiClient::with_ca(&self.api_url, token, &self.ca_pem)
            .expect("the platform's certificate was read before")
    }

    /// A raw HTTP client trusting the API's certificate.
    pub fn http(&self) -> reqwest::Client {
        odp_client::http_client(Some(&self.ca_pem))
            .expect("the platform's certificate was read before")
    }

    /// Leaves the services running when this value is dropped; returns
    /// their pids.
    pub fn detach(self) -> Vec<u32> {
        let mut pids = vec![self.api.detach(), self.pipeline.detach()];
        pids.extend(self.agent.map(ServiceProcess::detach));
        pids
    }

    /// The last lines of every service's log, for test failure messages.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for service in [Some(&self.api), Some(&self.pipeline), self.agent.as_ref()]
            .into_iter()
            .flatten()
        {
            out.push_str(&format!(
                "----- {} -----\n{}\n",
                service.name(),
                service.log_tail(40)
            ));
        }
        out
    }
}

fn spawn_agent(
    stack: &StackEndpoints,
    options: &PlatformOptions,
    public_key: &Path,
    identity: &IssuedIdentity,
    logs: &Path,
    metrics_listen: &str,
) -> Result<ServiceProcess> {
    // Its own state directory: `odp-dev` reads ODP_STATE_DIR too, for the
    // stack's, where the agent's `services.json` would overwrite the
    // record `odp-dev down` stops the services by.
    let state = options.dir.join("agent-state");
    let identity_dir = state.join("identity");
    identity.save(&identity_dir)?;
    let mut agent = ServiceProcess::builder(
        "profiler-service",
        workspace_binary("odp-profiler-service")?,
    )
    .env("ODP_STATE_DIR", &state)
    .env("ODP_AGENT_IDENTITY_DIR", &identity_dir);
    for (name, value) in &options.agent_env {
        agent = agent.env(name, value);
    }
    agent
        .args(["--kafka-bootstrap", &stack.kafka_bootstrap])
        .args(stack.topics.cli_args())
        .args(["--host-id", &options.host_id])
        .arg("--command-public-key")
        .arg(public_key)
        .args(["--window-secs", &options.window_secs.to_string()])
        .args(["--heartbeat-secs", "2"])
        .args(["--metrics-listen", metrics_listen])
        .env("ODP_KAFKA_OPTIONS", TANSU_KAFKA_OPTIONS)
        .log_dir(logs)
        .own_process_group(options.detached)
        .spawn()
}

/// The api-server deploys agents for hosts without one by starting them
/// on this machine, configured like [`spawn_agent`]'s, ending with it.
fn local_deployer_args(
    stack: &StackEndpoints,
    options: &PlatformOptions,
    public_key: &Path,
    logs: &Path,
) -> Vec<String> {
    let mut agent_args = vec![
        format!("--kafka-bootstrap={}", stack.kafka_bootstrap),
        format!("--command-public-key={}", public_key.display()),
        format!("--window-secs={}", options.window_secs),
        "--heartbeat-secs=2".to_owned(),
        "--exit-with-parent".to_owned(),
    ];
    for pair in stack.topics.cli_args().chunks(2) {
        agent_args.push(format!("{}={}", pair[0], pair[1]));
    }
    let mut args = vec![
        "--deployer=local".to_owned(),
        format!("--local-agent-log-dir={}", logs.display()),
    ];
    args.extend(agent_args.iter().map(|a| format!("--local-agent-arg={a}")));
    args
}

fn with_log(error: DevError, service: &ServiceProcess) -> DevError {
    DevError::Invalid(format!(
        "{error}\n{} log:\n{}",
        service.name(),
        service.log_tail(30)
    ))
}

/// Writes a self-signed TLS certificate and key for 127.0.0.1 and
/// localhost with the api-server's own `dev-cert` subcommand.
pub fn write_dev_cert(dir: &Path) -> Result<(PathBuf, PathBuf)> {
    let (cert, key) = (dir.join("tls-cert.pem"), dir.join("tls-key.pem"));
    let binary = workspace_binary("odp-api-server")?;
    let output = std::process::Command::new(&binary)
        .arg("dev-cert")
        .arg("--cert")
        .arg(&cert)
        .arg("--key")
        .arg(&key)
        .output()
        .io_context(|| format!("running {} dev-cert", binary.display()))?;
    if !output.status.success() {
        return Err(DevError::CommandFailed {
            command: "odp-api-server dev-cert".into(),
            status: output.status.to_string(),
            output: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok((cert, key))
}

/// Writes a fresh Ed25519 key pair for command signing.
pub fn write_signing_keys(dir: &Path) -> Result<(PathBuf, PathBuf)> {
    use std::os::unix::fs::PermissionsExt as _;
    let (private, public) =
        odp_core::command::generate_keypair().map_err(|e| DevError::Invalid(e.to_string()))?;
    let private_path = dir.join("command-signing.pem");
    let public_path = dir.join("command-signing.pub.pem");
    std::fs::write(&private_path, private)
        .io_context(|| format!("writing {}", private_path.display()))?;
    std::fs::set_permissions(&private_path, std::fs::Permissions::from_mode(0o600))
        .io_context(|| format!("restricting {}", private_path.display()))?;
    std::fs::write(&public_path, public)
        .io_context(|| format!("writing {}", public_path.display()))?;
    Ok((private_path, public_path))
}

/// A 256-bit random secret from the kernel, hex encoded.
fn random_secret() -> String {
    uuid::Uuid::new_v4().simple().to_string() + &uuid::Uuid::new_v4().simple().to_string()
}

/// Mints an admin bearer token.
pub fn mint_token(jwt_secret: &str, subject: &str) -> Result<String> {
    mint_scoped_token(jwt_secret, subject, "admin", &[])
}

/// Mints a bearer token with the api-server's own `token` subcommand, so
/// the dev tooling never re-implements the token format.
pub fn mint_scoped_token(
    jwt_secret: &str,
    subject: &str,
    role: &str,
    services: &[&str],
) -> Result<String> {
    let binary = workspace_binary("odp-api-server")?;
    let mut command = std::process::Command::new(&binary);
    command.args([
        "token",
        "--sub",
        subject,
        "--role",
        role,
        "--ttl-secs",
        "86400",
    ]);
    if !services.is_empty() {
        command.arg("--services").arg(services.join(","));
    }
    let output = command
        .env("ODP_JWT_SECRET", jwt_secret)
        .output()
        .io_context(|| format!("running {} token", binary.display()))?;
    if !output.status.success() {
        return Err(DevError::CommandFailed {
            command: "odp-api-server token".into(),
            status: output.status.to_string(),
            output: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}
