//! A service's flame graph across its hosts and a time range: the two-level
//! merge of Atys (per host, then across hosts), optionally only some hosts,
//! threads and frames.
//!
//! `GET /api/v1/aggregate?service=S&since=T&until=T[&host=H...][&thread=RE]
//! [&include=RE][&exclude=RE][&format=json|folded|svg|pprof|speedscope]`

use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, Utc};
use odp_core::filter::{FilterError, StackFilter, ThreadFilter};
use odp_core::flamegraph::{self, FlameNode};
use odp_core::merge::MergedStacks;
use odp_store::{AggregateQuery, ProfileSliceQuery, ProfileStacks, ScopedStacks};
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::AppQuery;
use crate::openapi::{schemas, CommonErrors};
use crate::routes::profiles::validate_name;
use crate::routes::render::{render, Format, Rendering};
use crate::AppState;

/// Longest range one aggregate may cover.
pub(crate) const MAX_RANGE_DAYS: i64 = 31;
/// At most this many `host` values.
const MAX_HOSTS: usize = 1000;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(aggregate))
}

/// The parameters `parse` reads, for the document: the handler takes the
/// raw pairs, so that `host` may repeat. Never built.
#[allow(dead_code)]
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
struct AggregateParams {
    #[param(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")]
    service: String,
    /// RFC 3339 time: profiles created at or after it.
    since: DateTime<Utc>,
    /// RFC 3339 time: profiles created before it; at most 31 days after
    /// `since`.
    until: DateTime<Utc>,
    /// Only these hosts; repeat the parameter or separate with commas.
    host: Option<Vec<String>>,
    /// Only threads with this name, or matching it as a regex.
    thread: Option<String>,
    /// Only stacks with a frame matching this regex.
    include: Option<String>,
    /// Without stacks with a frame matching this regex.
    exclude: Option<String>,
    #[param(inline)]
    format: Option<Format>,
}

/// The parsed, validated query.
#[derive(Debug)]
struct ValidAggregate {
    query: AggregateQuery,
    filter: StackFilter,
    format: Format,
}

pub(crate) fn filter_error(e: FilterError) -> ApiError {
    ApiError::Unprocessable(e.to_string())
}

pub(crate) fn parse_time(what: &str, text: &str) -> Result<DateTime<Utc>, ApiError> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| {
            ApiError::Unprocessable(format!(
                "`{what}` must be an RFC 3339 time like 2026-11-21T10:00:00Z: {e}"
            ))
        })
}

/// A validated `[since, until)` range of at most [`MAX_RANGE_DAYS`].
pub(crate) fn parse_range(
    what: (&str, &str),
    since: &str,
    until: &str,
) -> Result<(DateTime<Utc>, DateTime<Utc>), ApiError> {
    let (since, until) = (parse_time(what.0, since)?, parse_time(what.1, until)?);
    if since >= until {
        return Err(ApiError::Unprocessable(format!(
            "`{}` must be before `{}`",
            what.0, what.1
        )));
    }
    if until - since > chrono::Duration::days(MAX_RANGE_DAYS) {
        return Err(ApiError::Unprocessable(format!(
            "the range may cover at most {MAX_RANGE_DAYS} days"
        )));
    }
    Ok((since, until))
}

/// Parses the query pairs: `host` may repeat or hold a comma-separated
/// list; every other parameter may appear once.
fn parse(pairs: Vec<(String, String)>) -> Result<ValidAggregate, ApiError> {
    let mut single: std::collections::HashMap<&'static str, String> = Default::default();
    let mut hosts: Vec<String> = Vec::new();
    for (key, value) in pairs {
        let name = match key.as_str() {
            "host" => {
                for host in value.split(',').map(str::trim).filter(|h| !h.is_empty()) {
                    validate_name("host", host)?;
                    if !hosts.iter().any(|h| h == host) {
                        hosts.push(host.to_owned());
                    }
                }
                continue;
            }
            "service" => "service",
            "since" => "since",
            "until" => "until",
            "thread" => "thread",
            "include" => "include",
            "exclude" => "exclude",
            "format" => "format",
            other => {
                return Err(ApiError::Unprocessable(format!(
                    "unknown parameter `{other}`; expected service, since, until, host, \
                     thread, include, exclude or format"
                )))
            }
        };
        if single.insert(name, value).is_some() {
            return Err(ApiError::Unprocessable(format!(
                "`{name}` may be given once"
            )));
        }
    }
    if hosts.len() > MAX_HOSTS {
        return Err(ApiError::Unprocessable(format!(
            "at most {MAX_HOSTS} hosts"
        )));
    }
    let required = |name: &str| {
        single
            .get(name)
            .cloned()
            .ok_or_else(|| ApiError::Unprocessable(format!("`{name}` is required")))
    };
    let service = required("service")?;
    validate_name("service", &service)?;
    let (since, until) = parse_range(("since", "until"), &required("since")?, &required("until")?)?;
    let thread = single
        .get("thread")
        .map(|t| ThreadFilter::new(t))
        .transpose()
        .map_err(filter_error)?;
    let filter = StackFilter::new(
        single.get("include").map(String::as_str),
        single.get("exclude").map(String::as_str),
    )
    .map_err(filter_error)?;
    let format = match single.get("format").map(String::as_str) {
        None | Some("json") => Format::Json,
        Some("folded") => Format::Folded,
        Some("svg") => Format::Svg,
        Some("pprof") => Format::Pprof,
        Some("speedscope") => Format::Speedscope,
        Some(other) => {
            return Err(ApiError::Unprocessable(format!(
                "unknown format {other:?}; expected json, folded, svg, pprof or speedscope"
            )))
        }
    };
    Ok(ValidAggregate {
        query: AggregateQuery {
            service,
            since,
            until,
            hosts,
            thread,
            window_since: None,
            window_until: None,
        },
        filter,
        format,
    })
}

/// Applies `filter` to every host's stacks, then merges in two levels.
pub(crate) fn filter_and_merge(data: &mut ScopedStacks, filter: &StackFilter) -> MergedStacks {
    if !filter.is_noop() {
        for host in &mut data.hosts {
            host.stacks = filter.apply(std::mem::take(&mut host.stacks));
        }
    }
    data.merged()
}

/// The filters the single-profile endpoints (`/flamegraph`, `/top`) take:
/// threads, frames and a time window.
#[derive(Debug, Default, Clone, Copy)]
pub struct SliceParams<'a> {
    pub thread: Option<&'a str>,
    pub include: Option<&'a str>,
    pub exclude: Option<&'a str>,
    pub window_since: Option<&'a str>,
    pub window_until: Option<&'a str>,
}

impl SliceParams<'_> {
    /// `None` when no filter is set (the whole profile).
    fn validate(
        &self,
        profile_id: uuid::Uuid,
    ) -> Result<Option<(ProfileSliceQuery, StackFilter)>, ApiError> {
        let any = [
            self.thread,
            self.include,
            self.exclude,
            self.window_since,
            self.window_until,
        ]
        .iter()
        .any(Option::is_some);
        if !any {
            return Ok(None);
        }
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
                return Err(ApiError::Unprocessable(
                    "`window_since` must be before `window_until`".into(),
                ));
            }
        }
        let thread = self
            .thread
            .map(ThreadFilter::new)
            .transpose()
            .map_err(filter_error)?;
        let filter = StackFilter::new(self.include, self.exclude).map_err(filter_error)?;
        Ok(Some((
            ProfileSliceQuery {
                profile_id,
                thread,
                window_since,
                window_until,
            },
            filter,
        )))
    }
}

/// A profile's stacks as `odp_store::profile_stacks` returns them, narrowed
/// by `params` when any is set.
pub async fn filtered_profile_stacks(
    pool: &sqlx::PgPool,
    profile_id: uuid::Uuid,
    params: SliceParams<'_>,
) -> Result<ProfileStacks, ApiError> {
    let Some((query, filter)) = params.validate(profile_id)? else {
        return Ok(odp_store::profile_stacks(pool, profile_id).await?);
    };
    let mut data = odp_store::profile_slice(pool, &query).await?;
    let merged = filter_and_merge(&mut data, &filter);
    Ok(ProfileStacks {
        event: data.event,
        snapshots: data.snapshots,
        samples: merged.samples,
        stacks: merged.stacks,
    })
}

#[derive(Debug, Serialize, ToSchema)]
struct HostSummary {
    host: String,
    samples: u64,
    profiles: u64,
    snapshots: i64,
}

#[derive(Debug, Serialize, ToSchema)]
struct AggregateJson {
    service: String,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
    event: Option<String>,
    profiles: u64,
    snapshots: i64,
    samples: u64,
    hosts: Vec<HostSummary>,
    #[schema(value_type = schemas::FlameNode)]
    root: FlameNode,
}

/// The JSON answers: the merged tree (`format=json`) or a speedscope
/// file. Never built: it documents what `render` answers.
#[allow(dead_code)]
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
enum AggregateBody {
    Tree(AggregateJson),
    Speedscope(schemas::SpeedscopeFile),
}

/// A service's flame graph across its hosts and a time range (merged per
/// host, then across hosts).
#[utoipa::path(
    get,
    path = "/api/v1/aggregate",
    operation_id = "aggregate",
    tag = "queries",
    params(AggregateParams),
    responses(
        (status = 200, description = "The merged flame graph in the requested format", content(
            (AggregateBody = "application/json"),
            (String = "text/plain"),
            (String = "image/svg+xml"),
            (Vec<u8> = "application/octet-stream"),
        )),
        (status = 404, description = "`format=svg` of an aggregate without samples", body = crate::openapi::ErrorBody),
        CommonErrors,
    ),
)]
async fn aggregate(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppQuery(pairs): AppQuery<Vec<(String, String)>>,
) -> Result<Response, ApiError> {
    caller.require(Role::Viewer)?;
    let ValidAggregate {
        query,
        filter,
        format,
    } = parse(pairs)?;
    let mut data = odp_store::aggregate_stacks(&state.pool, &query).await?;
    let merged = filter_and_merge(&mut data, &filter);
    let hosts = data
        .hosts
        .iter()
        .map(|h| HostSummary {
            host: h.host.clone(),
            samples: merged
                .instances
                .iter()
                .find(|i| i.instance == h.host)
                .map_or(0, |i| i.samples),
            profiles: h.profiles,
            snapshots: h.snapshots,
        })
        .collect();
    let rendering = Rendering {
        title: format!(
            "{} on {} hosts, {} .. {}",
            query.service,
            merged.instances.len(),
            query.since.to_rfc3339(),
            query.until.to_rfc3339()
        ),
        file_stem: format!("aggregate-{}", query.service),
        event: data.event,
        // Profiles of one aggregate may sample at different rates.
        period_nanos: None,
        duration_nanos: None,
        time_nanos: query.since.timestamp_nanos_opt(),
        samples: merged.samples,
        stacks: merged.stacks,
    };
    let (profiles, snapshots) = (data.profiles, data.snapshots);
    render(format, rendering, |r| {
        Json(AggregateJson {
            service: query.service,
            since: query.since,
            until: query.until,
            event: r.event,
            profiles,
            snapshots,
            samples: r.samples,
            hosts,
            root: flamegraph::build(&r.stacks),
        })
        .into_response()
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn base() -> Vec<(&'static str, &'static str)> {
        vec![
            ("service", "checkout"),
            ("since", "2026-11-01T00:00:00Z"),
            ("until", "2026-11-02T00:00:00Z"),
        ]
    }

    fn invalid(extra: &[(&'static str, &'static str)]) -> String {
        let mut list = base();
        list.extend_from_slice(extra);
        match parse(pairs(&list)) {
            Err(ApiError::Unprocessable(message)) => message,
            other => panic!("expected 422 for {extra:?}, got {other:?}"),
        }
    }

    #[test]
    fn hosts_repeat_or_come_comma_separated() {
        let mut list = base();
        list.extend([("host", "a, b"), ("host", "c"), ("host", "a")]);
        let valid = parse(pairs(&list)).unwrap();
        assert_eq!(valid.query.hosts, ["a", "b", "c"]);
        assert_eq!(valid.format, Format::Json);
        assert!(valid.filter.is_noop() && valid.query.thread.is_none());
    }

    #[test]
    fn rejects_bad_input_with_422() {
        assert!(invalid(&[("since", "x")]).contains("once"));
        assert!(invalid(&[("format", "png")]).contains("format"));
        assert!(invalid(&[("include", "(")]).contains("include"));
        assert!(invalid(&[("host", "bad host")]).contains("host"));
        assert!(invalid(&[("limit", "3")]).contains("unknown parameter"));
        for (since, until, want) in [
            ("2026-11-02T00:00:00Z", "2026-11-01T00:00:00Z", "before"),
            ("2026-01-01T00:00:00Z", "2026-03-01T00:00:00Z", "31 days"),
            ("yesterday", "2026-03-01T00:00:00Z", "RFC 3339"),
        ] {
            let list = [("service", "s"), ("since", since), ("until", until)];
            match parse(pairs(&list)) {
                Err(ApiError::Unprocessable(m)) => assert!(m.contains(want), "{m}"),
                other => panic!("{other:?}"),
            }
        }
        match parse(pairs(&[("service", "a b")])) {
            Err(ApiError::Unprocessable(m)) => assert!(m.contains("service"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn slice_params_validate_only_when_set() {
        let id = uuid::Uuid::nil();
        assert!(SliceParams::default().validate(id).unwrap().is_none());
        let (query, filter) = SliceParams {
            thread: Some("^worker-"),
            exclude: Some("gc"),
            window_since: Some("2026-11-01T00:00:00Z"),
            ..Default::default()
        }
        .validate(id)
        .unwrap()
        .unwrap();
        assert!(query.thread.unwrap().matches("worker-2"));
        assert!(query.window_since.is_some() && query.window_until.is_none());
        assert!(filter.exclude.is_some() && filter.include.is_none());
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
                matches!(params.validate(id), Err(ApiError::Unprocessable(_))),
                "{params:?}"
            );
        }
    }

    #[test]
    fn filters_apply_per_host_before_the_merge() {
        let ws = |frames: &[&str], count| odp_core::WeightedStack {
            frames: frames.iter().map(|s| s.to_string()).collect(),
            count,
        };
        let mut data = ScopedStacks {
            event: Some("cpu-clock".into()),
            profiles: 2,
            snapshots: 2,
            samples: 10,
            hosts: vec![
                odp_store::HostStacks {
                    host: "a".into(),
                    stacks: vec![ws(&["main", "hot"], 4), ws(&["main", "gc"], 2)],
                    ..Default::default()
                },
                odp_store::HostStacks {
                    host: "b".into(),
                    stacks: vec![ws(&["main", "hot"], 3), ws(&["main", "gc"], 1)],
                    ..Default::default()
                },
            ],
        };
        let filter = StackFilter::new(None, Some("^gc$")).unwrap();
        let merged = filter_and_merge(&mut data, &filter);
        assert_eq!(merged.samples, 7);
        assert_eq!(merged.stacks, vec![ws(&["main", "hot"], 7)]);
        let per_host: Vec<u64> = merged.instances.iter().map(|i| i.samples).collect();
        assert_eq!(per_host, [4, 3]);
    }
}
