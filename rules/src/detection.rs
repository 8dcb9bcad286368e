//! What a rule found in a profile.

use std::collections::HashMap;

use odp_profile::ProfileFrames;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// One of the heaviest stacks behind a detection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackHit {
    pub stack_id: Uuid,
    pub count: u64,
    /// The stack's frame names, root first, kept with the detection (the
    /// profile's blocks hold the stack, no global table does); empty in
    /// detections saved before, whose stacks are looked up by id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frames: Vec<String>,
}

impl StackHit {
    pub fn new(stack_id: Uuid, count: u64) -> StackHit {
        StackHit {
            stack_id,
            count,
            frames: Vec::new(),
        }
    }
}

/// A rule's finding on one profile, as evaluation writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Detection {
    pub rule_id: String,
    /// Matched samples as a percentage of all the profile's samples.
    pub share: f64,
    /// The threshold that applied (after per-service overrides).
    pub threshold_pct: f64,
    pub samples_matched: u64,
    pub samples_total: u64,
    pub stacks: Vec<StackHit>,
    /// What the rule kind found beyond the share (e.g. a regression's grown
    /// functions), for people.
    #[serde(default)]
    pub detail: serde_json::Value,
}

/// Writes each hit stack's frame names into it, from the profile they were
/// found in: detections keep them, as no global table of stacks does.
pub fn name_stacks(found: &mut [Detection], data: &ProfileFrames) {
    let by_id: HashMap<Uuid, &[u32]> = data
        .stacks
        .iter()
        .map(|s| (s.stack_id, s.frames.as_slice()))
        .collect();
    for hit in found.iter_mut().flat_map(|d| d.stacks.iter_mut()) {
        if let Some(frames) = by_id.get(&hit.stack_id) {
            hit.frames = frames
                .iter()
                .map(|&i| {
                    let frame = &data.frames[i as usize];
                    odp_core::model::display_name(&frame.function, &frame.module)
                })
                .collect();
        }
    }
}
