//! What the query endpoints share: time ranges and filters checked, a
//! profile read narrowed by them, and the flame graph cut to a node budget
//! or the stacks a file format renders.

use chrono::{DateTime, Utc};
use odp_core::filter::{FilterError, StackFilter, ThreadFilter};
use odp_core::flamegraph::FlameNode;
use odp_profile::stacks;
use odp_store::{Read, ReadResult};

use crate::render::{Format, Orientation};
use crate::service_error::ServiceError;

/// Longest range one aggregate may cover.
pub(crate) const MAX_RANGE_DAYS: i64 = 31;
pub(crate) fn filter_error(e: FilterError) -> ServiceError {
    ServiceError::Invalid(e.to_string())
}

pub(crate) fn parse_time(what: &str, text: &str) -> Result<DateTime<Utc>, ServiceError> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| {
            ServiceError::Invalid(format!(
                "`{what}` must be an RFC 3339 time like 2026-11-21T10:00:00Z: {e}"
            ))
        })
}

/// A validated `[since, until)` range of at most [`MAX_RANGE_DAYS`].
pub(crate) fn parse_range(
    what: (&str, &str),
    since: &str,
    until: &str,
) -> Result<(DateTime<Utc>, DateTime<Utc>), ServiceError> {
    let (since, until) = (parse_time(what.0, since)?, parse_time(what.1, until)?);
    if since >= until {
        return Err(ServiceError::Invalid(format!(
            "`{}` must be before `{}`",
            what.0, what.1
        )));
    }
    if until - since > chrono::Duration::days(MAX_RANGE_DAYS) {
        return Err(ServiceError::Invalid(format!(
            "the range may cover at most {MAX_RANGE_DAYS} days"
        )));
    }
    Ok((since, until))
}

/// How a JSON flame graph is cut: a node budget and an optional subtree
/// to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TreeParams {
    pub(crate) max_nodes: usize,
    /// Frame names from the root.
    pub(crate) focus: Vec<String>,
}

/// Nodes in a JSON flame graph unless `max_nodes` says otherwise: what a
/// browser draws and a person reads, at about half a megabyte.
pub(crate) const DEFAULT_MAX_NODES: usize = 8192;
pub(crate) const MAX_MAX_NODES: usize = 200_000;

impl TreeParams {
    pub(crate) fn new(
        max_nodes: Option<usize>,
        focus: Option<String>,
    ) -> Result<Self, ServiceError> {
        let max_nodes = match max_nodes {
            None => DEFAULT_MAX_NODES,
            Some(n) if (1..=MAX_MAX_NODES).contains(&n) => n,
            Some(_) => {
                return Err(ServiceError::Invalid(format!(
                    "`max_nodes` must be a number from 1 to {MAX_MAX_NODES}"
                )))
            }
        };
        let focus: Vec<String> = match focus {
            None => Vec::new(),
            Some(path) if path.len() > 64 * 1024 => {
                return Err(ServiceError::Invalid("`focus` is too long".into()))
            }
            Some(path) => path.split(';').map(str::to_owned).collect(),
        };
        Ok(TreeParams { max_nodes, focus })
    }

    /// The flame graph of `result` cut as asked; 404 when `focus` names a
    /// path the result does not have.
    pub(crate) fn flame_graph(&self, result: &ReadResult) -> Result<FlameNode, ServiceError> {
        let path: Vec<&str> = self.focus.iter().map(String::as_str).collect();
        let focus = (!path.is_empty()).then_some(path.as_slice());
        result.flame_graph(self.max_nodes, focus).ok_or_else(|| {
            ServiceError::NotFound(format!(
                "no frame path {:?} in the result",
                self.focus.join(";")
            ))
        })
    }
}

/// The stacks a format renders: every one, or for SVG only those wide
/// enough to be drawn (inferno skips boxes under 0.1 px of 1200; lighter
/// subtrees fold into their parents, so every drawn width is unchanged).
fn stacks_for(format: Format, result: &ReadResult) -> Vec<odp_core::WeightedStack> {
    match format {
        Format::Svg => stacks::pruned_stacks(&result.merged(), result.samples() / 12_000),
        _ => result.stacks(),
    }
}

/// What a response renders from a read: the JSON flame graph, or the
/// stacks of the other formats. Computed off the async threads, as an
/// aggregate's takes a while.
pub(crate) async fn shape(
    result: std::sync::Arc<ReadResult>,
    format: Format,
    tree: TreeParams,
) -> Result<(Option<FlameNode>, Vec<odp_core::WeightedStack>), ServiceError> {
    tokio::task::spawn_blocking(move || match format {
        Format::Json => Ok((Some(tree.flame_graph(&result)?), Vec::new())),
        _ => Ok((None, stacks_for(format, &result))),
    })
    .await
    .map_err(|e| ServiceError::Internal(e.to_string()))?
}

/// The filters the single-profile endpoints (`/flamegraph`, `/top`) take:
/// threads, frames and a time window.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SliceParams<'a> {
    pub thread: Option<&'a str>,
    pub include: Option<&'a str>,
    pub exclude: Option<&'a str>,
    pub window_since: Option<&'a str>,
    pub window_until: Option<&'a str>,
}

impl SliceParams<'_> {
    /// A read of `profile_id` narrowed as these parameters say.
    fn validate(&self, profile_id: uuid::Uuid) -> Result<Read, ServiceError> {
        let window_since = self
            .window_since
            .map(|t| parse_time("window_since", t))
            .transpose()?;
        let window_until = self
            .window_until
            .map(|t| parse_time("window_until", t))
            .transpose()?;
        if let (Some(since), Some(until)) = (window_since, window_until) {
            if since >= until {
                return Err(ServiceError::Invalid(
                    "`window_since` must be before `window_until`".into(),
                ));
            }
        }
        let thread = self
            .thread
            .map(ThreadFilter::new)
            .transpose()
            .map_err(filter_error)?;
        let stacks = StackFilter::new(self.include, self.exclude).map_err(filter_error)?;
        Ok(Read {
            from: window_since,
            to: window_until,
            thread,
            stacks,
            ..Read::profile(profile_id)
        })
    }
}

/// A profile's samples, narrowed by `params`.
pub(crate) async fn read_profile(
    pool: &odp_store::Database,
    profile_id: uuid::Uuid,
    params: SliceParams<'_>,
) -> Result<ReadResult, ServiceError> {
    let read = params.validate(profile_id)?;
    Ok(odp_store::read(pool, &read).await?)
}

/// What a merged read (a service's aggregate, a run) answers besides
/// its tree: per host, units and counts.
pub(crate) struct MergedParts {
    pub(crate) hosts: Vec<odp_api_types::HostSummary>,
    pub(crate) units: odp_api_types::SampleUnit,
    pub(crate) profiles: u64,
    pub(crate) snapshots: i64,
    pub(crate) event: Option<odp_core::EventKind>,
    pub(crate) samples: u64,
    /// The JSON flame graph (empty when nothing was read).
    pub(crate) root: FlameNode,
}

/// How a merged read is titled in rendered files: the title from the
/// hosts with samples, the download's file stem, when it started.
pub(crate) struct MergedTitle {
    pub(crate) title: String,
    pub(crate) file_stem: String,
    pub(crate) time_nanos: Option<i64>,
}

/// Reads `read` across hosts within a heavy read's turn and answers it as
/// `format`: `json` builds the endpoint's own JSON from the parts, the
/// other formats render the merged stacks (profiles sampled at different
/// rates weighted to one period). Shared by `/aggregate` and a run's
/// `/flamegraph`.
pub(crate) async fn render_merged(
    state: &crate::AppState,
    read: &Read,
    format: Format,
    orientation: Orientation,
    tree: TreeParams,
    title: impl FnOnce(usize) -> MergedTitle,
    json: impl FnOnce(MergedParts) -> axum::response::Response,
) -> Result<axum::response::Response, ServiceError> {
    let limits = state.read_limits.clone();
    let _turn = limits.heavy_read().await?;
    let result = odp_store::read(&state.pool, read).await?;
    limits.check_read(&result)?;
    let hosts: Vec<odp_api_types::HostSummary> = result
        .hosts
        .iter()
        .map(|h| odp_api_types::HostSummary {
            host: h.host.clone(),
            samples: h.samples(),
            profiles: h.profiles,
            snapshots: h.snapshots,
        })
        .collect();
    let sampled_hosts = hosts.iter().filter(|h| h.samples > 0).count();
    let result = std::sync::Arc::new(result);
    let (root, stacks) = shape(result.clone(), format, tree).await?;
    let units = crate::render::sample_unit(result.event, result.period);
    let MergedTitle {
        title,
        file_stem,
        time_nanos,
    } = title(sampled_hosts);
    let rendering = crate::render::Rendering {
        title,
        file_stem,
        event: result.event,
        period_nanos: crate::render::nanos_per_sample(&units),
        duration_nanos: None,
        time_nanos,
        samples: result.samples(),
        stacks,
        orientation,
    };
    let (profiles, snapshots) = (result.profiles, result.snapshots);
    crate::render::render(format, rendering, &limits, |r| {
        json(MergedParts {
            hosts,
            units,
            profiles,
            snapshots,
            event: r.event,
            samples: r.samples,
            root: root.unwrap_or_else(odp_profile::flame::empty),
        })
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_params_validate_only_when_set() {
        let id = uuid::Uuid::nil();
        let whole = SliceParams::default().validate(id).unwrap();
        assert!(whole.thread.is_none() && whole.from.is_none() && whole.stacks.is_noop());
        let read = SliceParams {
            thread: Some("^worker-"),
            exclude: Some("gc"),
            window_since: Some("2026-11-01T00:00:00Z"),
            ..Default::default()
        }
        .validate(id)
        .unwrap();
        assert!(read.thread.unwrap().matches("worker-2"));
        assert!(read.from.is_some() && read.to.is_none());
        assert!(read.stacks.exclude.is_some() && read.stacks.include.is_none());
        for params in [
            SliceParams {
                window_since: Some("2026-11-02T00:00:00Z"),
                window_until: Some("2026-11-01T00:00:00Z"),
                ..Default::default()
            },
            SliceParams {
                window_until: Some("noon"),
                ..Default::default()
            },
            SliceParams {
                include: Some("("),
                ..Default::default()
            },
            SliceParams {
                thread: Some(""),
                ..Default::default()
            },
        ] {
            assert!(
                matches!(params.validate(id), Err(ServiceError::Invalid(_))),
                "{params:?}"
            );
        }
    }

    #[test]
    fn node_budgets_and_focus_paths_are_checked() {
        assert_eq!(
            TreeParams::new(None, None).unwrap().max_nodes,
            DEFAULT_MAX_NODES
        );
        let tree = TreeParams::new(Some(100), Some("main;demo_hot".into())).unwrap();
        assert_eq!((tree.max_nodes, tree.focus.len()), (100, 2));
        for bad in [0, 200_001] {
            assert!(matches!(
                TreeParams::new(Some(bad), None),
                Err(ServiceError::Invalid(_))
            ));
        }
    }
}
