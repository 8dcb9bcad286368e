//! Each profile's and rollup's selected samples as views, weighted to
//! one scale: the per-host first level of a read (see [`super`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use odp_profile::halves::map_in_halves;
use odp_profile::{scale, weigh, NameTree, NodeSums, Profile, Selection, View};
use uuid::Uuid;

/// What [`select_all`] made of the profiles and rollups read.
pub(super) struct Selected {
    /// Event units per sample of the views (see [`super::ReadResult::period`]).
    pub(super) period: Option<f64>,
    pub(super) host_views: BTreeMap<String, Vec<View>>,
    /// Per host, its samples in the rollups.
    pub(super) host_rolled: BTreeMap<String, u64>,
    pub(super) rollups: Vec<View>,
}

/// Each profile's and rollup's selected samples as views, weighted
/// together (one scale for all, so hosts sampled at different rates
/// compare by time). A profile's views go to its host (one that has
/// windows of several hosts is split); a rollup's view stands for many
/// hosts, whose totals are counted per window.
pub(super) fn select_all(
    profiles: &[(Uuid, Profile)],
    rollups: &[Profile],
    selection: &Selection<'_>,
) -> Selected {
    struct Part<'a> {
        host: Option<String>,
        profile: &'a Profile,
        names: Arc<NameTree>,
        sums: NodeSums,
    }
    let mut parts = Vec::new();
    for (_, profile) in profiles {
        let names = Arc::new(NameTree::new(profile));
        let mut profile_hosts: Vec<&str> =
            profile.windows.iter().map(|w| w.host.as_str()).collect();
        profile_hosts.sort_unstable();
        profile_hosts.dedup();
        for host in profile_hosts {
            if selection
                .hosts
                .is_some_and(|all| !all.iter().any(|h| h == host))
            {
                continue;
            }
            let only = [host.to_owned()];
            let sums = profile.select(
                &Selection {
                    hosts: Some(&only),
                    ..*selection
                },
                &names,
            );
            parts.push(Part {
                host: Some(host.to_owned()),
                profile,
                names: Arc::clone(&names),
                sums,
            });
        }
    }
    let rolled = map_in_halves(rollups, 2, |profile| {
        let names = NameTree::new(profile);
        let sums = profile.select(selection, &names);
        (names, sums)
    });
    for (profile, (names, sums)) in rollups.iter().zip(rolled) {
        parts.push(Part {
            host: None,
            profile,
            names: Arc::new(names),
            sums,
        });
    }
    let sums: Vec<&NodeSums> = parts.iter().map(|p| &p.sums).collect();
    let weighted = weigh(&sums);
    let samples_per_unit = scale(&sums);
    let mut selected = Selected {
        period: samples_per_unit
            .map(|s| 1.0 / s)
            .or_else(|| common_period(&sums)),
        host_views: BTreeMap::new(),
        host_rolled: BTreeMap::new(),
        rollups: Vec::new(),
    };
    let mut rolled: BTreeMap<String, f64> = BTreeMap::new();
    let weighted: Vec<(&Part<'_>, Vec<u64>)> = parts.iter().zip(weighted).collect();
    let views = map_in_halves(&weighted, 2, |(part, counts)| part.names.view(counts));
    for (part, view) in parts.iter().zip(views) {
        match &part.host {
            Some(host) => selected
                .host_views
                .entry(host.clone())
                .or_default()
                .push(view),
            None => {
                for (window, &samples) in part.profile.windows.iter().zip(&part.sums.window_samples)
                {
                    let weight = samples_per_unit.map_or(1.0, |s| window.period as f64 * s);
                    *rolled.entry(window.host.clone()).or_default() += samples as f64 * weight;
                }
                selected.rollups.push(view);
            }
        }
    }
    selected.host_rolled = rolled
        .into_iter()
        .map(|(host, samples)| (host, samples.round() as u64))
        .collect();
    selected
}

/// The period every selected window shares, when they share one.
fn common_period(sums: &[&NodeSums]) -> Option<f64> {
    let kept = sums.iter().filter(|s| s.windows > 0);
    let min = kept.clone().map(|s| s.min_period).min()?;
    let max = kept.map(|s| s.max_period).max()?;
    (min == max && min > 0).then_some(min as f64)
}
