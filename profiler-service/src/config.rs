//! Command-line flags (each with an `ODP_*` environment variable) and the
//! typed configuration they are validated into once, at start-up.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use odp_core::command::CommandVerifier;
use odp_core::cost::{DutyCycle, FdaSettings};
use odp_core::identity::AgentIdentity;
use odp_core::service::parse_operator_labels;
use odp_core::snapshot::MAX_MESSAGE_BYTES;
use odp_plumbing::{Kafka, KafkaArgs, Topics};

use crate::cost::CostDefaults;
use crate::error::{Error, Result};
use crate::identity::enroll::Enrollment;
use crate::identity::{IdentityPlace, Secret, Verifier, CERTIFICATE_ENV, KEY_ENV};
use crate::plugin::native::debuginfod::{
    cache_dir as debuginfod_cache_dir, parse_urls, DebuginfodSettings,
};
use crate::plugin::PluginSettings;

/// Longest aggregation window accepted, from flags or commands.
pub const MAX_WINDOW: Duration = Duration::from_secs(3600);
/// What `--max-message-bytes` may be: one deep stack must fit (4096
/// frames), and no snapshot may pass what the pipeline decodes.
const MESSAGE_BYTES: std::ops::RangeInclusive<usize> =
    (64 << 10)..=odp_core::snapshot::MAX_BODY_BYTES;
/// Shortest aggregation window accepted from a command.
pub const MIN_WINDOW: Duration = Duration::from_millis(100);

#[derive(Debug, Clone, Parser)]
#[command(
    name = "odp-profiler-service",
    version,
    about = "ODP host agent: profiles processes of this host on signed command"
)]
pub struct Args {
    #[command(flatten)]
    pub kafka: KafkaArgs,
    /// Commands are read from the commands topic (undecodable ones copied
    /// to dead letters); snapshots go to stacks, heartbeats and lifecycle
    /// events to events.
    #[command(flatten)]
    pub topics: Topics,
    /// This host's id, the key of its commands (default: the hostname).
    #[arg(long, env = "ODP_HOST_ID")]
    pub host_id: Option<String>,
    /// This agent instance's id (default: a random UUID per start).
    #[arg(long, env = "ODP_AGENT_ID")]
    pub agent_id: Option<String>,
    /// PEM file with the api-server's Ed25519 public key.
    #[arg(long, env = "ODP_COMMAND_PUBLIC_KEY")]
    pub command_public_key: PathBuf,
    /// Default aggregation window in seconds (a command may override it).
    #[arg(long, env = "ODP_WINDOW_SECS", default_value_t = 10)]
    pub window_secs: u64,
    /// Seconds between heartbeats.
    #[arg(long, env = "ODP_HEARTBEAT_SECS", default_value_t = 5)]
    pub heartbeat_secs: u64,
    /// FSP: keep the busiest threads up to this share of each window's
    /// samples (1 keeps every thread).
    #[arg(long, env = "ODP_FSP_SHARE", default_value_t = 0.99)]
    pub fsp_share: f64,
    /// FDA on by default: adapt each profile's frequency to how fast its
    /// hot functions change (a command may still turn it off).
    #[arg(long, env = "ODP_FDA")]
    pub fda: bool,
    /// FDA divergence threshold θ (Jensen-Shannon, bits).
    #[arg(long, env = "ODP_FDA_THETA", default_value_t = 0.05)]
    pub fda_theta: f64,
    /// FDA decay factor λ in (0, 1).
    #[arg(long, env = "ODP_FDA_LAMBDA", default_value_t = 0.8)]
    pub fda_lambda: f64,
    /// FDA: stable windows in a row before the frequency is lowered.
    #[arg(long, env = "ODP_FDA_STABLE_WINDOWS", default_value_t = 5)]
    pub fda_stable_windows: u32,
    /// FDA: lowest frequency.
    #[arg(long, env = "ODP_FDA_MIN_HZ", default_value_t = 19)]
    pub fda_min_hz: u32,
    /// CPU each profile may cost the agent, as a share of one core (0
    /// disables the budget).
    #[arg(long, env = "ODP_OVERHEAD_BUDGET", default_value_t = 0.01)]
    pub overhead_budget: f64,
    /// Duty cycle: sample this many seconds of every --duty-period-secs
    /// (0, the default, samples all the time).
    #[arg(long, env = "ODP_DUTY_ON_SECS", default_value_t = 0)]
    pub duty_on_secs: u64,
    #[arg(long, env = "ODP_DUTY_PERIOD_SECS", default_value_t = 0)]
    pub duty_period_secs: u64,
    /// Publish cost-control reports (`profile_adjusted`, `window_stats`) on
    /// the events topic (`--cost-events=false` to keep them local).
    #[arg(long, env = "ODP_COST_EVENTS", default_value_t = true, action = clap::ArgAction::Set)]
    pub cost_events: bool,
    /// Serve Prometheus `/metrics` over HTTP on this address (off when
    /// absent).
    #[arg(long, env = "ODP_METRICS_LISTEN")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Stop (as on SIGTERM) when the process that started the agent exits:
    /// for agents that a development api-server's local deployer started.
    #[arg(long, env = "ODP_EXIT_WITH_PARENT")]
    pub exit_with_parent: bool,
    /// py-spy executable for the `python` plugin (a bare name is looked up
    /// in `PATH`).
    #[arg(long, env = "ODP_PY_SPY", default_value = "py-spy")]
    pub py_spy: PathBuf,
    /// Python stacks include the native (C) frames of extensions and of
    /// the interpreter (py-spy `--native`; costs more per sample).
    #[arg(long, env = "ODP_PYTHON_NATIVE")]
    pub python_native: bool,
    /// Native CPU profiles of process-name, command-line and cgroup targets
    /// sample the threads each rescan finds, as pid targets do, instead of
    /// every CPU. Per-CPU sampling (the default where the agent has
    /// system-wide perf rights) catches processes that live less than a
    /// rescan period.
    #[arg(long, env = "ODP_NATIVE_PER_THREAD")]
    pub native_per_thread: bool,
    /// jcmd executable for the `jvm` plugin (a bare name is looked up in
    /// `PATH`).
    #[arg(long, env = "ODP_JCMD", default_value = "jcmd")]
    pub jcmd: PathBuf,
    /// debuginfod servers (space-separated `http`/`https` URLs) the
    /// `native` plugin fetches the debug files of stripped libraries from,
    /// by build id, to name their functions; the variable gdb and perf
    /// read. Unset or empty: none.
    #[arg(long, env = "DEBUGINFOD_URLS", value_name = "URLS")]
    pub debuginfod_urls: Option<String>,
    /// Where fetched debug files are cached (default: `debuginfod` in the
    /// state directory).
    #[arg(long, env = "DEBUGINFOD_CACHE_PATH")]
    pub debuginfod_cache: Option<PathBuf>,
    /// Directory of the on-disk spool for snapshots the broker did not take
    /// (default: `odp-spool/<host id>` in the temporary directory).
    #[arg(long, env = "ODP_SPOOL_DIR")]
    pub spool_dir: Option<PathBuf>,
    /// Largest snapshot message in bytes: a window encoding to more is sent
    /// as several, each of whole stacks. The broker's `message.max.bytes`
    /// (about 1 MB on Kafka by default) must be above it.
    #[arg(long, env = "ODP_MAX_MESSAGE_BYTES", default_value_t = MAX_MESSAGE_BYTES)]
    pub max_message_bytes: usize,
    /// Most bytes the spool holds; when full the oldest snapshots are
    /// dropped (and counted). 0 turns the spool off.
    #[arg(long, env = "ODP_SPOOL_MAX_BYTES", default_value_t = 256 << 20)]
    pub spool_max_bytes: u64,
    /// Directory of the per-host lock file that keeps a second agent of a
    /// host id from running on this machine (default: `/run/odp` as root,
    /// else `odp-run-$USER` in the temporary directory).
    #[arg(long, env = "ODP_LOCK_DIR")]
    pub lock_dir: Option<PathBuf>,
    /// This machine's id, which tells agents of one host id on different
    /// machines apart (default: `/etc/machine-id`, else the hostname).
    #[arg(long, env = "ODP_MACHINE_ID")]
    pub machine_id: Option<String>,
    /// An agent of this host id on another machine counts as live while
    /// its last heartbeat is this recent; the later-started of two live
    /// agents exits.
    #[arg(long, env = "ODP_PEER_LIVE_SECS", default_value_t = 30)]
    pub peer_live_secs: u64,
    /// A label of this host, `KEY=VALUE`, reported in every heartbeat
    /// (`zone` and `version` by convention); repeat the flag, or give them
    /// comma-separated (`ODP_LABELS=zone=eu-1,version=1.2`). Keys are
    /// `[a-z0-9_.-]`; `kernel`, `cpu_model`, `cores` and `arch` are
    /// discovered and cannot be set.
    #[arg(
        long = "label",
        env = "ODP_LABELS",
        value_name = "KEY=VALUE",
        value_delimiter = ','
    )]
    pub labels: Vec<String>,
    /// Directory of the state the agent keeps across restarts (the service
    /// definitions of the last `sync_services`). Default:
    /// `/var/lib/odp/<host id>` when writable, else
    /// `odp-state-$USER/<host id>` in the temporary directory.
    #[arg(long, env = "ODP_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
    /// Directory of this agent's identity: its key (`agent-key.pem`) and
    /// the certificate the api-server issued for it for this host
    /// (`agent-certificate.jwt`); the agent signs all it publishes with
    /// them. Default: `identity` in the state directory. The environment
    /// variables `ODP_AGENT_KEY` (the key's PKCS#8 PEM) and
    /// `ODP_AGENT_CERTIFICATE` (the certificate) give them as contents
    /// instead, when both are set.
    #[arg(long, env = "ODP_AGENT_IDENTITY_DIR")]
    pub identity_dir: Option<PathBuf>,
    /// `ODP_AGENT_KEY`: from the environment only, never a flag, as a
    /// command line is visible to every user of the machine.
    #[arg(skip = Secret::from_env(KEY_ENV))]
    pub agent_key: Option<Secret>,
    /// `ODP_AGENT_CERTIFICATE`.
    #[arg(skip = Secret::from_env(CERTIFICATE_ENV).map(|s| s.0))]
    pub agent_certificate: Option<String>,
    /// A one-time enrollment token (`odpctl agents token create HOST`):
    /// when the agent has no identity, it makes its key pair, has the
    /// api-server at `--api-url` certify the public half, and writes both
    /// into its identity directory before it starts. Not used once it has
    /// one. Prefer the environment variable: a command line is visible to
    /// every user of the machine.
    #[arg(long, env = ENROLLMENT_TOKEN_ENV, hide_env_values = true, value_parser = secret)]
    pub enrollment_token: Option<Secret>,
    /// The api-server's URL, for enrollment, e.g.
    /// https://odp.example.com:8443.
    #[arg(long, env = "ODP_API_URL")]
    pub api_url: Option<String>,
    /// CA certificate (PEM) to check the api-server's TLS certificate with
    /// when enrolling, e.g. the development one (default: the system's CA
    /// bundle).
    #[arg(long, env = "ODP_CACERT")]
    pub cacert: Option<PathBuf>,
}

/// The environment variable of `--enrollment-token`.
pub const ENROLLMENT_TOKEN_ENV: &str = "ODP_ENROLLMENT_TOKEN";

fn secret(text: &str) -> std::result::Result<Secret, std::convert::Infallible> {
    Ok(Secret(text.to_owned()))
}

impl Args {
    fn cost_defaults(&self) -> CostDefaults {
        CostDefaults {
            fsp_share: self.fsp_share,
            fda: self.fda.then(|| FdaSettings {
                theta: self.fda_theta,
                lambda: self.fda_lambda,
                stable_windows: self.fda_stable_windows,
                min_hz: self.fda_min_hz,
                ..FdaSettings::default()
            }),
            duty_cycle: (self.duty_on_secs > 0 || self.duty_period_secs > 0).then_some(DutyCycle {
                on_ms: self.duty_on_secs.saturating_mul(1000),
                period_ms: self.duty_period_secs.saturating_mul(1000),
            }),
            overhead_budget: (self.overhead_budget != 0.0).then_some(self.overhead_budget),
        }
    }
}

/// Where snapshots wait while the broker is unreachable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpoolSettings {
    pub dir: PathBuf,
    /// 0: no spool, undelivered snapshots are lost (and counted).
    pub max_bytes: u64,
}

/// The validated configuration of the agent.
#[derive(Debug, Clone)]
pub struct Config {
    pub kafka: Kafka,
    pub topics: Topics,
    pub host_id: String,
    pub agent_id: String,
    /// The api-server's public key, PEM text (already checked to parse).
    pub command_public_key_pem: String,
    pub window: Duration,
    pub heartbeat: Duration,
    /// Cost control for profiles whose command does not say.
    pub cost: CostDefaults,
    /// Whether cost-control reports are published.
    pub cost_events: bool,
    pub metrics_listen: Option<std::net::SocketAddr>,
    pub exit_with_parent: bool,
    /// The external tools of the language plugins.
    pub plugins: PluginSettings,
    pub spool: SpoolSettings,
    /// Largest snapshot message ([`Args::max_message_bytes`]).
    pub max_message_bytes: usize,
    /// Where the per-host lock file lives ([`crate::host_lock`]).
    pub lock_dir: PathBuf,
    pub machine_id: String,
    /// How recent a peer's heartbeat must be to make this agent yield.
    pub peer_live: Duration,
    /// The operator's labels of this host (the discovered ones are added
    /// when the agent starts).
    pub labels: BTreeMap<String, String>,
    /// Where state kept across restarts lives ([`crate::services`]).
    pub state_dir: PathBuf,
    /// This agent's key and certificate: everything it publishes is signed
    /// with them ([`crate::identity`]).
    pub identity: Arc<AgentIdentity>,
    /// How long each segment of a continuous profile lasts: the
    /// pipeline derives segments' profile ids from
    /// [`odp_core::continuous::SEGMENT_SECS`], so only tests shorten it.
    pub continuous_segment: Duration,
    /// The api-server's key as the checker of other agents' messages
    /// ([`crate::peers`]); the same key as `command_public_key_pem`.
    pub verifier: Verifier,
}

impl Args {
    /// Validates the flags; reads the public key file, the hostname and
    /// the agent's identity.
    pub fn into_config(self) -> Result<Config> {
        let cost = self.cost_defaults();
        let host_id = match self.host_id {
            Some(host) => host,
            None => hostname()?,
        };
        let agent_id = self
            .agent_id
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let pem = fs::read_to_string(&self.command_public_key).map_err(|source| {
            Error::PublicKeyFile {
                path: self.command_public_key.clone(),
                source,
            }
        })?;
        // Per host id: agents of several (test) hosts on one machine must
        // not resend each other's snapshots.
        let spool_dir = self.spool_dir.unwrap_or_else(|| {
            std::env::temp_dir()
                .join("odp-spool")
                .join(host_id.replace('/', "_"))
        });
        // `ODP_LABELS=` (empty) means none; `zone=a, version=2` is fine.
        let items = self
            .labels
            .iter()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty());
        let labels =
            parse_operator_labels(items).map_err(|e| Error::Config(format!("--label: {e}")))?;
        let state_dir = self
            .state_dir
            .unwrap_or_else(|| default_state_dir(&host_id));
        CommandVerifier::from_public_pem(&pem, &host_id).map_err(Error::PublicKey)?;
        let verifier = Verifier::from_public_pem(&pem)
            .map_err(|e| Error::Config(format!("--command-public-key: {e}")))?;
        let place = IdentityPlace {
            dir: self
                .identity_dir
                .unwrap_or_else(|| state_dir.join("identity")),
            key: self.agent_key,
            certificate: self.agent_certificate,
        };
        if let Some(token) = self.enrollment_token {
            let enrollment = enrollment(token, self.api_url, self.cacert.as_deref())?;
            place
                .enroll_if_new(&enrollment, &host_id)
                .map_err(|e| Error::Config(format!("--enrollment-token: {e}")))?;
        }
        let identity = place.load(
            &verifier,
            &self.command_public_key,
            &host_id,
            odp_plumbing::signed::unix_now(),
        )?;
        let config = Config {
            kafka: self
                .kafka
                .validate()
                .map_err(|e| Error::Config(e.to_string()))?,
            topics: self.topics,
            host_id,
            agent_id,
            command_public_key_pem: pem,
            window: Duration::from_secs(self.window_secs),
            heartbeat: Duration::from_secs(self.heartbeat_secs),
            continuous_segment: Duration::from_secs(
                odp_core::continuous::SEGMENT_SECS.unsigned_abs(),
            ),
            cost,
            cost_events: self.cost_events,
            metrics_listen: self.metrics_listen,
            exit_with_parent: self.exit_with_parent,
            plugins: PluginSettings {
                py_spy: self.py_spy,
                python_native: self.python_native,
                jcmd: self.jcmd,
                native_per_cpu: !self.native_per_thread,
                debuginfod: DebuginfodSettings {
                    urls: parse_urls(self.debuginfod_urls.as_deref().unwrap_or("")),
                    cache_dir: debuginfod_cache_dir(self.debuginfod_cache, Some(&state_dir)),
                },
            },
            spool: SpoolSettings {
                dir: spool_dir,
                max_bytes: self.spool_max_bytes,
            },
            max_message_bytes: self.max_message_bytes,
            lock_dir: self
                .lock_dir
                .unwrap_or_else(crate::host_lock::default_lock_dir),
            machine_id: match self.machine_id {
                Some(id) => id,
                None => machine_id()?,
            },
            peer_live: Duration::from_secs(self.peer_live_secs),
            labels,
            state_dir,
            identity: Arc::new(identity),
            verifier,
        };
        config.validate()?;
        Ok(config)
    }
}

/// What `--enrollment-token` enrolls with: the API's URL (required) and
/// the CA certificates it is checked with (`--cacert`, else the system's).
fn enrollment(token: Secret, api_url: Option<String>, cacert: Option<&Path>) -> Result<Enrollment> {
    let api_url = api_url
        .filter(|url| !url.trim().is_empty())
        .ok_or_else(|| {
            Error::Config("--enrollment-token needs --api-url (ODP_API_URL)".to_owned())
        })?;
    let ca_file = match cacert {
        Some(path) => Some(path.to_owned()),
        None if api_url.starts_with("https:") => crate::ca_bundle::system_ca_bundle(),
        None => None,
    };
    let ca_pem = ca_file
        .map(|path| {
            fs::read(&path).map_err(|e| Error::Config(format!("--cacert {}: {e}", path.display())))
        })
        .transpose()?;
    Ok(Enrollment {
        token,
        api_url,
        ca_pem,
    })
}

impl Config {
    /// Checks what a [`Config`] built by hand (tests, embedding) must hold.
    pub fn validate(&self) -> Result<()> {
        let bad = |msg: String| Err(Error::Config(msg));
        self.topics
            .validate()
            .map_err(|e| Error::Config(e.to_string()))?;
        for (flag, value) in [("--host-id", &self.host_id), ("--agent-id", &self.agent_id)] {
            if value.trim().is_empty() {
                return bad(format!("{flag} must not be empty"));
            }
        }
        if self.host_id.chars().any(char::is_whitespace) {
            return bad(format!(
                "--host-id {:?} must not contain whitespace",
                self.host_id
            ));
        }
        if self.window.is_zero() || self.window > MAX_WINDOW {
            return bad(format!(
                "--window-secs must be between 1 and {}",
                MAX_WINDOW.as_secs()
            ));
        }
        if self.heartbeat.is_zero() {
            return bad("--heartbeat-secs must be at least 1".to_owned());
        }
        if !MESSAGE_BYTES.contains(&self.max_message_bytes) {
            return bad(format!(
                "--max-message-bytes must be between {} and {}",
                MESSAGE_BYTES.start(),
                MESSAGE_BYTES.end()
            ));
        }
        if let Err(e) = self.cost.validate() {
            return bad(format!("cost control flags: {e}"));
        }
        CommandVerifier::from_public_pem(&self.command_public_key_pem, &self.host_id)
            .map_err(Error::PublicKey)?;
        crate::identity::check(
            &self.identity,
            &self.verifier,
            &self.host_id,
            odp_plumbing::signed::unix_now(),
        )
        .map_err(|e| Error::Config(format!("agent identity: {e}")))?;
        let items: Vec<String> = self
            .labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        parse_operator_labels(items.iter().map(String::as_str))
            .map_err(|e| Error::Config(format!("--label: {e}")))?;
        Ok(())
    }
}

/// `/var/lib/odp/<host id>` when `/var/lib/odp` is (or can be made)
/// writable, else `odp-state-$USER/<host id>` in the temporary directory.
/// Per host id, like the spool: agents of several (test) hosts on one
/// machine keep apart.
fn default_state_dir(host_id: &str) -> PathBuf {
    let host = host_id.replace('/', "_");
    let system = Path::new("/var/lib/odp");
    if fs::create_dir_all(system).is_ok() && writable(system) {
        return system.join(host);
    }
    let user = std::env::var("USER").unwrap_or_else(|_| "user".to_owned());
    std::env::temp_dir()
        .join(format!("odp-state-{user}"))
        .join(host)
}

fn writable(dir: &Path) -> bool {
    let probe = dir.join(format!(".probe-{}", std::process::id()));
    fs::File::create(&probe)
        .and_then(|_| fs::remove_file(&probe))
        .is_ok()
}

/// The machine's hostname, the default host id.
/// `/etc/machine-id` (systemd's, stable across reboots), else the
/// hostname.
fn machine_id() -> Result<String> {
    for path in ["/etc/machine-id", "/var/lib/dbus/machine-id"] {
        if let Ok(id) = fs::read_to_string(path) {
            let id = id.trim();
            if !id.is_empty() {
                return Ok(id.to_owned());
            }
        }
    }
    hostname()
}

fn hostname() -> Result<String> {
    for path in ["/proc/sys/kernel/hostname", "/etc/hostname"] {
        if let Ok(name) = fs::read_to_string(path) {
            let name = name.trim();
            if !name.is_empty() {
                return Ok(name.to_owned());
            }
        }
    }
    Err(Error::Config(
        "cannot determine the hostname; pass --host-id".to_owned(),
    ))
}

#[cfg(test)]
mod tests;
