//! What the outbox's statements write differently in MySQL and MariaDB.

/// Ends the insert of an attempt: one logged before stays as it is (a
/// no-op update stands for `on conflict do nothing`).
pub(super) const KEEP_LOGGED: &str = "on duplicate key update attempt = attempt";
