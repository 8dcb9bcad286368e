pub(crate) mod agents;
pub(crate) mod aggregate;
pub(crate) mod channels;
pub(crate) mod continuous;
pub(crate) mod diff;
pub(crate) mod enrollment;
pub(crate) mod flamegraph;
pub(crate) mod hosts;
pub(crate) mod import;
pub(crate) mod issues;
pub(crate) mod list;
pub(crate) mod profiles;
pub(crate) mod requests;
pub(crate) mod rules;
pub(crate) mod runs;
pub(crate) mod schedules;
pub(crate) mod services;
pub(crate) mod timeline;
pub(crate) mod triggers;

/// `?host=&limit=`: a page of the agents' identities or enrollment
/// tokens, newest first.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct HostPageQuery {
    /// Only those of this host.
    #[param(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")]
    pub(crate) host: Option<String>,
    /// At most this many; 50 when absent.
    #[param(minimum = 1, maximum = 500)]
    pub(crate) limit: Option<i64>,
}
