//! Choosing the hosts of a run.
//!
//! A run profiles a service on some of the live hosts that run it: all of
//! them, `K` of them, or `P` percent. The choice must be fair (uniform
//! without replacement, so the aggregate estimates the fleet, not
//! whichever hosts happen to be listed first), representative when the
//! fleet is mixed (with `stratify_by`, each combination of label values
//! gets its proportional share, and at least one host when `K` allows, so
//! version B is never left out of an A/B comparison by chance), and
//! reproducible: the run records its seed, and the same seed over the same
//! live hosts picks the same hosts whatever order the caller lists them
//! in. Everything here is pure; the API turns [`SelectionError`] into a
//! 422.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::rng::SplitMix64;

/// A live host that runs the service, with its labels (zone, release, and
/// any the operator or discovery set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    pub id: String,
    pub labels: BTreeMap<String, String>,
}

/// How many of the live hosts a run takes. In JSON: `"all"`,
/// `{"count": K}` or `{"percent": P}`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum HostSelection {
    All,
    /// `K` hosts, at least 1.
    Count(u32),
    /// `ceil(P% of the live hosts)`, with `P` in (0, 100].
    Percent(f64),
}

/// What a run asks of the selection (and records, to be reproduced).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SelectionRequest {
    pub selection: HostSelection,
    /// Label names whose value combinations are the strata; empty for a
    /// plain uniform choice.
    pub stratify_by: Vec<String>,
    pub seed: u64,
    /// Make a count above the live hosts an error instead of taking them
    /// all.
    pub strict: bool,
}

/// The hosts chosen, and what a run records about how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Selection {
    /// Chosen host ids, sorted.
    pub hosts: Vec<String>,
    /// Live hosts the choice was made from.
    pub eligible: usize,
    /// Hosts the selection asked for: `K`, `ceil(P%)` or all.
    pub requested: usize,
    /// True when `K` was above the live hosts and all of them were taken.
    pub capped: bool,
    /// Per stratum, in label-value order; empty without `stratify_by`.
    pub strata: Vec<Stratum>,
}

/// One combination of the `stratify_by` labels' values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Stratum {
    /// The stratifying labels' values; a label a host lacks is absent.
    pub labels: BTreeMap<String, String>,
    pub eligible: usize,
    pub chosen: usize,
}

/// Why hosts cannot be chosen; each message is fit for a 422 body.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SelectionError {
    #[error("percent {0} is outside (0, 100]")]
    PercentOutOfRange(f64),
    #[error("count must be at least 1")]
    ZeroCount,
    #[error("no live host runs the service")]
    NoHosts,
    #[error("count {requested} is more than the {live} live hosts, and strict is set")]
    CountAboveLiveHosts { requested: u32, live: usize },
    #[error("no live host has the label `{label}` to stratify by (labels seen: {known})")]
    UnknownLabel { label: String, known: String },
    #[error("stratify_by names the label `{0}` more than once")]
    RepeatedLabel(String),
    #[error("host `{0}` is listed more than once")]
    RepeatedHost(String),
}

/// Chooses the hosts of a run from the live `hosts`.
pub fn select_hosts(
    hosts: &[Host],
    request: &SelectionRequest,
) -> Result<Selection, SelectionError> {
    match request.selection {
        HostSelection::Percent(p) if !(p > 0.0 && p <= 100.0) => {
            return Err(SelectionError::PercentOutOfRange(p))
        }
        HostSelection::Count(0) => return Err(SelectionError::ZeroCount),
        _ => {}
    }
    if hosts.is_empty() {
        return Err(SelectionError::NoHosts);
    }
    // Sorting first makes the result independent of the input's order.
    let mut sorted: Vec<&Host> = hosts.iter().collect();
    sorted.sort_by(|a, b| a.id.cmp(&b.id));
    if let Some(twice) = sorted.windows(2).find(|w| w[0].id == w[1].id) {
        return Err(SelectionError::RepeatedHost(twice[0].id.clone()));
    }
    check_labels(&sorted, &request.stratify_by)?;

    let eligible = sorted.len();
    let (requested, target, capped) = match request.selection {
        HostSelection::All => (eligible, eligible, false),
        HostSelection::Count(k) => {
            let k_hosts = k as usize;
            if k_hosts > eligible && request.strict {
                return Err(SelectionError::CountAboveLiveHosts {
                    requested: k,
                    live: eligible,
                });
            }
            (k_hosts, k_hosts.min(eligible), k_hosts > eligible)
        }
        HostSelection::Percent(p) => {
            let n = percent_of(p, eligible);
            (n, n, false)
        }
    };

    // Strata in label-value order, each with its hosts in id order.
    let mut groups: BTreeMap<Vec<Option<&str>>, Vec<&Host>> = BTreeMap::new();
    for host in &sorted {
        let key = request
            .stratify_by
            .iter()
            .map(|label| host.labels.get(label).map(String::as_str))
            .collect();
        groups.entry(key).or_default().push(host);
    }
    let sizes: Vec<usize> = groups.values().map(Vec::len).collect();

    let mut rng = SplitMix64::new(request.seed);
    let tie_break: Vec<u64> = sizes.iter().map(|_| rng.next_u64()).collect();
    let allocation = allocate(&sizes, target, &tie_break);

    let mut chosen = Vec::with_capacity(target);
    let mut strata = Vec::new();
    for ((key, members), &take) in groups.iter().zip(&allocation) {
        chosen.extend(
            sample(members, take, &mut rng)
                .into_iter()
                .map(|h| h.id.clone()),
        );
        if !request.stratify_by.is_empty() {
            let labels = request
                .stratify_by
                .iter()
                .zip(key)
                .filter_map(|(label, value)| Some((label.clone(), (*value)?.to_owned())))
                .collect();
            strata.push(Stratum {
                labels,
                eligible: members.len(),
                chosen: take,
            });
        }
    }
    chosen.sort();
    Ok(Selection {
        hosts: chosen,
        eligible,
        requested,
        capped,
        strata,
    })
}

fn check_labels(hosts: &[&Host], stratify_by: &[String]) -> Result<(), SelectionError> {
    let mut named = BTreeSet::new();
    for label in stratify_by {
        if !named.insert(label) {
            return Err(SelectionError::RepeatedLabel(label.clone()));
        }
    }
    for label in stratify_by {
        if !hosts.iter().any(|h| h.labels.contains_key(label)) {
            let known: BTreeSet<&str> = hosts
                .iter()
                .flat_map(|h| h.labels.keys().map(String::as_str))
                .collect();
            let known = if known.is_empty() {
                "none".to_owned()
            } else {
                known.into_iter().collect::<Vec<_>>().join(", ")
            };
            return Err(SelectionError::UnknownLabel {
                label: label.clone(),
                known,
            });
        }
    }
    Ok(())
}

/// `ceil(p% of n)`, at least 1 and at most `n`. The product is computed in
/// floating point, so a tolerance keeps 10% of 30 at 3 rather than the 4
/// that `3.0000000000000004` would round up to.
fn percent_of(p: f64, n: usize) -> usize {
    let exact = p * n as f64 / 100.0;
    let rounded = (exact - exact.max(1.0) * 1e-9).ceil();
    (rounded as usize).clamp(1, n)
}

/// Splits `target` hosts over strata of the given sizes in proportion to
/// their sizes, by largest remainder (Hamilton's method) in exact integer
/// arithmetic. When `target` reaches the number of strata, every stratum
/// gets at least one host: strata whose quota is under one are fixed at
/// one and the rest is shared again among the others, until no quota is
/// under one. Equal remainders go by `tie_break` (seeded), so no stratum
/// is favoured by its name. Never gives a stratum more than its size when
/// `target` is at most the total.
pub(crate) fn allocate(sizes: &[usize], target: usize, tie_break: &[u64]) -> Vec<usize> {
    let mut allocation = vec![0usize; sizes.len()];
    let mut fixed = vec![false; sizes.len()];
    if target >= sizes.len() {
        loop {
            let (left, pool) = remaining(sizes, target, &fixed);
            let under_one: Vec<usize> = (0..sizes.len())
                .filter(|&h| !fixed[h] && (left as u64) * (sizes[h] as u64) < pool as u64)
                .collect();
            if under_one.is_empty() {
                break;
            }
            for h in under_one {
                fixed[h] = true;
                allocation[h] = 1;
            }
        }
    }
    let (left, pool) = remaining(sizes, target, &fixed);
    if pool == 0 || left == 0 {
        return allocation;
    }
    let (left, pool) = (left as u64, pool as u64);
    let mut remainders = Vec::new();
    let mut given = 0u64;
    for h in (0..sizes.len()).filter(|&h| !fixed[h]) {
        let quota = left * sizes[h] as u64;
        allocation[h] = (quota / pool) as usize;
        given += quota / pool;
        remainders.push((quota % pool, h));
    }
    remainders.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(tie_break[b.1].cmp(&tie_break[a.1]))
            .then(a.1.cmp(&b.1))
    });
    for &(_, h) in remainders.iter().take((left - given) as usize) {
        allocation[h] += 1;
    }
    allocation
}

/// Hosts still to give out, and the hosts of the strata not fixed at one.
fn remaining(sizes: &[usize], target: usize, fixed: &[bool]) -> (usize, usize) {
    let fixed_count = fixed.iter().filter(|&&f| f).count();
    let pool = (0..sizes.len())
        .filter(|&h| !fixed[h])
        .map(|h| sizes[h])
        .sum();
    (target.saturating_sub(fixed_count), pool)
}

/// `take` of `members`, uniformly without replacement (a partial
/// Fisher-Yates shuffle).
fn sample<'a>(members: &[&'a Host], take: usize, rng: &mut SplitMix64) -> Vec<&'a Host> {
    let mut pool = members.to_vec();
    let take = take.min(pool.len());
    for i in 0..take {
        let j = i + rng.below((pool.len() - i) as u64) as usize;
        pool.swap(i, j);
    }
    pool.truncate(take);
    pool
}

#[cfg(test)]
#[path = "selection_tests.rs"]
mod tests;
