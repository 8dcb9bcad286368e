//! The background stack of `odp-dev up/down/status/env`, kept in `<repo>/.odp/`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::database::{DatabaseKind, DatabaseServer};
use crate::error::{DevError, Result};
use crate::ports::port_accepts;
use crate::stack::{Stack, StackOptions};
use crate::state::StackRecord;
use crate::sys;
use crate::tools::repo_root;

/// `<repo>/.odp`, the quick start's state dir (gitignored).
pub fn default_state_dir() -> PathBuf {
    repo_root().join(".odp")
}

/// What [`up`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpOutcome {
    Started(StackRecord),
    AlreadyRunning(StackRecord),
}

impl UpOutcome {
    pub fn record(&self) -> &StackRecord {
        match self {
            UpOutcome::Started(record) | UpOutcome::AlreadyRunning(record) => record,
        }
    }
}

/// Starts the stack in `state_dir` in the background with a `database`
/// server, unless it already runs with that one (one running with the
/// other is stopped first). The database's data and the broker's records
/// (SQLite) survive `down`/`up`.
pub async fn up(state_dir: &Path, database: DatabaseKind) -> Result<UpOutcome> {
    if let Some(status) = status(state_dir)? {
        let same_database = status.record.database.kind() == database;
        if status.is_healthy() && same_database {
            return Ok(UpOutcome::AlreadyRunning(status.record));
        }
        if same_database {
            tracing::warn!("stopping the remains of a stack that is not healthy:\n{status}");
        } else {
            tracing::warn!(
                "stopping the stack running {}",
                status.record.database.kind().server_name()
            );
        }
        down(state_dir)?;
    }
    // A server left behind without a stack.json would fail to start again
    // on its data directory.
    for kind in [DatabaseKind::Postgres, DatabaseKind::Mysql] {
        if !state_dir.join(kind.dir_name()).is_dir() {
            continue;
        }
        let leftover = DatabaseServer::prepare(kind, state_dir, 0)?;
        if leftover.is_running() {
            tracing::warn!(
                "stopping a {} left running in {}",
                kind.server_name(),
                leftover.root().display()
            );
            leftover.stop()?;
        }
    }
    let options = StackOptions::persistent(state_dir).database_kind(database);
    let stack = Stack::start(options).await?;
    Ok(UpOutcome::Started(stack.detach()?))
}

/// Stops the background stack of `state_dir`; returns what was stopped.
pub fn down(state_dir: &Path) -> Result<Option<StackRecord>> {
    let path = StackRecord::path_in(state_dir);
    let Some(record) = StackRecord::load(&path)? else {
        return Ok(None);
    };
    let database_result = record.database.stop();
    let broker_result = stop_recorded_broker(record.broker_pid);
    database_result?;
    broker_result?;
    std::fs::remove_file(&path).map_err(|source| DevError::Io {
        context: format!("removing {}", path.display()),
        source,
    })?;
    Ok(Some(record))
}

/// The health of the background stack, or `None` when none was started.
pub fn status(state_dir: &Path) -> Result<Option<StackStatus>> {
    let Some(record) = StackRecord::load(&StackRecord::path_in(state_dir))? else {
        return Ok(None);
    };
    Ok(Some(StackStatus {
        broker_running: is_recorded_broker(record.broker_pid),
        kafka_listening: port_accepts(record.kafka_port),
        database_running: record.database.is_running(),
        database_listening: port_accepts(record.database.port()),
        record,
    }))
}

/// The record of the running background stack, or an error telling to start it.
pub fn running_record(state_dir: &Path) -> Result<StackRecord> {
    StackRecord::load(&StackRecord::path_in(state_dir))?.ok_or_else(|| {
        DevError::Invalid(format!(
            "no stack recorded in {}; start one with `odp-dev up`",
            state_dir.display()
        ))
    })
}

/// The background stack and whether its parts answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackStatus {
    pub record: StackRecord,
    pub broker_running: bool,
    pub kafka_listening: bool,
    pub database_running: bool,
    pub database_listening: bool,
}

impl StackStatus {
    pub fn is_healthy(&self) -> bool {
        self.broker_running
            && self.kafka_listening
            && self.database_running
            && self.database_listening
    }
}

impl fmt::Display for StackStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = |running: bool, listening: bool| match (running, listening) {
            (true, true) => "up",
            (true, false) => "running, not listening",
            (false, true) => "port taken by something else",
            (false, false) => "down",
        };
        let record = &self.record;
        writeln!(f, "state dir: {}", record.state_dir.display())?;
        writeln!(
            f,
            "kafka:     {} (tansu pid {}): {}",
            record.kafka_bootstrap,
            record.broker_pid,
            state(self.broker_running, self.kafka_listening)
        )?;
        writeln!(
            f,
            "{:<10} {} (pid {}): {}",
            format!("{}:", record.database.kind().as_str()),
            record.database_url,
            record
                .database_pid
                .map_or_else(|| "?".to_owned(), |pid| pid.to_string()),
            state(self.database_running, self.database_listening)
        )?;
        write!(
            f,
            "topics:    {}, {}, {}, {}",
            record.topics.commands,
            record.topics.stacks,
            record.topics.events,
            record.topics.dead_letter
        )
    }
}

/// True when `pid` is still the tansu we started (pids get reused).
fn is_recorded_broker(pid: u32) -> bool {
    sys::pid_running(pid)
        && sys::pid_command_line(pid).is_some_and(|command| command.contains("tansu"))
}

fn stop_recorded_broker(pid: u32) -> Result<()> {
    if !is_recorded_broker(pid) {
        return Ok(());
    }
    sys::send_signal(pid, sys::Signal::Term);
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if !sys::pid_running(pid) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    sys::send_signal(pid, sys::Signal::Kill);
    std::thread::sleep(Duration::from_millis(200));
    if sys::pid_running(pid) {
        return Err(DevError::Invalid(format!(
            "tansu (pid {pid}) survived SIGKILL"
        )));
    }
    Ok(())
}
