//! CPU-bound work (decoding and encoding blocks, selecting samples) off
//! the async threads, shared by the profile blocks, the service rollups
//! and reads.

use crate::{Result, StoreError};

/// Runs CPU-bound work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| StoreError::Corrupt(format!("decoding blocks failed: {e}")))?
}

/// `work` on each of `items`, on two blocking threads (a half each), the
/// results in the items' order: reads decode and select many blocks, and
/// a machine has a core or two to spare for one read.
pub(crate) async fn in_halves<T, R>(mut items: Vec<T>, work: fn(T) -> Result<R>) -> Result<Vec<R>>
where
    T: Send + 'static,
    R: Send + 'static,
{
    let second = items.split_off(items.len() / 2);
    let run = |items: Vec<T>| blocking(move || items.into_iter().map(work).collect());
    let (first, second) = tokio::join!(run(items), run(second));
    let mut out: Vec<R> = first?;
    out.extend(second?);
    Ok(out)
}
