//! What re-analysis statements write differently in Postgres.

/// A lease that has always run out.
pub(super) const EXPIRED: &str = "'-infinity'";
