//! A service's flame graph across its hosts and a time range: the two-level
//! merge of Atys (per host, then across hosts), optionally only some hosts,
//! threads and frames.
//!
//! `GET /api/v1/aggregate?service=S&since=T&until=T[&host=H...][&thread=RE]
//! [&include=RE][&exclude=RE][&format=json|folded|svg|pprof|speedscope]`

use axum::response::Response;
use chrono::{DateTime, Utc};
use odp_api_types::AggregateBody;
use odp_core::filter::{StackFilter, ThreadFilter};
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::AppQuery;
use crate::openapi::CommonErrors;
use crate::render::{Format, Orientation};
use crate::service::aggregate::{self, ServiceQuery};
use crate::service::queries::{filter_error, parse_range, TreeParams, MAX_MAX_NODES};
use crate::service::start_options::parse_event;
use crate::validate::validate_name;
use crate::AppState;

/// At most this many `host` values.
const MAX_HOSTS: usize = 1000;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(aggregate))
}

/// The query's parameters, each parsed. Read from the raw pairs
/// ([`AggregateParams::from_pairs`]) rather than by `Query`, so that `host`
/// may repeat.
#[derive(Debug, IntoParams)]
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
    /// SVG: roots at the bottom (`flame`, the default) or on top
    /// (`icicle`).
    #[param(inline)]
    orientation: Option<Orientation>,
    /// JSON: at most about this many nodes (default 8192); lighter
    /// subtrees merge into one `other` node per parent.
    #[param(minimum = 1, maximum = 200000)]
    max_nodes: Option<usize>,
    /// Only profiles of this event (`cpu-clock`, `off-cpu`, `wall`,
    /// `lock`...). Needed when the range holds profiles of several events,
    /// whose samples cannot be added: the answer is then a 422 naming them.
    event: Option<String>,
    /// JSON: open only the subtree at this path of frame names,
    /// `;`-separated from the root (as the UI asks when a node is zoomed).
    focus: Option<String>,
}

/// The parsed, validated query.
#[derive(Debug)]
struct ValidAggregate {
    query: ServiceQuery,
    format: Format,
    orientation: Orientation,
    tree: TreeParams,
}

impl AggregateParams {
    /// Reads the query pairs: `host` may repeat or hold a comma-separated
    /// list; every other parameter may appear once.
    fn from_pairs(pairs: Vec<(String, String)>) -> Result<AggregateParams, ApiError> {
        let (mut single, hosts) = group(pairs)?;
        let mut take = |name: &str| single.remove(name);
        let service = take("service")
            .ok_or_else(|| ApiError::Unprocessable("`service` is required".into()))?;
        validate_name("service", &service)?;
        let since =
            take("since").ok_or_else(|| ApiError::Unprocessable("`since` is required".into()))?;
        let until =
            take("until").ok_or_else(|| ApiError::Unprocessable("`until` is required".into()))?;
        let (since, until) = parse_range(("since", "until"), &since, &until)?;
        let format = take("format").map(|f| parse_format(&f)).transpose()?;
        let orientation = take("orientation")
            .map(|o| Orientation::parse(&o))
            .transpose()?;
        let max_nodes = take("max_nodes")
            .map(|text| {
                text.parse::<usize>().map_err(|_| {
                    ApiError::Unprocessable(format!(
                        "`max_nodes` must be a number from 1 to {MAX_MAX_NODES}"
                    ))
                })
            })
            .transpose()?;
        Ok(AggregateParams {
            service,
            since,
            until,
            host: (!hosts.is_empty()).then_some(hosts),
            thread: take("thread"),
            include: take("include"),
            exclude: take("exclude"),
            format,
            orientation,
            max_nodes,
            event: take("event"),
            focus: take("focus"),
        })
    }

    /// What to read and how to answer.
    fn validate(self) -> Result<ValidAggregate, ApiError> {
        let thread = self
            .thread
            .as_deref()
            .map(ThreadFilter::new)
            .transpose()
            .map_err(filter_error)?;
        let filter = StackFilter::new(self.include.as_deref(), self.exclude.as_deref())
            .map_err(filter_error)?;
        let tree = TreeParams::new(self.max_nodes, self.focus)?;
        let event = self.event.as_deref().map(parse_event).transpose()?;
        Ok(ValidAggregate {
            query: ServiceQuery {
                service: self.service,
                since: self.since,
                until: self.until,
                hosts: self.host.unwrap_or_default(),
                thread,
                stacks: filter,
                event,
            },
            format: self.format.unwrap_or(Format::Json),
            orientation: self.orientation.unwrap_or_default(),
            tree,
        })
    }
}

/// The pairs by name: the hosts (checked, deduplicated) and every other
/// parameter, each given at most once.
fn group(
    pairs: Vec<(String, String)>,
) -> Result<(std::collections::HashMap<&'static str, String>, Vec<String>), ApiError> {
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
            "orientation" => "orientation",
            "max_nodes" => "max_nodes",
            "focus" => "focus",
            "event" => "event",
            other => {
                return Err(ApiError::Unprocessable(format!(
                    "unknown parameter `{other}`; expected service, since, until, host, \
                     thread, include, exclude, format, orientation, max_nodes, focus or event"
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
    Ok((single, hosts))
}

fn parse_format(text: &str) -> Result<Format, ApiError> {
    match text {
        "json" => Ok(Format::Json),
        "folded" => Ok(Format::Folded),
        "svg" => Ok(Format::Svg),
        "pprof" => Ok(Format::Pprof),
        "speedscope" => Ok(Format::Speedscope),
        other => Err(ApiError::Unprocessable(format!(
            "unknown format {other:?}; expected json, folded, svg, pprof or speedscope"
        ))),
    }
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
        format,
        orientation,
        tree,
    } = AggregateParams::from_pairs(pairs)?.validate()?;
    Ok(aggregate::aggregate(&state, query, format, orientation, tree).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_valid(pairs: Vec<(String, String)>) -> Result<ValidAggregate, ApiError> {
        AggregateParams::from_pairs(pairs)?.validate()
    }
    use crate::service::queries::DEFAULT_MAX_NODES;

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
        match parse_valid(pairs(&list)) {
            Err(ApiError::Unprocessable(message)) => message,
            other => panic!("expected 422 for {extra:?}, got {other:?}"),
        }
    }

    #[test]
    fn hosts_repeat_or_come_comma_separated() {
        let mut list = base();
        list.extend([("host", "a, b"), ("host", "c"), ("host", "a")]);
        let valid = parse_valid(pairs(&list)).unwrap();
        assert_eq!(valid.query.hosts, ["a", "b", "c"]);
        assert_eq!(valid.format, Format::Json);
        assert!(valid.query.stacks.is_noop() && valid.query.thread.is_none());
        assert_eq!(valid.tree.max_nodes, DEFAULT_MAX_NODES);
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
            match parse_valid(pairs(&list)) {
                Err(ApiError::Unprocessable(m)) => assert!(m.contains(want), "{m}"),
                other => panic!("{other:?}"),
            }
        }
        match parse_valid(pairs(&[("service", "a b")])) {
            Err(ApiError::Unprocessable(m)) => assert!(m.contains("service"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn node_budgets_are_checked() {
        for bad in ["0", "many", "-1"] {
            assert!(invalid(&[("max_nodes", bad)]).contains("max_nodes"));
        }
    }
}
