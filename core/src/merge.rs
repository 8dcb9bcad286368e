//! Two-level merge of the stacks of many instances of a service, as in
//! Atys (section 4.2 of the paper in the seeds): each instance's stacks are
//! first merged into one map per instance (identical stacks added up), then
//! the per-instance maps are merged by identical call chains into one
//! service-wide set, keeping each instance's total for a breakdown. Both
//! levels are hash maps, so the work is linear in the input.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::model::WeightedStack;

/// The stacks one instance (host) reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceStacks {
    pub instance: String,
    pub stacks: Vec<WeightedStack>,
}

/// One instance's share of a merged set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceTotal {
    pub instance: String,
    pub samples: u64,
    /// Distinct stacks after the first level.
    pub stacks: usize,
}

/// The service-wide stacks, sorted by frames, and the per-instance totals
/// sorted by instance name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergedStacks {
    pub samples: u64,
    pub stacks: Vec<WeightedStack>,
    pub instances: Vec<InstanceTotal>,
}

/// First level: one instance's identical stacks added up.
fn merge_instance(stacks: &[WeightedStack]) -> HashMap<&[String], u64> {
    let mut merged: HashMap<&[String], u64> = HashMap::with_capacity(stacks.len());
    for stack in stacks {
        if stack.count == 0 || stack.frames.is_empty() {
            continue;
        }
        *merged.entry(stack.frames.as_slice()).or_insert(0) += stack.count;
    }
    merged
}

/// Merges instances in two levels. Instances with the same name (one host
/// reported twice) are merged into one entry of the breakdown.
pub fn merge_instances(instances: &[InstanceStacks]) -> MergedStacks {
    let mut totals: HashMap<&str, (u64, usize)> = HashMap::new();
    let mut service: HashMap<&[String], u64> = HashMap::new();
    for instance in instances {
        let local = merge_instance(&instance.stacks);
        let total = totals.entry(instance.instance.as_str()).or_insert((0, 0));
        total.1 += local.len();
        for (frames, count) in local {
            total.0 += count;
            *service.entry(frames).or_insert(0) += count;
        }
    }
    let mut stacks: Vec<WeightedStack> = service
        .into_iter()
        .map(|(frames, count)| WeightedStack {
            frames: frames.to_vec(),
            count,
        })
        .collect();
    stacks.sort_unstable_by(|a, b| a.frames.cmp(&b.frames));
    let mut instances: Vec<InstanceTotal> = totals
        .into_iter()
        .map(|(instance, (samples, stacks))| InstanceTotal {
            instance: instance.to_owned(),
            samples,
            stacks,
        })
        .collect();
    instances.sort_unstable_by(|a, b| a.instance.cmp(&b.instance));
    MergedStacks {
        samples: instances.iter().map(|i| i.samples).sum(),
        stacks,
        instances,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::folded::to_folded;
    use proptest::prelude::*;

    fn ws(frames: &[&str], count: u64) -> WeightedStack {
        WeightedStack {
            frames: frames.iter().map(|s| s.to_string()).collect(),
            count,
        }
    }

    fn instance(name: &str, stacks: Vec<WeightedStack>) -> InstanceStacks {
        InstanceStacks {
            instance: name.into(),
            stacks,
        }
    }

    #[test]
    fn merges_within_then_across_instances() {
        let merged = merge_instances(&[
            instance(
                "b",
                vec![
                    ws(&["main", "hot"], 4),
                    ws(&["main", "hot"], 2),
                    ws(&["main"], 1),
                ],
            ),
            instance("a", vec![ws(&["main", "hot"], 3), ws(&["main", "spin"], 5)]),
        ]);
        assert_eq!(merged.samples, 15);
        assert_eq!(
            merged.stacks,
            vec![
                ws(&["main"], 1),
                ws(&["main", "hot"], 9),
                ws(&["main", "spin"], 5)
            ]
        );
        assert_eq!(
            merged.instances,
            vec![
                InstanceTotal {
                    instance: "a".into(),
                    samples: 8,
                    stacks: 2
                },
                InstanceTotal {
                    instance: "b".into(),
                    samples: 7,
                    stacks: 2
                },
            ]
        );
    }

    #[test]
    fn skips_empty_and_zero_stacks() {
        let merged = merge_instances(&[instance("a", vec![ws(&[], 3), ws(&["x"], 0)])]);
        assert_eq!(merged.samples, 0);
        assert!(merged.stacks.is_empty());
        assert_eq!(merged.instances[0].samples, 0);
        assert_eq!(merge_instances(&[]), MergedStacks::default());
    }

    proptest! {
        #[test]
        fn merged_equals_all_stacks_folded_together(groups in proptest::collection::vec(
            proptest::collection::vec((proptest::collection::vec("[a-c]", 1..4), 1u64..50), 0..10), 0..5)) {
            let instances: Vec<InstanceStacks> = groups.into_iter().enumerate().map(|(i, stacks)| instance(
                &format!("host-{}", i % 3),
                stacks.into_iter().map(|(frames, count)| WeightedStack { frames, count }).collect(),
            )).collect();
            let all: Vec<WeightedStack> = instances.iter().flat_map(|i| i.stacks.clone()).collect();
            let merged = merge_instances(&instances);
            prop_assert_eq!(to_folded(&merged.stacks), to_folded(&all));
            prop_assert_eq!(merged.samples, all.iter().map(|s| s.count).sum::<u64>());
            prop_assert_eq!(merged.instances.iter().map(|i| i.samples).sum::<u64>(), merged.samples);
        }
    }
}
