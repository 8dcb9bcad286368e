//! What re-analysis statements write differently in MySQL and MariaDB.

/// A lease that has always run out: DATETIME's smallest value, where
/// Postgres writes `'-infinity'`.
pub(super) const EXPIRED: &str = "'1000-01-01 00:00:00'";
