//! Deployers: how the api-server puts a profiler agent on a host that has
//! none. `local` spawns the agent binary on this machine (the quick start
//! and tests, where "hosts" are host ids on one machine); `ssh` runs a
//! configured command template for remote hosts, e.g.
//! `ssh -o BatchMode=yes {host} sudo systemctl start odp-profiler-service`.
//! Either way the deploy is done only when the host's heartbeat arrives;
//! `control` waits for that.
//!
//! Each agent a deployer starts gets an identity of its own: a fresh key
//! and a certificate for the host ([`odp_core::identity`]), recorded as
//! issued by `deployer:local` or `deployer:ssh` and handed over in
//! `ODP_AGENT_KEY` and `ODP_AGENT_CERTIFICATE`, so what the agent
//! publishes is signed from its first heartbeat.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncReadExt as _;
use tokio::sync::Mutex;

/// How long a deploy command may run before it is killed.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);
/// A local agent that exits this soon after starting failed to start.
const EARLY_EXIT_WINDOW: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DeployerKind {
    /// Hosts without an agent are reported, not deployed to.
    None,
    Local,
    Ssh,
}

#[derive(Debug, Clone, clap::Args)]
pub struct DeployOptions {
    /// How agents reach hosts that have none (`start` implies deploy).
    #[arg(long, env = "ODP_DEPLOYER", value_enum, default_value = "none")]
    pub deployer: DeployerKind,
    /// `ssh` deployer: the shell command that starts the agent on `{host}`.
    /// It runs with the new agent's identity in `ODP_AGENT_KEY` (its
    /// PKCS#8 PEM key) and `ODP_AGENT_CERTIFICATE`, for it to forward to
    /// the host (docs/operations.md, Agent identities).
    #[arg(long, env = "ODP_DEPLOY_COMMAND")]
    pub deploy_command: Option<String>,
    /// A host's agent counts as live while its last heartbeat is this
    /// recent (agents beat every 5 s by default).
    #[arg(long, env = "ODP_AGENT_LIVE_SECS", default_value_t = 30, value_parser = clap::value_parser!(i64).range(2..=3600))]
    pub agent_live_secs: i64,
    /// How long a deploy may take until the host's first heartbeat.
    #[arg(long, env = "ODP_DEPLOY_TIMEOUT_SECS", default_value_t = 60, value_parser = clap::value_parser!(i64).range(5..=3600))]
    pub deploy_timeout_secs: i64,
    /// `local` deployer: the agent binary (default: `odp-profiler-service`
    /// beside this binary).
    #[arg(long, env = "ODP_LOCAL_AGENT_BINARY")]
    pub local_agent_binary: Option<PathBuf>,
    /// `local` deployer: one more argument for the agent (repeat it), e.g.
    /// `--local-agent-arg=--kafka-bootstrap=127.0.0.1:9092`.
    #[arg(long = "local-agent-arg", allow_hyphen_values = true)]
    pub local_agent_args: Vec<String>,
    /// `local` deployer: where each agent writes its log
    /// (`agent-<host>.log`).
    #[arg(long, env = "ODP_LOCAL_AGENT_LOG_DIR")]
    pub local_agent_log_dir: Option<PathBuf>,
}

pub(crate) type DeployFuture<'a> =
    Pin<Box<dyn Future<Output = Result<(), DeployError>> + Send + 'a>>;

/// The environment variables that give an agent its key (PKCS#8 PEM) and
/// certificate, as the agent reads them.
pub(crate) const KEY_ENV: &str = "ODP_AGENT_KEY";
pub(crate) const CERTIFICATE_ENV: &str = "ODP_AGENT_CERTIFICATE";

/// A new agent's identity: its private key and the certificate for it.
pub(crate) struct AgentCredentials {
    /// The identity's id, as recorded.
    pub id: uuid::Uuid,
    pub key_pem: String,
    pub certificate: String,
}

impl AgentCredentials {
    /// As the agent reads them from its environment.
    fn env(&self) -> [(&'static str, &str); 2] {
        [
            (KEY_ENV, self.key_pem.as_str()),
            (CERTIFICATE_ENV, self.certificate.as_str()),
        ]
    }
}

pub(crate) type IssueFuture<'a> =
    Pin<Box<dyn Future<Output = Result<AgentCredentials, String>> + Send + 'a>>;

/// Issues (and records) a new identity for an agent of `host`; `Err`
/// says why not. The api-server's is `service::identities::IdentityIssuer`.
pub(crate) trait IssueIdentity: Send + Sync {
    fn issue_new<'a>(&'a self, host: &'a str, issued_by: &'a str) -> IssueFuture<'a>;

    /// Revokes an identity whose agent is gone: its key lived only in
    /// that process, so nothing may speak with it any more, and listing
    /// it as valid would mislead. Failing to is logged, not fatal.
    fn withdraw<'a>(&'a self, id: uuid::Uuid, why: &'a str) -> WithdrawFuture<'a>;
}

pub(crate) type WithdrawFuture<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// Why the deployer flags do not make a deployer.
#[derive(Debug, thiserror::Error)]
pub enum DeployConfigError {
    #[error(
        "--deployer ssh needs --deploy-command, e.g. \
         'ssh {{host}} sudo systemctl start odp-profiler-service'"
    )]
    NoCommand,
    #[error("--deploy-command must contain {{host}}")]
    NoHostInCommand,
    #[error("locating this binary: {0}")]
    CurrentExe(std::io::Error),
    #[error("local deployer: no agent binary at {}", .0.display())]
    NoAgentBinary(PathBuf),
}

/// Why a deploy failed, as the deploy request's reason tells the user.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DeployError {
    #[error("host {0:?} is not a plain host name")]
    HostName(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("the deploy command ran over {0:?}")]
    Timeout(Duration),
    #[error("the deploy command failed ({status}): {stderr}")]
    CommandFailed { status: String, stderr: String },
    #[error("the agent exited at once ({status}): {log}")]
    AgentExited { status: String, log: String },
    #[error("{0}")]
    Identity(String),
}

impl DeployError {
    fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> DeployError {
        let what = what.into();
        move |source| DeployError::Io { what, source }
    }
}

/// Starts an agent on a host; `Err` carries what went wrong for the user.
pub(crate) trait Deployer: Send + Sync {
    fn name(&self) -> &'static str;
    fn deploy<'a>(&'a self, host: &'a str) -> DeployFuture<'a>;
}

impl DeployOptions {
    /// The flags' defaults: no deployer, agents live for 30 s after a
    /// heartbeat, deploys given 60 s.
    #[cfg(test)]
    pub(crate) fn defaults() -> Self {
        DeployOptions {
            deployer: DeployerKind::None,
            deploy_command: None,
            agent_live_secs: 30,
            deploy_timeout_secs: 60,
            local_agent_binary: None,
            local_agent_args: Vec::new(),
            local_agent_log_dir: None,
        }
    }

    /// The configured deployer, or `None` when deploying is off; it gives
    /// each agent it starts an identity from `identities`.
    pub(crate) fn build(
        &self,
        identities: Arc<dyn IssueIdentity>,
    ) -> Result<Option<Box<dyn Deployer>>, DeployConfigError> {
        match self.deployer {
            DeployerKind::None => Ok(None),
            DeployerKind::Ssh => {
                let template = self
                    .deploy_command
                    .clone()
                    .ok_or(DeployConfigError::NoCommand)?;
                if !template.contains("{host}") {
                    return Err(DeployConfigError::NoHostInCommand);
                }
                Ok(Some(Box::new(CommandDeployer {
                    template,
                    identities,
                })))
            }
            DeployerKind::Local => {
                let binary = match &self.local_agent_binary {
                    Some(path) => path.clone(),
                    None => std::env::current_exe()
                        .map_err(DeployConfigError::CurrentExe)?
                        .with_file_name("odp-profiler-service"),
                };
                if !binary.is_file() {
                    return Err(DeployConfigError::NoAgentBinary(binary));
                }
                let log_dir = self
                    .local_agent_log_dir
                    .clone()
                    .unwrap_or_else(std::env::temp_dir);
                Ok(Some(Box::new(LocalDeployer {
                    binary,
                    args: self.local_agent_args.clone(),
                    log_dir,
                    running: Arc::default(),
                    identities,
                })))
            }
        }
    }
}

/// The agent's exit code when another agent already serves its host id
/// (`odp_profiler_service::host_lock::EXIT_HOST_TAKEN`).
const AGENT_EXIT_HOST_TAKEN: i32 = 3;

/// Spawns `odp-profiler-service --host-id HOST ARGS…` on this machine.
/// Deploying to a host that has an agent is a no-op: one this deployer
/// started and that still runs is not started again, and any other (by
/// hand, by another api-server) makes the new agent exit at once with
/// [`AGENT_EXIT_HOST_TAKEN`], since the agent holds a per-host lock.
struct LocalDeployer {
    binary: PathBuf,
    args: Vec<String>,
    log_dir: PathBuf,
    /// The agents this deployer started and that still run, by host.
    running: Arc<Mutex<HashMap<String, u32>>>,
    identities: Arc<dyn IssueIdentity>,
}

impl LocalDeployer {
    /// Starts the agent for `host`, its output in `log_path`. A binary
    /// "busy" (ETXTBSY) is tried again: another thread's fork can hold a
    /// write handle of a binary written just before (an upgrade, a test's
    /// script) until that child execs, a matter of milliseconds.
    async fn spawn_agent(
        &self,
        host: &str,
        credentials: &AgentCredentials,
        log_path: &std::path::Path,
    ) -> Result<tokio::process::Child, DeployError> {
        let mut busy = 0;
        loop {
            let log = std::fs::File::create(log_path)
                .map_err(DeployError::io(format!("creating {}", log_path.display())))?;
            let stderr = log
                .try_clone()
                .map_err(DeployError::io(format!("opening {}", log_path.display())))?;
            let spawned = tokio::process::Command::new(&self.binary)
                .args(["--host-id", host])
                .args(&self.args)
                // In the environment, not on the command line, which every
                // user of the machine can read.
                .envs(credentials.env())
                .stdin(Stdio::null())
                .stdout(log)
                .stderr(stderr)
                .spawn();
            match spawned {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && busy < 10 => {
                    busy += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                other => {
                    return other.map_err(DeployError::io(format!(
                        "starting {}",
                        self.binary.display()
                    )))
                }
            }
        }
    }
}

impl Deployer for LocalDeployer {
    fn name(&self) -> &'static str {
        "local"
    }

    fn deploy<'a>(&'a self, host: &'a str) -> DeployFuture<'a> {
        Box::pin(async move {
            // Held across the spawn, so two deploys of one host racing in
            // this server start one agent.
            let mut running = self.running.lock().await;
            if let Some(pid) = running.get(host) {
                tracing::info!(host, pid, "the agent this deployer started still runs");
                return Ok(());
            }
            let log_path = self.log_dir.join(format!("agent-{host}.log"));
            let credentials = self
                .identities
                .issue_new(host, "deployer:local")
                .await
                .map_err(DeployError::Identity)?;
            let mut child = self.spawn_agent(host, &credentials, &log_path).await?;
            // A bad flag or key makes the agent exit at once; say so now
            // rather than after the heartbeat timeout.
            if let Ok(status) = tokio::time::timeout(EARLY_EXIT_WINDOW, child.wait()).await {
                let why = "deployer:local (the agent exited at once)";
                self.identities.withdraw(credentials.id, why).await;
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                if matches!(&status, Ok(s) if s.code() == Some(AGENT_EXIT_HOST_TAKEN)) {
                    tracing::info!(
                        host,
                        "an agent already serves the host: {}",
                        tail(&log, 300)
                    );
                    return Ok(());
                }
                return Err(DeployError::AgentExited {
                    status: status.map_or_else(|e| e.to_string(), |s| s.to_string()),
                    log: tail(&log, 600).to_owned(),
                });
            }
            let pid = child.id().unwrap_or(0);
            tracing::info!(host, pid, log = %log_path.display(), "local agent started");
            running.insert(host.to_owned(), pid);
            // Reap it when it exits (undeploy), so it leaves no zombie, and
            // let the host be deployed again.
            let (running, host) = (self.running.clone(), host.to_owned());
            let identities = self.identities.clone();
            tokio::spawn(async move {
                let status = child.wait().await;
                running.lock().await.remove(&host);
                tracing::info!(%host, ?status, "local agent exited");
                let why = "deployer:local (the agent exited)";
                identities.withdraw(credentials.id, why).await;
            });
            Ok(())
        })
    }
}

/// Runs the configured command with `{host}` replaced, through `sh -c`,
/// with the new agent's identity in its environment.
struct CommandDeployer {
    template: String,
    identities: Arc<dyn IssueIdentity>,
}

impl CommandDeployer {
    /// Host names are checked against `[A-Za-z0-9._-]` before any request
    /// gets here, so substituting one cannot change the command's shape.
    fn command_for(&self, host: &str) -> Result<String, DeployError> {
        if host.is_empty()
            || !host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        {
            return Err(DeployError::HostName(host.to_owned()));
        }
        Ok(self.template.replace("{host}", host))
    }
}

impl Deployer for CommandDeployer {
    fn name(&self) -> &'static str {
        "ssh"
    }

    fn deploy<'a>(&'a self, host: &'a str) -> DeployFuture<'a> {
        Box::pin(async move {
            let command = self.command_for(host)?;
            let credentials = self
                .identities
                .issue_new(host, "deployer:ssh")
                .await
                .map_err(DeployError::Identity)?;
            let mut child = tokio::process::Command::new("sh")
                .args(["-c", &command])
                .envs(credentials.env())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .map_err(DeployError::io("running the deploy command"))?;
            let mut stderr = child.stderr.take().expect("stderr is piped");
            let run = async {
                let mut errors = String::new();
                let _ = stderr.read_to_string(&mut errors).await;
                (child.wait().await, errors)
            };
            let (status, errors) = tokio::time::timeout(COMMAND_TIMEOUT, run)
                .await
                .map_err(|_| DeployError::Timeout(COMMAND_TIMEOUT))?;
            let status = status.map_err(DeployError::io("waiting for the deploy command"))?;
            if status.success() {
                Ok(())
            } else {
                Err(DeployError::CommandFailed {
                    status: status.to_string(),
                    stderr: tail(&errors, 600).to_owned(),
                })
            }
        })
    }
}

/// The last `max` bytes of `text` (on a character boundary), trimmed.
fn tail(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].trim()
}

#[cfg(test)]
mod tests;
