//! The control requests (deploy, undeploy, stop), as the API lists them.

use odp_api_types::RequestList;
use odp_store::{RequestFilter, RequestKind};

use crate::service_error::ServiceError;
use crate::validate::validate_name;
use crate::views;
use crate::AppState;

/// The requests of `kind` (deploy, undeploy or stop) on `host`, only those
/// still under way when `open_only`, `limit` of them (50 when absent),
/// newest first.
pub(crate) async fn list(
    state: &AppState,
    kind: Option<&str>,
    host: Option<String>,
    open_only: bool,
    limit: Option<i64>,
) -> Result<RequestList, ServiceError> {
    let kind = match kind {
        None => None,
        Some("deploy") => Some(RequestKind::Deploy),
        Some("undeploy") => Some(RequestKind::Undeploy),
        Some("stop") => Some(RequestKind::Stop),
        Some(other) => {
            return Err(ServiceError::Invalid(format!(
                "unknown kind {other:?}: deploy, undeploy or stop"
            )))
        }
    };
    if let Some(host) = &host {
        validate_name("host", host)?;
    }
    let limit = limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(ServiceError::Invalid(
            "`limit` must be between 1 and 500".into(),
        ));
    }
    let filter = RequestFilter {
        kind,
        host,
        open_only,
        limit,
    };
    let requests = state.control.requests.list(&filter).await?;
    Ok(RequestList {
        requests: requests.into_iter().map(views::control_request).collect(),
    })
}
