//! A window's stacks by their frames' names, as a pprof file holds them
//! (the storage benches' baseline).

use odp_core::{Snapshot, WeightedStack};

pub(crate) fn named_stacks(snapshot: &Snapshot) -> Vec<WeightedStack> {
    snapshot
        .stacks
        .iter()
        .map(|s| WeightedStack {
            frames: s
                .frames
                .iter()
                .map(|&i| snapshot.frames[i as usize].function.clone())
                .collect(),
            count: s.count,
        })
        .collect()
}
