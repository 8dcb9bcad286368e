//! What a command-line regex or a cgroup target matches, as pure functions
//! over the text of `/proc/PID/cmdline` and `/proc/PID/cgroup`.
//!
//! Both come from users, so they are checked the same way by the API (422),
//! the agent's command validation and the scan itself
//! ([`odp_core::Target::check`]): the regex is length- and size-limited
//! like flame graph filters; a cgroup is an absolute path or a container id
//! ([`CgroupTarget`], whose matching is pure and lives in the core).

use odp_core::filter::{self, FilterError};
pub use odp_core::model::CgroupTarget;
use regex::Regex;

/// A compiled command-line target.
#[derive(Debug, Clone)]
pub struct CmdlineSelector {
    regex: Regex,
}

impl CmdlineSelector {
    /// Compiles the regex with the size limits of user-supplied patterns.
    pub fn new(pattern: &str) -> Result<Self, FilterError> {
        Ok(CmdlineSelector {
            regex: filter::compile("cmdline", pattern)?,
        })
    }

    /// Whether a command line (arguments joined by spaces) matches,
    /// anywhere in it: `--name=checkout` selects `java -jar app.jar
    /// --name=checkout`.
    pub fn matches(&self, cmdline: &str) -> bool {
        self.regex.is_match(cmdline)
    }
}

/// The cgroup paths of `/proc/PID/cgroup`, one per hierarchy
/// (`hierarchy-id:controllers:path`): the cgroup v2 line `0::/path` and
/// every v1 line alike, since a hybrid host lists both and a target may
/// name either. Malformed lines are skipped; duplicates kept once.
pub fn parse_cgroup_paths(text: &str) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for line in text.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(id), Some(_controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) || !path.starts_with('/') {
            continue;
        }
        // A cgroup removed while the process is in it reads `(deleted)`.
        let path = path.strip_suffix(" (deleted)").unwrap_or(path);
        if !paths.iter().any(|p| p == path) {
            paths.push(path.to_owned());
        }
    }
    paths
}
