//! A run's reads: its members' samples as one aggregate
//! (`ReadScope::Run`), restricted to a stratum of its hosts by their
//! labels, compared host by host (`odp_core::run::outliers`), its
//! hottest functions, and its members' windows over time.

use std::collections::BTreeMap;
use std::time::Duration;

use odp_api_types::{
    HostFunction, RunHost, RunHostsResponse, RunIssue, RunIssueHost, RunIssuesResponse,
    RunTopResponse, TimelineWindow,
};
use odp_core::filter::{StackFilter, ThreadFilter};
use odp_core::run::outliers::{find_outliers, HostCounts, OutlierOptions};
use odp_core::ProfileStatus;
use odp_profile::top::top_functions;
use odp_store::{Read, ReadResult, ReadScope, RunRow, Runs, Services};
use uuid::Uuid;

use crate::render::sample_unit;
use crate::service_error::ServiceError;
use crate::AppState;

/// Labels are those the hosts' agents reported within this long: a run
/// is read after its hosts may have stopped running the service.
const LABELS_WITHIN: Duration = Duration::from_secs(31 * 24 * 3600);

/// Most label pairs a stratum may name.
const MAX_LABELS: usize = 16;

/// How many of each host's hottest functions `/hosts` lists.
pub(crate) const HOST_TOP: usize = 5;

/// A read of every member of run `id`, narrowed by threads and stacks.
pub(crate) fn run_read(id: Uuid, thread: Option<ThreadFilter>, stacks: StackFilter) -> Read {
    Read {
        scope: ReadScope::Run(id),
        thread,
        stacks,
        ..Read::profile(id)
    }
}

/// A stratum: `key:value` pairs, comma-separated, every one of which a
/// host's labels must hold. `what` names the parameter in messages.
pub(crate) fn parse_labels(what: &str, text: &str) -> Result<Vec<(String, String)>, ServiceError> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for item in text.split(',').map(str::trim) {
        let Some((key, value)) = item.split_once(':') else {
            return Err(ServiceError::Invalid(format!(
                "`{what}` must be a comma-separated list of key:value labels, like \
                 version:v1,zone:a; got {item:?}"
            )));
        };
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() || value.is_empty() || key.len() > 253 || value.len() > 253 {
            return Err(ServiceError::Invalid(format!(
                "`{what}`: each label needs a key and a value of at most 253 bytes; got {item:?}"
            )));
        }
        if pairs.iter().any(|(k, _)| k == key) {
            return Err(ServiceError::Invalid(format!(
                "`{what}` names the label `{key}` more than once"
            )));
        }
        pairs.push((key.to_owned(), value.to_owned()));
    }
    if pairs.len() > MAX_LABELS {
        return Err(ServiceError::Invalid(format!(
            "`{what}` may name at most {MAX_LABELS} labels"
        )));
    }
    Ok(pairs)
}

/// Whether `labels` hold every pair of `stratum`.
pub(crate) fn in_stratum(labels: &BTreeMap<String, String>, stratum: &[(String, String)]) -> bool {
    stratum
        .iter()
        .all(|(key, value)| labels.get(key) == Some(value))
}

/// The labels the agents of `service`'s hosts last reported, by host.
pub(crate) async fn host_labels(
    state: &AppState,
    service: &str,
) -> Result<BTreeMap<String, BTreeMap<String, String>>, ServiceError> {
    Ok(Services::new(&state.pool)
        .hosts_running(service, LABELS_WITHIN)
        .await?
        .into_iter()
        .map(|h| (h.host, h.labels))
        .collect())
}

/// Keeps only the hosts `keep` accepts in `result` (a run's read, which
/// has no rollups: every sample belongs to one host).
pub(crate) fn keep_hosts(result: &mut ReadResult, keep: impl Fn(&str) -> bool) {
    result.hosts.retain(|h| keep(&h.host));
    result.profiles = result.hosts.iter().map(|h| h.profiles).sum();
    result.snapshots = result.hosts.iter().map(|h| h.snapshots).sum();
    if result.hosts.is_empty() {
        result.event = None;
        result.period = None;
    }
}

/// The run's read restricted to the hosts in `stratum` (every member when
/// empty); 422 when no chosen host of the run is in it.
pub(crate) async fn read_stratum(
    state: &AppState,
    row: &RunRow,
    read: &Read,
    stratum: &[(String, String)],
) -> Result<ReadResult, ServiceError> {
    let mut result = odp_store::read(&state.pool, read).await?;
    if stratum.is_empty() {
        return Ok(result);
    }
    let labels = host_labels(state, &row.service).await?;
    let members = Runs::new(&state.pool).members(row.id).await?;
    let matching: Vec<&str> = members
        .iter()
        .map(|m| m.host.as_str())
        .filter(|host| labels.get(*host).is_some_and(|l| in_stratum(l, stratum)))
        .collect();
    if matching.is_empty() {
        let wanted: Vec<String> = stratum.iter().map(|(k, v)| format!("{k}:{v}")).collect();
        return Err(ServiceError::Invalid(format!(
            "no member of run {} has the labels {}",
            row.id,
            wanted.join(",")
        )));
    }
    keep_hosts(&mut result, |host| matching.contains(&host));
    Ok(result)
}

/// Every chosen host of the run with its samples, hottest functions and
/// distance from the others, most different first. The caller holds a
/// heavy read's turn.
pub(crate) async fn hosts(
    state: &AppState,
    row: &RunRow,
    options: OutlierOptions,
) -> Result<RunHostsResponse, ServiceError> {
    let read = run_read(row.id, None, StackFilter::default());
    let result = odp_store::read(&state.pool, &read).await?;
    state.read_limits.check_read(&result)?;
    let members = Runs::new(&state.pool).members(row.id).await?;
    let run = crate::service::runs::view(row.clone(), &members)?;
    let labels = host_labels(state, &row.service).await?;
    let result = std::sync::Arc::new(result);
    let shared = result.clone();
    // Every function's self samples per host: the costly part, off the
    // async workers.
    let per_host: Vec<(HostCounts, Vec<HostFunction>, i64)> =
        tokio::task::spawn_blocking(move || {
            shared
                .hosts
                .iter()
                .map(|host| {
                    let samples = host.samples();
                    let shares = top_functions(&host.view(), usize::MAX);
                    let top = shares
                        .iter()
                        .filter(|s| s.self_samples > 0)
                        .take(HOST_TOP)
                        .map(|s| HostFunction {
                            function: s.function.clone(),
                            self_samples: s.self_samples,
                            self_share: s.self_share,
                        })
                        .collect();
                    let functions = shares
                        .into_iter()
                        .filter(|s| s.self_samples > 0)
                        .map(|s| (s.function, s.self_samples))
                        .collect();
                    let counts = HostCounts {
                        host: host.host.clone(),
                        samples,
                        functions,
                    };
                    (counts, top, host.snapshots)
                })
                .collect()
        })
        .await
        .map_err(|e| ServiceError::Internal(e.to_string()))?;
    // Chosen hosts without samples (not started, or nothing sampled yet)
    // are listed too, untested.
    let mut counts: Vec<HostCounts> = per_host.iter().map(|(c, _, _)| c.clone()).collect();
    for member in &run.members {
        if !counts.iter().any(|c| c.host == member.host) {
            counts.push(HostCounts {
                host: member.host.clone(),
                ..Default::default()
            });
        }
    }
    let report = find_outliers(&counts, options);
    let hosts: Vec<RunHost> = report
        .hosts
        .iter()
        .map(|deviation| {
            let member = run.members.iter().find(|m| m.host == deviation.host);
            let read = per_host.iter().find(|(c, _, _)| c.host == deviation.host);
            RunHost {
                host: deviation.host.clone(),
                labels: labels.get(&deviation.host).cloned().unwrap_or_default(),
                profile_id: member.and_then(|m| m.profile_id),
                status: member.map_or(ProfileStatus::Failed, |m| m.status),
                samples: deviation.samples,
                snapshots: read.map_or(0, |(_, _, snapshots)| *snapshots),
                top: read.map(|(_, top, _)| top.clone()).unwrap_or_default(),
                statistic: deviation.statistic,
                df: deviation.df,
                p_value: deviation.p_value,
                distance: deviation.distance,
                outlier: deviation.outlier,
                moved: deviation.moved.clone(),
            }
        })
        .collect();
    Ok(RunHostsResponse {
        run_id: row.id,
        service: row.service.clone(),
        event: result.event,
        units: sample_unit(result.event, result.period),
        samples: result.samples(),
        options: report.options,
        threshold: report.threshold,
        functions: report.functions.clone(),
        outliers: report.outliers().map(|h| h.host.clone()).collect(),
        hosts,
    })
}

/// Run `id`'s `limit` hottest functions, with error bounds, over the
/// threads and stacks the filters keep.
pub(crate) async fn top(
    state: &AppState,
    id: Uuid,
    thread: Option<ThreadFilter>,
    stacks: StackFilter,
    limit: usize,
) -> Result<RunTopResponse, ServiceError> {
    let row = super::row(state, id).await?;
    let limits = state.read_limits.clone();
    let _turn = limits.heavy_read().await?;
    let result = odp_store::read(&state.pool, &run_read(id, thread, stacks)).await?;
    limits.check_read(&result)?;
    let result = std::sync::Arc::new(result);
    let shared = result.clone();
    let functions = tokio::task::spawn_blocking(move || shared.top_functions(limit))
        .await
        .map_err(|e| ServiceError::Internal(e.to_string()))?;
    Ok(RunTopResponse {
        run_id: id,
        service: row.service,
        event: result.event,
        units: sample_unit(result.event, result.period),
        samples: result.samples(),
        hosts: result.hosts.iter().filter(|h| h.samples() > 0).count(),
        functions,
    })
}

/// The windows of every member of run `id`, in time order (then host).
pub(crate) async fn timeline(
    state: &AppState,
    id: Uuid,
) -> Result<Vec<TimelineWindow>, ServiceError> {
    let mut windows = Vec::new();
    for member in Runs::new(&state.pool).members(id).await? {
        windows.extend(odp_store::profile_timeline(&state.pool, member.id).await?);
    }
    windows.sort_by(|a, b| {
        (a.window_start, &a.host, a.window_end).cmp(&(b.window_start, &b.host, b.window_end))
    });
    Ok(windows)
}

/// What the rules found in `run` once it ended.
pub(crate) async fn issues(
    state: &AppState,
    run: &RunRow,
) -> Result<RunIssuesResponse, ServiceError> {
    let issues = Runs::new(&state.pool).issues(run.id).await?;
    Ok(RunIssuesResponse {
        run_id: run.id,
        evaluated_at: run.detected_at,
        issues: issues
            .into_iter()
            .map(|found| RunIssue {
                issue: crate::views::issue(found.issue),
                hosts: found
                    .hosts
                    .into_iter()
                    .map(|h| RunIssueHost {
                        host: h.host,
                        profile_id: h.profile_id,
                        share: h.share,
                        samples: h.samples,
                    })
                    .collect(),
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(result: Result<Vec<(String, String)>, ServiceError>) -> String {
        match result {
            Err(ServiceError::Invalid(m)) => m,
            other => panic!("expected 422, got {other:?}"),
        }
    }

    #[test]
    fn strata_are_key_value_lists() {
        let pairs = parse_labels("baseline_labels", "version:v1, zone : a").unwrap();
        assert_eq!(
            pairs,
            [("version".into(), "v1".into()), ("zone".into(), "a".into())]
        );
        let labels: BTreeMap<String, String> = [("version", "v1"), ("zone", "a"), ("os", "x")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        assert!(in_stratum(&labels, &pairs));
        assert!(in_stratum(&labels, &[]));
        assert!(!in_stratum(&labels, &[("version".into(), "v2".into())]));
        assert!(!in_stratum(&labels, &[("rack".into(), "1".into())]));
        // A value may hold a colon (host:port).
        let colon = parse_labels("l", "addr:10.0.0.1:80").unwrap();
        assert_eq!(colon[0].1, "10.0.0.1:80");
        for bad in ["version", "version:", ":v1", "a:1,a:2", "", "a:1,,b:2"] {
            assert!(message(parse_labels("target_labels", bad)).contains("target_labels"));
        }
        let many: Vec<String> = (0..17).map(|i| format!("k{i}:v")).collect();
        assert!(message(parse_labels("l", &many.join(","))).contains("at most"));
    }

    #[test]
    fn a_stratum_keeps_its_hosts_and_their_counts() {
        let host = |name: &str, profiles: u64, snapshots: i64| odp_store::HostView {
            host: name.to_owned(),
            profiles,
            snapshots,
            views: Vec::new(),
            rolled_samples: 0,
        };
        let mut result = ReadResult {
            event: Some(odp_core::EventKind::CpuClock),
            profiles: 3,
            snapshots: 9,
            hosts: vec![host("a", 1, 2), host("b", 1, 3), host("c", 1, 4)],
            rollups: Vec::new(),
            period: Some(1.0),
        };
        keep_hosts(&mut result, |h| h != "b");
        assert_eq!((result.profiles, result.snapshots), (2, 6));
        assert_eq!(result.hosts.len(), 2);
        keep_hosts(&mut result, |_| false);
        assert!(result.event.is_none() && result.hosts.is_empty());
    }
}
