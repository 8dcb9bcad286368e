//! From an `ExportProfilesServiceRequest` to the ODP profiles it makes.
//!
//! Each OTLP profile is mapped on its own: one that cannot be (an index
//! out of range, a sample type ODP does not count, a timestamp outside
//! the profile, a stack deeper than ODP keeps) is refused whole, with a
//! message naming it, and the others are kept. Only a request whose
//! dictionary is itself malformed (a non-zero null entry) is refused
//! whole.
//!
//! Samples' `thread.id` and `thread.name` attributes are their thread, as
//! the agent's own samples carry theirs, so reads select by thread. Other
//! sample attributes become labels of the profile when all its samples
//! agree on them (a label is a profile's); those that differ are named in
//! the answer's message.
//!
//! A profile's samples linked to a span (`Sample.link_index`) are kept
//! as a profile of their own per trace, labelled `trace_id` (and
//! `span_id` when they share one span), so reads filter on a trace with
//! the `labels` filter; at most [`MAX_TRACE_PROFILES`] traces per
//! request, beyond which linked samples stay in their profile's
//! unlinked part. The parts partition the samples: summed, they are the
//! profile.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use odp_core::model::EventKind;
use odp_core::{StackCount, ThreadInfo};
use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::profiles::v1development::{
    Profile, ProfilesDictionary, ResourceProfiles, ScopeProfiles,
};
use prost::Message;

use super::dictionary::{self, hex, Dictionary, SpanLink, THREAD_NAME};
use super::labels::{self, LabelSet, Origin};
use super::values::{observed, TimeRange};
use crate::error::ApiError;
use crate::formats::Framed;
use crate::ingest::pprof_events::{self, known_types, Measure};
use crate::ingest::{digest_hex, Incoming};

/// Most profiles of linked traces one request makes.
pub(super) const MAX_TRACE_PROFILES: usize = 64;

/// What a request maps to.
#[derive(Debug, Default)]
pub(super) struct Mapped {
    /// Per OTLP profile, in request order: its ODP profiles (the
    /// unlinked part first, then one per linked trace), or why it is
    /// refused.
    pub profiles: Vec<Result<Vec<Incoming>, String>>,
    /// What was kept but not all of it (attributes that are no labels,
    /// links past the bound), once each.
    pub warnings: BTreeSet<String>,
}

/// Sample types OTLP producers name that pprof's do not.
const OTLP_MEASURES: &[(&str, &str, EventKind)] = &[
    ("off_cpu", "nanoseconds", EventKind::OffCpu),
    ("allocated_space", "bytes", EventKind::AllocBytes),
];

pub(super) fn map(request: &ExportProfilesServiceRequest) -> Result<Mapped, ApiError> {
    let empty = ProfilesDictionary::default();
    let tables = request.dictionary.as_ref().unwrap_or(&empty);
    dictionary::check_null_entries(tables).map_err(ApiError::BadRequest)?;
    let mut mapper = Mapper {
        dict: Dictionary::new(tables),
        tables,
        tables_digest: None,
        traces_left: MAX_TRACE_PROFILES,
        unlisted_traces: HashSet::new(),
        unlisted_samples: 0,
        warnings: BTreeSet::new(),
    };
    let mut profiles = Vec::new();
    for (r, resource) in request.resource_profiles.iter().enumerate() {
        let origin = mapper.origin(resource);
        for (s, scope) in resource.scope_profiles.iter().enumerate() {
            let scope_labels = match &scope.scope {
                Some(scope) => {
                    labels::key_values(&mapper.dict, &scope.attributes, &mut mapper.warnings)
                }
                None => Ok(Vec::new()),
            };
            for (p, profile) in scope.profiles.iter().enumerate() {
                let path = format!("resource_profiles[{r}].scope_profiles[{s}].profiles[{p}]");
                let mapped = match (&origin, &scope_labels) {
                    (Err(e), _) | (_, Err(e)) => Err(e.clone()),
                    (Ok(origin), Ok(scope_labels)) => {
                        let from = Place {
                            origin,
                            scope_labels,
                            resource,
                            scope,
                        };
                        mapper.profile(&from, profile)
                    }
                };
                profiles.push(mapped.map_err(|e| format!("{path}: {e}")));
            }
        }
    }
    if !mapper.unlisted_traces.is_empty() {
        mapper.warnings.insert(format!(
            "{} samples linked to {} more traces are kept without a trace_id label: at most \
             {MAX_TRACE_PROFILES} traces a request become profiles of their own",
            mapper.unlisted_samples,
            mapper.unlisted_traces.len()
        ));
    }
    Ok(Mapped {
        profiles,
        warnings: mapper.warnings,
    })
}

struct Mapper<'a> {
    dict: Dictionary<'a>,
    tables: &'a ProfilesDictionary,
    /// A digest of the dictionary, for the identity of profiles without
    /// a `profile_id`.
    tables_digest: Option<String>,
    traces_left: usize,
    unlisted_traces: HashSet<String>,
    unlisted_samples: u64,
    warnings: BTreeSet<String>,
}

/// Where a profile came from.
struct Place<'r> {
    origin: &'r Origin,
    scope_labels: &'r [(String, String)],
    resource: &'r ResourceProfiles,
    scope: &'r ScopeProfiles,
}

/// One part of a profile: its unlinked samples, or one trace's.
#[derive(Default)]
struct Part {
    link: Option<SpanLink>,
    /// Whether all its samples share `link`'s span.
    one_span: bool,
    /// Values by stack index and thread.
    counts: HashMap<(i32, u32), u64>,
    /// The names of its threads.
    threads: BTreeMap<u32, String>,
    /// Attribute indexes every sample so far carries.
    common: Option<Vec<i32>>,
    /// Attribute indexes some samples carry and others do not.
    differing: HashSet<i32>,
}

impl Part {
    fn observe(&mut self, attributes: &[i32]) {
        match &mut self.common {
            None => self.common = Some(attributes.to_vec()),
            Some(common) if common.as_slice() == attributes => {}
            Some(common) => {
                let differing = &mut self.differing;
                common.retain(|a| {
                    let kept = attributes.contains(a);
                    if !kept {
                        differing.insert(*a);
                    }
                    kept
                });
                differing.extend(attributes.iter().filter(|a| !common.contains(a)));
            }
        }
    }
}

impl Mapper<'_> {
    fn origin(&mut self, resource: &ResourceProfiles) -> Result<Origin, String> {
        let attributes = match &resource.resource {
            Some(r) => labels::key_values(&self.dict, &r.attributes, &mut self.warnings)?,
            None => Vec::new(),
        };
        labels::origin(attributes)
    }

    fn profile(&mut self, from: &Place<'_>, profile: &Profile) -> Result<Vec<Incoming>, String> {
        let measure = self.measure(profile)?;
        let period_nanos = self.period_nanos(profile)?;
        if measure.nanos_per_sample && period_nanos.is_none() {
            return Err(format!(
                "sample type {:?} counts nanoseconds but the profile has no period in \
                 nanoseconds (period_type, period) to count samples by",
                measure.sample_type
            ));
        }
        let mut profile_labels = Vec::with_capacity(profile.attribute_indices.len());
        for &a in &profile.attribute_indices {
            if let Some((key, value)) = self
                .dict
                .attribute(a)?
                .map(|x| (x.key.clone(), x.value.clone()))
            {
                self.keep_scalar(&key, value, &mut profile_labels);
            }
        }
        let mut range = TimeRange::of(profile)?;
        let (parts, empty) = self.samples(profile, &measure, &mut range)?;
        if empty > 0 {
            self.warnings
                .insert(format!("{empty} samples without a stack are not kept"));
        }
        let identity = self.identity(from, profile)?;
        // Sampled events count samples of the period; the others count
        // their own unit (bytes, nanoseconds), one per count.
        let period_nanos = match measure.event {
            EventKind::CpuClock | EventKind::Wall | EventKind::Cycles => {
                period_nanos.map(|p| p as i64)
            }
            _ => Some(1),
        };
        let mut out = Vec::with_capacity(parts.len());
        for part in parts {
            let Some(framed) = self.framed(&part, &measure, period_nanos, &range)? else {
                continue;
            };
            let labels = self.labels(from, &profile_labels, &part);
            let identity = match &part.link {
                None => identity.clone(),
                Some(link) => format!("{identity}/trace/{}", link.trace_id),
            };
            out.push(Incoming {
                service: from.origin.service.clone(),
                host: from.origin.host.clone(),
                labels,
                source: "otlp",
                parsed: framed,
                identity,
            });
        }
        Ok(out)
    }

    /// A part's stacks and threads with the frames they use; `None` when
    /// no sample is left once nanoseconds are counted in periods.
    fn framed(
        &self,
        part: &Part,
        measure: &Measure,
        period_nanos: Option<i64>,
        range: &TimeRange,
    ) -> Result<Option<Framed>, String> {
        let divisor = match (measure.nanos_per_sample, period_nanos) {
            (true, Some(period)) => period as u64,
            _ => 1,
        };
        let mut frames = Vec::new();
        // The part's own frame numbers, by the dictionary's.
        let mut renumbered = vec![u32::MAX; self.dict.frame_count()];
        let mut stacks = Vec::with_capacity(part.counts.len());
        let mut total: u64 = 0;
        for (&(stack, tid), &value) in &part.counts {
            let count = (value + divisor / 2) / divisor;
            if count == 0 {
                continue;
            }
            total = total
                .checked_add(count)
                .filter(|&t| t <= i64::MAX as u64)
                .ok_or_else(|| format!("the sample values add up to more than {}", i64::MAX))?;
            let indexes = self
                .dict
                .resolved_stack(stack)
                .iter()
                .map(|&id| {
                    let own = &mut renumbered[id as usize];
                    if *own == u32::MAX {
                        frames.push(self.dict.frame(id).clone());
                        *own = frames.len() as u32 - 1;
                    }
                    *own
                })
                .collect();
            stacks.push(StackCount {
                frames: indexes,
                tid,
                count,
            });
        }
        if stacks.is_empty() {
            return Ok(None);
        }
        let (time_nanos, duration_nanos) = range.window();
        Ok(Some(Framed {
            frames,
            stacks,
            threads: part
                .threads
                .iter()
                .map(|(&tid, name)| ThreadInfo {
                    tid,
                    name: name.clone(),
                })
                .collect(),
            sample_type: measure.sample_type.clone(),
            event: Some(measure.event),
            period_nanos,
            time_nanos,
            duration_nanos,
        }))
    }

    /// The event the profile's sample type counts.
    fn measure(&self, profile: &Profile) -> Result<Measure, String> {
        let sample_type = profile
            .sample_type
            .ok_or_else(|| "the profile has no sample_type".to_owned())?;
        let name = self.dict.string(sample_type.type_strindex, || {
            "sample_type's type string".into()
        })?;
        let unit = self.dict.string(sample_type.unit_strindex, || {
            "sample_type's unit string".into()
        })?;
        if let Some(measure) = pprof_events::measures(&[(name.to_owned(), unit.to_owned())]).pop() {
            return Ok(measure);
        }
        OTLP_MEASURES
            .iter()
            .find(|(n, u, _)| *n == name && *u == unit)
            .map(|&(_, _, event)| Measure {
                event,
                sample_type: name.to_owned(),
                nanos_per_sample: false,
            })
            .ok_or_else(|| {
                let otlp: Vec<String> = OTLP_MEASURES
                    .iter()
                    .map(|(n, u, _)| format!("{n}/{u}"))
                    .collect();
                format!(
                    "sample type {name}/{unit} measures no ODP event (ODP counts {}, {})",
                    known_types(),
                    otlp.join(", ")
                )
            })
    }

    /// The sampling period, when it is in nanoseconds.
    fn period_nanos(&self, profile: &Profile) -> Result<Option<u64>, String> {
        let Some(period_type) = profile.period_type else {
            return Ok(None);
        };
        self.dict.string(period_type.type_strindex, || {
            "period_type's type string".into()
        })?;
        let unit = self.dict.string(period_type.unit_strindex, || {
            "period_type's unit string".into()
        })?;
        Ok((unit == "nanoseconds" && profile.period > 0).then_some(profile.period as u64))
    }

    fn keep_scalar(&mut self, key: &str, value: Option<String>, into: &mut Vec<(String, String)>) {
        match value {
            Some(value) => into.push((key.to_owned(), value)),
            None => {
                self.warnings.insert(format!(
                    "attribute {key:?} is not kept: labels hold strings, numbers and booleans"
                ));
            }
        }
    }

    /// The profile's samples summed by stack, per part; and how many
    /// samples had no stack.
    fn samples(
        &mut self,
        profile: &Profile,
        measure: &Measure,
        range: &mut TimeRange,
    ) -> Result<(Vec<Part>, u64), String> {
        let mut parts = vec![Part::default()];
        let mut by_trace: HashMap<String, usize> = HashMap::new();
        let mut traces_left = self.traces_left;
        let mut unlisted: HashSet<String> = HashSet::new();
        let mut unlisted_samples = 0;
        let mut empty = 0;
        let mut others = Vec::new();
        for (k, sample) in profile.samples.iter().enumerate() {
            let at = |e: String| format!("sample {k}: {e}");
            let value = observed(sample, measure).map_err(at)?;
            range.check(sample).map_err(at)?;
            let frames = self.dict.stack(sample.stack_index).map_err(at)?.len();
            // The thread, and the attributes that may become labels.
            let (mut tid, mut thread_name) = (0, None);
            others.clear();
            for &a in &sample.attribute_indices {
                match self.dict.attribute(a).map_err(at)? {
                    None => {}
                    Some(attribute) => match attribute.tid {
                        Some(t) => tid = t,
                        None if attribute.key == THREAD_NAME => thread_name = Some(a),
                        None => others.push(a),
                    },
                }
            }
            if tid == 0 {
                // A name without an id is no thread ODP can select.
                others.extend(thread_name.take());
            }
            let link = self.dict.link(sample.link_index).map_err(at)?;
            if frames == 0 {
                empty += 1;
                continue;
            }
            let p = match link {
                None => 0,
                Some(link) => match by_trace.get(link.trace_id.as_str()) {
                    Some(&p) => {
                        let part = &mut parts[p];
                        part.one_span &= part
                            .link
                            .as_ref()
                            .is_some_and(|l| l.span_id == link.span_id);
                        p
                    }
                    None if traces_left > 0 => {
                        traces_left -= 1;
                        by_trace.insert(link.trace_id.clone(), parts.len());
                        parts.push(Part {
                            link: Some(link.clone()),
                            one_span: true,
                            ..Part::default()
                        });
                        parts.len() - 1
                    }
                    None => {
                        if !unlisted.contains(&link.trace_id) {
                            unlisted.insert(link.trace_id.clone());
                        }
                        unlisted_samples += 1;
                        0
                    }
                },
            };
            let part = &mut parts[p];
            let sum = part.counts.entry((sample.stack_index, tid)).or_insert(0);
            *sum = sum
                .checked_add(value)
                .ok_or_else(|| at(format!("the values add up to more than {}", u64::MAX)))?;
            if let Some(name) = thread_name {
                if let Entry::Vacant(entry) = part.threads.entry(tid) {
                    let name = self.dict.attribute(name).ok().flatten();
                    entry.insert(name.and_then(|a| a.value.clone()).unwrap_or_default());
                }
            }
            part.observe(&others);
        }
        self.traces_left = traces_left;
        self.unlisted_samples += unlisted_samples;
        self.unlisted_traces.extend(unlisted);
        Ok((parts, empty))
    }

    /// A part's labels: its trace, then what its origin, its profile and
    /// all its samples say, in the order they are kept.
    fn labels(
        &mut self,
        from: &Place<'_>,
        profile_labels: &[(String, String)],
        part: &Part,
    ) -> odp_store::Labels {
        let mut sample_labels = Vec::new();
        let mut differing = BTreeSet::new();
        for &a in part.common.iter().flatten() {
            if let Ok(Some(attribute)) = self.dict.attribute(a) {
                let (key, value) = (attribute.key.clone(), attribute.value.clone());
                self.keep_scalar(&key, value, &mut sample_labels);
            }
        }
        for &a in &part.differing {
            if let Ok(Some(attribute)) = self.dict.attribute(a) {
                if !sample_labels.iter().any(|(k, _)| *k == attribute.key) {
                    differing.insert(attribute.key.clone());
                }
            }
        }
        if !differing.is_empty() {
            self.warnings.insert(format!(
                "sample attributes {differing:?} differ between the samples of a profile and \
                 are not kept: ODP labels a profile, not its samples"
            ));
        }
        let mut set = LabelSet::new(&mut self.warnings);
        if let Some(link) = &part.link {
            set.push("trace_id", &link.trace_id);
            if part.one_span {
                set.push("span_id", &link.span_id);
            }
        }
        set.extend(&from.origin.first);
        set.extend(profile_labels);
        set.extend(&sample_labels);
        set.extend(&from.origin.rest);
        set.extend(from.scope_labels);
        set.finish()
    }

    /// What names the profile across retries: its `profile_id`, or a
    /// digest of what the request says of it.
    fn identity(&mut self, from: &Place<'_>, profile: &Profile) -> Result<String, String> {
        let id = &profile.profile_id;
        if id.iter().any(|&b| b != 0) {
            if id.len() != 16 {
                return Err(format!("profile_id must be 16 bytes ({} given)", id.len()));
            }
            return Ok(format!("otlp/{}", hex(id)));
        }
        let tables = match &self.tables_digest {
            Some(digest) => digest.clone(),
            None => {
                let digest = digest_hex(&[&self.tables.encode_to_vec()]);
                self.tables_digest = Some(digest.clone());
                digest
            }
        };
        let resource = from.resource.resource.as_ref().map(Message::encode_to_vec);
        let scope = from.scope.scope.as_ref().map(Message::encode_to_vec);
        Ok(format!(
            "otlp-digest/{}",
            digest_hex(&[
                tables.as_bytes(),
                resource.as_deref().unwrap_or_default(),
                from.resource.schema_url.as_bytes(),
                scope.as_deref().unwrap_or_default(),
                from.scope.schema_url.as_bytes(),
                &profile.encode_to_vec(),
            ])
        ))
    }
}
