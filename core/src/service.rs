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
use uuid::Uuid;

use crate::continuous::{AssignmentError, ContinuousAssignment, MAX_ASSIGNMENTS};
use crate::host_list::{digest_hosts, digest_text};
use crate::model::{Target, TargetError};
use crate::trigger::{TriggerAssignment, TriggerError, MAX_TRIGGERS};

/// Most service definitions one sync may carry (each is checked against
/// every process of the host once per heartbeat).
pub const MAX_SERVICES: usize = 1024;
/// Most revoked identities one sync may carry: unexpired revocations
/// only, and certificates live for days.
pub const MAX_REVOKED: usize = 10_000;
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

/// The action of a `sync_services` command: every service definition, the
/// agent identities the api-server revoked (whose certificates have not
/// expired), and their [`sync_digest`] (which the agent recomputes and
/// checks).
///
/// The revocations ride with the definitions so that an agent learns of
/// them the way it learns of services: a revocation changes the digest
/// every agent reports, and the api-server syncs each again. An agent then
/// ignores heartbeats its host's revoked identities sign: a stolen
/// identity cannot make it yield its host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncServices {
    pub services: Vec<ServiceDefinition>,
    /// Ids of revoked certificates, sorted (absent from older api-servers).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revoked: Vec<Uuid>,
    /// The continuous profiles, sorted by id (absent from older
    /// api-servers).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub continuous: Vec<ContinuousAssignment>,
    /// The triggers, sorted by id (absent from older api-servers).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triggers: Vec<TriggerAssignment>,
    pub digest: String,
}

impl SyncServices {
    /// The sync of these definitions, sorted by name, revoking nothing.
    pub fn new(services: Vec<ServiceDefinition>) -> SyncServices {
        SyncServices::with_revoked(services, Vec::new())
    }

    /// The sync of these definitions, sorted by name, and revocations,
    /// sorted, with their digest.
    pub fn with_revoked(services: Vec<ServiceDefinition>, revoked: Vec<Uuid>) -> SyncServices {
        SyncServices::with_continuous(services, revoked, Vec::new())
    }

    /// The sync of these definitions, sorted by name, revocations and
    /// continuous profiles, each sorted, with their digest.
    pub fn with_continuous(
        mut services: Vec<ServiceDefinition>,
        mut revoked: Vec<Uuid>,
        mut continuous: Vec<ContinuousAssignment>,
    ) -> SyncServices {
        services.sort_by(|a, b| a.name.cmp(&b.name));
        revoked.sort_unstable();
        revoked.dedup();
        continuous.sort_by_key(|a| a.id);
        let digest = sync_digest(&services, &revoked, &continuous, &[]);
        SyncServices {
            services,
            revoked,
            continuous,
            triggers: Vec::new(),
            digest,
        }
    }

    /// This sync with `triggers` too, sorted by id, and its digest again.
    pub fn with_triggers(mut self, mut triggers: Vec<TriggerAssignment>) -> SyncServices {
        triggers.sort_by_key(|t| t.id);
        self.digest = sync_digest(&self.services, &self.revoked, &self.continuous, &triggers);
        self.triggers = triggers;
        self
    }

    /// Checks the definitions ([`check_definitions`]), the number of
    /// revocations, the continuous profiles ([`check_assignments`]), and
    /// that the digest is theirs.
    pub fn check(&self) -> Result<(), ServiceError> {
        check_definitions(&self.services)?;
        if self.revoked.len() > MAX_REVOKED {
            return Err(ServiceError::TooManyRevoked {
                count: self.revoked.len(),
            });
        }
        check_assignments(&self.continuous, &self.services)?;
        check_triggers(&self.triggers, &self.services)?;
        let computed = sync_digest(
            &self.services,
            &self.revoked,
            &self.continuous,
            &self.triggers,
        );
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
    #[error("{count} revoked identities, at most {MAX_REVOKED}")]
    TooManyRevoked { count: usize },
    #[error(transparent)]
    Continuous(#[from] AssignmentError),
    #[error(transparent)]
    Trigger(#[from] TriggerError),
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

/// Checks continuous profiles as the agent takes them: at most
/// [`MAX_ASSIGNMENTS`], each valid ([`ContinuousAssignment::check`]), none
/// twice, each for a service `services` defines.
pub fn check_assignments(
    continuous: &[ContinuousAssignment],
    services: &[ServiceDefinition],
) -> Result<(), AssignmentError> {
    if continuous.len() > MAX_ASSIGNMENTS {
        return Err(AssignmentError::TooMany {
            count: continuous.len(),
        });
    }
    let mut ids = HashSet::with_capacity(continuous.len());
    for assignment in continuous {
        assignment.check()?;
        if !ids.insert(assignment.id) {
            return Err(AssignmentError::Duplicate { id: assignment.id });
        }
        if !services.iter().any(|s| s.name == assignment.service) {
            return Err(AssignmentError::UnknownService {
                id: assignment.id,
                service: assignment.service.clone(),
            });
        }
    }
    Ok(())
}

/// Checks triggers as the agent takes them: at most [`MAX_TRIGGERS`], each
/// valid ([`TriggerAssignment::check`]), none twice, each for a service
/// `services` defines.
pub fn check_triggers(
    triggers: &[TriggerAssignment],
    services: &[ServiceDefinition],
) -> Result<(), TriggerError> {
    if triggers.len() > MAX_TRIGGERS {
        return Err(TriggerError::TooMany {
            count: triggers.len(),
        });
    }
    let mut ids = HashSet::with_capacity(triggers.len());
    for trigger in triggers {
        trigger.check()?;
        if !ids.insert(trigger.id) {
            return Err(TriggerError::Duplicate { id: trigger.id });
        }
        if !services.iter().any(|s| s.name == trigger.service) {
            return Err(TriggerError::UnknownService {
                id: trigger.id,
                service: trigger.service.clone(),
            });
        }
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
    hex(ctx.finish())
}

/// The digest of a sync: [`services_digest`] of the definitions when
/// nothing is revoked (what agents and api-servers before revocations
/// compute), else the SHA-256 of that digest, `revoked\n` and the sorted
/// ids' 16 bytes each. With continuous profiles, the SHA-256 of that
/// digest, `continuous\n` and each assignment by id (see `put_assignment`).
/// With triggers, the SHA-256 of that digest, `triggers\n` and each
/// trigger by id ([`TriggerAssignment::digest_into`]). What older
/// api-servers and agents compute stays the same without them.
pub fn sync_digest(
    services: &[ServiceDefinition],
    revoked: &[Uuid],
    continuous: &[ContinuousAssignment],
    triggers: &[TriggerAssignment],
) -> String {
    let mut digest = services_digest(services);
    if !revoked.is_empty() {
        let mut ids = revoked.to_vec();
        ids.sort_unstable();
        let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
        ctx.update(digest.as_bytes());
        ctx.update(b"revoked\n");
        for id in &ids {
            ctx.update(id.as_bytes());
        }
        digest = hex(ctx.finish());
    }
    if !continuous.is_empty() {
        let mut sorted: Vec<&ContinuousAssignment> = continuous.iter().collect();
        sorted.sort_by_key(|a| a.id);
        let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
        ctx.update(digest.as_bytes());
        ctx.update(b"continuous\n");
        for assignment in sorted {
            put_assignment(&mut ctx, assignment);
        }
        digest = hex(ctx.finish());
    }
    if !triggers.is_empty() {
        let mut sorted: Vec<&TriggerAssignment> = triggers.iter().collect();
        sorted.sort_by_key(|t| t.id);
        let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
        ctx.update(digest.as_bytes());
        ctx.update(b"triggers\n");
        for trigger in sorted {
            trigger.digest_into(&mut ctx);
        }
        digest = hex(ctx.finish());
    }
    digest
}

/// An assignment's canonical encoding: its 16 id bytes; its service and
/// event as u64 little-endian lengths and UTF-8; its rate and budget as u32
/// little-endian; then its hosts ([`digest_hosts`]).
fn put_assignment(ctx: &mut ring::digest::Context, assignment: &ContinuousAssignment) {
    ctx.update(assignment.id.as_bytes());
    digest_text(ctx, &assignment.service);
    digest_text(ctx, assignment.event.as_str());
    ctx.update(&assignment.frequency_hz.to_le_bytes());
    ctx.update(&assignment.cpu_budget_ppm.to_le_bytes());
    digest_hosts(ctx, assignment.hosts.as_deref());
}

fn hex(digest: ring::digest::Digest) -> String {
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
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
mod tests;
