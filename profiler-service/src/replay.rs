//! The ids of the commands this agent took, kept across its restarts.
//!
//! A restarted agent resumes after the last command it committed, but a
//! captured signed command can be produced to the topic again. The
//! verifier refuses ids it has seen ([`CommandVerifier`]); this keeps them
//! (with their expiry) in `seen-commands.json` in the state directory, so
//! the next run refuses them too. The file is rewritten (to a temporary
//! file, then renamed over) before the agent acts on each command it
//! takes, and holds only unexpired ids, at most
//! [`MAX_REMEMBERED_COMMANDS`](odp_core::command::MAX_REMEMBERED_COMMANDS)
//! of them: every command expires within
//! [`MAX_COMMAND_LIFETIME_SECS`](odp_core::command::MAX_COMMAND_LIFETIME_SECS).
//!
//! When the file cannot be written, or an earlier run's cannot be read,
//! the agent refuses every command issued before it started instead
//! ([`CommandVerifier::refuse_issued_before`]): nothing else tells it which
//! of them an earlier run took.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use odp_core::command::{CommandVerifier, SeenCommands};
use tracing::{error, info, warn};

const FILE: &str = "seen-commands.json";

/// `seen-commands.json` in the state directory.
#[derive(Debug, Clone)]
pub struct ReplayStore {
    path: PathBuf,
}

impl ReplayStore {
    pub fn new(state_dir: &Path) -> ReplayStore {
        ReplayStore {
            path: state_dir.join(FILE),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What an earlier run kept; `None` when there is no file. A file that
    /// does not parse is an `InvalidData` error.
    pub fn load(&self) -> io::Result<Option<SeenCommands>> {
        let bytes = match fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }

    /// Replaces the kept ids: written to a temporary file, synced and
    /// renamed over the old one, so a crash leaves one or the other.
    pub fn save(&self, seen: &SeenCommands) -> io::Result<()> {
        let json = serde_json::to_vec(seen).map_err(io::Error::other)?;
        crate::services::replace_file(&self.path, &json)
    }
}

/// The agent's memory of the commands it took: the verifier, and where
/// its ids are kept.
pub struct ReplayGuard {
    store: ReplayStore,
    started_at: i64,
    /// Whether the verifier refuses commands issued before the start
    /// (logged once).
    refusing_older: bool,
}

impl ReplayGuard {
    /// Loads what an earlier run kept into `verifier` and writes it back
    /// (pruned), which also shows the state directory is writable. Either
    /// failing, `verifier` refuses commands issued before `started_at`.
    pub fn open(
        store: ReplayStore,
        verifier: &mut CommandVerifier,
        started_at: i64,
    ) -> ReplayGuard {
        let mut guard = ReplayGuard {
            store,
            started_at,
            refusing_older: false,
        };
        match guard.store.load() {
            Ok(Some(seen)) => {
                verifier.remember(&seen, started_at);
                info!(path = %guard.store.path().display(),
                    commands = verifier.seen(started_at).commands.len(),
                    "commands taken by an earlier run are refused as replays");
            }
            Ok(None) => {}
            Err(e) => guard.refuse_older(
                verifier,
                &format!(
                    "cannot read the commands an earlier run took from {}: {e}",
                    guard.store.path().display()
                ),
            ),
        }
        guard.keep(verifier, started_at);
        guard
    }

    /// Keeps the verifier's ids on disk; call after it took a command and
    /// before acting on it. On failure, commands issued before this run
    /// started are refused from then on.
    pub fn keep(&mut self, verifier: &mut CommandVerifier, now_unix_s: i64) {
        if let Err(e) = self.store.save(&verifier.seen(now_unix_s)) {
            self.refuse_older(
                verifier,
                &format!(
                    "cannot keep the commands taken in {}: {e}",
                    self.store.path().display()
                ),
            );
        }
    }

    pub fn refuses_older(&self) -> bool {
        self.refusing_older
    }

    fn refuse_older(&mut self, verifier: &mut CommandVerifier, why: &str) {
        verifier.refuse_issued_before(self.started_at);
        if !self.refusing_older {
            self.refusing_older = true;
            error!(
                started_at = self.started_at,
                "{why}; refusing every command issued before this agent started, \
                since a restart cannot tell which of them were taken"
            );
        } else {
            warn!("{why}");
        }
    }
}

#[cfg(test)]
mod tests {
    use odp_core::command::{
        generate_keypair, Command, CommandAction, CommandError, CommandSigner, SeenCommand,
        MAX_REMEMBERED_COMMANDS,
    };
    use uuid::Uuid;

    use super::*;

    const HOST: &str = "host-a";
    const NOW: i64 = 1_800_000_000;

    fn keys() -> (CommandSigner, String) {
        let (private, public) = generate_keypair().unwrap();
        (CommandSigner::from_private_pem(&private).unwrap(), public)
    }

    fn stop(issued_at: i64) -> Command {
        Command {
            id: Uuid::new_v4(),
            host: HOST.into(),
            issued_at,
            expires_at: issued_at + 60,
            action: CommandAction::Stop {
                profile_id: Uuid::new_v4(),
            },
        }
    }

    #[test]
    fn the_store_saves_reloads_and_refuses_a_bad_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = ReplayStore::new(&dir.path().join("state"));
        assert!(store.load().unwrap().is_none(), "nothing kept yet");
        let seen = SeenCommands {
            forgotten_until: NOW,
            commands: vec![SeenCommand {
                id: Uuid::new_v4(),
                expires_at: NOW + 60,
            }],
        };
        store.save(&seen).unwrap();
        assert_eq!(store.load().unwrap(), Some(seen));
        assert!(!dir.path().join("state/seen-commands.json.tmp").exists());
        fs::write(store.path(), b"{\"commands\": [").unwrap();
        assert_eq!(store.load().unwrap_err().kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn a_restarted_agent_refuses_what_the_last_run_took() {
        let dir = tempfile::tempdir().unwrap();
        let (signer, public) = keys();
        let taken = stop(NOW);
        let token = signer.sign(&taken).unwrap();

        let mut first = CommandVerifier::from_public_pem(&public, HOST).unwrap();
        let mut guard = ReplayGuard::open(ReplayStore::new(dir.path()), &mut first, NOW);
        assert!(!guard.refuses_older());
        first.verify(&token, NOW + 1).unwrap();
        guard.keep(&mut first, NOW + 1);

        // Restarted over the same state directory.
        let mut second = CommandVerifier::from_public_pem(&public, HOST).unwrap();
        let guard = ReplayGuard::open(ReplayStore::new(dir.path()), &mut second, NOW + 5);
        assert!(!guard.refuses_older());
        assert!(matches!(
            second.verify(&token, NOW + 6),
            Err(CommandError::Replayed(id)) if id == taken.id
        ));
        // A command issued before the restart that no run took is fine.
        let pending = stop(NOW + 2);
        second
            .verify(&signer.sign(&pending).unwrap(), NOW + 6)
            .unwrap();

        // Expired ids are pruned from the file at the next start.
        let mut third = CommandVerifier::from_public_pem(&public, HOST).unwrap();
        ReplayGuard::open(ReplayStore::new(dir.path()), &mut third, NOW + 3600);
        let kept = ReplayStore::new(dir.path()).load().unwrap().unwrap();
        assert!(kept.commands.is_empty(), "{kept:?}");
    }

    #[test]
    fn the_file_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let store = ReplayStore::new(dir.path());
        let many = SeenCommands {
            forgotten_until: 0,
            commands: (0..MAX_REMEMBERED_COMMANDS + 100)
                .map(|i| SeenCommand {
                    id: Uuid::new_v4(),
                    expires_at: NOW + 60 + (i % 600) as i64,
                })
                .chain((0..50).map(|_| SeenCommand {
                    id: Uuid::new_v4(),
                    expires_at: NOW - 3600,
                }))
                .collect(),
        };
        store.save(&many).unwrap();
        let (_, public) = keys();
        let mut verifier = CommandVerifier::from_public_pem(&public, HOST).unwrap();
        ReplayGuard::open(store.clone(), &mut verifier, NOW);
        let kept = store.load().unwrap().unwrap();
        assert!(kept.commands.len() <= MAX_REMEMBERED_COMMANDS);
        assert!(kept.commands.iter().all(|c| c.expires_at > NOW));
        assert!(kept.forgotten_until >= NOW + 60, "{}", kept.forgotten_until);
    }

    #[test]
    fn a_corrupt_or_unwritable_file_refuses_commands_issued_before_the_start() {
        let (signer, public) = keys();
        let older = stop(NOW - 10);
        let newer = stop(NOW + 1);

        // Corrupt: what an earlier run took is unknown.
        let dir = tempfile::tempdir().unwrap();
        let store = ReplayStore::new(dir.path());
        fs::write(store.path(), b"not json").unwrap();
        let mut verifier = CommandVerifier::from_public_pem(&public, HOST).unwrap();
        let guard = ReplayGuard::open(store.clone(), &mut verifier, NOW);
        assert!(guard.refuses_older());
        let err = verifier
            .verify(&signer.sign(&older).unwrap(), NOW + 2)
            .unwrap_err();
        assert!(
            matches!(err, CommandError::IssuedBeforeStart { .. }),
            "{err:?}"
        );
        verifier
            .verify(&signer.sign(&newer).unwrap(), NOW + 2)
            .unwrap();
        // The bad file was replaced by a good one.
        assert!(store.load().unwrap().is_some());

        // Unwritable: the state directory is a file.
        let blocker = dir.path().join("blocker");
        fs::write(&blocker, b"").unwrap();
        let mut verifier = CommandVerifier::from_public_pem(&public, HOST).unwrap();
        let guard = ReplayGuard::open(ReplayStore::new(&blocker), &mut verifier, NOW);
        assert!(guard.refuses_older());
        assert!(matches!(
            verifier.verify(&signer.sign(&older).unwrap(), NOW + 2),
            Err(CommandError::IssuedBeforeStart { .. })
        ));
        verifier
            .verify(&signer.sign(&newer).unwrap(), NOW + 2)
            .unwrap();
    }
}
