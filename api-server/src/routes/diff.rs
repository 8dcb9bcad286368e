//! Differential flame graph of two profiles or aggregates, each side
//! normalized by its own total samples.
//!
//! `GET /api/v1/diff?baseline=ID&target=ID[&format=json|svg][&include=RE]
//! [&exclude=RE][&limit=N][&max_nodes=N]`; either side may instead be an
//! aggregate, `baseline_service=S&baseline_since=T&baseline_until=T` (same
//! for `target_`), or a run's members, `baseline_run=ID`, optionally only
//! the hosts whose labels hold `baseline_labels=key:value,...` (a stratum):
//! run against run, or one stratum of a run against another. The
//! comparison itself is [`crate::service::diff`]'s.

use axum::response::Response;
use odp_api_types::DiffJson;
use odp_core::filter::StackFilter;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::AppQuery;
use crate::openapi::{CommonErrors, NotFound};
use crate::service::diff::{self, DiffFormat, Side, ValidDiff};
use crate::service::queries::{filter_error, parse_range, DEFAULT_MAX_NODES, MAX_MAX_NODES};
use crate::service::runs::reads;
use crate::service::start_options::parse_event;
use crate::validate::validate_name;
use crate::AppState;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(diff_handler))
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
    Ok(diff::compare(&state, query.validate()?).await?)
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
