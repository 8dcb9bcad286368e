//! The ODP host agent (`odp-profiler-service`).
//!
//! One agent runs per host. It reads only its own host's partition of
//! `odp.commands`, verifies every command (Ed25519 signature, target host,
//! expiry, replay) and for a `start` samples the target processes with a
//! plugin, cutting the samples into fixed windows that are published as
//! compact snapshots on `odp.stacks`; lifecycle events and heartbeats go to
//! `odp.events`.
//!
//! Layout:
//! - [`config`]: flags and the validated [`Config`];
//! - [`identity`]: the agent's key and the certificate the api-server
//!   issued for it, which sign everything it publishes, and its
//!   enrollment with a one-time token when it has none;
//! - [`commands`]: intake from Kafka, verification and the decision taken;
//! - [`replay`]: the ids of the commands taken, kept in the state directory
//!   so a restarted agent refuses them as replays;
//! - [`agent`]: the main loop tying commands, profiles and heartbeats
//!   ([`heartbeat`]);
//! - [`continuous`]: which segments of the continuous profiles assigned
//!   to the host run now;
//! - [`host_lock`] and [`peers`]: one agent per host id, on this machine
//!   by a lock file, across machines by the host's heartbeats;
//! - [`profile_task`] and [`sampling_thread`]: one profile, its async task
//!   that publishes and the blocking thread that samples;
//! - [`cost`]: cost control per profile: FSP thread pruning, FDA
//!   frequency adjustment, duty cycling and the overhead budget;
//! - [`plugin`]: the [`plugin::Plugin`] trait, which runtime a target
//!   runs ([`plugin::identify`]) and the
//!   `native` (perf_event), `python` (py-spy) and `jvm` (JFR) plugins;
//! - [`window`], [`targets`], [`publish`]: window bookkeeping, `/proc`
//!   discovery and the Kafka producer;
//! - [`services`]: what heartbeats say of the host: its labels, and which
//!   defined services (kept in the state directory) have live processes;
//! - [`triggers`] and [`trigger_watch`]: the triggers assigned to the
//!   host, evaluated from `/proc` every second and reported when their
//!   condition held;
//! - [`spool`]: the bounded on-disk FIFO of snapshots the broker did not
//!   take, resent in order once it is back.

pub mod agent;
mod ca_bundle;
pub mod commands;
pub mod config;
pub mod continuous;
pub mod cost;
pub mod coverage;
pub mod error;
pub mod heartbeat;
pub mod host_lock;
pub mod identity;
pub mod metrics;
pub mod peers;
pub mod plugin;
pub mod profile_task;
pub mod publish;
pub mod replay;
pub mod sampling_thread;
pub mod services;
pub mod spool;
pub mod targets;
pub mod trigger_watch;
pub mod triggers;
pub mod window;

use odp_plumbing::ShutdownSignals;
use tracing::info;

pub use config::{Args, Config};
pub use error::{Error, Result};

use crate::plugin::Plugins;
use crate::targets::ProcFs;

/// Runs the agent with the standard plugins until SIGTERM or SIGINT (or an
/// `undeploy` command), then stops running profiles, flushes them and
/// returns.
pub async fn run(config: Config) -> Result<()> {
    // Installed now, so a signal during start-up is kept, not fatal.
    let signals = ShutdownSignals::install().map_err(Error::Signal)?;
    let exit_with_parent = config.exit_with_parent;
    let shutdown = async move {
        tokio::select! {
            signal = signals.recv() => info!(signal = signal.name(), "signal received"),
            _ = parent_exited(), if exit_with_parent => info!("parent exited"),
        }
    };
    let plugins = Plugins::standard(ProcFs::default(), config.plugins.clone());
    agent::run_until(config, plugins, shutdown).await
}

/// Resolves once the process that started the agent is gone (the agent was
/// re-parented), for agents a local deployer started: they end with it.
async fn parent_exited() {
    let parent = std::os::unix::process::parent_id();
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(500));
    while std::os::unix::process::parent_id() == parent {
        tick.tick().await;
    }
}
