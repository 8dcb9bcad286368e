//! A private MariaDB server for ODP's MySQL backend: `mariadb-install-db`,
//! then `mariadbd` on 127.0.0.1 and a unix socket in its own directory,
//! like the private Postgres cluster beside it.
//!
//! It runs without grant tables (`--skip-grant-tables`): any user may
//! connect, as Postgres' `trust` does for the private cluster. It listens
//! on loopback only and lives in the caller's state directory.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sqlx::Connection;

use crate::error::{DevError, IoContext, Result};
use crate::postgres::{command_failed, create_service_dir, RunAs};
use crate::process::{log_tail, wait_for_some};
use crate::state_dir::{prepare_state_dir, StateDir};
use crate::sys;

/// A server living in `root` (`data/`, `mariadb.sock`, `mariadb.pid`,
/// `mariadb.log`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MariaDbServer {
    pub root: PathBuf,
    pub port: u16,
    run_as: Option<RunAs>,
}

impl MariaDbServer {
    /// Prepares `root` for a server on `port`; when we are root the server
    /// runs as the stack's service user (mariadbd refuses to run as root
    /// unless told to).
    pub fn prepare(root: PathBuf, port: u16) -> Result<Self> {
        let run_as = create_service_dir(&root)?;
        Ok(MariaDbServer { root, port, run_as })
    }

    pub fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }

    pub fn runs_as_service_user(&self) -> bool {
        self.run_as.is_some()
    }

    pub fn log_path(&self) -> PathBuf {
        self.root.join("mariadb.log")
    }

    /// The server's own temporary directory: servers sharing `/tmp` name
    /// their temporary tables alike, and installs running side by side
    /// fail on each other's.
    fn tmp_dir(&self) -> Result<PathBuf> {
        let dir = self.root.join("tmp");
        create_service_dir(&dir)?;
        Ok(dir)
    }

    fn pid_path(&self) -> PathBuf {
        self.root.join("mariadb.pid")
    }

    /// A `mysql://` URL for `database` over TCP.
    pub fn database_url(&self, database: &str) -> String {
        format!("mysql://root@127.0.0.1:{}/{database}", self.port)
    }

    /// Creates the system tables unless the data directory has them.
    pub async fn init_if_needed(&self) -> Result<()> {
        if self.data_dir().join("mysql").is_dir() {
            return Ok(());
        }
        let mut install = Command::new(mariadb_program("mariadb-install-db")?);
        install.current_dir(&self.root);
        install
            .arg(format!("--datadir={}", self.data_dir().display()))
            .arg(format!("--tmpdir={}", self.tmp_dir()?.display()))
            .args(["--skip-test-db", "--auth-root-authentication-method=normal"])
            .arg(format!("--user={}", self.user_name()));
        let output = tokio::process::Command::from(install)
            .output()
            .await
            .io_context(|| "running mariadb-install-db".to_owned())?;
        if !output.status.success() {
            return Err(command_failed("mariadb-install-db", &output));
        }
        Ok(())
    }

    /// Starts `mariadbd` detached (it outlives the caller's terminal
    /// session) and waits until it accepts connections.
    ///
    /// `durable: false` skips flushing the log at each commit: fast, but a
    /// crash of the machine may lose the last second. For tests.
    pub async fn start(&self, durable: bool) -> Result<()> {
        let flush = if durable { "1" } else { "2" };
        let mut server = Command::new(mariadb_program("mariadbd")?);
        server
            .arg("--no-defaults")
            .arg(format!("--datadir={}", self.data_dir().display()))
            .arg(format!("--tmpdir={}", self.tmp_dir()?.display()))
            .arg(format!(
                "--socket={}",
                self.root.join("mariadb.sock").display()
            ))
            .arg(format!("--pid-file={}", self.pid_path().display()))
            .arg(format!("--log-error={}", self.log_path().display()))
            .arg(format!("--port={}", self.port))
            .arg(format!("--user={}", self.user_name()))
            .args(["--bind-address=127.0.0.1", "--skip-grant-tables"])
            // Case-sensitive like Postgres' text, but not a `_bin` collation:
            // sqlx reads those columns as bytes, not strings.
            .args([
                "--character-set-server=utf8mb4",
                "--collation-server=utf8mb4_uca1400_as_cs",
            ])
            .arg(format!("--innodb-flush-log-at-trx-commit={flush}"))
            .args(["--max-connections=500", "--local-infile=1"])
            // A profile's block or an hour's rollup is one value; the
            // default (16 MB) refuses the larger ones.
            .arg("--max-allowed-packet=1G");
        // Through `sh … &`, as pg_ctl does: the server is not our child, so
        // it leaves no zombie behind and outlives this process when asked.
        let mut daemon = Command::new("sh");
        daemon
            .arg("-c")
            .arg(r#""$@" >/dev/null 2>&1 &"#)
            .arg("sh")
            .arg(server.get_program())
            .args(server.get_args())
            .current_dir(&self.root);
        let status = daemon
            .status()
            .io_context(|| "starting mariadbd".to_owned())?;
        if !status.success() {
            return Err(DevError::ExitedEarly {
                what: "sh starting mariadbd".to_owned(),
                status: status.to_string(),
                log_tail: String::new(),
            });
        }
        let url = self.database_url("mysql");
        let connected = wait_for_some(
            "mariadb to accept connections",
            Duration::from_secs(60),
            || {
                let url = url.clone();
                async move { sqlx::MySqlConnection::connect(&url).await.ok() }
            },
        )
        .await;
        match connected {
            Ok(connection) => {
                connection.close().await.ok();
                Ok(())
            }
            Err(error) => Err(DevError::CommandFailed {
                command: "mariadbd".to_owned(),
                status: error.to_string(),
                output: log_tail(&self.log_path(), 30),
            }),
        }
    }

    /// Creates `database` unless it exists.
    pub async fn create_database(&self, database: &str) -> Result<()> {
        let db_error = |context: &str| {
            let context = context.to_owned();
            move |source| DevError::Database { context, source }
        };
        let mut connection = sqlx::MySqlConnection::connect(&self.database_url("mysql"))
            .await
            .map_err(db_error("connecting to mariadb"))?;
        let quoted = database.replace('`', "``");
        sqlx::query(&format!(
            "create database if not exists `{quoted}` \
             character set utf8mb4 collate utf8mb4_uca1400_as_cs"
        ))
        .execute(&mut connection)
        .await
        .map_err(db_error("creating the database"))?;
        connection.close().await.ok();
        Ok(())
    }

    /// The server's pid, if it is (or was) up.
    pub fn pid(&self) -> Option<u32> {
        let text = std::fs::read_to_string(self.pid_path()).ok()?;
        text.trim().parse().ok()
    }

    /// Stops the server: SIGTERM (a clean shutdown), SIGKILL after 30 s.
    /// Blocking, so it can run from `Drop`.
    pub fn stop(&self) -> Result<()> {
        let Some(pid) = self.pid().filter(|pid| sys::pid_running(*pid)) else {
            return Ok(());
        };
        sys::send_signal(pid, sys::Signal::Term);
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while sys::pid_running(pid) {
            if std::time::Instant::now() > deadline {
                sys::send_signal(pid, sys::Signal::Kill);
                return Err(DevError::Timeout {
                    what: "mariadbd to shut down".to_owned(),
                    timeout: Duration::from_secs(30),
                    detail: String::new(),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    fn user_name(&self) -> String {
        match self.run_as {
            Some(_) => crate::postgres::SERVICE_USER.to_owned(),
            None => std::env::var("USER").unwrap_or_else(|_| "root".to_owned()),
        }
    }
}

/// MariaDB's programs: `$ODP_MARIADB_BINDIR`, then `$PATH`, then `/usr/sbin`
/// (where Debian puts `mariadbd`).
fn mariadb_program(name: &str) -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("ODP_MARIADB_BINDIR") {
        return Ok(PathBuf::from(dir).join(name));
    }
    crate::tools::find_on_path(name)
        .or_else(|| Some(Path::new("/usr/sbin").join(name)).filter(|p| p.is_file()))
        .ok_or_else(|| DevError::ToolMissing {
            tool: format!("{name} (MariaDB)"),
            hint: "install Debian's `mariadb-server` (scripts/bootstrap.sh does), or set \
                   ODP_MARIADB_BINDIR"
                .to_owned(),
        })
}

/// A MariaDB server in a temporary directory for one test, with database
/// `odp` created; stopped and removed when dropped.
pub struct EphemeralMariaDb {
    server: MariaDbServer,
    _dir: tempfile::TempDir,
}

impl EphemeralMariaDb {
    pub async fn start() -> Result<Self> {
        let (path, dir) = prepare_state_dir(&StateDir::Temporary)?;
        let dir = dir.expect("a temporary state dir");
        let port = crate::ports::pick_free_port()?;
        let server = MariaDbServer::prepare(path.join("mariadb"), port)?;
        server.init_if_needed().await?;
        let started = server.start(false).await;
        let ephemeral = EphemeralMariaDb { server, _dir: dir };
        started?;
        ephemeral.server.create_database("odp").await?;
        Ok(ephemeral)
    }

    /// `mysql://root@127.0.0.1:PORT/odp`.
    pub fn database_url(&self) -> String {
        self.server.database_url("odp")
    }

    pub fn server(&self) -> &MariaDbServer {
        &self.server
    }
}

impl Drop for EphemeralMariaDb {
    fn drop(&mut self) {
        if let Err(error) = self.server.stop() {
            eprintln!("stopping the test's mariadb: {error}");
        }
    }
}
