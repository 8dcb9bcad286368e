//! What a service-scoped token may start. A token's `services` patterns
//! name services, and a name alone binds nothing: the request's target
//! and host are the caller's to choose. So a non-admin start must profile
//! the defined target of a defined service, on a host whose agent reports
//! running it; an admin may profile anything anywhere.

use odp_store::{ServiceRow, Services};

use crate::auth::{Caller, Role};
use crate::service::profiles::ValidStart;
use crate::service_error::ServiceError;
use crate::AppState;

/// Fails with 403 unless `caller` may start `start`.
pub(crate) async fn authorize_start(
    state: &AppState,
    caller: &Caller,
    start: &ValidStart,
) -> Result<(), ServiceError> {
    caller.require_profiling(&start.service)?;
    if caller.role >= Role::Admin {
        return Ok(());
    }
    let services = Services::new(&state.pool);
    let Some(ServiceRow { service, .. }) = services.get(&start.service).await? else {
        return Err(ServiceError::Forbidden(format!(
            "service {:?} is not defined: a {} token profiles only the defined \
             target of a defined service (an admin defines it: POST /api/v1/services)",
            start.service, caller.role
        )));
    };
    if service.target != start.target {
        return Err(ServiceError::Forbidden(format!(
            "service {:?} is {}; a {} token may profile only that target, not {}",
            service.name, service.target, caller.role, start.target
        )));
    }
    let live_within = state.control.live_within();
    let runs_it = services
        .hosts_running(&service.name, live_within)
        .await?
        .iter()
        .any(|h| h.host == start.host);
    if !runs_it {
        return Err(ServiceError::Forbidden(format!(
            "host {:?} has no live agent reporting service {:?} (GET /api/v1/services/{}/hosts \
             lists the hosts that run it)",
            start.host, service.name, service.name
        )));
    }
    Ok(())
}
