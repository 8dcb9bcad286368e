//! `stack_share`: the share of samples whose stack contains a frame
//! matching a pattern (regex on the function, optionally on the module),
//! anywhere or only as the leaf. Each sample counts once however many of
//! its frames match.
//!
//! `events` limits a rule to profiles of those events: a contention rule
//! reads time spent off CPU or waiting for locks, and would only mislead on
//! a CPU profile (or the other way round). Without it a rule reads every
//! profile.

use regex::Regex;
use serde::Deserialize;

use crate::StackHit;
use crate::{regex, top_stacks, Evidence, ProfileInput, RuleKind, SpecError};
use odp_core::EventKind;
use odp_profile::{FrameRead, FrameRef};

pub const KIND: &str = "stack_share";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    function: String,
    #[serde(default)]
    module: Option<String>,
    #[serde(default)]
    leaf_only: bool,
    #[serde(default)]
    events: Option<Vec<EventKind>>,
}

#[derive(Debug)]
pub struct StackShare {
    function: Regex,
    module: Option<Regex>,
    leaf_only: bool,
    events: Option<Vec<EventKind>>,
}

impl StackShare {
    pub fn from_spec(spec: &serde_json::Value) -> Result<Self, SpecError> {
        let spec = Spec::deserialize(spec)?;
        Ok(StackShare {
            function: regex("function", &spec.function)?,
            module: spec
                .module
                .as_deref()
                .map(|m| regex("module", m))
                .transpose()?,
            leaf_only: spec.leaf_only,
            events: spec.events,
        })
    }

    fn matches(&self, frame: &FrameRef) -> bool {
        self.function.is_match(&frame.function)
            && self
                .module
                .as_ref()
                .is_none_or(|m| m.is_match(&frame.module))
    }
}

impl RuleKind for StackShare {
    fn measure(&self, profile: &ProfileInput<'_>) -> Evidence {
        let data = profile.data;
        if let Some(events) = &self.events {
            if !data.event.is_some_and(|e| events.contains(&e)) {
                return Evidence::default();
            }
        }
        // Each distinct frame is matched once, not once per stack.
        let matches: Vec<bool> = data.frames.iter().map(|f| self.matches(f)).collect();
        let mut matched = 0u64;
        let mut total = 0u64;
        let mut hits = Vec::new();
        for stack in &data.stacks {
            total += stack.count;
            let hit = if self.leaf_only {
                stack.frames.last().is_some_and(|&i| matches[i as usize])
            } else {
                stack.frames.iter().any(|&i| matches[i as usize])
            };
            if hit {
                matched += stack.count;
                hits.push(StackHit::new(stack.stack_id, stack.count));
            }
        }
        Evidence {
            matched,
            total,
            stacks: top_stacks(hits),
            ..Evidence::default()
        }
    }

    fn reads_running_frame(&self, frame: &FrameRef) -> FrameRead {
        match (self.matches(frame), self.leaf_only) {
            (false, _) => FrameRead::Never,
            (true, true) => FrameRead::AsLeaf,
            (true, false) => FrameRead::Anywhere,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile;

    fn measure(spec: serde_json::Value, data: &odp_profile::ProfileFrames) -> Evidence {
        StackShare::from_spec(&spec)
            .unwrap()
            .measure(&ProfileInput::new("s", data))
    }

    #[test]
    fn leaf_only_counts_only_stacks_ending_in_a_match() {
        let data = profile(&[
            (&[("main", ""), ("lock", ""), ("futex", "")], 30),
            (&[("main", ""), ("lock", "")], 10),
            (&[("main", "")], 60),
        ]);
        let anywhere = measure(serde_json::json!({"function": "^lock$"}), &data);
        assert_eq!((anywhere.matched, anywhere.total), (40, 100));
        let leaf = measure(
            serde_json::json!({"function": "^lock$", "leaf_only": true}),
            &data,
        );
        assert_eq!((leaf.matched, leaf.total), (10, 100));
        assert_eq!(leaf.stacks.len(), 1);
    }

    #[test]
    fn samples_count_once_however_many_frames_match() {
        let data = profile(&[
            (&[("rec", ""), ("rec", ""), ("rec", "")], 5),
            (&[("other", "")], 5),
        ]);
        let e = measure(serde_json::json!({"function": "rec"}), &data);
        assert_eq!((e.matched, e.total), (5, 10));
    }

    #[test]
    fn module_patterns_narrow_function_matches() {
        let data = profile(&[
            (&[("compile", "/usr/lib/python3.11/re/__init__.py")], 3),
            (&[("compile", "/app/templates.py")], 7),
        ]);
        let e = measure(
            serde_json::json!({"function": "^compile$", "module": "/re/"}),
            &data,
        );
        assert_eq!(e.matched, 3);
    }

    #[test]
    fn keeps_the_heaviest_matching_stacks() {
        let stacks: Vec<(Vec<(&str, &str)>, u64)> = (1..=8)
            .map(|n| (vec![("hot", ""), ("leaf", "")], n))
            .collect();
        let refs: Vec<(&[(&str, &str)], u64)> =
            stacks.iter().map(|(s, c)| (s.as_slice(), *c)).collect();
        let e = measure(serde_json::json!({"function": "hot"}), &profile(&refs));
        let counts: Vec<u64> = e.stacks.iter().map(|s| s.count).collect();
        assert_eq!(counts, vec![8, 7, 6, 5, 4]);
    }

    #[test]
    fn events_limit_a_rule_to_profiles_of_those_events() {
        let mut data = profile(&[(&[("main", ""), ("futex_wait", "")], 10)]);
        let spec = serde_json::json!({"function": "futex", "events": ["off-cpu", "wall"]});
        data.event = Some(EventKind::OffCpu);
        assert_eq!(measure(spec.clone(), &data).matched, 10);
        data.event = Some(EventKind::CpuClock);
        assert_eq!(measure(spec.clone(), &data), Evidence::default());
        data.event = None;
        assert_eq!(measure(spec, &data), Evidence::default());
        let unknown = serde_json::json!({"function": "x", "events": ["naps"]});
        assert!(StackShare::from_spec(&unknown).is_err());
    }

    #[test]
    fn rejects_bad_specs() {
        assert!(StackShare::from_spec(&serde_json::json!({"function": "("})).is_err());
        assert!(StackShare::from_spec(&serde_json::json!({"fn": "x"})).is_err());
        assert!(StackShare::from_spec(&serde_json::json!({})).is_err());
    }
}
