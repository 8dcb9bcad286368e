//! Acts on the trigger reports the heartbeat follower verified
//! ([`crate::control::heartbeats`]): each is claimed and, when the cooldown and the
//! cap allow, starts its profile ([`crate::service::triggers::fire`]).
//!
//! Every api-server replica reads every report; the ledger's key makes one
//! of them act. A report that fails on a store that is away is tried again
//! a few times: the agent reports its trigger again only after the
//! cooldown, so giving up early would lose the moment the user asked for.

use std::time::Duration;

use odp_store::FiringReport;
use tokio::sync::mpsc;

use crate::service::triggers;
use crate::service_error::ServiceError;
use crate::AppState;

const ATTEMPTS: u32 = 5;
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// Acts on each report in arrival order, for as long as the server runs.
pub(crate) async fn act_forever(state: AppState, mut reports: mpsc::Receiver<FiringReport>) {
    while let Some(report) = reports.recv().await {
        for attempt in 1..=ATTEMPTS {
            match triggers::fire(&state, &report).await {
                Ok(_) => break,
                // The store away or too slow: the one failure a retry mends.
                Err(e @ ServiceError::Unavailable(_)) if attempt < ATTEMPTS => {
                    tracing::warn!(trigger_id = %report.trigger_id, host = %report.host,
                        error = %e, attempt, "acting on a trigger report failed; retrying");
                    tokio::time::sleep(RETRY_AFTER).await;
                }
                Err(e) => {
                    tracing::error!(trigger_id = %report.trigger_id, host = %report.host,
                        error = %e, "acting on a trigger report failed; it is dropped");
                    break;
                }
            }
        }
    }
}
