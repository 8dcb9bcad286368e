//! `library_version`: the profiled runtime loads a library, chosen by a
//! regex over its name and optionally its kind (`jar`, `python`,
//! `shared`), whose version is in a range (see [`crate::version`]). Without
//! `versions` any version matches, even an unknown one; with it, a library
//! whose version the agent could not tell never matches, since nothing
//! says it is in the range.

use odp_core::runtime::{Library, LibraryKind};
use regex::Regex;
use serde::Deserialize;

use crate::version::{Range, Version};
use crate::{regex, versions, whole_profile, Evidence, ProfileInput, RuleKind, SpecError};

pub const KIND: &str = "library_version";

/// At most this many matching libraries are listed in a detection's
/// detail (a glob over a whole Python environment can match hundreds).
const MAX_LISTED: usize = 20;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    library: String,
    #[serde(default)]
    kind: Option<LibraryKind>,
    #[serde(default)]
    versions: Option<String>,
}

#[derive(Debug)]
pub struct LibraryVersion {
    library: Regex,
    kind: Option<LibraryKind>,
    versions: Option<Range>,
}

impl LibraryVersion {
    pub fn from_spec(spec: &serde_json::Value) -> Result<Self, SpecError> {
        let spec = Spec::deserialize(spec)?;
        Ok(LibraryVersion {
            library: regex("library", &spec.library)?,
            kind: spec.kind,
            versions: spec
                .versions
                .as_deref()
                .map(|text| versions("versions", text))
                .transpose()?,
        })
    }

    fn matches(&self, library: &Library) -> bool {
        self.kind.is_none_or(|kind| kind == library.kind)
            && self.library.is_match(&library.name)
            && match (&self.versions, &library.version) {
                (None, _) => true,
                (Some(range), Some(version)) => range.contains(&Version::parse(version)),
                (Some(_), None) => false,
            }
    }
}

impl RuleKind for LibraryVersion {
    fn measure(&self, profile: &ProfileInput<'_>) -> Evidence {
        let Some(runtime) = profile.runtime else {
            return Evidence::default();
        };
        let found: Vec<&Library> = runtime
            .runtime
            .libraries
            .iter()
            .filter(|l| self.matches(l))
            .collect();
        if found.is_empty() {
            return Evidence::default();
        }
        let listed: Vec<&Library> = found.iter().copied().take(MAX_LISTED).collect();
        let mut detail = serde_json::json!({ "libraries": listed });
        if found.len() > MAX_LISTED {
            detail["libraries_matched"] = found.len().into();
        }
        if let Some(range) = &self.versions {
            detail["versions"] = range.to_string().into();
        }
        whole_profile(profile, detail)
    }

    fn reads_runtime(&self) -> bool {
        true
    }

    /// The runtime, not the stacks.
    fn reads_running_frame(&self, _frame: &odp_profile::FrameRef) -> odp_profile::FrameRead {
        odp_profile::FrameRead::Never
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile;
    use odp_core::runtime::ProfileRuntime;
    use odp_core::runtime::RuntimeInfo;

    fn library(kind: LibraryKind, name: &str, version: Option<&str>) -> Library {
        Library {
            kind,
            name: name.into(),
            version: version.map(str::to_owned),
        }
    }

    fn measure(spec: serde_json::Value, libraries: Vec<Library>) -> Evidence {
        let data = profile(&[(&[("main", "")], 40)]);
        let runtime = ProfileRuntime {
            runtime: RuntimeInfo {
                libraries,
                ..RuntimeInfo::default()
            },
            ..ProfileRuntime::default()
        };
        LibraryVersion::from_spec(&spec)
            .unwrap()
            .measure(&ProfileInput {
                runtime: Some(&runtime),
                ..ProfileInput::new("s", &data)
            })
    }

    #[test]
    fn a_library_in_range_covers_the_whole_profile() {
        let spec = serde_json::json!({
            "library": "^log4j-core$", "kind": "jar", "versions": ">=2.0-beta9, <2.15.0"
        });
        let e = measure(
            spec.clone(),
            vec![
                library(LibraryKind::Jar, "log4j-api", Some("2.14.1")),
                library(LibraryKind::Jar, "log4j-core", Some("2.14.1")),
            ],
        );
        assert_eq!((e.matched, e.total), (40, 40));
        assert!(e.stacks.is_empty());
        assert_eq!(
            e.detail,
            serde_json::json!({
                "libraries": [{"kind": "jar", "name": "log4j-core", "version": "2.14.1"}],
                "versions": ">=2.0-beta9, <2.15.0",
            })
        );
        for outside in [
            library(LibraryKind::Jar, "log4j-core", Some("2.17.1")),
            library(LibraryKind::Jar, "log4j-core", Some("2.0-beta8")),
            library(LibraryKind::Jar, "log4j-core", None),
            library(LibraryKind::Shared, "log4j-core", Some("2.14.1")),
        ] {
            let e = measure(spec.clone(), vec![outside.clone()]);
            assert_eq!(e.matched, 0, "{outside:?}");
        }
    }

    #[test]
    fn without_versions_any_use_matches() {
        let spec = serde_json::json!({"library": "(?i)^pydantic$"});
        let e = measure(spec, vec![library(LibraryKind::Python, "Pydantic", None)]);
        assert_eq!(e.matched, 40);
        assert!(e.detail.get("versions").is_none());
    }

    #[test]
    fn long_lists_of_matches_are_cut_and_counted() {
        let libraries = (0..30)
            .map(|n| library(LibraryKind::Python, &format!("pkg{n}"), Some("1.0")))
            .collect();
        let e = measure(serde_json::json!({"library": "^pkg"}), libraries);
        assert_eq!(e.detail["libraries"].as_array().unwrap().len(), MAX_LISTED);
        assert_eq!(e.detail["libraries_matched"], 30);
    }

    #[test]
    fn profiles_without_a_reported_runtime_never_match() {
        let data = profile(&[(&[("main", "")], 40)]);
        let rule = LibraryVersion::from_spec(&serde_json::json!({"library": "."})).unwrap();
        assert_eq!(
            rule.measure(&ProfileInput::new("s", &data)),
            Evidence::default()
        );
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        use serde_json::json;
        let err = |spec: serde_json::Value| LibraryVersion::from_spec(&spec).unwrap_err();
        for (spec, says) in [
            (json!({"library": "("}), "library: regex parse error"),
            (
                json!({"library": "x", "versions": "2.0"}),
                "versions: comparator",
            ),
            (
                json!({"library": "x", "kind": "egg"}),
                "unknown variant `egg`",
            ),
            (
                json!({"library": "x", "version": "<2"}),
                "unknown field `version`",
            ),
            (json!({"versions": "<2"}), "missing field `library`"),
        ] {
            let error = err(spec);
            assert!(error.to_string().contains(says), "{error}");
        }
    }
}
