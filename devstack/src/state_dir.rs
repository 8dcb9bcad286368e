//! Where a stack (or a database server alone) keeps its files: a state
//! dir, temporary or kept.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use tempfile::TempDir;

use crate::error::{IoContext, Result};

/// Where the stack keeps its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateDir {
    /// A fresh directory under the system temp dir, removed when the stack drops.
    Temporary,
    /// A directory that is kept (created if missing), e.g. `<repo>/.odp`.
    Persistent(PathBuf),
}

/// Creates the state dir; a temporary one is opened up to others (0755)
/// because the database server may run as another user and must reach its
/// data dir.
pub(crate) fn prepare_state_dir(kind: &StateDir) -> Result<(PathBuf, Option<TempDir>)> {
    match kind {
        StateDir::Persistent(dir) => {
            std::fs::create_dir_all(dir).io_context(|| format!("creating {}", dir.display()))?;
            let dir = dir
                .canonicalize()
                .io_context(|| format!("resolving {}", dir.display()))?;
            Ok((dir, None))
        }
        StateDir::Temporary => {
            let temporary = tempfile::Builder::new()
                .prefix("odp-stack-")
                .tempdir()
                .io_context(|| "creating a temporary state dir".to_owned())?;
            std::fs::set_permissions(temporary.path(), std::fs::Permissions::from_mode(0o755))
                .io_context(|| format!("opening up {}", temporary.path().display()))?;
            Ok((temporary.path().to_path_buf(), Some(temporary)))
        }
    }
}
