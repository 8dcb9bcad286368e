//! A private Postgres cluster: initdb, pg_ctl start/stop, database creation.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sqlx::Connection;

use crate::error::{DevError, IoContext, Result};
use crate::process::{log_tail, wait_for_some};
use crate::sys;

/// The system user postgres runs as when we are root (postgres refuses root).
pub const SERVICE_USER: &str = "odp";

/// A user and group to run the postgres programs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunAs {
    pub uid: u32,
    pub gid: u32,
}

/// Describes a cluster living in `root` (`data/`, its unix socket and `postgres.log`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostgresCluster {
    pub bindir: PathBuf,
    pub root: PathBuf,
    pub port: u16,
    pub run_as: Option<RunAs>,
}

impl PostgresCluster {
    /// Prepares `root` for a cluster listening on `port`: creates it and, when
    /// we are root, the service user owning it.
    pub fn prepare(bindir: PathBuf, root: PathBuf, port: u16) -> Result<Self> {
        let run_as = create_service_dir(&root)?;
        Ok(Self {
            bindir,
            root,
            port,
            run_as,
        })
    }

    pub fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }

    pub fn log_path(&self) -> PathBuf {
        self.root.join("postgres.log")
    }

    /// A `postgres://` URL for `database` over TCP (trust auth, user `postgres`).
    pub fn database_url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// Runs initdb unless the data directory already holds a cluster.
    pub async fn init_if_needed(&self) -> Result<()> {
        if self.data_dir().join("PG_VERSION").is_file() {
            return Ok(());
        }
        let mut initdb = self.command("initdb");
        initdb
            .arg("-D")
            .arg(self.data_dir())
            .args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C"])
            // Only initdb's own flushes; the server's fsync is a start option.
            .arg("--no-sync");
        run_checked(initdb, "initdb").await
    }

    /// Starts the server and waits until it accepts connections.
    ///
    /// `fsync: false` trades crash safety for speed (tests). `detach` puts the
    /// postmaster in its own process group so it outlives the caller's
    /// terminal session.
    pub async fn start(&self, fsync: bool, detach: bool) -> Result<()> {
        let mut server_options = format!(
            "-p {} -k '{}' -c listen_addresses=127.0.0.1",
            self.port,
            self.root.display()
        );
        if !fsync {
            server_options
                .push_str(" -c fsync=off -c synchronous_commit=off -c full_page_writes=off");
        }
        let mut pg_ctl = self.command("pg_ctl");
        pg_ctl
            .arg("start")
            .arg("-D")
            .arg(self.data_dir())
            .arg("-l")
            .arg(self.log_path())
            .args(["-w", "-t", "60", "-o", &server_options]);
        if detach {
            pg_ctl.process_group(0);
        }
        run_checked(pg_ctl, "pg_ctl start")
            .await
            .map_err(|error| self.with_log_tail(error))?;

        let url = self.database_url("postgres");
        wait_for_some(
            "postgres to accept connections",
            Duration::from_secs(30),
            || {
                let url = url.clone();
                async move { sqlx::PgConnection::connect(&url).await.ok() }
            },
        )
        .await?
        .close()
        .await
        .ok();
        Ok(())
    }

    /// Creates `database` unless it exists.
    pub async fn create_database(&self, database: &str) -> Result<()> {
        let url = self.database_url("postgres");
        let db_error = |context: &str| {
            let context = context.to_owned();
            move |source| DevError::Database { context, source }
        };
        let mut connection = sqlx::PgConnection::connect(&url)
            .await
            .map_err(db_error("connecting to the postgres database"))?;
        let exists: Option<i32> =
            sqlx::query_scalar("select 1 from pg_database where datname = $1")
                .bind(database)
                .fetch_optional(&mut connection)
                .await
                .map_err(db_error("looking up the database"))?;
        if exists.is_none() {
            let quoted = database.replace('"', "\"\"");
            sqlx::query(&format!("create database \"{quoted}\""))
                .execute(&mut connection)
                .await
                .map_err(db_error("creating the database"))?;
        }
        connection.close().await.ok();
        Ok(())
    }

    /// Stops the server (fast mode: disconnects clients, aborts transactions).
    /// Blocking, so it can run from `Drop`.
    pub fn stop(&self) -> Result<()> {
        let Some(pid) = self.postmaster_pid().filter(|pid| sys::pid_running(*pid)) else {
            return Ok(());
        };
        let mut pg_ctl = self.command("pg_ctl");
        pg_ctl
            .arg("stop")
            .arg("-D")
            .arg(self.data_dir())
            .args(["-m", "fast", "-w", "-t", "30"]);
        let output = pg_ctl
            .output()
            .io_context(|| "running pg_ctl stop".to_owned())?;
        if output.status.success() {
            return Ok(());
        }
        // Last resort so a broken cluster never lingers.
        sys::send_signal(pid, sys::Signal::Kill);
        Err(command_failed("pg_ctl stop", &output))
    }

    /// The postmaster's pid from `postmaster.pid`, if the server is (or was) up.
    pub fn postmaster_pid(&self) -> Option<u32> {
        let text = std::fs::read_to_string(self.data_dir().join("postmaster.pid")).ok()?;
        text.lines().next()?.trim().parse().ok()
    }

    /// True when the postmaster recorded in the data directory is running.
    pub fn is_running(&self) -> bool {
        self.postmaster_pid().is_some_and(sys::pid_running)
    }

    /// A command for one of the cluster's programs, run as the service user
    /// when we are root, from the cluster directory (the service user may not
    /// be allowed into our working directory).
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(self.bindir.join(program));
        command.current_dir(&self.root);
        if let Some(user) = self.run_as {
            command.uid(user.uid).gid(user.gid);
        }
        command
    }

    fn with_log_tail(&self, error: DevError) -> DevError {
        match error {
            DevError::CommandFailed {
                command,
                status,
                output,
            } => DevError::CommandFailed {
                command,
                status,
                output: format!(
                    "{output}\n--- {} ---\n{}",
                    self.log_path().display(),
                    log_tail(&self.log_path(), 30)
                ),
            },
            other => other,
        }
    }
}

/// Creates `root` for a database server, owned by the service user when we
/// are root (neither postgres nor mariadbd runs as root), and returns that
/// user.
pub(crate) fn create_service_dir(root: &Path) -> Result<Option<RunAs>> {
    let run_as = if sys::effective_uid() == 0 {
        Some(ensure_service_user()?)
    } else {
        None
    };
    std::fs::create_dir_all(root).io_context(|| format!("creating {}", root.display()))?;
    if let Some(user) = run_as {
        std::os::unix::fs::chown(root, Some(user.uid), Some(user.gid))
            .io_context(|| format!("giving {} to user {SERVICE_USER}", root.display()))?;
    }
    Ok(run_as)
}

/// Creates the system user [`SERVICE_USER`] if missing, and returns its ids.
pub fn ensure_service_user() -> Result<RunAs> {
    // Tests of one binary start stacks in parallel; useradd locks /etc/passwd
    // and fails instead of waiting, so serialise here and retry below.
    static USERADD: Mutex<()> = Mutex::new(());
    let _guard = USERADD
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());

    if let Some(ids) = lookup_user(SERVICE_USER)? {
        return Ok(ids);
    }
    let mut last_output = None;
    for _attempt in 0..10 {
        let output = Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                SERVICE_USER,
            ])
            .output()
            .io_context(|| "running useradd (is the `passwd` package installed?)".to_owned())?;
        // Another process may have created it meanwhile; either way, look again.
        if let Some(ids) = lookup_user(SERVICE_USER)? {
            return Ok(ids);
        }
        last_output = Some(output);
        std::thread::sleep(Duration::from_millis(200));
    }
    Err(match last_output {
        Some(output) => command_failed("useradd --system --no-create-home odp", &output),
        None => DevError::Invalid(format!("could not create user {SERVICE_USER}")),
    })
}

/// The uid and gid of `name` from `/etc/passwd`, if it exists.
fn lookup_user(name: &str) -> Result<Option<RunAs>> {
    let passwd =
        std::fs::read_to_string("/etc/passwd").io_context(|| "reading /etc/passwd".to_owned())?;
    Ok(parse_passwd_entry(&passwd, name))
}

fn parse_passwd_entry(passwd: &str, name: &str) -> Option<RunAs> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        if fields.next()? != name {
            return None;
        }
        let _password = fields.next()?;
        let uid = fields.next()?.parse().ok()?;
        let gid = fields.next()?.parse().ok()?;
        Some(RunAs { uid, gid })
    })
}

async fn run_checked(command: Command, what: &str) -> Result<()> {
    let output = tokio::process::Command::from(command)
        .output()
        .await
        .io_context(|| format!("running {what}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(command_failed(what, &output))
    }
}

pub(crate) fn command_failed(what: &str, output: &Output) -> DevError {
    let mut text = String::from_utf8_lossy(&output.stderr).into_owned();
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !stdout.trim().is_empty() {
        text.push_str(&stdout);
    }
    DevError::CommandFailed {
        command: what.to_owned(),
        status: output.status.to_string(),
        output: text.trim_end().to_owned(),
    }
}

/// True when `path` is inside a directory the service user can traverse;
/// used to give a clear error instead of initdb's "permission denied".
pub(crate) fn check_traversable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for ancestor in path.ancestors().skip(1) {
        let Ok(meta) = ancestor.metadata() else {
            continue;
        };
        if meta.permissions().mode() & 0o001 == 0 {
            return Err(DevError::Invalid(format!(
                "{} is not searchable by other users, so postgres (running as user {SERVICE_USER}) \
                 cannot reach {}; choose a state directory elsewhere or `chmod o+x` it",
                ancestor.display(),
                path.display()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_passwd_entries() {
        let passwd =
            "root:x:0:0:root:/root:/bin/bash\nodp:x:998:997::/home/odp:/usr/sbin/nologin\n";
        assert_eq!(
            parse_passwd_entry(passwd, "odp"),
            Some(RunAs { uid: 998, gid: 997 })
        );
        assert_eq!(
            parse_passwd_entry(passwd, "root"),
            Some(RunAs { uid: 0, gid: 0 })
        );
        assert_eq!(parse_passwd_entry(passwd, "od"), None);
    }

    #[test]
    fn url_uses_tcp_and_trust_user() {
        let cluster = PostgresCluster {
            bindir: PathBuf::from("/bin"),
            root: PathBuf::from("/tmp/x"),
            port: 5544,
            run_as: None,
        };
        assert_eq!(
            cluster.database_url("odp"),
            "postgres://postgres@127.0.0.1:5544/odp"
        );
        assert_eq!(cluster.data_dir(), PathBuf::from("/tmp/x/data"));
    }
}
