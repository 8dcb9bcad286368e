//! What an agent learns about a target's runtime: its options, the
//! libraries it runs with and its executable's build id. Reported once per
//! profile in `profile_started` so detection rules can match library
//! versions and runtime options (ODP §3's "library version" and "runtime
//! option" issues) and people can tell which build was profiled.

use serde::{Deserialize, Serialize};

use crate::Language;

/// At most this many libraries are reported per profile; a process with
/// more (a Python environment with every package installed) is cut at the
/// limit and says so in [`RuntimeInfo::libraries_truncated`].
pub const MAX_LIBRARIES: usize = 2000;
/// At most this many runtime flags are reported.
pub const MAX_FLAGS: usize = 500;

/// A profile's runtime as its agent reported it in `profile_started`:
/// what rules on library versions and runtime options read. Fields an
/// agent did not report (agents older than the runtime contract) are empty.
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProfileRuntime {
    #[serde(default)]
    pub language: Option<Language>,
    /// `3.11`, `17.0.15`.
    #[serde(default)]
    pub runtime_version: Option<String>,
    #[serde(default)]
    pub runtime: RuntimeInfo,
}

#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeInfo {
    /// Runtime options as the runtime spells them: JVM flags from
    /// `VM.flags` and the command line (`-XX:+UseG1GC`, `-Xmx512m`),
    /// Python's interpreter options (`-O`, `-X dev`) and the `PYTHON*`
    /// environment settings that change its behaviour.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    /// Libraries the target runs with, deduplicated by (kind, name, version).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub libraries: Vec<Library>,
    /// More libraries were found than [`MAX_LIBRARIES`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub libraries_truncated: bool,
    /// The target's main executable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable: Option<Executable>,
}

impl RuntimeInfo {
    pub fn is_empty(&self) -> bool {
        self == &RuntimeInfo::default()
    }
}

#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Library {
    pub kind: LibraryKind,
    /// `log4j-core`, `requests`, `libssl`: the artifact, distribution or
    /// shared object name without version or extension.
    pub name: String,
    /// `2.14.1`, `1.1.1w`; absent when the agent could not tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LibraryKind {
    /// A jar on a JVM's class path or open by it.
    Jar,
    /// An installed Python distribution (`*.dist-info`).
    Python,
    /// A shared object mapped into the process.
    Shared,
}

impl LibraryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LibraryKind::Jar => "jar",
            LibraryKind::Python => "python",
            LibraryKind::Shared => "shared",
        }
    }
}

#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Executable {
    pub path: String,
    /// The GNU build id note, lowercase hex; absent when the binary has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_info_serializes_to_an_empty_object_and_back() {
        let info = RuntimeInfo::default();
        assert_eq!(serde_json::to_string(&info).unwrap(), "{}");
        let back: RuntimeInfo = serde_json::from_str("{}").unwrap();
        assert!(back.is_empty());
    }

    #[test]
    fn libraries_round_trip_with_their_kind() {
        let info = RuntimeInfo {
            flags: vec!["-XX:+UseG1GC".into()],
            libraries: vec![Library {
                kind: LibraryKind::Jar,
                name: "log4j-core".into(),
                version: Some("2.14.1".into()),
            }],
            libraries_truncated: false,
            executable: Some(Executable {
                path: "/usr/bin/java".into(),
                build_id: Some("ab12".into()),
            }),
        };
        let json = serde_json::to_value(&info).unwrap();
        assert_eq!(json["libraries"][0]["kind"], "jar");
        assert_eq!(serde_json::from_value::<RuntimeInfo>(json).unwrap(), info);
    }
}
