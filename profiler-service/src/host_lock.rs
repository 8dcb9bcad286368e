//! The lock that keeps a second agent of a host id from starting on the
//! same machine.
//!
//! Every agent of a host id reads that host's commands, so two agents
//! would each run every profile and double its samples. The agent takes an
//! exclusive `flock` on `<lock dir>/agent-<host id>.lock` before it reads
//! any command and holds it for its process's life: the kernel releases it
//! when the process ends however it ends (SIGKILL included), so a crashed
//! agent never blocks its successor, and a second agent started by hand,
//! by a deployer or by two racing deploys finds it held and exits with
//! [`EXIT_HOST_TAKEN`]. The file is never deleted: unlinking a lock file
//! lets a third process lock a new file of the same name while the second
//! still holds the old one.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};

/// The agent's exit code when another agent already serves its host id
/// (on this machine, by the lock; on another, by its heartbeats).
pub const EXIT_HOST_TAKEN: u8 = 3;

/// Where lock files go unless `--lock-dir` says otherwise: `/run/odp` for
/// root (agents run as root to profile other users' processes), else a
/// per-user directory under the temporary directory.
pub fn default_lock_dir() -> PathBuf {
    let run = Path::new("/run/odp");
    if std::fs::create_dir_all(run).is_ok() && writable(run) {
        return run.to_owned();
    }
    let user = std::env::var("USER").unwrap_or_else(|_| "user".to_owned());
    std::env::temp_dir().join(format!("odp-run-{user}"))
}

fn writable(dir: &Path) -> bool {
    let probe = dir.join(format!(".probe-{}", std::process::id()));
    File::create(&probe)
        .and_then(|_| std::fs::remove_file(&probe))
        .is_ok()
}

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum HostLockError {
    #[error(
        "another agent (pid {holder}) already serves host {host:?} on this machine \
         (it holds {path}); only one agent may run per host"
    )]
    Held {
        host: String,
        path: PathBuf,
        /// The pid the holder wrote into the file, or `unknown`.
        holder: String,
    },
    #[error("cannot take the agent lock {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The held lock; dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct HostLock {
    path: PathBuf,
    _file: File,
}

impl HostLock {
    /// Takes the lock of `host` in `dir` (created if missing), or says who
    /// holds it.
    pub fn acquire(dir: &Path, host: &str) -> Result<HostLock, HostLockError> {
        let path = dir.join(lock_file_name(host));
        let io = |source| HostLockError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(HostLockError::Held {
                    host: host.to_owned(),
                    path,
                    holder: if holder.is_empty() {
                        "unknown".to_owned()
                    } else {
                        holder.to_owned()
                    },
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        // Only the holder writes, so the pid read by a refused agent is the
        // holder's (or empty while it is being written).
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        Ok(HostLock { path, _file: file })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// `agent-<host>.lock`, with every byte outside `[A-Za-z0-9._-]` written
/// as `%XX`, so any host id maps to one plain file name.
fn lock_file_name(host: &str) -> String {
    let mut name = String::from("agent-");
    for byte in host.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-') {
            name.push(byte as char);
        } else {
            name.push_str(&format!("%{byte:02X}"));
        }
    }
    name + ".lock"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_of_one_host_is_refused_until_the_first_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let first = HostLock::acquire(dir.path(), "web-1").unwrap();
        let refused = HostLock::acquire(dir.path(), "web-1").unwrap_err();
        let message = refused.to_string();
        assert!(
            message.contains(&format!("pid {}", std::process::id())),
            "{message}"
        );
        assert!(message.contains("\"web-1\""), "{message}");
        // Other hosts have locks of their own.
        let other = HostLock::acquire(dir.path(), "web-2").unwrap();
        drop(first);
        HostLock::acquire(dir.path(), "web-1").unwrap();
        drop(other);
    }

    #[test]
    fn host_ids_map_to_plain_file_names() {
        assert_eq!(lock_file_name("web-1.eu_2"), "agent-web-1.eu_2.lock");
        assert_eq!(lock_file_name("a/b c"), "agent-a%2Fb%20c.lock");
        assert_ne!(lock_file_name("a/b"), lock_file_name("a%2Fb"));
    }
}
