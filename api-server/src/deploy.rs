//! Deployers: how the api-server puts a profiler agent on a host that has
//! none. `local` spawns the agent binary on this machine (the quick start
//! and tests, where "hosts" are host ids on one machine); `ssh` runs a
//! configured command template for remote hosts, e.g.
//! `ssh -o BatchMode=yes {host} sudo systemctl start odp-profiler-service`.
//! Either way the deploy is done only when the host's heartbeat arrives;
//! `control` waits for that.

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

pub(crate) type DeployFuture<'a> = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;

/// Starts an agent on a host; `Err` carries what went wrong for the user.
pub trait Deployer: Send + Sync {
    fn name(&self) -> &'static str;
    fn deploy<'a>(&'a self, host: &'a str) -> DeployFuture<'a>;
}

impl DeployOptions {
    /// The configured deployer, or `None` when deploying is off.
    pub fn build(&self) -> Result<Option<Box<dyn Deployer>>, String> {
        match self.deployer {
            DeployerKind::None => Ok(None),
            DeployerKind::Ssh => {
                let template = self.deploy_command.clone().ok_or(
                    "--deployer ssh needs --deploy-command, e.g. \
                     'ssh {host} sudo systemctl start odp-profiler-service'",
                )?;
                if !template.contains("{host}") {
                    return Err("--deploy-command must contain {host}".into());
                }
                Ok(Some(Box::new(CommandDeployer { template })))
            }
            DeployerKind::Local => {
                let binary = match &self.local_agent_binary {
                    Some(path) => path.clone(),
                    None => std::env::current_exe()
                        .map_err(|e| format!("locating this binary: {e}"))?
                        .with_file_name("odp-profiler-service"),
                };
                if !binary.is_file() {
                    return Err(format!(
                        "local deployer: no agent binary at {}",
                        binary.display()
                    ));
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
            let log = std::fs::File::create(&log_path)
                .map_err(|e| format!("creating {}: {e}", log_path.display()))?;
            let stderr = log
                .try_clone()
                .map_err(|e| format!("opening {}: {e}", log_path.display()))?;
            let mut child = tokio::process::Command::new(&self.binary)
                .args(["--host-id", host])
                .args(&self.args)
                .stdin(Stdio::null())
                .stdout(log)
                .stderr(stderr)
                .spawn()
                .map_err(|e| format!("starting {}: {e}", self.binary.display()))?;
            // A bad flag or key makes the agent exit at once; say so now
            // rather than after the heartbeat timeout.
            if let Ok(status) = tokio::time::timeout(EARLY_EXIT_WINDOW, child.wait()).await {
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                if matches!(&status, Ok(s) if s.code() == Some(AGENT_EXIT_HOST_TAKEN)) {
                    tracing::info!(
                        host,
                        "an agent already serves the host: {}",
                        tail(&log, 300)
                    );
                    return Ok(());
                }
                return Err(format!(
                    "the agent exited at once ({}): {}",
                    status.map_or_else(|e| e.to_string(), |s| s.to_string()),
                    tail(&log, 600)
                ));
            }
            let pid = child.id().unwrap_or(0);
            tracing::info!(host, pid, log = %log_path.display(), "local agent started");
            running.insert(host.to_owned(), pid);
            // Reap it when it exits (undeploy), so it leaves no zombie, and
            // let the host be deployed again.
            let (running, host) = (self.running.clone(), host.to_owned());
            tokio::spawn(async move {
                let status = child.wait().await;
                running.lock().await.remove(&host);
                tracing::info!(%host, ?status, "local agent exited");
            });
            Ok(())
        })
    }
}

/// Runs the configured command with `{host}` replaced, through `sh -c`.
struct CommandDeployer {
    template: String,
}

impl CommandDeployer {
    /// Host names are checked against `[A-Za-z0-9._-]` before any request
    /// gets here, so substituting one cannot change the command's shape.
    fn command_for(&self, host: &str) -> Result<String, String> {
        if host.is_empty()
            || !host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        {
            return Err(format!("host {host:?} is not a plain host name"));
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
            let mut child = tokio::process::Command::new("sh")
                .args(["-c", &command])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| format!("running the deploy command: {e}"))?;
            let mut stderr = child.stderr.take().expect("stderr is piped");
            let run = async {
                let mut errors = String::new();
                let _ = stderr.read_to_string(&mut errors).await;
                (child.wait().await, errors)
            };
            let (status, errors) = tokio::time::timeout(COMMAND_TIMEOUT, run)
                .await
                .map_err(|_| format!("the deploy command ran over {COMMAND_TIMEOUT:?}"))?;
            let status = status.map_err(|e| format!("waiting for the deploy command: {e}"))?;
            if status.success() {
                Ok(())
            } else {
                Err(format!(
                    "the deploy command failed ({status}): {}",
                    tail(&errors, 600)
                ))
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
mod tests {
    use super::*;

    fn options(kind: DeployerKind) -> DeployOptions {
        DeployOptions {
            deployer: kind,
            deploy_command: None,
            agent_live_secs: 30,
            deploy_timeout_secs: 60,
            local_agent_binary: None,
            local_agent_args: Vec::new(),
            local_agent_log_dir: None,
        }
    }

    #[test]
    fn ssh_needs_a_command_with_a_host_placeholder() {
        let mut ssh = options(DeployerKind::Ssh);
        assert!(ssh.build().err().unwrap().contains("--deploy-command"));
        ssh.deploy_command = Some("ssh somewhere start".into());
        assert!(ssh.build().err().unwrap().contains("{host}"));
        ssh.deploy_command = Some("ssh {host} start".into());
        assert_eq!(ssh.build().unwrap().unwrap().name(), "ssh");
        assert!(options(DeployerKind::None).build().unwrap().is_none());
    }

    #[test]
    fn host_names_cannot_change_the_command() {
        let deployer = CommandDeployer {
            template: "ssh {host} start".into(),
        };
        assert_eq!(
            deployer.command_for("web-1.eu").unwrap(),
            "ssh web-1.eu start"
        );
        for bad in ["", "a;rm -rf /", "$(id)", "a b", "`x`"] {
            assert!(deployer.command_for(bad).is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn the_command_deployer_reports_failures_with_stderr() {
        let ok = CommandDeployer {
            template: "test {host} = web-1".into(),
        };
        assert_eq!(ok.deploy("web-1").await, Ok(()));
        let failing = CommandDeployer {
            template: "echo cannot reach {host} >&2; exit 3".into(),
        };
        let error = failing.deploy("web-2").await.unwrap_err();
        assert!(error.contains("cannot reach web-2"), "{error}");
        assert!(error.contains("exit status: 3"), "{error}");
    }

    #[tokio::test]
    async fn a_local_agent_that_exits_at_once_is_a_failed_deploy() {
        let dir = std::env::temp_dir().join(format!("odp-deploy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let deployer = LocalDeployer {
            binary: "/bin/sh".into(),
            args: vec!["-c".into(), "echo bad flag; exit 2".into()],
            log_dir: dir.clone(),
            running: Arc::default(),
        };
        // `sh --host-id h -c …` fails on the unknown option.
        let error = deployer.deploy("h").await.unwrap_err();
        assert!(error.contains("exited at once"), "{error}");
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A stand-in agent: an executable script, run as `SCRIPT --host-id HOST`.
    fn script_deployer(dir: &std::path::Path, script: &str) -> LocalDeployer {
        use std::os::unix::fs::PermissionsExt as _;
        let path = dir.join("agent.sh");
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        LocalDeployer {
            binary: path,
            args: Vec::new(),
            log_dir: dir.to_owned(),
            running: Arc::default(),
        }
    }

    #[tokio::test]
    async fn an_agent_refused_for_a_served_host_is_a_successful_deploy() {
        let dir = tempfile::tempdir().unwrap();
        let deployer = script_deployer(dir.path(), "#!/bin/sh\necho host taken >&2\nexit 3\n");
        assert_eq!(deployer.deploy("h").await, Ok(()));
        assert!(deployer.running.lock().await.is_empty());
    }

    #[tokio::test]
    async fn racing_deploys_of_one_host_start_one_agent() {
        let dir = tempfile::tempdir().unwrap();
        let starts = dir.path().join("starts");
        let script = format!(
            "#!/bin/sh\necho started >> {}\nexec sleep 30\n",
            starts.display()
        );
        let deployer = script_deployer(dir.path(), &script);
        let (a, b) = tokio::join!(deployer.deploy("h"), deployer.deploy("h"));
        assert_eq!((a, b), (Ok(()), Ok(())));
        assert_eq!(deployer.deploy("h").await, Ok(()));
        let lines = std::fs::read_to_string(&starts).unwrap();
        assert_eq!(lines.lines().count(), 1, "{lines}");
        let pid = *deployer.running.lock().await.get("h").unwrap();
        let _ = std::process::Command::new("kill")
            .arg(pid.to_string())
            .status();
    }
}
