//! The stack's database server: a private Postgres cluster (the default)
//! or a private MariaDB for ODP's MySQL backend, behind one type so the
//! stack, `stack.json` and the fault tests treat both alike.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{DevError, Result};
use crate::mariadb::MariaDbServer;
use crate::postgres::PostgresCluster;
use crate::tools::postgres_bindir;

/// Which database the stack runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DatabaseKind {
    #[default]
    Postgres,
    /// MariaDB 10.11+ (MySQL's protocol; ODP's `mysql://` backend).
    Mysql,
}

impl DatabaseKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DatabaseKind::Postgres => "postgres",
            DatabaseKind::Mysql => "mysql",
        }
    }

    /// The server's directory in a stack's state dir.
    pub fn dir_name(self) -> &'static str {
        match self {
            DatabaseKind::Postgres => "postgres",
            DatabaseKind::Mysql => "mariadb",
        }
    }

    /// What the user reads: the server program that runs.
    pub fn server_name(self) -> &'static str {
        match self {
            DatabaseKind::Postgres => "Postgres",
            DatabaseKind::Mysql => "MariaDB",
        }
    }
}

impl FromStr for DatabaseKind {
    type Err = DevError;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "postgres" | "postgresql" => Ok(DatabaseKind::Postgres),
            "mysql" | "mariadb" => Ok(DatabaseKind::Mysql),
            other => Err(DevError::Invalid(format!(
                "unknown database {other:?}: use postgres or mysql"
            ))),
        }
    }
}

/// A private database server living in a directory of the stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum DatabaseServer {
    Postgres(PostgresCluster),
    Mariadb(MariaDbServer),
}

impl DatabaseServer {
    /// The server of `kind` in `state_dir` (`postgres/` or `mariadb/`),
    /// to listen on `port`.
    pub fn prepare(kind: DatabaseKind, state_dir: &Path, port: u16) -> Result<Self> {
        Ok(match kind {
            DatabaseKind::Postgres => DatabaseServer::Postgres(PostgresCluster::prepare(
                postgres_bindir()?,
                state_dir.join(kind.dir_name()),
                port,
            )?),
            DatabaseKind::Mysql => DatabaseServer::Mariadb(MariaDbServer::prepare(
                state_dir.join(kind.dir_name()),
                port,
            )?),
        })
    }

    pub fn kind(&self) -> DatabaseKind {
        match self {
            DatabaseServer::Postgres(_) => DatabaseKind::Postgres,
            DatabaseServer::Mariadb(_) => DatabaseKind::Mysql,
        }
    }

    pub fn root(&self) -> &Path {
        match self {
            DatabaseServer::Postgres(server) => &server.root,
            DatabaseServer::Mariadb(server) => &server.root,
        }
    }

    pub fn port(&self) -> u16 {
        match self {
            DatabaseServer::Postgres(server) => server.port,
            DatabaseServer::Mariadb(server) => server.port,
        }
    }

    /// Whether the server runs as the stack's service user (we are root),
    /// which must then be able to reach its directory.
    pub fn runs_as_service_user(&self) -> bool {
        match self {
            DatabaseServer::Postgres(server) => server.run_as.is_some(),
            DatabaseServer::Mariadb(server) => server.runs_as_service_user(),
        }
    }

    pub fn log_path(&self) -> PathBuf {
        match self {
            DatabaseServer::Postgres(server) => server.log_path(),
            DatabaseServer::Mariadb(server) => server.log_path(),
        }
    }

    /// A URL for `database` the store connects with (`postgres://` or
    /// `mysql://`).
    pub fn database_url(&self, database: &str) -> String {
        match self {
            DatabaseServer::Postgres(server) => server.database_url(database),
            DatabaseServer::Mariadb(server) => server.database_url(database),
        }
    }

    /// Creates the data directory unless it exists, starts the server and
    /// creates `database` unless it exists.
    pub async fn start_with_database(
        &self,
        database: &str,
        durable: bool,
        detached: bool,
    ) -> Result<()> {
        match self {
            DatabaseServer::Postgres(server) => {
                server.init_if_needed().await?;
                server.start(durable, detached).await?;
                server.create_database(database).await
            }
            DatabaseServer::Mariadb(server) => {
                server.init_if_needed().await?;
                server.start(durable).await?;
                server.create_database(database).await
            }
        }
    }

    /// Starts the server again after [`stop`](Self::stop), on the same
    /// data (the fault tests' database outage). MariaDB always runs
    /// detached from the caller.
    pub async fn start(&self, durable: bool, detached: bool) -> Result<()> {
        match self {
            DatabaseServer::Postgres(server) => server.start(durable, detached).await,
            DatabaseServer::Mariadb(server) => server.start(durable).await,
        }
    }

    /// Stops the server (a clean shutdown, then SIGKILL). Blocking, so it
    /// can run from `Drop`.
    pub fn stop(&self) -> Result<()> {
        match self {
            DatabaseServer::Postgres(server) => server.stop(),
            DatabaseServer::Mariadb(server) => server.stop(),
        }
    }

    pub fn pid(&self) -> Option<u32> {
        match self {
            DatabaseServer::Postgres(server) => server.postmaster_pid(),
            DatabaseServer::Mariadb(server) => server.pid(),
        }
    }

    pub fn is_running(&self) -> bool {
        self.pid().is_some_and(crate::sys::pid_running)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_their_names_and_aliases() {
        for kind in [DatabaseKind::Postgres, DatabaseKind::Mysql] {
            assert_eq!(kind.as_str().parse::<DatabaseKind>().unwrap(), kind);
        }
        assert_eq!(
            "mariadb".parse::<DatabaseKind>().unwrap(),
            DatabaseKind::Mysql
        );
        let error = "oracle".parse::<DatabaseKind>().unwrap_err().to_string();
        assert!(error.contains("use postgres or mysql"), "{error}");
    }
}
