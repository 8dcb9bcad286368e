//! The api-server's operations, typed in and out: what routes call after
//! parsing and authorizing a request, and what the scheduler calls. No
//! route imports another route; what two of them share lives here.

pub(crate) mod aggregate;
pub(crate) mod channels;
pub(crate) mod continuous;
pub(crate) mod diff;
pub(crate) mod enrollment;
pub(crate) mod hosts;
pub(crate) mod identities;
pub(crate) mod issues;
pub(crate) mod profile_list;
pub(crate) mod profiles;
pub(crate) mod queries;
pub(crate) mod requests;
pub(crate) mod rules;
pub(crate) mod run_precision;
pub(crate) mod runs;
pub(crate) mod schedules;
pub(crate) mod scope;
pub(crate) mod services;
pub(crate) mod start_options;
pub(crate) mod timeline;
pub(crate) mod trend;
pub(crate) mod triggers;

/// Most items one page of a list returns.
pub(crate) const MAX_PAGE: i64 = 500;

/// A list's `limit`, `default` when absent; 422 outside 1..=[`MAX_PAGE`].
pub(crate) fn page_limit(
    limit: Option<i64>,
    default: i64,
) -> Result<i64, crate::service_error::ServiceError> {
    let limit = limit.unwrap_or(default);
    if (1..=MAX_PAGE).contains(&limit) {
        Ok(limit)
    } else {
        Err(crate::service_error::ServiceError::Invalid(format!(
            "`limit` must be between 1 and {MAX_PAGE}"
        )))
    }
}
