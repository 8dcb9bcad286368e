//! Locating external programs and our own built binaries.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{DevError, Result};

/// The repository root (the workspace containing this crate).
pub fn repo_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| manifest_dir.to_path_buf())
}

/// Finds `name` in the directories of `$PATH`.
pub fn find_on_path(name: impl AsRef<OsStr>) -> Option<PathBuf> {
    let name = name.as_ref();
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable_file(candidate))
}

fn is_executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .map(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// The Tansu broker: `$ODP_TANSU_BIN`, then `$PATH`, then `~/.cargo/bin`.
pub fn tansu_binary() -> Result<PathBuf> {
    if let Some(explicit) = std::env::var_os("ODP_TANSU_BIN") {
        return Ok(PathBuf::from(explicit));
    }
    let cargo_bin = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))
        .map(|cargo_home| cargo_home.join("bin").join("tansu"));
    find_on_path("tansu")
        .or(cargo_bin.filter(|path| is_executable_file(path)))
        .ok_or_else(|| DevError::ToolMissing {
            tool: "tansu (Kafka-compatible broker)".to_owned(),
            hint: "install it once per machine with `scripts/bootstrap.sh broker` \
                   (about 15 minutes on 2 cores), or set ODP_TANSU_BIN"
                .to_owned(),
        })
}

/// The directory holding `initdb`, `pg_ctl` and `postgres`.
///
/// Debian keeps the server binaries out of `$PATH` (only client wrappers are
/// there), so the versioned directory is tried first.
pub fn postgres_bindir() -> Result<PathBuf> {
    if let Some(explicit) = std::env::var_os("ODP_PG_BINDIR") {
        return Ok(PathBuf::from(explicit));
    }
    let has_server = |dir: &Path| {
        is_executable_file(&dir.join("initdb")) && is_executable_file(&dir.join("pg_ctl"))
    };
    let debian = Path::new("/usr/lib/postgresql/15/bin");
    if has_server(debian) {
        return Ok(debian.to_path_buf());
    }
    if let Ok(output) = Command::new("pg_config").arg("--bindir").output() {
        if output.status.success() {
            let dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
            if has_server(&dir) {
                return Ok(dir);
            }
        }
    }
    if let Some(initdb) = find_on_path("initdb") {
        if let Some(dir) = initdb.parent().filter(|dir| has_server(dir)) {
            return Ok(dir.to_path_buf());
        }
    }
    Err(DevError::ToolMissing {
        tool: "postgres server (initdb, pg_ctl)".to_owned(),
        hint: "install it with `apt-get install postgresql` (or set ODP_PG_BINDIR)".to_owned(),
    })
}

/// A C compiler: `$CC`, then `cc`, then `gcc`.
pub fn c_compiler() -> Result<PathBuf> {
    if let Some(explicit) = std::env::var_os("CC").filter(|value| !value.is_empty()) {
        let explicit = PathBuf::from(explicit);
        return Ok(find_on_path(&explicit).unwrap_or(explicit));
    }
    find_on_path("cc")
        .or_else(|| find_on_path("gcc"))
        .ok_or_else(|| DevError::ToolMissing {
            tool: "C compiler (cc or gcc)".to_owned(),
            hint: "install one with `apt-get install gcc` (or set CC)".to_owned(),
        })
}

/// Finds one of our binaries, e.g. `workspace_binary("api-server")`.
///
/// Looks first next to the running executable: a test binary lives in
/// `target/<profile>/deps/`, a binary such as `odp-dev` in `target/<profile>/`,
/// so both resolve to the profile directory the caller was built into. Then it
/// falls back to `$CARGO_TARGET_DIR` (or `<repo>/target`) with `debug` and
/// `release`.
pub fn workspace_binary(name: &str) -> Result<PathBuf> {
    let mut candidates = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            let profile_dir = if dir.file_name() == Some(OsStr::new("deps")) {
                dir.parent().unwrap_or(dir)
            } else {
                dir
            };
            candidates.push(profile_dir.join(name));
        }
    }
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"));
    for profile in ["debug", "release"] {
        candidates.push(target_dir.join(profile).join(name));
    }
    candidates.dedup();
    if let Some(found) = candidates.iter().find(|path| is_executable_file(path)) {
        return Ok(found.clone());
    }
    Err(DevError::BinaryMissing {
        name: name.to_owned(),
        tried: candidates
            .iter()
            .map(|path| path.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_root_holds_the_workspace_manifest() {
        assert!(repo_root().join("Cargo.toml").is_file());
        assert!(repo_root().join("devstack").is_dir());
    }

    #[test]
    fn finds_sh_on_path() {
        assert!(find_on_path("sh").is_some());
        assert!(find_on_path("surely-no-such-binary-odp").is_none());
    }

    #[test]
    fn missing_binary_names_the_paths_tried() {
        let error = workspace_binary("surely-no-such-binary-odp").unwrap_err();
        let message = error.to_string();
        assert!(message.contains("surely-no-such-binary-odp"), "{message}");
        assert!(message.contains("cargo build"), "{message}");
    }
}
