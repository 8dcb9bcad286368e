//! Services and host labels: what an agent needs to say which hosts run a
//! service, shared by the agent (which reports) and the api-server (which
//! defines services and reads the reports).
//!
//! - A **service definition** is a name and a [`Target`] (process name,
//!   command-line regex or cgroup). The api-server sends the whole set to
//!   each agent in a signed `sync_services` command
//!   ([`crate::command::CommandAction::SyncServices`]); the agent keeps it
//!   across restarts and replaces it wholesale on each sync.
//! - Every heartbeat then names the defined services with at least one live
//!   matching process on the host, and the [`services_digest`] of the set
//!   the agent holds, so the api-server sees a stale set and syncs again
//!   ([`crate::event::AgentEventKind::Heartbeat`]).
//! - **Host labels** travel in the same heartbeats: the ones the agent
//!   discovers ([`DISCOVERED_LABELS`]) and those the operator gives it
//!   (`--label zone=eu-1`), checked by [`parse_operator_labels`].

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::model::{Target, TargetError};

/// Most service definitions one sync may carry (each is checked against
/// every process of the host once per heartbeat).
pub const MAX_SERVICES: usize = 1024;
/// Longest service name, in bytes (as the API's names).
pub const MAX_SERVICE_NAME_LEN: usize = 253;

/// One defined service: a name, and which processes of a host are it.
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceDefinition {
    pub name: String,
    /// A process name, a command-line regex or a cgroup (a pid or an
    /// import designates no service).
    pub target: Target,
}

/// The action of a `sync_services` command: every service definition, and
/// their [`services_digest`] (which the agent recomputes and checks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncServices {
    pub services: Vec<ServiceDefinition>,
    pub digest: String,
}

impl SyncServices {
    /// The sync of these definitions, sorted by name, with their digest.
    pub fn new(mut services: Vec<ServiceDefinition>) -> SyncServices {
        services.sort_by(|a, b| a.name.cmp(&b.name));
        let digest = services_digest(&services);
        SyncServices { services, digest }
    }

    /// Checks the definitions ([`check_definitions`]) and that the digest
    /// is theirs.
    pub fn check(&self) -> Result<(), ServiceError> {
        check_definitions(&self.services)?;
        let computed = services_digest(&self.services);
        if computed != self.digest {
            return Err(ServiceError::DigestMismatch {
                sent: self.digest.clone(),
                computed,
            });
        }
        Ok(())
    }
}

/// Why a set of service definitions is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ServiceError {
    #[error("{count} service definitions, at most {MAX_SERVICES}")]
    TooMany { count: usize },
    #[error(
        "service name {name:?} must be 1 to {MAX_SERVICE_NAME_LEN} characters of letters, \
         digits, `.`, `-` or `_`"
    )]
    Name { name: String },
    #[error("service {name:?} is defined twice")]
    Duplicate { name: String },
    #[error("service {name:?}: a {target} designates no service (use a process name, cmdline or cgroup)")]
    TargetKind { name: String, target: Target },
    #[error("service {name:?}: {source}")]
    Target { name: String, source: TargetError },
    #[error("digest {sent:?} is not that of the definitions ({computed})")]
    DigestMismatch { sent: String, computed: String },
}

/// Checks a service name: 1 to 253 letters, digits, `.`, `-` or `_`, as
/// the API's other names.
pub fn check_service_name(name: &str) -> Result<(), ServiceError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_SERVICE_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
    if ok {
        Ok(())
    } else {
        Err(ServiceError::Name {
            name: name.to_owned(),
        })
    }
}

/// Checks a set of definitions as the agent takes them: at most
/// [`MAX_SERVICES`], valid unique names, and targets that designate
/// processes by name, command line or cgroup and pass [`Target::check`].
pub fn check_definitions(services: &[ServiceDefinition]) -> Result<(), ServiceError> {
    if services.len() > MAX_SERVICES {
        return Err(ServiceError::TooMany {
            count: services.len(),
        });
    }
    let mut names = HashSet::with_capacity(services.len());
    for service in services {
        check_service_name(&service.name)?;
        if !names.insert(service.name.as_str()) {
            return Err(ServiceError::Duplicate {
                name: service.name.clone(),
            });
        }
        match &service.target {
            Target::ProcessName(_) | Target::CommandLine(_) | Target::Cgroup(_) => {}
            other @ (Target::Pid(_) | Target::Imported(_)) => {
                return Err(ServiceError::TargetKind {
                    name: service.name.clone(),
                    target: other.clone(),
                })
            }
        }
        service
            .target
            .check()
            .map_err(|source| ServiceError::Target {
                name: service.name.clone(),
                source,
            })?;
    }
    Ok(())
}

/// Version tag of the digest's encoding: a change of encoding changes
/// every digest, which only makes api-servers sync agents once more.
const DIGEST_DOMAIN: &[u8] = b"odp-services-v1\n";

/// The digest of a set of service definitions: lowercase hex SHA-256 of a
/// canonical encoding of the definitions sorted by (name, target kind,
/// target value), so it does not depend on their order. The empty set has
/// a digest too: an agent that holds no definitions reports it.
///
/// Encoding: `odp-services-v1\n`, the count (u64 little-endian), then per
/// definition its name, target kind (`process_name`, `cmdline`, `cgroup`,
/// `pid`, `imported`) and target value, each as a u64 little-endian byte
/// length and the UTF-8 bytes.
pub fn services_digest(services: &[ServiceDefinition]) -> String {
    let mut rows: Vec<(&str, &str, String)> = services
        .iter()
        .map(|s| {
            let (kind, value) = target_parts(&s.target);
            (s.name.as_str(), kind, value)
        })
        .collect();
    rows.sort_unstable();
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(DIGEST_DOMAIN);
    ctx.update(&(rows.len() as u64).to_le_bytes());
    for (name, kind, value) in &rows {
        for field in [*name, *kind, value.as_str()] {
            ctx.update(&(field.len() as u64).to_le_bytes());
            ctx.update(field.as_bytes());
        }
    }
    ctx.finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A target's kind (its JSON `by`) and value as text.
fn target_parts(target: &Target) -> (&'static str, String) {
    match target {
        Target::Pid(pid) => ("pid", pid.to_string()),
        Target::ProcessName(name) => ("process_name", name.clone()),
        Target::CommandLine(pattern) => ("cmdline", pattern.clone()),
        Target::Cgroup(path) => ("cgroup", path.clone()),
        Target::Imported(format) => ("imported", format.clone()),
    }
}

/// Labels the agent discovers itself; an operator label may not use these
/// names.
pub const DISCOVERED_LABELS: [&str; 4] = [LABEL_KERNEL, LABEL_CPU_MODEL, LABEL_CORES, LABEL_ARCH];
/// The kernel release (`uname -r`).
pub const LABEL_KERNEL: &str = "kernel";
/// The CPU's model name (`/proc/cpuinfo`).
pub const LABEL_CPU_MODEL: &str = "cpu_model";
/// Online CPUs of the host.
pub const LABEL_CORES: &str = "cores";
/// The agent's architecture (`x86_64`, `aarch64`).
pub const LABEL_ARCH: &str = "arch";

/// Most operator labels an agent takes.
pub const MAX_OPERATOR_LABELS: usize = 32;
/// Longest label key, in bytes.
pub const MAX_LABEL_KEY_LEN: usize = 63;
/// Longest label value, in bytes.
pub const MAX_LABEL_VALUE_LEN: usize = 128;

/// Why an operator label is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LabelError {
    #[error("label {item:?} is not KEY=VALUE")]
    NotKeyValue { item: String },
    #[error("a label key is empty")]
    EmptyKey,
    #[error(
        "label key {key:?} must be 1 to {MAX_LABEL_KEY_LEN} characters of `a-z`, `0-9`, \
         `_`, `.` or `-`, starting with a letter or digit"
    )]
    Key { key: String },
    #[error("label {key:?} has an empty value")]
    EmptyValue { key: String },
    #[error("label {key:?}: value longer than {MAX_LABEL_VALUE_LEN} bytes")]
    ValueTooLong { key: String },
    #[error("label {key:?}: value has a control character or a comma")]
    ValueChars { key: String },
    #[error("label {key:?} is given twice")]
    Duplicate { key: String },
    #[error(
        "label {key:?} is discovered by the agent and cannot be set (discovered: {})",
        DISCOVERED_LABELS.join(", ")
    )]
    Discovered { key: String },
    #[error("{count} labels, at most {MAX_OPERATOR_LABELS}")]
    TooMany { count: usize },
}

/// Checks a label key: 1 to 63 bytes of `[a-z0-9_.-]`, the first a letter
/// or digit.
pub fn check_label_key(key: &str) -> Result<(), LabelError> {
    if key.is_empty() {
        return Err(LabelError::EmptyKey);
    }
    let ok = key.len() <= MAX_LABEL_KEY_LEN
        && key.as_bytes()[0].is_ascii_alphanumeric()
        && key
            .bytes()
            .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(LabelError::Key {
            key: key.to_owned(),
        })
    }
}

/// Checks a label value: 1 to 128 bytes, no control character, no comma
/// (labels are given comma-separated in `ODP_LABELS`).
pub fn check_label_value(key: &str, value: &str) -> Result<(), LabelError> {
    let key = || key.to_owned();
    if value.is_empty() {
        return Err(LabelError::EmptyValue { key: key() });
    }
    if value.len() > MAX_LABEL_VALUE_LEN {
        return Err(LabelError::ValueTooLong { key: key() });
    }
    if value.chars().any(|c| c.is_control() || c == ',') {
        return Err(LabelError::ValueChars { key: key() });
    }
    Ok(())
}

/// Parses the operator's `KEY=VALUE` labels (split at the first `=`):
/// valid keys and values, no key twice, none of the
/// [`DISCOVERED_LABELS`], at most [`MAX_OPERATOR_LABELS`].
pub fn parse_operator_labels<'a>(
    items: impl IntoIterator<Item = &'a str>,
) -> Result<BTreeMap<String, String>, LabelError> {
    let mut labels = BTreeMap::new();
    for item in items {
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| LabelError::NotKeyValue {
                item: item.to_owned(),
            })?;
        check_label_key(key)?;
        check_label_value(key, value)?;
        if DISCOVERED_LABELS.contains(&key) {
            return Err(LabelError::Discovered {
                key: key.to_owned(),
            });
        }
        if labels.insert(key.to_owned(), value.to_owned()).is_some() {
            return Err(LabelError::Duplicate {
                key: key.to_owned(),
            });
        }
    }
    if labels.len() > MAX_OPERATOR_LABELS {
        return Err(LabelError::TooMany {
            count: labels.len(),
        });
    }
    Ok(labels)
}

/// A discovered value made a valid label value: control characters and
/// commas become spaces, runs of spaces one, trimmed, cut to
/// [`MAX_LABEL_VALUE_LEN`] bytes on a character boundary. `None` when
/// nothing is left.
pub fn clean_label_value(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len().min(MAX_LABEL_VALUE_LEN));
    for word in raw
        .split(|c: char| c.is_control() || c == ',' || c.is_whitespace())
        .filter(|w| !w.is_empty())
    {
        let sep = usize::from(!out.is_empty());
        if out.len() + sep + word.len() > MAX_LABEL_VALUE_LEN {
            if !out.is_empty() {
                break;
            }
            // One word longer than a value: its longest prefix that fits.
            let cut = (0..=MAX_LABEL_VALUE_LEN)
                .rev()
                .find(|&i| word.is_char_boundary(i))
                .unwrap_or(0);
            out.push_str(&word[..cut]);
            break;
        }
        if sep == 1 {
            out.push(' ');
        }
        out.push_str(word);
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(name: &str, target: Target) -> ServiceDefinition {
        ServiceDefinition {
            name: name.into(),
            target,
        }
    }

    fn sample() -> Vec<ServiceDefinition> {
        vec![
            def("checkout", Target::ProcessName("checkout".into())),
            def("search", Target::CommandLine("java .*--app=search".into())),
            def("cart", Target::Cgroup("/system.slice/cart.service".into())),
        ]
    }

    #[test]
    fn digest_is_stable_and_order_independent() {
        let services = sample();
        let digest = services_digest(&services);
        assert_eq!(digest.len(), 64);
        assert!(digest
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        // Every order of the same definitions has the same digest.
        let mut reversed = services.clone();
        reversed.reverse();
        assert_eq!(services_digest(&reversed), digest);
        let mut rotated = services.clone();
        rotated.rotate_left(1);
        assert_eq!(services_digest(&rotated), digest);
        // Pinned (and reproduced by an independent Python implementation of
        // the documented encoding): a change must be deliberate, versioned.
        assert_eq!(
            digest,
            "7f123203aafbc5600e6d6611a8907cfc74b6d4e2f6ab7f1afcc86510e7144796"
        );
        assert_eq!(
            services_digest(&[]),
            "c1963a3fdde54e9aa0916a820cc1567ae1283816efc35c58ae1ac8f2e9c55418"
        );
    }

    #[test]
    fn digest_sees_every_field() {
        let base = services_digest(&sample());
        let mut renamed = sample();
        renamed[0].name = "checkout2".into();
        let mut retargeted = sample();
        retargeted[0].target = Target::CommandLine("checkout".into());
        let mut fewer = sample();
        fewer.pop();
        for other in [renamed, retargeted, fewer, Vec::new()] {
            assert_ne!(services_digest(&other), base);
        }
        // Length prefixes keep ("ab", "c") and ("a", "bc") apart.
        assert_ne!(
            services_digest(&[def("ab", Target::ProcessName("c".into()))]),
            services_digest(&[def("a", Target::ProcessName("bc".into()))])
        );
    }

    #[test]
    fn sync_sorts_and_carries_its_digest() {
        let sync = SyncServices::new(sample());
        let names: Vec<&str> = sync.services.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["cart", "checkout", "search"]);
        assert_eq!(sync.digest, services_digest(&sample()));
        sync.check().unwrap();

        let mut forged = sync.clone();
        forged.services.pop();
        assert!(matches!(
            forged.check(),
            Err(ServiceError::DigestMismatch { .. })
        ));
        let json = serde_json::to_value(&sync).unwrap();
        assert_eq!(json["services"][0]["name"], "cart");
        assert_eq!(json["services"][0]["target"]["by"], "cgroup");
        assert_eq!(json["digest"], sync.digest.as_str());
    }

    #[test]
    fn definitions_are_checked() {
        let err = |services: Vec<ServiceDefinition>| check_definitions(&services).unwrap_err();
        assert!(matches!(
            err(vec![def("a b", Target::ProcessName("x".into()))]),
            ServiceError::Name { .. }
        ));
        assert!(matches!(
            err(vec![def("", Target::ProcessName("x".into()))]),
            ServiceError::Name { .. }
        ));
        assert!(matches!(
            err(vec![
                def("a", Target::ProcessName("x".into())),
                def("a", Target::ProcessName("y".into()))
            ]),
            ServiceError::Duplicate { .. }
        ));
        assert!(matches!(
            err(vec![def("a", Target::Pid(7))]),
            ServiceError::TargetKind { .. }
        ));
        assert!(matches!(
            err(vec![def("a", Target::Imported("pprof".into()))]),
            ServiceError::TargetKind { .. }
        ));
        assert!(matches!(
            err(vec![def("a", Target::CommandLine("(".into()))]),
            ServiceError::Target { .. }
        ));
        assert!(matches!(
            err(vec![def("a", Target::Cgroup("relative".into()))]),
            ServiceError::Target { .. }
        ));
        let many: Vec<ServiceDefinition> = (0..=MAX_SERVICES)
            .map(|i| def(&format!("s{i}"), Target::ProcessName("x".into())))
            .collect();
        assert!(matches!(err(many), ServiceError::TooMany { .. }));
        check_definitions(&sample()).unwrap();
        check_definitions(&[]).unwrap();
        let message = err(vec![def("a", Target::Pid(7))]).to_string();
        assert!(
            message.contains("\"a\"") && message.contains("pid 7"),
            "{message}"
        );
    }

    #[test]
    fn operator_labels_parse_and_validate() {
        let labels = parse_operator_labels(["zone=eu-1", "version=1.2.3", "team=a=b"]).unwrap();
        assert_eq!(labels["zone"], "eu-1");
        assert_eq!(labels["version"], "1.2.3");
        assert_eq!(labels["team"], "a=b", "split at the first `=`");
        assert!(parse_operator_labels([]).unwrap().is_empty());

        let err = |items: &[&str]| parse_operator_labels(items.iter().copied()).unwrap_err();
        assert!(matches!(err(&["zone"]), LabelError::NotKeyValue { .. }));
        assert_eq!(err(&["=a"]), LabelError::EmptyKey);
        assert!(matches!(err(&["Zone=a"]), LabelError::Key { .. }));
        assert!(matches!(err(&["zo ne=a"]), LabelError::Key { .. }));
        assert!(matches!(err(&["-zone=a"]), LabelError::Key { .. }));
        assert!(matches!(err(&["zöne=a"]), LabelError::Key { .. }));
        let long_key = format!("{}=a", "k".repeat(MAX_LABEL_KEY_LEN + 1));
        assert!(matches!(err(&[&long_key]), LabelError::Key { .. }));
        let longest_key = format!("{}=a", "k".repeat(MAX_LABEL_KEY_LEN));
        parse_operator_labels([longest_key.as_str()]).unwrap();
        assert!(matches!(err(&["zone="]), LabelError::EmptyValue { .. }));
        let long_value = format!("zone={}", "v".repeat(MAX_LABEL_VALUE_LEN + 1));
        assert!(matches!(
            err(&[&long_value]),
            LabelError::ValueTooLong { .. }
        ));
        assert!(matches!(err(&["zone=a\nb"]), LabelError::ValueChars { .. }));
        assert!(matches!(
            err(&["zone=a", "zone=b"]),
            LabelError::Duplicate { .. }
        ));
        for key in DISCOVERED_LABELS {
            let item = format!("{key}=x");
            let e = err(&[&item]);
            assert!(matches!(e, LabelError::Discovered { .. }), "{key}: {e}");
            assert!(e.to_string().contains("discovered"));
        }
        let many: Vec<String> = (0..=MAX_OPERATOR_LABELS)
            .map(|i| format!("k{i}=v"))
            .collect();
        assert!(matches!(
            parse_operator_labels(many.iter().map(String::as_str)).unwrap_err(),
            LabelError::TooMany { .. }
        ));
        assert_eq!(
            err(&["zone="]).to_string(),
            "label \"zone\" has an empty value"
        );
    }

    #[test]
    fn discovered_values_are_cleaned() {
        assert_eq!(
            clean_label_value("  Intel(R) Xeon(R)\tCPU,  E5 \n").as_deref(),
            Some("Intel(R) Xeon(R) CPU E5")
        );
        assert_eq!(clean_label_value(" \n\t"), None);
        let long = "w".repeat(MAX_LABEL_VALUE_LEN + 10);
        assert_eq!(clean_label_value(&long).unwrap().len(), MAX_LABEL_VALUE_LEN);
        let words = "ab ".repeat(100);
        let cleaned = clean_label_value(&words).unwrap();
        assert!(cleaned.len() <= MAX_LABEL_VALUE_LEN && cleaned.ends_with("ab"));
        let wide = "é".repeat(MAX_LABEL_VALUE_LEN);
        let cleaned = clean_label_value(&wide).unwrap();
        assert!(cleaned.len() <= MAX_LABEL_VALUE_LEN);
        for value in [cleaned.as_str(), "Intel(R) Xeon(R) CPU E5"] {
            check_label_value("cpu_model", value).unwrap();
        }
    }
}
