//! A function's trend over a service's history: its share of the
//! service's samples and the cores it keeps busy, step by step with their
//! standard errors ([`odp_core::trend`]), from the windows stored for the
//! service (on-demand, runs, schedules and continuous profiles alike).

use chrono::{DateTime, Utc};
use odp_api_types::TrendResponse;
use odp_core::filter::{compile, StackFilter, ThreadFilter};
use odp_core::trend::trend;
use odp_store::{Read, ReadScope, Spans};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::service::queries::{filter_error, parse_range};
use crate::service::runs::reads::parse_labels;
use crate::service::start_options::parse_event;
use crate::service_error::ServiceError;
use crate::validate::validate_name;
use crate::AppState;

/// Most steps one trend answers.
const MAX_POINTS: i64 = 2000;
/// The shortest step: an agent's window.
const MIN_STEP_SECS: i64 = 10;
/// Steps offered when none is asked for: the shortest giving at most
/// [`DEFAULT_POINTS`] points.
const STEPS: [i64; 9] = [10, 30, 60, 300, 900, 3600, 6 * 3600, DAY_SECS, 7 * DAY_SECS];
const DEFAULT_POINTS: i64 = 120;
const DAY_SECS: i64 = 86_400;
/// Ranges longer than this are stepped by whole days when no step is
/// asked for: whole days are read from the service's day blocks, a 24th
/// of the windows of its hours.
const DAY_STEPS_AFTER_SECS: i64 = 7 * DAY_SECS;
/// Most hosts a trend may name.
const MAX_HOSTS: usize = 1000;

/// `GET /api/v1/services/{name}/trend`'s query.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(crate) struct TrendParams {
    /// The function: a regex a frame of a stack matches (`^parse$`,
    /// `json\.`).
    #[param(min_length = 1, max_length = 1000)]
    pub(crate) function: String,
    /// RFC 3339 time: the range's start.
    pub(crate) since: String,
    /// RFC 3339 time: the range's end; at most 31 days after `since`.
    pub(crate) until: String,
    /// Seconds per step (at least 10); by default the shortest of 10 s,
    /// 30 s, 1 min, 5 min, 15 min, 1 h, 6 h, 1 day or 1 week that gives at
    /// most 120 steps, and 1 day for ranges over 7 days. At most 2,000
    /// steps. Steps of whole days start at UTC midnight: `since` is moved
    /// back to the start of its day.
    #[param(minimum = 10)]
    pub(crate) step_secs: Option<i64>,
    /// Only windows of this event (`cpu-clock`, `wall`, ...).
    pub(crate) event: Option<String>,
    /// Only these hosts, comma-separated.
    pub(crate) hosts: Option<String>,
    /// Only hosts whose agents last reported all of these labels:
    /// comma-separated `key:value` pairs (`zone:eu-1,version:2.4.1`).
    /// With `hosts`, the hosts in both.
    pub(crate) labels: Option<String>,
    /// Only threads with this name, or matching it as a regex.
    pub(crate) thread: Option<String>,
}

/// What a trend reads, checked.
struct TrendQuery {
    read: Read,
    function: String,
    matched: StackFilter,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
    step_secs: i64,
    hosts: Vec<String>,
    labels: Vec<(String, String)>,
}

fn hosts(text: Option<&str>) -> Result<Vec<String>, ServiceError> {
    let mut hosts: Vec<String> = Vec::new();
    for host in text
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
    {
        validate_name("hosts", host)?;
        if !hosts.iter().any(|h| h == host) {
            hosts.push(host.to_owned());
        }
    }
    if hosts.len() > MAX_HOSTS {
        return Err(ServiceError::Invalid(format!(
            "`hosts` names {} hosts, at most {MAX_HOSTS}",
            hosts.len()
        )));
    }
    Ok(hosts)
}

/// The step asked for, checked against the range, or the default one.
fn step(asked: Option<i64>, range_secs: i64) -> Result<i64, ServiceError> {
    match asked {
        Some(step) if step < MIN_STEP_SECS => Err(ServiceError::Invalid(format!(
            "`step_secs` must be at least {MIN_STEP_SECS} (an agent's window)"
        ))),
        Some(step) if (range_secs + step - 1) / step > MAX_POINTS => {
            Err(ServiceError::Invalid(format!(
                "{range_secs} s in steps of {step} s is more than {MAX_POINTS} steps: \
                 ask for a longer step or a shorter range"
            )))
        }
        Some(step) => Ok(step),
        None => Ok(STEPS
            .into_iter()
            .find(|&step| {
                (range_secs + step - 1) / step <= DEFAULT_POINTS
                    && (range_secs <= DAY_STEPS_AFTER_SECS || step >= DAY_SECS)
            })
            .unwrap_or(STEPS[STEPS.len() - 1])),
    }
}

/// `since` at the start of its UTC day when steps are whole days (each
/// day then falls in one step, and is read as one window per host), as
/// it is otherwise.
fn step_start(since: DateTime<Utc>, step_secs: i64) -> DateTime<Utc> {
    if step_secs % DAY_SECS != 0 {
        return since;
    }
    let day_ms = DAY_SECS * 1000;
    DateTime::from_timestamp_millis(since.timestamp_millis().div_euclid(day_ms) * day_ms)
        .unwrap_or(since)
}

fn query(service: String, params: TrendParams) -> Result<TrendQuery, ServiceError> {
    validate_name("service", &service)?;
    let (since, until) = parse_range(("since", "until"), &params.since, &params.until)?;
    let step_secs = step(params.step_secs, (until - since).num_seconds().max(1))?;
    let since = step_start(since, step_secs);
    let matched = StackFilter {
        include: Some(compile("function", &params.function).map_err(filter_error)?),
        exclude: None,
    };
    let thread = params
        .thread
        .as_deref()
        .map(ThreadFilter::new)
        .transpose()
        .map_err(filter_error)?;
    let hosts = hosts(params.hosts.as_deref())?;
    let labels = params
        .labels
        .as_deref()
        .map(|text| parse_labels("labels", text))
        .transpose()?
        .unwrap_or_default();
    let read = Read {
        scope: ReadScope::Service {
            service: service.clone(),
            hosts: hosts.clone(),
        },
        from: Some(since),
        to: Some(until),
        thread,
        stacks: StackFilter::default(),
        event: params.event.as_deref().map(parse_event).transpose()?,
    };
    Ok(TrendQuery {
        read,
        function: params.function,
        matched,
        since,
        until,
        step_secs,
        hosts,
        labels,
    })
}

/// Narrows `query` to the hosts that report its labels; 422 when none do.
async fn narrow_to_labels(state: &AppState, query: &mut TrendQuery) -> Result<(), ServiceError> {
    if query.labels.is_empty() {
        return Ok(());
    }
    let mut labelled = odp_store::hosts_labelled(&state.pool, &query.labels).await?;
    if !query.hosts.is_empty() {
        labelled.retain(|h| query.hosts.contains(h));
    }
    if labelled.is_empty() {
        let asked: Vec<String> = query
            .labels
            .iter()
            .map(|(k, v)| format!("{k}:{v}"))
            .collect();
        return Err(ServiceError::Invalid(format!(
            "no host{} reports the labels {}",
            if query.hosts.is_empty() {
                ""
            } else {
                " of `hosts`"
            },
            asked.join(",")
        )));
    }
    if labelled.len() > MAX_HOSTS {
        return Err(ServiceError::Invalid(format!(
            "{} hosts report the labels, at most {MAX_HOSTS}: narrow them",
            labelled.len()
        )));
    }
    if let ReadScope::Service { hosts, .. } = &mut query.read.scope {
        hosts.clone_from(&labelled);
    }
    query.hosts = labelled;
    Ok(())
}

/// The trend `params` ask for of `service`.
pub(crate) async fn service_trend(
    state: &AppState,
    service: String,
    params: TrendParams,
) -> Result<TrendResponse, ServiceError> {
    let mut query = query(service.clone(), params)?;
    narrow_to_labels(state, &mut query).await?;
    let _turn = state.read_limits.heavy_read().await?;
    let spans = if query.step_secs % DAY_SECS == 0 {
        Spans::Range
    } else {
        Spans::Stored
    };
    let counted =
        odp_store::read_window_counts(&state.pool, &query.read, &query.matched, spans).await?;
    let (since_ms, until_ms) = (
        query.since.timestamp_millis(),
        query.until.timestamp_millis(),
    );
    let step_ms = query.step_secs * 1000;
    let (event, points) = match counted {
        Some((event, windows)) => (
            Some(event),
            trend(&windows, event, since_ms, until_ms, step_ms),
        ),
        None => (
            None,
            trend(
                &[],
                odp_core::EventKind::CpuClock,
                since_ms,
                until_ms,
                step_ms,
            ),
        ),
    };
    Ok(TrendResponse {
        service,
        function: query.function,
        event,
        since: query.since,
        until: query.until,
        step_secs: query.step_secs.unsigned_abs(),
        hosts: query.hosts,
        points,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(function: &str, since: &str, until: &str, step: Option<i64>) -> TrendParams {
        TrendParams {
            function: function.into(),
            since: since.into(),
            until: until.into(),
            step_secs: step,
            event: None,
            hosts: None,
            labels: None,
            thread: None,
        }
    }

    fn refusal(result: Result<TrendQuery, ServiceError>) -> String {
        match result {
            Err(ServiceError::Invalid(message)) => message,
            Err(other) => panic!("not a 422: {other:?}"),
            Ok(_) => panic!("accepted"),
        }
    }

    #[test]
    fn the_default_step_gives_at_most_120_points() {
        let day = query(
            "s".into(),
            params("^f$", "2026-11-27T00:00:00Z", "2026-11-28T00:00:00Z", None),
        )
        .unwrap();
        assert_eq!(day.step_secs, 900, "a day in quarter hours: 96 points");
        let month = query(
            "s".into(),
            params("^f$", "2026-10-29T00:00:00Z", "2026-11-28T00:00:00Z", None),
        )
        .unwrap();
        assert_eq!(month.step_secs, DAY_SECS, "over a week, whole days");
        let week = query(
            "s".into(),
            params("^f$", "2026-11-21T00:00:00Z", "2026-11-28T00:00:00Z", None),
        )
        .unwrap();
        assert_eq!(week.step_secs, 6 * 3600, "a week in 28 steps");
        let minute = query(
            "s".into(),
            params("^f$", "2026-11-28T00:00:00Z", "2026-11-28T00:01:00Z", None),
        )
        .unwrap();
        assert_eq!(minute.step_secs, 10);
    }

    #[test]
    fn steps_of_whole_days_start_at_utc_midnight() {
        let days = query(
            "s".into(),
            params("^f$", "2026-11-01T13:45:00Z", "2026-11-28T09:00:00Z", None),
        )
        .unwrap();
        assert_eq!(days.step_secs, DAY_SECS);
        assert_eq!(days.since.to_rfc3339(), "2026-11-01T00:00:00+00:00");
        let hours = query(
            "s".into(),
            params(
                "^f$",
                "2026-11-01T13:45:00Z",
                "2026-11-02T09:00:00Z",
                Some(3600),
            ),
        )
        .unwrap();
        assert_eq!(hours.since.to_rfc3339(), "2026-11-01T13:45:00+00:00");
    }

    #[test]
    fn bad_ranges_steps_and_patterns_are_refused_with_the_reason() {
        let reversed = refusal(query(
            "s".into(),
            params("f", "2026-11-28T00:00:00Z", "2026-11-27T00:00:00Z", None),
        ));
        assert!(reversed.contains("before"), "{reversed}");
        let wide = refusal(query(
            "s".into(),
            params("f", "2026-01-01T00:00:00Z", "2026-11-28T00:00:00Z", None),
        ));
        assert!(wide.contains("31 days"), "{wide}");
        let short = refusal(query(
            "s".into(),
            params("f", "2026-11-27T00:00:00Z", "2026-11-28T00:00:00Z", Some(5)),
        ));
        assert!(short.contains("at least 10"), "{short}");
        let many = refusal(query(
            "s".into(),
            params(
                "f",
                "2026-11-01T00:00:00Z",
                "2026-11-28T00:00:00Z",
                Some(10),
            ),
        ));
        assert!(many.contains("2000 steps"), "{many}");
        let regex = refusal(query(
            "s".into(),
            params("(", "2026-11-27T00:00:00Z", "2026-11-28T00:00:00Z", None),
        ));
        assert!(regex.contains("`function`"), "{regex}");
    }
}
