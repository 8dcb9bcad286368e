//! Common issue detection (ODP §3): rules that recognise known performance
//! problems in a profile.
//!
//! A rule is a [`RuleDef`] (text, threshold, per-service overrides) plus a
//! kind-specific check behind [`RuleKind`], one file per kind. A kind
//! measures how much of a profile matches it as an [`Evidence`]; the
//! threshold logic is common to all kinds and lives here. Kinds:
//! - `stack_share` ([`stack_share`]): the share of samples whose stack
//!   contains (or ends in) a frame matching a pattern;
//! - `share_regression` ([`share_regression`]): a scheduled profile that
//!   finished, against its schedule's previous runs: a function whose self
//!   share grew by the threshold in points, or a rule newly hit;
//! - `library_version` ([`library_version`]): the profile's runtime
//!   loads a library (regex on its name, optionally of one kind) whose
//!   version is in a range ([`version`]);
//! - `runtime_option` ([`runtime_option`]): the runtime runs with a flag
//!   matching a pattern and/or its version is in a range.
//!
//! The last two read the agent-reported runtime of [`ProfileInput`] and
//! report a match as evidence covering all samples, so a threshold of 0
//! flags any use; a profile whose agent reported no runtime never matches.

use std::fmt;
use std::sync::Arc;

use odp_core::runtime::ProfileRuntime;
use odp_core::Target;
use odp_profile::{FrameRead, FrameReads, FrameRef, ProfileFrames};

pub mod detection;
pub mod library_version;
pub mod rule_def;
pub mod run;
pub mod runtime_option;
pub mod seed;
pub mod share_regression;
pub mod stack_share;
pub mod version;

pub use detection::{name_stacks, Detection, StackHit};
pub use rule_def::RuleDef;
pub use share_regression::RunHistory;

/// How many of a detection's heaviest matching stacks are kept.
pub const TOP_STACKS: usize = 5;

/// What a rule sees of a profile.
#[derive(Debug, Clone, Copy)]
pub struct ProfileInput<'a> {
    /// See [`service_of`].
    pub service: &'a str,
    /// Samples merged per stack, frames deduplicated.
    pub data: &'a ProfileFrames,
    /// What a finished profile is compared with: its schedule's previous
    /// runs, or for a continuous segment the same hour of earlier weeks
    /// and the release before, one history per
    /// [`Baseline`](share_regression::Baseline) at most.
    pub histories: &'a [RunHistory],
    /// Rules the other kinds flagged, for kinds that
    /// [look at them](RuleKind::reads_findings).
    pub flagged: &'a [String],
    /// What the agent reported of the runtime (language, version, flags,
    /// libraries), for kinds that [read it](RuleKind::reads_runtime).
    pub runtime: Option<&'a ProfileRuntime>,
}

impl<'a> ProfileInput<'a> {
    pub fn new(service: &'a str, data: &'a ProfileFrames) -> Self {
        ProfileInput {
            service,
            data,
            histories: &[],
            flagged: &[],
            runtime: None,
        }
    }
}

/// How much of a profile a rule matched.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence {
    pub matched: u64,
    pub total: u64,
    /// Matching stacks, heaviest first, at most [`TOP_STACKS`].
    pub stacks: Vec<StackHit>,
    /// For kinds whose measure is not the matched share of samples (a
    /// growth in points): compared with the threshold instead.
    pub score_pct: Option<f64>,
    /// Flagged whatever the threshold (a rule newly hit).
    pub flag: bool,
    /// What the kind found, for people (stored with the detection).
    pub detail: serde_json::Value,
}

/// One rule kind's check, compiled from the rule's `spec`.
pub trait RuleKind: Send + Sync + fmt::Debug {
    fn measure(&self, profile: &ProfileInput<'_>) -> Evidence;

    /// Kinds that read [`ProfileInput::flagged`] run after the others.
    fn reads_findings(&self) -> bool {
        false
    }

    /// How many previous runs of a schedule the kind compares with, if it
    /// reads [`ProfileInput::histories`].
    fn history_runs(&self) -> Option<usize> {
        None
    }

    /// Whether the kind reads [`ProfileInput::runtime`], which then has to
    /// be loaded.
    fn reads_runtime(&self) -> bool {
        false
    }

    /// How the kind, measuring a running profile, reads the stacks with
    /// this frame: a worker keeps apart only the stacks of its running
    /// profiles that some rule reads, and sums the others as one. Such a
    /// profile has no histories yet. Every stack, unless the kind says
    /// less.
    fn reads_running_frame(&self, _frame: &FrameRef) -> FrameRead {
        FrameRead::Anywhere
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    #[error("rule {id}: unknown kind {kind:?}")]
    UnknownKind { id: String, kind: String },
    #[error("rule {id}: invalid spec: {reason}")]
    InvalidSpec { id: String, reason: SpecError },
    #[error("rule {id}: threshold {threshold} is not a percentage")]
    InvalidThreshold { id: String, threshold: f64 },
}

/// Why a rule kind's `spec` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// Not the kind's shape: a missing, unknown or mistyped field.
    #[error("{0}")]
    Shape(#[from] serde_json::Error),
    #[error("{field}: {source}")]
    Pattern {
        field: &'static str,
        source: regex::Error,
    },
    #[error("{field}: {source}")]
    Versions {
        field: &'static str,
        source: version::RangeError,
    },
    #[error("previous_runs must be 1 to 50")]
    PreviousRuns,
    #[error("min_share_pct must be a percentage")]
    MinSharePct,
    #[error("k_stderr must be a number from 0 to 20")]
    KStderr,
    #[error("a runtime_option rule needs `flag`, `version` or both")]
    NothingToMatch,
}

/// Builds the check of a rule's kind.
fn compile_kind(def: &RuleDef) -> Result<Box<dyn RuleKind>, RuleError> {
    let invalid = |reason: SpecError| RuleError::InvalidSpec {
        id: def.id.clone(),
        reason,
    };
    match def.kind.as_str() {
        stack_share::KIND => Ok(Box::new(
            stack_share::StackShare::from_spec(&def.spec).map_err(invalid)?,
        )),
        share_regression::KIND => Ok(Box::new(
            share_regression::ShareRegression::from_spec(&def.spec).map_err(invalid)?,
        )),
        library_version::KIND => Ok(Box::new(
            library_version::LibraryVersion::from_spec(&def.spec).map_err(invalid)?,
        )),
        runtime_option::KIND => Ok(Box::new(
            runtime_option::RuntimeOption::from_spec(&def.spec).map_err(invalid)?,
        )),
        other => Err(RuleError::UnknownKind {
            id: def.id.clone(),
            kind: other.to_owned(),
        }),
    }
}

/// Checks a rule as an admin submits it (disabled or not): its thresholds
/// are percentages and its kind's spec compiles.
pub fn validate(def: &RuleDef) -> Result<(), RuleError> {
    check(def).map(drop)
}

fn check(def: &RuleDef) -> Result<Box<dyn RuleKind>, RuleError> {
    let valid = |t: f64| (0.0..=100.0).contains(&t);
    if let Some(&threshold) = std::iter::once(&def.threshold_pct)
        .chain(def.service_thresholds.values())
        .find(|t| !valid(**t))
    {
        return Err(RuleError::InvalidThreshold {
            id: def.id.clone(),
            threshold,
        });
    }
    compile_kind(def)
}

/// Who a profile profiles: what its service is derived from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProfileIdentity {
    pub target: Option<Target>,
    /// The profile's host, or failing a profile row, the first snapshot's.
    pub host: Option<String>,
    /// The service recorded with the request, when the schema has one.
    pub service: Option<String>,
    /// The profile ended normally (finished or stopped).
    pub ended: bool,
    /// The run the profile is a member of: the run's own evaluation
    /// alerts for the rules it judges ([`RuleSet::judged_per_run`]).
    pub run: Option<uuid::Uuid>,
}

/// The service a profile belongs to, what per-service thresholds are keyed
/// by: the service recorded with the request if any, else the target's
/// process name, else (profiled by pid, command line or cgroup, which name
/// no single program) the host.
pub fn service_of(identity: &ProfileIdentity) -> String {
    if let Some(service) = &identity.service {
        return service.clone();
    }
    match &identity.target {
        Some(Target::ProcessName(name)) => name.clone(),
        Some(Target::Pid(_) | Target::CommandLine(_) | Target::Cgroup(_) | Target::Imported(_))
        | None => identity.host.clone().unwrap_or_default(),
    }
}

#[derive(Debug)]
struct CompiledRule {
    def: RuleDef,
    kind: Box<dyn RuleKind>,
}

/// The enabled rules, compiled.
#[derive(Debug, Default)]
pub struct RuleSet {
    rules: Vec<CompiledRule>,
}

impl RuleSet {
    /// Compiles the enabled rules; a rule that does not compile is returned
    /// as an error and left out, so one bad rule never disables the others.
    pub fn compile(defs: impl IntoIterator<Item = RuleDef>) -> (RuleSet, Vec<RuleError>) {
        let mut set = RuleSet::default();
        let mut errors = Vec::new();
        for def in defs.into_iter().filter(|d| d.enabled) {
            match check(&def) {
                Ok(kind) => set.rules.push(CompiledRule { def, kind }),
                Err(e) => errors.push(e),
            }
        }
        (set, errors)
    }

    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules that flag this profile: those matching at least one sample
    /// with a share at or above their threshold for its service.
    /// Kinds that read other rules' findings run second, seeing the first
    /// pass's.
    pub fn evaluate(&self, profile: &ProfileInput<'_>) -> Vec<Detection> {
        let (late, early): (Vec<&CompiledRule>, Vec<&CompiledRule>) =
            self.rules.iter().partition(|r| r.kind.reads_findings());
        let mut found: Vec<Detection> = early
            .into_iter()
            .filter_map(|rule| rule.check(profile))
            .collect();
        if !late.is_empty() {
            let flagged: Vec<String> = found.iter().map(|d| d.rule_id.clone()).collect();
            let profile = ProfileInput {
                flagged: &flagged,
                ..*profile
            };
            found.extend(late.into_iter().filter_map(|rule| rule.check(&profile)));
        }
        found
    }

    /// The most previous runs any enabled rule compares with: `None` when
    /// none reads a schedule's history, which then need not be loaded.
    pub fn history_runs(&self) -> Option<usize> {
        self.rules
            .iter()
            .filter_map(|r| r.kind.history_runs())
            .max()
    }

    /// Whether any enabled rule reads the profile's runtime: when none
    /// does, it need not be loaded.
    pub fn reads_runtime(&self) -> bool {
        self.rules.iter().any(|r| r.kind.reads_runtime())
    }

    /// How any enabled rule reads the stacks with this frame in a running
    /// profile ([`RuleKind::reads_running_frame`]).
    pub fn running_frame_read(&self, frame: &FrameRef) -> FrameRead {
        let reads = self.rules.iter().map(|r| r.kind.reads_running_frame(frame));
        reads.max().unwrap_or(FrameRead::Never)
    }

    /// [`RuleSet::running_frame_read`] as the reads of a table of running
    /// profiles' stacks.
    pub fn running_reads(self: &Arc<Self>) -> FrameReads {
        let rules = self.clone();
        FrameReads::new(move |frame| rules.running_frame_read(frame))
    }

    /// Whether `other` holds the same enabled rules, as written: rules
    /// are re-read every minute, and most often nothing changed.
    pub fn same_rules(&self, other: &RuleSet) -> bool {
        self.rules.len() == other.rules.len()
            && self
                .rules
                .iter()
                .zip(&other.rules)
                .all(|(a, b)| a.def == b.def)
    }

    /// Whether a run's merged samples judge this rule: kinds that read one
    /// process's runtime or a schedule's history are judged per profile,
    /// and so are rules this set does not hold.
    pub fn judged_per_run(&self, rule_id: &str) -> bool {
        self.rule(rule_id)
            .is_some_and(|r| !r.kind.reads_runtime() && r.kind.history_runs().is_none())
    }

    /// The share (or score) of `profile` the rule measures, whether or not
    /// it reaches the threshold: how one host of a run compares with the
    /// others on a finding of the whole run. `None` for an unknown rule or
    /// nothing matched.
    pub fn measure(&self, rule_id: &str, profile: &ProfileInput<'_>) -> Option<f64> {
        let rule = self.rule(rule_id)?;
        CompiledRule::share(&rule.kind.measure(profile))
    }

    fn rule(&self, rule_id: &str) -> Option<&CompiledRule> {
        self.rules.iter().find(|r| r.def.id == rule_id)
    }
}

impl CompiledRule {
    /// The share of samples matched, or the kind's own score.
    fn share(evidence: &Evidence) -> Option<f64> {
        match evidence.score_pct {
            Some(score) => Some(score),
            None if evidence.matched == 0 || evidence.total == 0 => None,
            None => Some(evidence.matched as f64 * 100.0 / evidence.total as f64),
        }
    }

    /// The detection if the rule flags the profile.
    fn check(&self, profile: &ProfileInput<'_>) -> Option<Detection> {
        let evidence = self.kind.measure(profile);
        let threshold = self.def.threshold_for(profile.service);
        let share = Self::share(&evidence)?;
        let above = match evidence.score_pct {
            Some(score) => score > 0.0 && score >= threshold,
            None => share >= threshold,
        };
        (above || evidence.flag).then(|| Detection {
            rule_id: self.def.id.clone(),
            share,
            threshold_pct: threshold,
            samples_matched: evidence.matched,
            samples_total: evidence.total,
            stacks: evidence.stacks,
            detail: evidence.detail,
        })
    }
}

/// Bound on compiled pattern size: rules are admin input.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Compiles a spec's pattern, naming the field in the error.
pub(crate) fn regex(field: &'static str, pattern: &str) -> Result<regex::Regex, SpecError> {
    regex::RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|source| SpecError::Pattern { field, source })
}

/// Parses a spec's version range, naming the field in the error.
pub(crate) fn versions(field: &'static str, text: &str) -> Result<version::Range, SpecError> {
    version::Range::parse(text).map_err(|source| SpecError::Versions { field, source })
}

/// Evidence of a match on the whole profile (its runtime, not some of its
/// stacks): every sample counts, so any threshold flags it.
pub(crate) fn whole_profile(profile: &ProfileInput<'_>, detail: serde_json::Value) -> Evidence {
    Evidence {
        matched: profile.data.samples,
        total: profile.data.samples,
        detail,
        ..Evidence::default()
    }
}

/// The heaviest `TOP_STACKS` of `hits`, ties broken by id for stable output.
pub(crate) fn top_stacks(mut hits: Vec<StackHit>) -> Vec<StackHit> {
    hits.sort_unstable_by(|a, b| b.count.cmp(&a.count).then(a.stack_id.cmp(&b.stack_id)));
    hits.truncate(TOP_STACKS);
    hits
}

/// Test helper: an enabled `stack_share` rule.
#[cfg(test)]
pub(crate) fn stack_share_rule(id: &str, spec: serde_json::Value, threshold: f64) -> RuleDef {
    RuleDef {
        id: id.into(),
        title: "t".into(),
        explanation: "e".into(),
        fix: "f".into(),
        link: "https://example.invalid".into(),
        kind: stack_share::KIND.into(),
        spec,
        threshold_pct: threshold,
        service_thresholds: Default::default(),
        enabled: true,
    }
}

/// Test helper: a profile from stacks of `(function, module)` frames.
#[cfg(test)]
pub(crate) fn profile(stacks: &[(&[(&str, &str)], u64)]) -> ProfileFrames {
    use odp_profile::{FrameRef, StackSamples};
    use std::collections::HashMap;
    let mut frames: Vec<FrameRef> = Vec::new();
    let mut index: HashMap<(String, String), u32> = HashMap::new();
    let mut data = ProfileFrames::default();
    for (n, (stack, count)) in stacks.iter().enumerate() {
        let ids = stack
            .iter()
            .map(|(f, m)| {
                *index
                    .entry((f.to_string(), m.to_string()))
                    .or_insert_with(|| {
                        frames.push(FrameRef {
                            function: f.to_string(),
                            module: m.to_string(),
                        });
                        frames.len() as u32 - 1
                    })
            })
            .collect();
        data.stacks.push(StackSamples {
            stack_id: uuid::Uuid::from_u128(n as u128 + 1),
            frames: ids,
            count: *count,
        });
        data.samples += count;
    }
    data.frames = frames;
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::stack_share_rule as def;

    #[test]
    fn per_service_thresholds_override_the_rule_s() {
        let mut rule = def("r", serde_json::json!({"function": "^hot$"}), 10.0);
        rule.service_thresholds.insert("checkout".into(), 50.0);
        let (set, errors) = RuleSet::compile([rule]);
        assert!(errors.is_empty(), "{errors:?}");
        let data = profile(&[(&[("main", ""), ("hot", "")], 20), (&[("main", "")], 80)]);
        let at = |service| set.evaluate(&ProfileInput::new(service, &data));
        let flagged = at("search");
        assert_eq!(flagged.len(), 1);
        assert_eq!((flagged[0].share, flagged[0].threshold_pct), (20.0, 10.0));
        assert!(at("checkout").is_empty(), "20% is under checkout's 50%");
    }

    #[test]
    fn bad_rules_are_reported_and_left_out() {
        let mut unknown = def("k", serde_json::json!({}), 1.0);
        unknown.kind = "nope".into();
        let mut disabled = def("d", serde_json::json!({"function": "x"}), 1.0);
        disabled.enabled = false;
        let (set, errors) = RuleSet::compile([
            def("ok", serde_json::json!({"function": "x"}), 1.0),
            def("regex", serde_json::json!({"function": "("}), 1.0),
            def("pct", serde_json::json!({"function": "x"}), 101.0),
            unknown,
            disabled,
        ]);
        assert_eq!(set.len(), 1);
        assert_eq!(errors.len(), 3, "{errors:?}");
    }

    #[test]
    fn runtime_kinds_validate_and_load_the_runtime_only_when_enabled() {
        let mut library = def("lib", serde_json::json!({"library": "^log4j$"}), 0.0);
        library.kind = library_version::KIND.into();
        let mut option = def("opt", serde_json::json!({"flag": "^-Xint$"}), 0.0);
        option.kind = runtime_option::KIND.into();
        assert!(validate(&library).is_ok() && validate(&option).is_ok());
        let (set, _) = RuleSet::compile([library.clone(), option.clone()]);
        assert!(set.reads_runtime());
        library.enabled = false;
        option.enabled = false;
        let stacks = def("s", serde_json::json!({"function": "x"}), 1.0);
        let (set, _) = RuleSet::compile([library.clone(), option, stacks]);
        assert!(!set.reads_runtime(), "disabled rules need no runtime");
        library.spec = serde_json::json!({"library": "^log4j$", "versions": "1.2"});
        assert_eq!(
            validate(&library).unwrap_err().to_string(),
            "rule lib: invalid spec: versions: comparator `1.2` needs an operator: \
             <, <=, >, >=, = or !="
        );
    }

    #[test]
    fn running_profiles_keep_the_stacks_some_rule_reads() {
        let hot = def("hot", serde_json::json!({"function": "^hot$"}), 1.0);
        let lock = def(
            "lock",
            serde_json::json!({"function": "^lock$", "leaf_only": true}),
            1.0,
        );
        let mut library = def("lib", serde_json::json!({"library": "^log4j$"}), 0.0);
        library.kind = library_version::KIND.into();
        let mut regression = def("reg", serde_json::json!({}), 1.0);
        regression.kind = share_regression::KIND.into();
        let (set, errors) = RuleSet::compile([hot.clone(), lock, library, regression]);
        assert!(errors.is_empty(), "{errors:?}");
        let frame = |name: &str| FrameRef {
            function: name.into(),
            module: String::new(),
        };
        let read = |name| set.running_frame_read(&frame(name));
        assert_eq!(read("hot"), FrameRead::Anywhere);
        assert_eq!(read("lock"), FrameRead::AsLeaf);
        assert_eq!(read("main"), FrameRead::Never, "no kind reads it");
        // Rules re-read as they were are the same rules; an edit is not.
        let (again, _) = RuleSet::compile(set.rules.iter().map(|r| r.def.clone()));
        assert!(set.same_rules(&again));
        let mut edited = hot;
        edited.spec = serde_json::json!({"function": "^hotter$"});
        let (other, _) = RuleSet::compile([edited]);
        assert!(!set.same_rules(&other));
    }

    #[test]
    fn services_come_from_the_request_target_or_host() {
        let id = |service: Option<&str>, target| ProfileIdentity {
            target,
            host: Some("h-1".into()),
            service: service.map(str::to_owned),
            ended: false,
            run: None,
        };
        assert_eq!(service_of(&id(Some("svc"), Some(Target::Pid(1)))), "svc");
        assert_eq!(
            service_of(&id(None, Some(Target::ProcessName("demo".into())))),
            "demo"
        );
        assert_eq!(service_of(&id(None, Some(Target::Pid(7)))), "h-1");
        assert_eq!(service_of(&id(None, None)), "h-1");
    }
}
