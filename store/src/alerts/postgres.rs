//! What the outbox's statements write differently in Postgres.

/// Ends the insert of an attempt: one logged before stays as it is.
pub(super) const KEEP_LOGGED: &str = "on conflict (delivery_id, attempt) do nothing";
