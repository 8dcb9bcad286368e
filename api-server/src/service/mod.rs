//! The api-server's operations, typed in and out: what routes call after
//! parsing and authorizing a request, and what the scheduler calls. No
//! route imports another route; what two of them share lives here.

pub(crate) mod channels;
pub(crate) mod identities;
pub(crate) mod profiles;
pub(crate) mod queries;
pub(crate) mod rules;
pub(crate) mod run_precision;
pub(crate) mod runs;
pub(crate) mod schedules;
pub(crate) mod scope;
pub(crate) mod services;
pub(crate) mod start_options;

/// Most items one page of a list returns.
pub(crate) const MAX_PAGE: i64 = 500;
