//! The write path, one behaviour suite run on a real Postgres and a real
//! MariaDB: exactly-once batch ingest (redeliveries and within-batch
//! duplicates counted exactly), a profile owned by the agent that first
//! acknowledged it, blocks larger than one statement may carry, received
//! bytes kept as the block, and what
//! reads the stored windows directly: the timeline (with each window's
//! coverage) and imported profiles.

use odp_core::coverage::LossReason;
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame, Snapshot, Target};
use odp_devstack::fixtures;
use odp_store::{
    awaiting_detection, detection_done, import_profile, ingest_profile, profile_timeline,
    store_snapshots, Database, ImportedMeta, IngestOutcome, IngestedProfile, Labels, ProfileStatus,
    Profiles, SnapshotToStore,
};
use uuid::Uuid;

mod support;
use support::on_both_backends;

/// Window `sequence` of `profile` from `agent`, 10 s long.
fn window(profile: Uuid, agent: &str, sequence: u64) -> Snapshot {
    let mut s = fixtures::snapshot(profile, sequence, &[(&["main", "work"], 7), (&["main"], 3)]);
    s.agent_id = agent.into();
    s
}

async fn owner(db: &Database, profile: Uuid) -> Option<String> {
    Profiles::new(db)
        .get(profile)
        .await
        .unwrap()
        .unwrap()
        .agent_id
}

/// The stored windows' sequences of `profile`, in time order.
async fn stored(db: &Database, profile: Uuid) -> Vec<i64> {
    let sequences = match db {
        Database::Postgres(pool) => sqlx::query_scalar(
            "select sequence from snapshots where profile_id = $1 order by window_start",
        )
        .bind(profile)
        .fetch_all(pool)
        .await
        .unwrap(),
        Database::MySql(pool) => sqlx::query_scalar(
            "select `sequence` from snapshots where profile_id = ? order by window_start",
        )
        .bind(profile)
        .fetch_all(pool)
        .await
        .unwrap(),
    };
    sequences
}

async fn a_batch_stored_twice_stores_nothing_the_second_time(db: Database) {
    let profile = Uuid::new_v4();
    let batch: Vec<Snapshot> = (0..3).map(|n| window(profile, "agent", n)).collect();
    let refs: Vec<&Snapshot> = batch.iter().collect();
    let first = store_snapshots(&db, &refs).await.unwrap();
    assert_eq!(
        first,
        IngestOutcome {
            stored: 3,
            duplicates: 0,
            samples: 30,
            foreign: vec![],
        }
    );
    let again = store_snapshots(&db, &refs).await.unwrap();
    assert_eq!((again.stored, again.duplicates, again.samples), (0, 3, 0));
    // A batch of an old window and a new one stores the new one only.
    let next = window(profile, "agent", 3);
    let mixed = store_snapshots(&db, &[&batch[1], &next]).await.unwrap();
    assert_eq!((mixed.stored, mixed.duplicates, mixed.samples), (1, 1, 10));
    assert_eq!(stored(&db, profile).await, [0, 1, 2, 3]);
    // Another agent's window of the same sequence is another window: this
    // profile has no row, so no owner refuses it.
    let other = store_snapshots(&db, &[&window(profile, "other", 0)])
        .await
        .unwrap();
    assert_eq!((other.stored, other.duplicates), (1, 0));
    assert_eq!(
        store_snapshots(&db, &[] as &[&Snapshot]).await.unwrap(),
        IngestOutcome::default()
    );
}

async fn duplicates_within_a_batch_count_once(db: Database) {
    let profile = Uuid::new_v4();
    let (a, b) = (window(profile, "agent", 0), window(profile, "agent", 1));
    let outcome = store_snapshots(&db, &[&a, &a, &b, &a]).await.unwrap();
    assert_eq!(
        (outcome.stored, outcome.duplicates, outcome.samples),
        (2, 2, 20)
    );
    let redelivered = store_snapshots(&db, &[&b, &a, &b]).await.unwrap();
    assert_eq!(
        (
            redelivered.stored,
            redelivered.duplicates,
            redelivered.samples
        ),
        (0, 3, 0)
    );
    assert_eq!(stored(&db, profile).await, [0, 1]);
}

/// Two consumers storing one batch at once (a redelivery racing the
/// original) store each window once between them, and the counts add up.
/// The profile has no row, whose claim would queue the two transactions.
async fn racing_redeliveries_store_each_window_once(db: Database) {
    let profile = Uuid::new_v4();
    let batch: Vec<Snapshot> = (0..20).map(|n| window(profile, "agent", n)).collect();
    let race = || {
        let (db, batch) = (db.clone(), batch.clone());
        tokio::spawn(async move {
            let refs: Vec<&Snapshot> = batch.iter().collect();
            store_snapshots(&db, &refs).await.unwrap()
        })
    };
    let (one, other) = (race(), race());
    let (one, other) = (one.await.unwrap(), other.await.unwrap());
    assert_eq!(
        (one.stored + other.stored, one.duplicates + other.duplicates),
        (20, 20)
    );
    assert_eq!(one.samples + other.samples, 200);
    assert_eq!(stored(&db, profile).await, (0..20).collect::<Vec<i64>>());
}

async fn a_profile_belongs_to_the_agent_that_first_sent_it(db: Database) {
    let profile = support::requested_profile(&db).await;
    assert_eq!(owner(&db, profile).await, None);
    // Both agents in one batch: the earliest window's agent claims it.
    let (mut late, early) = (window(profile, "b", 5), window(profile, "a", 0));
    late.window_start_ms = early.window_start_ms + 1;
    let outcome = store_snapshots(&db, &[&late, &early]).await.unwrap();
    assert_eq!((outcome.stored, outcome.duplicates), (1, 0));
    assert_eq!(owner(&db, profile).await.as_deref(), Some("a"));
    let [refused] = outcome.foreign.as_slice() else {
        panic!("one refused: {:?}", outcome.foreign)
    };
    assert_eq!(
        (
            refused.agent_id.as_str(),
            refused.profile_id,
            refused.sequence,
            refused.owner.as_str()
        ),
        ("b", profile, 5, "a")
    );
    assert_eq!(
        refused.reason(),
        format!(
            "profile {profile} belongs to agent a, which acknowledged it first; \
             snapshot 5 from agent b refused"
        )
    );
    // Later batches of the other agent are refused too; the owner's stored.
    let outcome = store_snapshots(&db, &[&window(profile, "b", 6), &window(profile, "a", 1)])
        .await
        .unwrap();
    assert_eq!(
        (outcome.stored, outcome.duplicates, outcome.foreign.len()),
        (1, 0, 1)
    );
    assert_eq!(outcome.foreign[0].sequence, 6);
    assert_eq!(stored(&db, profile).await, [0, 1]);
    assert_eq!(owner(&db, profile).await.as_deref(), Some("a"));
}

async fn several_profiles_per_batch_each_with_its_owner(db: Database) {
    let (owned_by_a, claimed_by_b, unrecorded) = (
        support::requested_profile(&db).await,
        support::requested_profile(&db).await,
        Uuid::new_v4(),
    );
    store_snapshots(&db, &[&window(owned_by_a, "a", 0)])
        .await
        .unwrap();
    let batch = [
        window(owned_by_a, "a", 1),
        window(claimed_by_b, "b", 0),
        window(unrecorded, "c", 0),
        window(owned_by_a, "b", 0),
        window(unrecorded, "d", 0),
        window(claimed_by_b, "a", 1),
        window(owned_by_a, "a", 0),
    ];
    let refs: Vec<&Snapshot> = batch.iter().collect();
    let outcome = store_snapshots(&db, &refs).await.unwrap();
    assert_eq!(
        (outcome.stored, outcome.duplicates, outcome.samples),
        (4, 1, 40)
    );
    let mut refused: Vec<(String, Uuid, String)> = outcome
        .foreign
        .iter()
        .map(|f| (f.agent_id.clone(), f.profile_id, f.owner.clone()))
        .collect();
    refused.sort();
    assert_eq!(
        refused,
        [
            ("a".to_owned(), claimed_by_b, "b".to_owned()),
            ("b".to_owned(), owned_by_a, "a".to_owned()),
        ]
    );
    assert_eq!(owner(&db, owned_by_a).await.as_deref(), Some("a"));
    assert_eq!(owner(&db, claimed_by_b).await.as_deref(), Some("b"));
    assert_eq!(stored(&db, owned_by_a).await, [0, 1]);
    assert_eq!(stored(&db, claimed_by_b).await, [0]);
    assert_eq!(stored(&db, unrecorded).await, [0, 0]);
}

/// Window `sequence` whose block is about `bytes` long: stacks of
/// distinct random names, which LZ4 cannot shrink much.
fn large_window(profile: Uuid, sequence: u64, bytes: usize) -> Snapshot {
    let mut b = SnapshotBuilder::new();
    let mut written = 0;
    while written < bytes {
        let name: String = (0..4)
            .map(|_| Uuid::new_v4().simple().to_string())
            .collect();
        written += name.len();
        b.add(&[Frame::function("main"), Frame::function(name)], 1, 1);
    }
    let base = fixtures::snapshot(profile, sequence, &[]);
    b.build(SnapshotHeader {
        profile_id: profile,
        host: base.host,
        agent_id: base.agent_id,
        sequence,
        window_start_ms: base.window_start_ms,
        window_end_ms: base.window_end_ms,
        event: EventKind::CpuClock,
        period: 1,
        frequency_hz: 99,
    })
}

/// The stored blocks of `profile`, in sequence order.
async fn blocks(db: &Database, profile: Uuid) -> Vec<Vec<u8>> {
    match db {
        Database::Postgres(pool) => sqlx::query_scalar(
            "select block from snapshots where profile_id = $1 order by sequence",
        )
        .bind(profile)
        .fetch_all(pool)
        .await
        .unwrap(),
        Database::MySql(pool) => sqlx::query_scalar(
            "select block from snapshots where profile_id = ? order by `sequence`",
        )
        .bind(profile)
        .fetch_all(pool)
        .await
        .unwrap(),
    }
}

/// A received snapshot's bytes are its block, not encoded again, when in
/// the current form; an uncompressed one is encoded (and compressed).
async fn received_bytes_are_stored_as_they_came(db: Database) {
    let profile = Uuid::new_v4();
    // Names that repeat, so LZ4 compresses the windows.
    let stacks: &[(&[&str], u64)] = &[(&["main", "work::work::work::work"], 3)];
    let batch: Vec<Snapshot> = (0..3)
        .map(|n| fixtures::snapshot(profile, n, stacks))
        .collect();
    let other_lz4 = fixtures::literal_lz4(&batch[0]);
    assert_eq!(Snapshot::decode(&other_lz4).unwrap(), batch[0]);
    let plain = batch[1].encode_uncompressed();
    let outcome = store_snapshots(
        &db,
        &[
            SnapshotToStore::received(&batch[0], &other_lz4),
            SnapshotToStore::received(&batch[1], &plain),
            SnapshotToStore::from(&batch[2]),
        ],
    )
    .await
    .unwrap();
    assert_eq!(outcome.stored, 3);
    assert_eq!(
        blocks(&db, profile).await,
        [other_lz4, batch[1].encode(), batch[2].encode()]
    );
}

/// Four windows of 5 MB each: more than a 16 MB packet in one statement,
/// so they are written in several, in one transaction.
async fn large_blocks_are_stored_whole(db: Database) {
    let profile = Uuid::new_v4();
    let batch: Vec<Snapshot> = (0..4).map(|n| large_window(profile, n, 5 << 20)).collect();
    let refs: Vec<&Snapshot> = batch.iter().collect();
    let sent: Vec<Vec<u8>> = batch.iter().map(Snapshot::encode).collect();
    assert!(sent.iter().all(|block| block.len() > 4 << 20));
    let outcome = store_snapshots(&db, &refs).await.unwrap();
    let samples: u64 = batch.iter().map(Snapshot::total_samples).sum();
    assert_eq!(
        (outcome.stored, outcome.duplicates, outcome.samples),
        (4, 0, samples)
    );
    let blocks = blocks(&db, profile).await;
    assert!(
        blocks == sent,
        "the blocks read back differ from those sent"
    );
    let again = store_snapshots(&db, &refs).await.unwrap();
    assert_eq!((again.stored, again.duplicates), (0, 4));
}

async fn the_timeline_is_of_the_first_event_in_time_order(db: Database) {
    let profile = Uuid::new_v4();
    let (first, mut second, mut wall) = (
        window(profile, "agent", 2),
        window(profile, "agent", 1),
        window(profile, "agent", 3),
    );
    second.window_start_ms -= 60_000;
    second.frequency_hz = 49;
    wall.event = EventKind::Wall;
    // `first` is stored first, so its event is the profile's first.
    store_snapshots(&db, &[&first]).await.unwrap();
    store_snapshots(&db, &[&second, &wall]).await.unwrap();
    let timeline = profile_timeline(&db, profile).await.unwrap();
    let seen: Vec<(i64, i64, EventKind, i64, i32, &str)> = timeline
        .iter()
        .map(|w| {
            (
                w.window_start.timestamp_millis(),
                w.window_end.timestamp_millis(),
                w.event,
                w.samples,
                w.frequency_hz,
                w.host.as_str(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (
                second.window_start_ms,
                second.window_end_ms,
                EventKind::CpuClock,
                10,
                49,
                "h-1"
            ),
            (
                first.window_start_ms,
                first.window_end_ms,
                EventKind::CpuClock,
                10,
                99,
                "h-1"
            ),
        ]
    );
    assert!(profile_timeline(&db, Uuid::new_v4())
        .await
        .unwrap()
        .is_empty());
}

/// What a window earned and lost comes back with it; a window cut in parts
/// counts its coverage once, and a window that carries none reads as
/// unknown, not as zero.
async fn the_timeline_carries_each_windows_coverage(db: Database) {
    let profile = Uuid::new_v4();
    let mut measured = window(profile, "agent", 0);
    measured.coverage.expected = Some(14);
    measured.coverage.lost.add(LossReason::Paused, 3);
    measured.coverage.lost.add(LossReason::Transport, 1);
    // The second part of the same window: same bounds, no coverage.
    let mut part = window(profile, "agent", 1);
    part.window_start_ms = measured.window_start_ms;
    part.window_end_ms = measured.window_end_ms;
    let mut unmeasured = window(profile, "agent", 2);
    unmeasured.window_start_ms = measured.window_end_ms;
    unmeasured.window_end_ms = measured.window_end_ms + 10_000;
    store_snapshots(&db, &[&measured, &part, &unmeasured])
        .await
        .unwrap();
    let timeline = profile_timeline(&db, profile).await.unwrap();
    let seen: Vec<(i64, Option<i64>, i64, i64, i64)> = timeline
        .iter()
        .map(|w| {
            (
                w.samples,
                w.expected,
                w.lost.paused,
                w.lost.transport,
                w.lost.total(),
            )
        })
        .collect();
    assert_eq!(seen, [(20, Some(14), 3, 1, 4), (10, None, 0, 0, 0)]);
}

async fn an_import_is_a_finished_profile_with_its_window(db: Database) {
    let profile = Uuid::new_v4();
    let mut snapshot = window(profile, "import", 0);
    snapshot.host = "laptop".into();
    let row = import_profile(&db, &snapshot, "checkout", "pprof", "alice")
        .await
        .unwrap();
    assert_eq!(
        (
            row.id,
            row.host.as_str(),
            row.service.as_str(),
            row.status,
            row.requested_by.as_str(),
            row.agent_id.as_deref(),
            row.event,
            row.duration_ms,
            row.frequency_hz,
        ),
        (
            profile,
            "laptop",
            "checkout",
            ProfileStatus::Finished,
            "alice",
            Some("import"),
            Some(EventKind::CpuClock),
            10_000,
            99,
        )
    );
    assert_eq!(row.target, Target::Imported("pprof".into()));
    assert_eq!(
        (
            row.started_at.map(|t| t.timestamp_millis()),
            row.finished_at.map(|t| t.timestamp_millis())
        ),
        (Some(snapshot.window_start_ms), Some(snapshot.window_end_ms))
    );
    let timeline = profile_timeline(&db, profile).await.unwrap();
    assert_eq!(timeline.len(), 1);
    assert_eq!(timeline[0].samples, 10);
    // The same profile id again is refused; its window is not doubled.
    assert!(import_profile(&db, &snapshot, "checkout", "pprof", "alice")
        .await
        .is_err());
    assert_eq!(profile_timeline(&db, profile).await.unwrap().len(), 1);
}

async fn an_ingested_profile_sent_twice_is_stored_once(db: Database) {
    let profile = Uuid::new_v4();
    let snapshot = window(profile, "pyroscope", 0);
    let labels = Labels::from([
        ("source".to_owned(), "pyroscope".to_owned()),
        ("region".to_owned(), "eu-west".to_owned()),
    ]);
    let meta = ImportedMeta {
        service: "checkout",
        format: "pyroscope",
        requested_by: "ingest-bot",
        labels: &labels,
    };
    let first = ingest_profile(&db, &snapshot, meta).await.unwrap();
    assert!(matches!(first, IngestedProfile::Stored(_)), "{first:?}");
    // No pipeline saw it: it waits for detection.
    assert_eq!(awaiting_detection(&db, 10).await.unwrap(), vec![profile]);
    assert_eq!(first.row().labels, labels);
    let again = ingest_profile(&db, &snapshot, meta).await.unwrap();
    let IngestedProfile::Replayed(row) = again else {
        panic!("a retry must answer with the stored row: {again:?}")
    };
    assert_eq!(row.id, profile);
    let timeline = profile_timeline(&db, profile).await.unwrap();
    assert_eq!(timeline.len(), 1);
    assert_eq!(timeline[0].samples, 10, "the retry's samples count once");
    assert_eq!(
        awaiting_detection(&db, 10).await.unwrap(),
        vec![profile],
        "queued once"
    );
    detection_done(&db, &[profile]).await.unwrap();
    assert!(awaiting_detection(&db, 10).await.unwrap().is_empty());
}

on_both_backends!(
    a_batch_stored_twice_stores_nothing_the_second_time,
    duplicates_within_a_batch_count_once,
    racing_redeliveries_store_each_window_once,
    a_profile_belongs_to_the_agent_that_first_sent_it,
    several_profiles_per_batch_each_with_its_owner,
    large_blocks_are_stored_whole,
    received_bytes_are_stored_as_they_came,
    the_timeline_is_of_the_first_event_in_time_order,
    the_timeline_carries_each_windows_coverage,
    an_import_is_a_finished_profile_with_its_window,
    an_ingested_profile_sent_twice_is_stored_once,
);
