//! What went wrong in an operation, in the operations' own terms: the
//! error of the service layer (`service/`, `control/`, the scheduler and
//! the trigger loop) and of the checks below it (`validate`, `read_budget`,
//! `render`, `auth`'s role checks). HTTP is `error.rs`'s business: it maps
//! each variant to one status, once.
//!
//! A module of its own, not `service::error`, because `control` returns it
//! too and `service` already uses `control`: one leaf every layer may
//! import keeps the modules free of circles.

/// Each variant's text is what the client reads (an internal error's is
/// logged instead), and a failed control request records it as its
/// reason, so the texts are part of the API.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The input breaks a rule the caller can read and fix.
    #[error("{0}")]
    Invalid(String),
    /// The input is not even of the expected shape: an opaque token (a
    /// list cursor) that the server did not hand out.
    #[error("{0}")]
    Malformed(String),
    /// The caller's credential (an enrollment token) proves nothing.
    #[error("{0}")]
    Unauthenticated(String),
    /// The caller is known but its role or scope does not allow this.
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    /// It exists already, or its state does not allow this now.
    #[error("{0}")]
    Conflict(String),
    /// The input or the work it asks for is past a configured limit.
    #[error("{0}")]
    TooLarge(String),
    /// A dependency (the database, Kafka, the read budget) is down, busy
    /// or too slow: retry later.
    #[error("{0}")]
    Unavailable(String),
    /// A bug or a broken dependency; the text says what failed, for the log.
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<odp_store::StoreError> for ServiceError {
    fn from(e: odp_store::StoreError) -> Self {
        if e.is_transient() {
            // Postgres down or restarting, no connection free in time, a
            // statement cancelled at the request timeout: all retryable.
            tracing::warn!(error = %e, "database unavailable");
            ServiceError::Unavailable("database unavailable, retry later".into())
        } else if let odp_store::StoreError::Conflict(message) = e {
            ServiceError::Conflict(message)
        } else if let Some(violation) = e.violation() {
            // Input the service's own checks let through (a schema limit
            // such as MySQL's VARCHAR lengths): the caller's to fix.
            tracing::info!(error = %e, "the database refused the input");
            match violation {
                odp_store::Violation::Unique => {
                    ServiceError::Conflict(format!("already exists: {}", violation_detail(&e)))
                }
                odp_store::Violation::ForeignKey | odp_store::Violation::Invalid => {
                    ServiceError::Invalid(format!(
                        "refused by the database: {}",
                        violation_detail(&e)
                    ))
                }
            }
        } else if let odp_store::StoreError::MixedEvents(_) | odp_store::StoreError::Invalid(_) = e
        {
            ServiceError::Invalid(e.to_string())
        } else {
            ServiceError::Internal(e.to_string())
        }
    }
}

/// The database's own words for a refused statement, without sqlx's
/// prefixes.
fn violation_detail(e: &odp_store::StoreError) -> String {
    match e {
        odp_store::StoreError::Database(sqlx::Error::Database(db)) => db.message().to_owned(),
        other => other.to_string(),
    }
}
