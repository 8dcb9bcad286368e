//! Bounds on what one caller can make the api-server hold in memory
//! (issue 27): reads that decode whole profiles (flame graphs in every
//! format, `top`, aggregates, diffs) run a few at a time, each within a
//! budget of decoded call paths and output bytes, and imports within a
//! budget of distinct stacks and frames.
//!
//! A read past the concurrency limit waits briefly, then is answered 503
//! with `Retry-After`; a read past its budget is answered 422 telling the
//! caller how to narrow it. The budgets count what the code counts anyway:
//! the nodes of the views a read decoded, and the bytes it rendered.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use odp_store::ReadResult;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::service_error::ServiceError;

/// Defaults; see [`LimitOptions`].
pub(crate) const DEFAULT_HEAVY_READS: u32 = 4;
pub(crate) const DEFAULT_HEAVY_READ_WAIT_MS: u64 = 2_000;
pub(crate) const DEFAULT_READ_MAX_NODES: u64 = 16_000_000;
pub(crate) const DEFAULT_READ_MAX_OUTPUT_BYTES: u64 = 256 << 20;
pub(crate) const DEFAULT_IMPORT_MAX_STACKS: u64 = 200_000;
pub(crate) const DEFAULT_IMPORT_MAX_FRAMES: u64 = 500_000;
pub(crate) const DEFAULT_BLOCK_CACHE_MB: u64 = 256;

/// The operator's limits (`serve` flags and `ODP_*` variables).
#[derive(Debug, Clone, clap::Args)]
pub struct LimitOptions {
    /// Reads that decode whole profiles (flame graphs, SVG, exports, `top`,
    /// aggregates, diffs) running at once; more wait up to
    /// `--heavy-read-wait-ms`, then get 503 with `Retry-After`.
    #[arg(long, env = "ODP_HEAVY_READS", default_value_t = DEFAULT_HEAVY_READS,
        value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub heavy_reads: u32,
    /// How long a heavy read waits for its turn.
    #[arg(long, env = "ODP_HEAVY_READ_WAIT_MS", default_value_t = DEFAULT_HEAVY_READ_WAIT_MS,
        value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub heavy_read_wait_ms: u64,
    /// Call paths (flame graph nodes) one read may decode, all profiles
    /// and hosts (both sides of a diff) together; past it, 422.
    #[arg(long, env = "ODP_READ_MAX_NODES", default_value_t = DEFAULT_READ_MAX_NODES,
        value_parser = clap::value_parser!(u64).range(1..))]
    pub read_max_nodes: u64,
    /// Bytes one read may render (folded text, SVG, pprof, speedscope);
    /// past it, 422. JSON trees are bounded by `max_nodes` instead.
    #[arg(long, env = "ODP_READ_MAX_OUTPUT_BYTES", default_value_t = DEFAULT_READ_MAX_OUTPUT_BYTES,
        value_parser = clap::value_parser!(u64).range(1..))]
    pub read_max_output_bytes: u64,
    /// Distinct stacks one import may hold; past it, 413.
    #[arg(long, env = "ODP_IMPORT_MAX_STACKS", default_value_t = DEFAULT_IMPORT_MAX_STACKS,
        value_parser = clap::value_parser!(u64).range(1..))]
    pub import_max_stacks: u64,
    /// Distinct frames one import may hold; past it, 413.
    #[arg(long, env = "ODP_IMPORT_MAX_FRAMES", default_value_t = DEFAULT_IMPORT_MAX_FRAMES,
        value_parser = clap::value_parser!(u64).range(1..))]
    pub import_max_frames: u64,
    /// Megabytes of service hour and day blocks kept in memory, so a
    /// service's history read again fetches only what was built since
    /// (0: none). Encoded blocks: a month of a ten-host continuous
    /// profile at 19 Hz is about 30 MB.
    #[arg(long, env = "ODP_BLOCK_CACHE_MB", default_value_t = DEFAULT_BLOCK_CACHE_MB,
        value_parser = clap::value_parser!(u64).range(0..=1 << 20))]
    pub block_cache_mb: u64,
}

impl Default for LimitOptions {
    fn default() -> Self {
        LimitOptions {
            heavy_reads: DEFAULT_HEAVY_READS,
            heavy_read_wait_ms: DEFAULT_HEAVY_READ_WAIT_MS,
            read_max_nodes: DEFAULT_READ_MAX_NODES,
            read_max_output_bytes: DEFAULT_READ_MAX_OUTPUT_BYTES,
            import_max_stacks: DEFAULT_IMPORT_MAX_STACKS,
            import_max_frames: DEFAULT_IMPORT_MAX_FRAMES,
            block_cache_mb: DEFAULT_BLOCK_CACHE_MB,
        }
    }
}

/// How long after the last heavy read ends its freed heap is handed
/// back. Reads come in bursts (a page's flame graph, trend and top, a
/// user stepping through ranges), and a read that finds its memory handed
/// back faults it all in again: a fifth of a 30-day flame graph's time.
const RETURN_FREE_MEMORY_AFTER: Duration = Duration::from_secs(3);

/// The limits in force, shared by every request.
#[derive(Debug)]
pub struct ReadLimits {
    permits: Arc<Semaphore>,
    /// Heavy reads started so far: a read started since the last one
    /// ended keeps the heap for itself.
    started: Arc<AtomicU64>,
    /// Times the freed heap was handed back.
    heap_returns: Arc<AtomicU64>,
    options: LimitOptions,
}

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits::new(LimitOptions::default())
    }
}

/// A heavy read's turn: held until the response is rendered.
#[must_use]
pub(crate) struct HeavyRead {
    _permit: OwnedSemaphorePermit,
    permits: Arc<Semaphore>,
    started: Arc<AtomicU64>,
    heap_returns: Arc<AtomicU64>,
    turns: usize,
}

impl Drop for HeavyRead {
    /// The last heavy read to end hands the freed heap back to the system
    /// once no other has started for [`RETURN_FREE_MEMORY_AFTER`]: glibc
    /// keeps freed arenas mapped, so without it the api-server would stay
    /// at its peak after a burst of large reads.
    fn drop(&mut self) {
        if self.permits.available_permits() + 1 < self.turns {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (permits, started, returns, turns) = (
            Arc::clone(&self.permits),
            Arc::clone(&self.started),
            Arc::clone(&self.heap_returns),
            self.turns,
        );
        let reads_then = started.load(Ordering::Relaxed);
        runtime.spawn(async move {
            tokio::time::sleep(RETURN_FREE_MEMORY_AFTER).await;
            let paused = started.load(Ordering::Relaxed) == reads_then
                && permits.available_permits() == turns;
            if paused
                && tokio::task::spawn_blocking(odp_plumbing::heap::return_free_memory)
                    .await
                    .is_ok()
            {
                returns.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
}

impl ReadLimits {
    pub fn new(options: LimitOptions) -> Self {
        ReadLimits {
            permits: Arc::new(Semaphore::new(options.heavy_reads.max(1) as usize)),
            started: Arc::new(AtomicU64::new(0)),
            heap_returns: Arc::new(AtomicU64::new(0)),
            options,
        }
    }

    /// Waits (briefly) for a heavy read's turn; 503 with `Retry-After`
    /// when none frees up in time.
    pub(crate) async fn heavy_read(&self) -> Result<HeavyRead, ServiceError> {
        let wait = Duration::from_millis(self.options.heavy_read_wait_ms);
        let permit = match self.permits.clone().try_acquire_owned() {
            Ok(permit) => Ok(permit),
            Err(_) => tokio::time::timeout(wait, self.permits.clone().acquire_owned())
                .await
                .map_err(|_| ())
                .and_then(|acquired| acquired.map_err(|_| ())),
        };
        let (permits, turns) = (
            self.permits.clone(),
            self.options.heavy_reads.max(1) as usize,
        );
        let (started, heap_returns) = (Arc::clone(&self.started), Arc::clone(&self.heap_returns));
        let turn = |p| {
            started.fetch_add(1, Ordering::Relaxed);
            HeavyRead {
                _permit: p,
                permits,
                started,
                heap_returns,
                turns,
            }
        };
        permit.map(turn).map_err(|()| {
            ServiceError::Unavailable(format!(
                "the server is busy with other large reads ({} at once); retry later",
                self.options.heavy_reads
            ))
        })
    }

    /// 422 when `nodes` (call paths decoded so far) exceed the budget.
    pub(crate) fn check_nodes(&self, nodes: u64) -> Result<(), ServiceError> {
        let max = self.options.read_max_nodes;
        if nodes > max {
            return Err(ServiceError::Invalid(format!(
                "the read covers {nodes} call paths, more than this server's limit of {max} \
                 (ODP_READ_MAX_NODES): narrow it with a shorter time range (since/until, \
                 window_since/window_until), fewer hosts, or thread/include/exclude filters"
            )));
        }
        Ok(())
    }

    /// 422 when a read's decoded views hold more nodes than the budget.
    pub(crate) fn check_read(&self, result: &ReadResult) -> Result<(), ServiceError> {
        self.check_nodes(decoded_nodes(result))
    }

    /// 422 when a rendered output of `bytes` exceeds the budget.
    pub(crate) fn check_output(&self, bytes: usize) -> Result<(), ServiceError> {
        let max = self.options.read_max_output_bytes;
        if bytes as u64 > max {
            return Err(ServiceError::Invalid(format!(
                "the answer would be {bytes} bytes, more than this server's limit of {max} \
                 (ODP_READ_MAX_OUTPUT_BYTES): ask for JSON with `max_nodes`, or narrow the read \
                 with a shorter time range, fewer hosts, or thread/include/exclude filters"
            )));
        }
        Ok(())
    }

    /// 413 when an import holds more distinct stacks or frames than the
    /// operator allows.
    pub(crate) fn check_import(&self, stacks: usize, frames: usize) -> Result<(), ServiceError> {
        let (max_stacks, max_frames) = (
            self.options.import_max_stacks,
            self.options.import_max_frames,
        );
        if stacks as u64 > max_stacks {
            return Err(ServiceError::TooLarge(format!(
                "the file has {stacks} distinct stacks, more than this server's import limit \
                 of {max_stacks} (ODP_IMPORT_MAX_STACKS): import a shorter or filtered profile"
            )));
        }
        if frames as u64 > max_frames {
            return Err(ServiceError::TooLarge(format!(
                "the file has {frames} distinct frames, more than this server's import limit \
                 of {max_frames} (ODP_IMPORT_MAX_FRAMES): import a shorter or filtered profile"
            )));
        }
        Ok(())
    }
}

/// Call paths a read decoded: the nodes of every view it holds.
pub(crate) fn decoded_nodes(result: &ReadResult) -> u64 {
    let hosts = result.hosts.iter().flat_map(|h| &h.views);
    hosts
        .chain(&result.rollups)
        .map(|v| v.tree.len() as u64)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(heavy_reads: u32, wait_ms: u64) -> ReadLimits {
        ReadLimits::new(LimitOptions {
            heavy_reads,
            heavy_read_wait_ms: wait_ms,
            read_max_nodes: 10,
            read_max_output_bytes: 100,
            import_max_stacks: 3,
            import_max_frames: 5,
            block_cache_mb: 0,
        })
    }

    #[tokio::test(start_paused = true)]
    async fn the_heap_is_handed_back_once_reads_have_paused() {
        let limits = limits(2, 20);
        let returns = || limits.heap_returns.load(Ordering::Relaxed);
        let (first, second) = (
            limits.heavy_read().await.unwrap(),
            limits.heavy_read().await.unwrap(),
        );
        drop(first);
        tokio::time::sleep(RETURN_FREE_MEMORY_AFTER * 2).await;
        assert_eq!(returns(), 0, "a read still runs");
        drop(second);
        tokio::time::sleep(RETURN_FREE_MEMORY_AFTER / 2).await;
        drop(limits.heavy_read().await.unwrap());
        tokio::time::sleep(RETURN_FREE_MEMORY_AFTER * 3 / 4).await;
        assert_eq!(
            returns(),
            0,
            "a read started since: the heap is kept for it"
        );
        tokio::time::sleep(RETURN_FREE_MEMORY_AFTER).await;
        assert_eq!(returns(), 1, "handed back after the last read's pause");
    }

    #[tokio::test]
    async fn a_full_limit_answers_503_after_the_wait() {
        let limits = limits(1, 20);
        let held = limits.heavy_read().await.unwrap();
        match limits.heavy_read().await {
            Err(ServiceError::Unavailable(m)) => assert!(m.contains("busy"), "{m}"),
            Err(other) => panic!("expected 503, got {other:?}"),
            Ok(_) => panic!("expected 503, got a permit"),
        }
        drop(held);
        let _again = limits.heavy_read().await.unwrap();
    }

    #[tokio::test]
    async fn a_waiting_read_gets_the_freed_turn() {
        let limits = Arc::new(limits(1, 5_000));
        let held = limits.heavy_read().await.unwrap();
        let waiter = tokio::spawn({
            let limits = limits.clone();
            async move { limits.heavy_read().await.is_ok() }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(held);
        assert!(waiter.await.unwrap());
    }

    #[test]
    fn budgets_refuse_with_a_way_to_narrow() {
        let limits = limits(1, 0);
        assert!(limits.check_nodes(10).is_ok());
        assert!(
            matches!(limits.check_nodes(11), Err(ServiceError::Invalid(m)) if m.contains("narrow"))
        );
        assert!(limits.check_output(100).is_ok());
        assert!(
            matches!(limits.check_output(101), Err(ServiceError::Invalid(m)) if m.contains("max_nodes"))
        );
        assert!(limits.check_import(3, 5).is_ok());
        assert!(
            matches!(limits.check_import(4, 1), Err(ServiceError::TooLarge(m)) if m.contains("stacks"))
        );
        assert!(
            matches!(limits.check_import(1, 6), Err(ServiceError::TooLarge(m)) if m.contains("frames"))
        );
        assert_eq!(decoded_nodes(&ReadResult::default()), 0);
    }
}
