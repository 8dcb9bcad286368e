//! Differential flame graph of two profiles or aggregates, each side
//! normalized by its own total samples.
//!
//! `GET /api/v1/diff?baseline=ID&target=ID[&format=json|svg][&include=RE]
//! [&exclude=RE][&limit=N][&max_nodes=N]`; either side may instead be an
//! aggregate, `baseline_service=S&baseline_since=T&baseline_until=T` (same
//! for `target_`), or a run's members, `baseline_run=ID`, optionally only
//! the hosts whose labels hold `baseline_labels=key:value,...` (a stratum):
//! run against run, or one stratum of a run against another.
//!
//! Both sides are read within one heavy read's turn and node budget (see
//! [`crate::read_budget`]). The JSON tree is cut to `max_nodes` like a
//! flame graph: the heaviest nodes (by the larger of their two shares) are
//! kept, each with its path, and each kept node's other children become one
//! `other` child carrying their counts, so every total stays exact.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use odp_api_types::{DiffJson, SideSummary};
use odp_core::diff::{changes_between, join_trees, render_svg};
use odp_core::filter::StackFilter;
use odp_profile::diff_trim::trim_diff;
use odp_store::{Read, ReadResult, ReadScope};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::AppQuery;
use crate::openapi::{CommonErrors, NotFound};
use crate::read_budget::decoded_nodes;
use crate::render::sample_unit;
use crate::service::profiles;
use crate::service::queries::{filter_error, parse_range, DEFAULT_MAX_NODES, MAX_MAX_NODES};
use crate::service::runs::{self, reads};
use crate::service::start_options::parse_event;
use crate::validate::validate_name;
use crate::AppState;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(diff_handler))
}

/// JSON (per-frame shares and the biggest changes) or an SVG
/// differential flame graph.
#[derive(Debug, Default, Clone, Copy, Deserialize, PartialEq, Eq, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum DiffFormat {
    #[default]
    Json,
    Svg,
}

/// Each side is a profile (`baseline`, `target`), an aggregate
/// (`{side}_service`, `{side}_since`, `{side}_until`) or a run
/// (`{side}_run`, optionally `{side}_labels`): exactly one of them.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct DiffQuery {
    /// The baseline profile's id.
    baseline: Option<Uuid>,
    #[param(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")]
    baseline_service: Option<String>,
    /// RFC 3339 time.
    baseline_since: Option<String>,
    /// RFC 3339 time, at most 31 days after `baseline_since`.
    baseline_until: Option<String>,
    /// The baseline run's id: every member's samples.
    baseline_run: Option<Uuid>,
    /// With `baseline_run`: only its hosts whose agent labels hold every
    /// `key:value` of this comma-separated list (`version:v1,zone:a`).
    baseline_labels: Option<String>,
    /// The target profile's id.
    target: Option<Uuid>,
    #[param(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")]
    target_service: Option<String>,
    /// RFC 3339 time.
    target_since: Option<String>,
    /// RFC 3339 time, at most 31 days after `target_since`.
    target_until: Option<String>,
    /// The target run's id (may be the baseline's, with other labels).
    target_run: Option<Uuid>,
    /// With `target_run`: only its hosts whose agent labels hold every
    /// `key:value` of this comma-separated list.
    target_labels: Option<String>,
    #[serde(default)]
    #[param(inline)]
    format: DiffFormat,
    /// Only stacks with a frame matching this regex.
    include: Option<String>,
    /// Without stacks with a frame matching this regex.
    exclude: Option<String>,
    /// How many function changes; 50 when absent.
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<usize>,
    /// JSON: at most this many nodes below the root, `other` nodes
    /// included (default 8192); lighter subtrees merge into one `other`
    /// node per parent, so every total stays exact.
    #[param(minimum = 1, maximum = 200000)]
    max_nodes: Option<usize>,
    /// Aggregate sides: only profiles of this event. Two sides of
    /// different events are never compared (422).
    event: Option<String>,
}

/// One side of the comparison.
#[derive(Debug, Clone)]
enum Side {
    Profile(Uuid),
    Aggregate {
        service: String,
        since: chrono::DateTime<chrono::Utc>,
        until: chrono::DateTime<chrono::Utc>,
    },
    /// A run's members, only those of the hosts in the stratum when it
    /// names labels.
    Run {
        id: Uuid,
        stratum: Vec<(String, String)>,
    },
}

/// One side's parameters as given.
#[derive(Debug, Default, Clone, Copy)]
struct SideParams<'a> {
    profile: Option<Uuid>,
    service: Option<&'a str>,
    since: Option<&'a str>,
    until: Option<&'a str>,
    run: Option<Uuid>,
    labels: Option<&'a str>,
}

/// Exactly one form per side: a profile id, service + since + until, or
/// a run (with or without labels).
fn side(name: &str, given: SideParams<'_>) -> Result<Side, ApiError> {
    let SideParams {
        profile,
        service,
        since,
        until,
        run,
        labels,
    } = given;
    if labels.is_some() && run.is_none() {
        return Err(ApiError::Unprocessable(format!(
            "`{name}_labels` chooses hosts of a run: give `{name}_run` with it"
        )));
    }
    if let Some(id) = run {
        if profile.is_some() || service.is_some() || since.is_some() || until.is_some() {
            return Err(ApiError::Unprocessable(format!(
                "give `{name}` (a profile id), all of `{name}_service`, `{name}_since` and \
                 `{name}_until` (an aggregate), or `{name}_run` (a run): only one"
            )));
        }
        let stratum = labels
            .map(|text| reads::parse_labels(&format!("{name}_labels"), text))
            .transpose()?
            .unwrap_or_default();
        return Ok(Side::Run { id, stratum });
    }
    match (profile, service, since, until) {
        (Some(id), None, None, None) => Ok(Side::Profile(id)),
        (None, Some(service), Some(since), Some(until)) => {
            validate_name(&format!("{name}_service"), service)?;
            let (since, until) = parse_range(
                (&format!("{name}_since"), &format!("{name}_until")),
                since,
                until,
            )?;
            Ok(Side::Aggregate {
                service: service.to_owned(),
                since,
                until,
            })
        }
        _ => Err(ApiError::Unprocessable(format!(
            "give `{name}` (a profile id), all of `{name}_service`, `{name}_since` and \
             `{name}_until` (an aggregate), or `{name}_run` (a run): only one"
        ))),
    }
}

#[derive(Debug)]
struct ValidDiff {
    baseline: Side,
    target: Side,
    filter: StackFilter,
    format: DiffFormat,
    limit: usize,
    max_nodes: usize,
    event: Option<odp_core::EventKind>,
}

impl DiffQuery {
    fn validate(self) -> Result<ValidDiff, ApiError> {
        let baseline = side(
            "baseline",
            SideParams {
                profile: self.baseline,
                service: self.baseline_service.as_deref(),
                since: self.baseline_since.as_deref(),
                until: self.baseline_until.as_deref(),
                run: self.baseline_run,
                labels: self.baseline_labels.as_deref(),
            },
        )?;
        let target = side(
            "target",
            SideParams {
                profile: self.target,
                service: self.target_service.as_deref(),
                since: self.target_since.as_deref(),
                until: self.target_until.as_deref(),
                run: self.target_run,
                labels: self.target_labels.as_deref(),
            },
        )?;
        let filter = StackFilter::new(self.include.as_deref(), self.exclude.as_deref())
            .map_err(filter_error)?;
        let limit = self.limit.unwrap_or(50);
        if !(1..=1000).contains(&limit) {
            return Err(ApiError::Unprocessable(
                "`limit` must be between 1 and 1000".into(),
            ));
        }
        let max_nodes = self.max_nodes.unwrap_or(DEFAULT_MAX_NODES);
        if !(1..=MAX_MAX_NODES).contains(&max_nodes) {
            return Err(ApiError::Unprocessable(format!(
                "`max_nodes` must be a number from 1 to {MAX_MAX_NODES}"
            )));
        }
        let event = self.event.as_deref().map(parse_event).transpose()?;
        Ok(ValidDiff {
            baseline,
            target,
            filter,
            format: self.format,
            limit,
            max_nodes,
            event,
        })
    }
}

struct LoadedSide {
    summary: SideSummary,
    result: ReadResult,
}

async fn load_side(
    state: &AppState,
    side: &Side,
    filter: &StackFilter,
    event: Option<odp_core::EventKind>,
) -> Result<LoadedSide, ApiError> {
    if let Side::Run { id, stratum } = side {
        let row = runs::row(state, *id).await?;
        let read = Read {
            event,
            ..reads::run_read(*id, None, filter.clone())
        };
        let result = reads::read_stratum(state, &row, &read, stratum).await?;
        let label = match stratum.is_empty() {
            true => format!("run {id}"),
            false => {
                let pairs: Vec<String> = stratum.iter().map(|(k, v)| format!("{k}:{v}")).collect();
                format!("run {id} [{}]", pairs.join(","))
            }
        };
        return Ok(loaded(label, result));
    }
    let (label, read) = match side {
        Side::Run { .. } => unreachable!("read above"),
        Side::Profile(id) => {
            profiles::get(state, *id).await?;
            (format!("profile {id}"), Read::profile(*id))
        }
        Side::Aggregate {
            service,
            since,
            until,
        } => (
            format!("{service} {} .. {}", since.to_rfc3339(), until.to_rfc3339()),
            Read {
                scope: ReadScope::Service {
                    service: service.clone(),
                    hosts: Vec::new(),
                },
                from: Some(*since),
                to: Some(*until),
                event,
                ..Read::profile(Uuid::nil())
            },
        ),
    };
    let read = Read {
        stacks: filter.clone(),
        ..read
    };
    let result = odp_store::read(&state.pool, &read).await?;
    Ok(loaded(label, result))
}

fn loaded(label: String, result: ReadResult) -> LoadedSide {
    LoadedSide {
        summary: SideSummary {
            label,
            event: result.event,
            units: sample_unit(result.event, result.period),
            samples: result.samples(),
            profiles: result.profiles,
        },
        result,
    }
}

/// Compare two profiles, aggregates or runs (or strata of runs), each
/// normalized by its own total.
#[utoipa::path(
    get,
    path = "/api/v1/diff",
    operation_id = "diff",
    tag = "queries",
    params(DiffQuery),
    responses(
        (status = 200, description = "The comparison", content(
            (DiffJson = "application/json"),
            (String = "image/svg+xml"),
        )),
        NotFound,
        CommonErrors,
    ),
)]
async fn diff_handler(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppQuery(query): AppQuery<DiffQuery>,
) -> Result<Response, ApiError> {
    caller.require(Role::Viewer)?;
    let valid = query.validate()?;
    let limits = state.read_limits.clone();
    let _turn = limits.heavy_read().await?;
    let baseline = load_side(&state, &valid.baseline, &valid.filter, valid.event).await?;
    let baseline_nodes = decoded_nodes(&baseline.result);
    limits.check_nodes(baseline_nodes)?;
    let target = load_side(&state, &valid.target, &valid.filter, valid.event).await?;
    limits.check_nodes(baseline_nodes + decoded_nodes(&target.result))?;
    if let (Some(b), Some(t)) = (&baseline.summary.event, &target.summary.event) {
        if b != t {
            return Err(ApiError::Unprocessable(format!(
                "cannot compare {b} with {t}: their samples measure different things"
            )));
        }
    }
    match valid.format {
        DiffFormat::Json => {
            let (limit, max_nodes) = (valid.limit, valid.max_nodes);
            let (before, after) = (baseline.result, target.result);
            let (root, changes) = tokio::task::spawn_blocking(move || {
                let whole = |r: &ReadResult| {
                    r.flame_graph(usize::MAX, None)
                        .unwrap_or_else(|| odp_core::flamegraph::build(&[]))
                };
                let root = trim_diff(join_trees(&whole(&before), &whole(&after)), max_nodes);
                let changes = changes_between(
                    (before.top_functions(usize::MAX), before.samples()),
                    (after.top_functions(usize::MAX), after.samples()),
                    limit,
                );
                (root, changes)
            })
            .await
            .map_err(|e| ApiError::Internal(e.to_string()))?;
            Ok(Json(DiffJson {
                baseline: baseline.summary,
                target: target.summary,
                root,
                changes,
            })
            .into_response())
        }
        DiffFormat::Svg => {
            for side in [&baseline, &target] {
                if side.summary.samples == 0 {
                    return Err(ApiError::NotFound(format!(
                        "{} has no samples to compare",
                        side.summary.label
                    )));
                }
            }
            let title = format!(
                "{} vs {} ({})",
                baseline.summary.label,
                target.summary.label,
                target.summary.event.map_or("samples", |e| e.as_str())
            );
            let (before, after) = (baseline.result, target.result);
            let svg = tokio::task::spawn_blocking(move || {
                render_svg(&drawn_stacks(&before), &drawn_stacks(&after), title)
            })
            .await
            .map_err(|e| ApiError::Internal(e.to_string()))?
            .map_err(|e| ApiError::Internal(format!("diff rendering failed: {e}")))?;
            limits.check_output(svg.len())?;
            Ok(([(header::CONTENT_TYPE, "image/svg+xml")], svg).into_response())
        }
    }
}

/// The stacks of a side an SVG draws: subtrees narrower than inferno
/// draws (under 1/12,000 of the side's samples) fold into their parents,
/// as for a profile's SVG.
fn drawn_stacks(result: &ReadResult) -> Vec<odp_core::WeightedStack> {
    odp_profile::stacks::pruned_stacks(&result.merged(), result.samples() / 12_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unprocessable(query: DiffQuery) -> String {
        match query.validate() {
            Err(ApiError::Unprocessable(m)) => m,
            other => panic!("expected 422, got {other:?}"),
        }
    }

    #[test]
    fn node_budgets_are_checked() {
        let (a, b) = (Some(Uuid::new_v4()), Some(Uuid::new_v4()));
        for bad in [0, MAX_MAX_NODES + 1] {
            let query = DiffQuery {
                baseline: a,
                target: b,
                max_nodes: Some(bad),
                ..Default::default()
            };
            assert!(unprocessable(query).contains("max_nodes"));
        }
        let valid = DiffQuery {
            baseline: a,
            target: b,
            ..Default::default()
        };
        assert_eq!(valid.validate().unwrap().max_nodes, DEFAULT_MAX_NODES);
    }

    #[test]
    fn each_side_takes_exactly_one_form() {
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let valid = DiffQuery {
            baseline: Some(a),
            target_service: Some("checkout".into()),
            target_since: Some("2026-11-01T00:00:00Z".into()),
            target_until: Some("2026-11-01T01:00:00Z".into()),
            ..Default::default()
        }
        .validate()
        .unwrap();
        assert!(matches!(valid.baseline, Side::Profile(id) if id == a));
        assert!(matches!(&valid.target, Side::Aggregate { service, .. } if service == "checkout"));
        assert_eq!(valid.limit, 50);

        let both = DiffQuery {
            baseline: Some(a),
            baseline_service: Some("checkout".into()),
            target: Some(b),
            ..Default::default()
        };
        assert!(unprocessable(both).contains("`baseline`"));
        let missing_target = DiffQuery {
            baseline: Some(a),
            ..Default::default()
        };
        assert!(unprocessable(missing_target).contains("`target`"));
        let partial = DiffQuery {
            baseline: Some(a),
            target_service: Some("checkout".into()),
            target_since: Some("2026-11-01T00:00:00Z".into()),
            ..Default::default()
        };
        assert!(unprocessable(partial).contains("target_until"));
    }

    #[test]
    fn a_side_may_be_a_run_or_a_stratum_of_one() {
        let run = Uuid::new_v4();
        let valid = DiffQuery {
            baseline_run: Some(run),
            baseline_labels: Some("version:v1".into()),
            target_run: Some(run),
            target_labels: Some("version:v2, zone:a".into()),
            ..Default::default()
        }
        .validate()
        .unwrap();
        assert!(matches!(&valid.baseline, Side::Run { id, stratum }
            if *id == run && stratum == &[("version".to_owned(), "v1".to_owned())]));
        assert!(matches!(&valid.target, Side::Run { stratum, .. } if stratum.len() == 2));
        let whole = DiffQuery {
            baseline_run: Some(run),
            target: Some(Uuid::new_v4()),
            ..Default::default()
        }
        .validate()
        .unwrap();
        assert!(matches!(&whole.baseline, Side::Run { stratum, .. } if stratum.is_empty()));

        let labels_alone = DiffQuery {
            baseline: Some(run),
            baseline_labels: Some("version:v1".into()),
            target_run: Some(run),
            ..Default::default()
        };
        assert!(unprocessable(labels_alone).contains("baseline_run"));
        let run_and_profile = DiffQuery {
            baseline: Some(run),
            baseline_run: Some(run),
            target_run: Some(run),
            ..Default::default()
        };
        assert!(unprocessable(run_and_profile).contains("only one"));
        let run_and_service = DiffQuery {
            baseline_run: Some(run),
            target_run: Some(run),
            target_service: Some("checkout".into()),
            ..Default::default()
        };
        assert!(unprocessable(run_and_service).contains("target_run"));
        let bad_labels = DiffQuery {
            baseline_run: Some(run),
            target_run: Some(run),
            target_labels: Some("version".into()),
            ..Default::default()
        };
        assert!(unprocessable(bad_labels).contains("target_labels"));
    }

    #[test]
    fn rejects_bad_ranges_patterns_and_limits() {
        let (a, b) = (Some(Uuid::new_v4()), Some(Uuid::new_v4()));
        let backwards = DiffQuery {
            baseline: a,
            target_service: Some("s".into()),
            target_since: Some("2026-11-02T00:00:00Z".into()),
            target_until: Some("2026-11-01T00:00:00Z".into()),
            ..Default::default()
        };
        assert!(unprocessable(backwards).contains("before"));
        let pattern = DiffQuery {
            baseline: a,
            target: b,
            exclude: Some("[".into()),
            ..Default::default()
        };
        assert!(unprocessable(pattern).contains("exclude"));
        let limit = DiffQuery {
            baseline: a,
            target: b,
            limit: Some(0),
            ..Default::default()
        };
        assert!(unprocessable(limit).contains("limit"));
    }
}
