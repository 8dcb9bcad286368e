//! `stack.json`: what a detached stack is made of, so later commands can find it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::database::DatabaseServer;
use crate::error::{DevError, IoContext, Result};
use odp_plumbing::Topics;

/// Bumped when the layout changes incompatibly.
pub const STACK_RECORD_VERSION: u32 = 2;

/// A running stack as recorded in `<state dir>/stack.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackRecord {
    pub version: u32,
    pub state_dir: PathBuf,
    pub kafka_port: u16,
    pub kafka_bootstrap: String,
    pub broker_pid: u32,
    pub database: DatabaseServer,
    pub database_pid: Option<u32>,
    pub database_url: String,
    pub topics: Topics,
    pub started_at_unix: u64,
}

impl StackRecord {
    pub const FILE_NAME: &'static str = "stack.json";

    pub fn path_in(state_dir: &Path) -> PathBuf {
        state_dir.join(Self::FILE_NAME)
    }

    /// Writes the record atomically (temp file + rename), so a crash never
    /// leaves half a file for `down` to choke on.
    pub fn save(&self, path: &Path) -> Result<()> {
        let json = serde_json::to_string_pretty(self).map_err(|error| DevError::State {
            path: path.display().to_string(),
            message: error.to_string(),
        })?;
        let temporary = path.with_extension("json.tmp");
        std::fs::write(&temporary, json + "\n")
            .io_context(|| format!("writing {}", temporary.display()))?;
        std::fs::rename(&temporary, path)
            .io_context(|| format!("renaming {} into place", temporary.display()))
    }

    /// The record at `path`, or `None` when there is no file.
    pub fn load(path: &Path) -> Result<Option<Self>> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(DevError::Io {
                    context: format!("reading {}", path.display()),
                    source,
                })
            }
        };
        let record: Self = serde_json::from_str(&text)
            .map(upgrade_from_version_1)
            .and_then(serde_json::from_value)
            .map_err(|error| DevError::State {
                path: path.display().to_string(),
                message: format!("{error} (delete it if no stack is running)"),
            })?;
        if record.version != STACK_RECORD_VERSION {
            return Err(DevError::State {
                path: path.display().to_string(),
                message: format!(
                    "version {} but this odp-dev writes {STACK_RECORD_VERSION}; stop the stack by hand and delete the file",
                    record.version
                ),
            });
        }
        Ok(Some(record))
    }

    /// `KEY=value` lines for the services and the shell (`export $(odp-dev env)`).
    pub fn env_lines(&self) -> Vec<String> {
        env_lines(&self.kafka_bootstrap, &self.database_url)
    }
}

/// A version 1 record (Postgres the only database) as version 2 says it,
/// so `odp-dev down` still stops a stack an older odp-dev started.
fn upgrade_from_version_1(mut record: serde_json::Value) -> serde_json::Value {
    if record["version"] != 1 {
        return record;
    }
    if let Some(fields) = record.as_object_mut() {
        let mut postgres = fields.remove("postgres").unwrap_or_default();
        if let Some(server) = postgres.as_object_mut() {
            server.insert("kind".to_owned(), "postgres".into());
        }
        let pid = fields.remove("postgres_pid").unwrap_or_default();
        fields.insert("database".to_owned(), postgres);
        fields.insert("database_pid".to_owned(), pid);
        fields.insert("version".to_owned(), STACK_RECORD_VERSION.into());
    }
    record
}

pub(crate) fn env_lines(kafka_bootstrap: &str, database_url: &str) -> Vec<String> {
    vec![
        format!("ODP_KAFKA_BOOTSTRAP={kafka_bootstrap}"),
        format!("ODP_DATABASE_URL={database_url}"),
    ]
}

pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::postgres::{PostgresCluster, RunAs};

    fn sample() -> StackRecord {
        StackRecord {
            version: STACK_RECORD_VERSION,
            state_dir: PathBuf::from("/repo/.odp"),
            kafka_port: 40001,
            kafka_bootstrap: "127.0.0.1:40001".to_owned(),
            broker_pid: 1234,
            database: DatabaseServer::Postgres(PostgresCluster {
                bindir: PathBuf::from("/usr/lib/postgresql/15/bin"),
                root: PathBuf::from("/repo/.odp/postgres"),
                port: 40002,
                run_as: Some(RunAs { uid: 998, gid: 997 }),
            }),
            database_pid: Some(1240),
            database_url: "postgres://postgres@127.0.0.1:40002/odp".to_owned(),
            topics: Topics::with_prefix("x-"),
            started_at_unix: 1_700_000_000,
        }
    }

    #[test]
    fn round_trips_through_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = StackRecord::path_in(dir.path());
        assert_eq!(StackRecord::load(&path).unwrap(), None);
        let record = sample();
        record.save(&path).unwrap();
        assert_eq!(StackRecord::load(&path).unwrap(), Some(record));
        assert!(!path.with_extension("json.tmp").exists());
    }

    #[test]
    fn reads_a_record_written_before_mysql() {
        let dir = tempfile::tempdir().unwrap();
        let path = StackRecord::path_in(dir.path());
        let mut old = serde_json::to_value(sample()).unwrap();
        let fields = old.as_object_mut().unwrap();
        let mut postgres = fields.remove("database").unwrap();
        postgres.as_object_mut().unwrap().remove("kind");
        let pid = fields.remove("database_pid").unwrap();
        fields.insert("postgres".to_owned(), postgres);
        fields.insert("postgres_pid".to_owned(), pid);
        fields.insert("version".to_owned(), 1.into());
        std::fs::write(&path, old.to_string()).unwrap();
        assert_eq!(StackRecord::load(&path).unwrap(), Some(sample()));
    }

    #[test]
    fn rejects_garbage_and_other_versions() {
        let dir = tempfile::tempdir().unwrap();
        let path = StackRecord::path_in(dir.path());
        std::fs::write(&path, "{not json").unwrap();
        assert!(matches!(
            StackRecord::load(&path),
            Err(DevError::State { .. })
        ));
        let record = StackRecord {
            version: STACK_RECORD_VERSION + 1,
            ..sample()
        };
        record.save(&path).unwrap();
        assert!(matches!(
            StackRecord::load(&path),
            Err(DevError::State { .. })
        ));
    }

    #[test]
    fn env_lines_name_both_endpoints() {
        assert_eq!(
            sample().env_lines(),
            [
                "ODP_KAFKA_BOOTSTRAP=127.0.0.1:40001",
                "ODP_DATABASE_URL=postgres://postgres@127.0.0.1:40002/odp",
            ]
        );
    }
}
