//! Child processes of the stack: our service binaries, plus polling helpers.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::future::Future;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use odp_plumbing::Backoff;

use crate::error::{DevError, IoContext, Result};
use crate::sys;

/// Pauses between two checks of [`wait_for`]: 50 ms, doubled up to 500 ms.
const POLL_BACKOFF: Backoff = Backoff::new(Duration::from_millis(50), Duration::from_millis(500));

/// How long a stopping process gets between SIGTERM and SIGKILL by default.
pub const DEFAULT_STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// Describes a process to spawn; see [`ServiceProcess::builder`].
#[derive(Debug, Clone)]
pub struct ServiceBuilder {
    name: String,
    program: PathBuf,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    removed_envs: Vec<OsString>,
    log_dir: PathBuf,
    current_dir: Option<PathBuf>,
    stop_timeout: Duration,
    own_process_group: bool,
}

impl ServiceBuilder {
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.envs.push((key.into(), value.into()));
        self
    }

    pub fn envs<I, K, V>(mut self, envs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<OsString>,
        V: Into<OsString>,
    {
        self.envs.extend(
            envs.into_iter()
                .map(|(key, value)| (key.into(), value.into())),
        );
        self
    }

    pub fn env_remove(mut self, key: impl Into<OsString>) -> Self {
        self.removed_envs.push(key.into());
        self
    }

    /// Directory of the log file `<name>.log` (stdout and stderr together).
    pub fn log_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.log_dir = dir.into();
        self
    }

    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.current_dir = Some(dir.into());
        self
    }

    pub fn stop_timeout(mut self, timeout: Duration) -> Self {
        self.stop_timeout = timeout;
        self
    }

    /// Puts the process in its own process group, so a Ctrl-C on the
    /// terminal of whoever started it does not reach it. Use it for
    /// processes meant to outlive their starter (see [`ServiceProcess::detach`]).
    pub fn own_process_group(mut self, own: bool) -> Self {
        self.own_process_group = own;
        self
    }

    pub fn spawn(self) -> Result<ServiceProcess> {
        std::fs::create_dir_all(&self.log_dir)
            .io_context(|| format!("creating log directory {}", self.log_dir.display()))?;
        let log_path = self.log_dir.join(format!("{}.log", self.name));
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .io_context(|| format!("opening log file {}", log_path.display()))?;
        let log_for_stderr = log
            .try_clone()
            .io_context(|| format!("duplicating log file {}", log_path.display()))?;

        let mut command = Command::new(&self.program);
        for key in &self.removed_envs {
            command.env_remove(key);
        }
        command
            .args(&self.args)
            .envs(self.envs.iter().map(|(key, value)| (key, value)))
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_for_stderr);
        if let Some(dir) = &self.current_dir {
            command.current_dir(dir);
        }
        if self.own_process_group {
            command.process_group(0);
        }
        let child = command
            .spawn()
            .io_context(|| format!("spawning {} ({})", self.name, self.program.display()))?;
        tracing::debug!(name = %self.name, pid = child.id(), log = %log_path.display(), "spawned");
        Ok(ServiceProcess {
            name: self.name.clone(),
            child,
            log_path,
            stop_timeout: self.stop_timeout,
            exit_status: None,
            detached: false,
            builder: self,
        })
    }
}

/// A running child process whose output goes to a log file.
///
/// Dropping it stops the process (SIGTERM, then SIGKILL after the stop
/// timeout) unless it was [`detach`](Self::detach)ed.
#[derive(Debug)]
pub struct ServiceProcess {
    name: String,
    child: Child,
    log_path: PathBuf,
    stop_timeout: Duration,
    exit_status: Option<ExitStatus>,
    detached: bool,
    /// How it was started, to start it again.
    builder: ServiceBuilder,
}

impl ServiceProcess {
    /// Starts describing a process called `name` (used for its log file and in errors).
    pub fn builder(name: impl Into<String>, program: impl Into<PathBuf>) -> ServiceBuilder {
        ServiceBuilder {
            name: name.into(),
            program: program.into(),
            args: Vec::new(),
            envs: Vec::new(),
            removed_envs: Vec::new(),
            log_dir: std::env::temp_dir(),
            current_dir: None,
            stop_timeout: DEFAULT_STOP_TIMEOUT,
            own_process_group: false,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The whole log so far (empty if unreadable).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// The last `lines` lines of the log.
    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.log_path, lines)
    }

    /// `Some(status)` once the process has exited.
    pub fn try_status(&mut self) -> Result<Option<ExitStatus>> {
        if self.exit_status.is_none() {
            self.exit_status = self
                .child
                .try_wait()
                .io_context(|| format!("checking whether {} is running", self.name))?;
        }
        Ok(self.exit_status)
    }

    /// Fails with the log tail when the process has already exited.
    pub fn ensure_running(&mut self) -> Result<()> {
        match self.try_status()? {
            None => Ok(()),
            Some(status) => Err(DevError::ExitedEarly {
                what: self.name.clone(),
                status: status.to_string(),
                log_tail: self.log_tail(40),
            }),
        }
    }

    /// SIGTERM, wait up to the stop timeout, then SIGKILL.
    pub fn stop(&mut self) -> Result<ExitStatus> {
        if let Some(status) = self.try_status()? {
            return Ok(status);
        }
        sys::send_signal(self.pid(), sys::Signal::Term);
        let deadline = Instant::now() + self.stop_timeout;
        while Instant::now() < deadline {
            if let Some(status) = self.try_status()? {
                return Ok(status);
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        tracing::warn!(name = %self.name, "did not stop after SIGTERM; sending SIGKILL");
        self.child
            .kill()
            .io_context(|| format!("killing {}", self.name))?;
        let status = self
            .child
            .wait()
            .io_context(|| format!("waiting for {} to exit", self.name))?;
        self.exit_status = Some(status);
        Ok(status)
    }

    /// SIGKILL at once, as a crash would: no chance to flush or commit.
    pub fn kill(&mut self) -> Result<ExitStatus> {
        if let Some(status) = self.try_status()? {
            return Ok(status);
        }
        self.child
            .kill()
            .io_context(|| format!("killing {}", self.name))?;
        let status = self
            .child
            .wait()
            .io_context(|| format!("waiting for {} to exit", self.name))?;
        self.exit_status = Some(status);
        Ok(status)
    }

    /// Starts the process again as it was first started, once it has
    /// exited (after [`stop`](Self::stop) or [`kill`](Self::kill), or a
    /// crash); its log goes on in the same file.
    pub fn respawn(&mut self) -> Result<()> {
        if self.try_status()?.is_none() {
            return Err(DevError::Invalid(format!(
                "{} still runs; stop it before starting it again",
                self.name
            )));
        }
        let next = self.builder.clone().spawn()?;
        // The exited child has nothing left to stop.
        std::mem::replace(self, next).detached = true;
        Ok(())
    }

    /// Leaves the process running when this handle is dropped; returns its pid.
    pub fn detach(mut self) -> u32 {
        self.detached = true;
        self.pid()
    }
}

impl Drop for ServiceProcess {
    fn drop(&mut self) {
        if self.detached {
            return;
        }
        if let Err(error) = self.stop() {
            tracing::warn!(name = %self.name, %error, "failed to stop process");
        }
    }
}

/// The last `lines` lines of a text file (empty if unreadable).
pub fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Polls `check` until it returns true, backing off from 50 ms to 500 ms.
pub async fn wait_for<F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    wait_for_some(what, timeout, || {
        let ready = check();
        async move { ready.await.then_some(()) }
    })
    .await
}

/// Polls `check` until it returns `Some(value)`, and returns the value.
pub async fn wait_for_some<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    let mut pauses = POLL_BACKOFF.waits();
    loop {
        if let Some(value) = check().await {
            return Ok(value);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(DevError::Timeout {
                what: what.to_owned(),
                timeout,
                detail: String::new(),
            });
        }
        tokio::time::sleep(pauses.failed()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn wait_for_returns_once_the_check_passes() {
        let mut calls = 0;
        wait_for("third call", Duration::from_secs(5), || {
            calls += 1;
            let done = calls >= 3;
            async move { done }
        })
        .await
        .unwrap();
        assert_eq!(calls, 3);
    }

    #[tokio::test]
    async fn wait_for_times_out() {
        let error = wait_for("never", Duration::from_millis(120), || async { false })
            .await
            .unwrap_err();
        assert!(matches!(error, DevError::Timeout { .. }), "{error}");
    }

    #[test]
    fn service_process_logs_and_stops_on_sigterm() {
        let dir = tempfile::tempdir().unwrap();
        let mut process = ServiceProcess::builder("sleeper", "/bin/sh")
            .args(["-c", "echo started $GREETING; exec sleep 30"])
            .env("GREETING", "hello")
            .log_dir(dir.path())
            .spawn()
            .unwrap();
        // Bounded by attempts, not time, so a loaded machine cannot fail it.
        for _ in 0..3000 {
            if process.log().contains("started hello") {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(process.log().contains("started hello"), "no log line");
        process.ensure_running().unwrap();
        let status = process.stop().unwrap();
        // Ended by the polite SIGTERM, not the SIGKILL that follows a
        // missed deadline.
        use std::os::unix::process::ExitStatusExt as _;
        assert_eq!(status.signal(), Some(libc::SIGTERM), "{status}");
        assert!(process.ensure_running().is_err());
    }

    #[test]
    fn log_tail_keeps_the_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.log");
        std::fs::write(&path, "a\nb\nc\n").unwrap();
        assert_eq!(log_tail(&path, 2), "b\nc");
        assert_eq!(log_tail(&path, 10), "a\nb\nc");
        assert_eq!(log_tail(&dir.path().join("missing"), 3), "");
    }
}
