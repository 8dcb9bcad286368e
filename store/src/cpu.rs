//! CPU-bound work (decoding and encoding blocks) off the async threads,
//! shared by the profile blocks and the service rollups.

use crate::{Result, StoreError};

/// Runs CPU-bound work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| StoreError::Corrupt(format!("decoding blocks failed: {e}")))?
}
