//! `runtime_option`: the profiled runtime runs with an option or at a
//! version that costs performance: a flag matching a regex (each flag as
//! the agent reports it: `-XX:+UseSerialGC`, `-X dev`,
//! `PYTHONMALLOC=debug`), a runtime version in a range (see
//! [`crate::version`]), or both, optionally only for one language. Every
//! condition given must hold; a runtime whose version the agent did not
//! report never matches a version range.

use odp_core::Language;
use regex::Regex;
use serde::Deserialize;

use crate::version::{Range, Version};
use crate::{regex, versions, whole_profile, Evidence, ProfileInput, RuleKind, SpecError};

pub const KIND: &str = "runtime_option";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    #[serde(default)]
    language: Option<Language>,
    #[serde(default)]
    flag: Option<String>,
    #[serde(default)]
    version: Option<String>,
}

#[derive(Debug)]
pub struct RuntimeOption {
    language: Option<Language>,
    flag: Option<Regex>,
    version: Option<Range>,
}

impl RuntimeOption {
    pub fn from_spec(spec: &serde_json::Value) -> Result<Self, SpecError> {
        let spec = Spec::deserialize(spec)?;
        if spec.flag.is_none() && spec.version.is_none() {
            return Err(SpecError::NothingToMatch);
        }
        Ok(RuntimeOption {
            language: spec.language,
            flag: spec.flag.as_deref().map(|f| regex("flag", f)).transpose()?,
            version: spec
                .version
                .as_deref()
                .map(|text| versions("version", text))
                .transpose()?,
        })
    }
}

impl RuleKind for RuntimeOption {
    fn measure(&self, profile: &ProfileInput<'_>) -> Evidence {
        let Some(runtime) = profile.runtime else {
            return Evidence::default();
        };
        if self
            .language
            .is_some_and(|language| runtime.language != Some(language))
        {
            return Evidence::default();
        }
        let mut detail = serde_json::json!({ "language": runtime.language });
        if let Some(range) = &self.version {
            let Some(version) = runtime
                .runtime_version
                .as_deref()
                .filter(|v| range.contains(&Version::parse(v)))
            else {
                return Evidence::default();
            };
            detail["runtime_version"] = version.into();
            detail["versions"] = range.to_string().into();
        }
        if let Some(pattern) = &self.flag {
            let flags: Vec<&String> = runtime
                .runtime
                .flags
                .iter()
                .filter(|f| pattern.is_match(f))
                .collect();
            if flags.is_empty() {
                return Evidence::default();
            }
            detail["flags"] = serde_json::json!(flags);
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

    fn runtime(language: Language, version: Option<&str>, flags: &[&str]) -> ProfileRuntime {
        ProfileRuntime {
            language: Some(language),
            runtime_version: version.map(str::to_owned),
            runtime: RuntimeInfo {
                flags: flags.iter().map(|f| f.to_string()).collect(),
                ..RuntimeInfo::default()
            },
        }
    }

    fn measure(spec: serde_json::Value, runtime: Option<&ProfileRuntime>) -> Evidence {
        let data = profile(&[(&[("main", "")], 7)]);
        RuntimeOption::from_spec(&spec)
            .unwrap()
            .measure(&ProfileInput {
                runtime,
                ..ProfileInput::new("s", &data)
            })
    }

    #[test]
    fn a_matching_flag_covers_the_whole_profile() {
        let spec = serde_json::json!({"language": "jvm", "flag": "^-XX:\\+UseSerialGC$"});
        let serial = runtime(
            Language::Jvm,
            Some("17.0.15"),
            &["-Xmx1g", "-XX:+UseSerialGC"],
        );
        let e = measure(spec.clone(), Some(&serial));
        assert_eq!((e.matched, e.total), (7, 7));
        assert_eq!(
            e.detail,
            serde_json::json!({"language": "jvm", "flags": ["-XX:+UseSerialGC"]})
        );
        let g1 = runtime(Language::Jvm, Some("17.0.15"), &["-XX:+UseG1GC"]);
        assert_eq!(measure(spec.clone(), Some(&g1)).matched, 0);
        let python = runtime(Language::Python, None, &["-XX:+UseSerialGC"]);
        assert_eq!(
            measure(spec.clone(), Some(&python)).matched,
            0,
            "wrong language"
        );
        assert_eq!(measure(spec, None).matched, 0, "no runtime reported");
    }

    #[test]
    fn versions_are_compared_as_versions() {
        let spec = serde_json::json!({"language": "python", "version": "<3.11"});
        for (version, old) in [
            (Some("3.10.12"), true),
            (Some("3.9"), true),
            (Some("3.11"), false),
            (Some("3.12.1"), false),
            (None, false),
        ] {
            let e = measure(spec.clone(), Some(&runtime(Language::Python, version, &[])));
            assert_eq!(e.matched > 0, old, "{version:?}");
        }
        let e = measure(spec, Some(&runtime(Language::Python, Some("3.10.12"), &[])));
        assert_eq!(
            e.detail,
            serde_json::json!({
                "language": "python",
                "runtime_version": "3.10.12",
                "versions": "<3.11",
            })
        );
    }

    #[test]
    fn every_condition_given_must_hold() {
        let spec = serde_json::json!({"flag": "^-X ?dev$", "version": ">=3.7"});
        let both = runtime(Language::Python, Some("3.12"), &["-X dev"]);
        assert_eq!(measure(spec.clone(), Some(&both)).matched, 7);
        let old = runtime(Language::Python, Some("3.6"), &["-X dev"]);
        assert_eq!(measure(spec.clone(), Some(&old)).matched, 0);
        let plain = runtime(Language::Python, Some("3.12"), &["-O"]);
        assert_eq!(measure(spec, Some(&plain)).matched, 0);
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        use serde_json::json;
        let err = |spec: serde_json::Value| RuntimeOption::from_spec(&spec).unwrap_err();
        for (spec, says) in [
            (
                json!({"language": "jvm"}),
                "needs `flag`, `version` or both",
            ),
            (json!({"flag": "[z-a]"}), "flag: regex parse error"),
            (json!({"version": "3.11"}), "version: comparator"),
            (
                json!({"flag": "x", "language": "java"}),
                "unknown variant `java`",
            ),
            (json!({"flags": "x"}), "unknown field `flags`"),
        ] {
            let error = err(spec);
            assert!(error.to_string().contains(says), "{error}");
        }
    }
}
