//! What integration tests of the store, the pipeline and the whole
//! platform share: crafted windows and counts of stored rows.

use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame, Snapshot};
use sqlx::PgPool;
use uuid::Uuid;

/// Window `sequence` of a profile on host `h-1`: stacks of function
/// frames, root first, on thread 1, one cpu-clock sample each.
pub fn snapshot(profile_id: Uuid, sequence: u64, stacks: &[(&[&str], u64)]) -> Snapshot {
    let mut b = SnapshotBuilder::new();
    for (names, count) in stacks {
        let frames: Vec<Frame> = names.iter().map(|n| Frame::function(*n)).collect();
        b.add(&frames, 1, *count);
    }
    b.build(SnapshotHeader {
        profile_id,
        host: "h-1".into(),
        agent_id: "agent".into(),
        sequence,
        window_start_ms: 1_700_000_000_000 + sequence as i64 * 10_000,
        window_end_ms: 1_700_000_010_000 + sequence as i64 * 10_000,
        event: EventKind::CpuClock,
        period: 1,
        frequency_hz: 99,
    })
}

/// The single integer `sql` selects (`select count(*) from …`).
pub async fn count(pool: &PgPool, sql: &str) -> i64 {
    sqlx::query_scalar(sql)
        .fetch_one(pool)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}
