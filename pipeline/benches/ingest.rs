//! Ingest throughput, measured in one run against the same Postgres:
//!
//! 1. one worker (Kafka → decode → store → commit) versus a raw `COPY` of
//!    exactly the rows it wrote into tables of the same shape (goal ≥ 0.7×),
//!    the median of five rounds;
//! 2. two workers versus one on the four partitions of the stacks topic,
//!    with Postgres on loopback and again behind a proxy that delays each
//!    packet by 1 ms each way (Postgres on another host, where a worker
//!    waits on round trips that a second worker overlaps).
//!
//! Workers run as their own processes (the release `odp-pipeline`
//! binary), as in production. Run by hand:
//! `cargo bench -p odp-pipeline --bench ingest` (a few minutes; needs
//! Tansu and Postgres like the tests). Prints ratios, asserts nothing.

mod common;
#[path = "common/latency.rs"]
mod latency;

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame};
use odp_devstack::{Stack, StackOptions};
use odp_plumbing::Topics;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer as _};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use sqlx::{Connection as _, PgPool};
use uuid::Uuid;

const PROFILES: usize = 40;
const WINDOWS: usize = 100;
const STACKS_PER_WINDOW: usize = 60;
const DISTINCT_STACKS: usize = 600;
const THREADS: u32 = 4;
/// Worker runs compared with a raw `COPY`.
const ROUNDS: usize = 5;
/// Rows the worker writes, table by table, in insert order: one row per
/// window, holding the window's block.
const TABLES: [&str; 1] = ["snapshots"];
/// The primary key of each of [`TABLES`].
const PRIMARY_KEYS: [&str; 1] = ["id"];

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let stack = Stack::start(StackOptions::ephemeral().topics(Topics::with_prefix("bench-")))
        .await
        .expect("start the stack (is tansu installed?)");
    let pool = stack.connect().await.unwrap();
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", stack.kafka_bootstrap())
        .set("partitioner", "murmur2_random")
        .set("linger.ms", "20")
        // Tansu skips the rest of a batch fetched from its middle (see
        // odp_devstack::TANSU_KAFKA_OPTIONS), which backpressure pauses do.
        .set("batch.num.messages", "1")
        .create()
        .unwrap();

    println!("workload: {PROFILES} profiles x {WINDOWS} windows, {STACKS_PER_WINDOW} stacks each");
    // Other work on the machine slows either side at random: rounds of a
    // worker run and the raw COPY of its rows right after, and the median.
    let mut ratios = Vec::new();
    let mut one_rates = Vec::new();
    for round in 1..=ROUNDS {
        let group = format!("one-{round}");
        let one = ingest_run(&stack, &pool, &producer, 1, &group, stack.database_url()).await;
        let (rows, timed_rows) = (one.rows, one.timed_rows());
        let copy_secs = copy_baseline(&pool, &one.profiles).await;
        let rows_per_sec = one.rate();
        let copy_rows_per_sec = rows as f64 / copy_secs;
        let ratio = rows_per_sec / copy_rows_per_sec;
        println!(
            "round {round}: 1 worker {timed_rows} rows in {:.2} s = {rows_per_sec:.0} rows/s \
             ({} stored before the clock started); raw COPY {rows} rows in {copy_secs:.2} s \
             = {copy_rows_per_sec:.0} rows/s; ratio {ratio:.2}x",
            one.seconds, one.rows_before
        );
        ratios.push(ratio);
        one_rates.push(rows_per_sec);
    }
    println!(
        "ratio worker/COPY, median of {ROUNDS} rounds = {:.2}x (goal >= 0.7x)",
        median(&mut ratios)
    );

    let local = stack.database_url().to_owned();
    let two_rate = ingest_run(&stack, &pool, &producer, 2, "two", &local)
        .await
        .report(2);
    println!(
        "ratio 2 workers/1 worker throughput = {:.2}x",
        two_rate / median(&mut one_rates)
    );

    let (upstream, _) = authority(&local);
    let proxy = latency::LatencyProxy::start(
        upstream.parse().expect("Postgres at host:port"),
        Duration::from_millis(1),
    )
    .await;
    let remote = local.replacen(upstream, &proxy.addr.to_string(), 1);
    println!("Postgres behind a proxy adding 1 ms each way:");
    let (mut one_remote, mut two_remote) = (Vec::new(), Vec::new());
    for round in 1..=2 {
        let group = format!("one-remote-{round}");
        let one = ingest_run(&stack, &pool, &producer, 1, &group, &remote).await;
        one_remote.push(one.report(1));
        let group = format!("two-remote-{round}");
        let two = ingest_run(&stack, &pool, &producer, 2, &group, &remote).await;
        two_remote.push(two.report(2));
    }
    println!(
        "ratio 2 workers/1 worker throughput, 1 ms away = {:.2}x",
        median(&mut two_remote) / median(&mut one_remote)
    );
}

/// The `host:port` of a `postgres://user@host:port/db` URL, and the rest.
fn authority(url: &str) -> (&str, &str) {
    let after_user = url.split_once('@').map_or(url, |(_, rest)| rest);
    after_user.split_once('/').unwrap_or((after_user, ""))
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

struct Run {
    profiles: Vec<Uuid>,
    seconds: f64,
    /// Rows of `profiles` already stored when the clock started.
    rows_before: i64,
    /// Rows of `profiles` stored in all.
    rows: i64,
}

impl Run {
    /// The rows stored on the clock: it starts at the first stored batch,
    /// so that batch's rows are not counted either.
    fn timed_rows(&self) -> i64 {
        self.rows - self.rows_before
    }

    fn rate(&self) -> f64 {
        self.timed_rows() as f64 / self.seconds
    }

    /// Prints the run's rate and returns it.
    fn report(&self, workers: usize) -> f64 {
        println!(
            "{workers} worker(s): {} rows in {:.2} s = {:.0} rows/s",
            self.timed_rows(),
            self.seconds,
            self.rate()
        );
        self.rate()
    }
}

/// Publishes the workload first, then times `workers` workers of a fresh
/// group, which starts where the earlier runs' messages end, from start
/// until every snapshot is stored.
async fn ingest_run(
    stack: &Stack,
    pool: &PgPool,
    producer: &FutureProducer,
    workers: usize,
    group: &str,
    database_url: &str,
) -> Run {
    // Each run starts from empty tables, as its baseline does: tables grown
    // by the earlier runs would make every later run slower.
    sqlx::query(&format!("truncate {}", TABLES.join(", ")))
        .execute(pool)
        .await
        .unwrap();
    let profiles: Vec<Uuid> = (0..PROFILES).map(|_| Uuid::new_v4()).collect();
    let group = format!("bench-{group}");
    tokio::task::block_in_place(|| start_at_end(stack, &group));
    let mut sends = Vec::new();
    for window in 0..WINDOWS {
        for &profile in &profiles {
            let payload = snapshot(&group, profile, window);
            let key = profile.to_string();
            let topic = stack.topics().stacks.clone();
            sends.push(async move {
                let record = FutureRecord::to(&topic).key(&key).payload(&payload);
                producer
                    .send(record, Duration::from_secs(60))
                    .await
                    .map_err(|(e, _)| e)
            });
        }
        for sent in futures::future::join_all(sends.drain(..)).await {
            sent.expect("produce");
        }
    }
    let launched = Instant::now();
    let workers: Vec<_> = (0..workers)
        .map(|_| common::spawn_worker(stack, &group, database_url))
        .collect();
    // Timed from the first stored snapshot: joining the group and loading
    // the rules are start-up, not ingest. The rows stored by then are
    // counted (in one statement, after the clock started, so a batch
    // committed in between is timed but not counted) and left out.
    //
    // A profile's windows are stored in order (one partition, batches one
    // after the other), so the poll, which must not take Postgres time from
    // the worker, looks up only each profile's first and last window.
    let mut started = None;
    let mut rows_before = 0;
    loop {
        let (first, last): (i64, i64) = sqlx::query_as(
            "select count(*) filter (where sequence = 0), count(*) filter (where sequence > 0)
             from snapshots
             where agent_id = 'bench-agent' and profile_id = any($1) and sequence in (0, $2)",
        )
        .bind(&profiles)
        .bind(WINDOWS as i64 - 1)
        .fetch_one(pool)
        .await
        .unwrap();
        if first > 0 && started.is_none() {
            started = Some(Instant::now());
            rows_before = rows_written(pool, &profiles).await;
            println!(
                "{group}: first snapshot stored {:.2} s after start",
                launched.elapsed().as_secs_f64()
            );
        }
        if last == PROFILES as i64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let seconds = started.expect("stored").elapsed().as_secs_f64();
    drop(workers);
    let stored: i64 =
        sqlx::query_scalar("select count(*) from snapshots where profile_id = any($1)")
            .bind(&profiles)
            .fetch_one(pool)
            .await
            .unwrap();
    assert_eq!(stored, (PROFILES * WINDOWS) as i64, "every window stored");
    let rows = rows_written(pool, &profiles).await;
    Run {
        profiles,
        seconds,
        rows_before,
        rows,
    }
}

/// Commits, for the fresh consumer group `group`, the ends of the stacks
/// topic's partitions, so that its workers read only what is published
/// next. Read from the start, the earlier runs' snapshots would come first
/// on some partitions while others already deliver this run's, and the
/// clock would time them as duplicates.
fn start_at_end(stack: &Stack, group: &str) {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", stack.kafka_bootstrap())
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let topic = &stack.topics().stacks;
    let timeout = Duration::from_secs(10);
    let metadata = consumer.fetch_metadata(Some(topic), timeout).unwrap();
    let mut ends = TopicPartitionList::new();
    for partition in metadata.topics()[0].partitions() {
        let (_, high) = consumer
            .fetch_watermarks(topic, partition.id(), timeout)
            .unwrap();
        ends.add_partition_offset(topic, partition.id(), Offset::Offset(high))
            .unwrap();
    }
    consumer.commit(&ends, CommitMode::Sync).unwrap();
}

/// A window of `profile`: 60 of 600 distinct stacks (rotating with the
/// window, as hot paths do), 4 threads. Function names carry the run's
/// name, so each run stores frames and stacks of its own.
fn snapshot(run: &str, profile: Uuid, window: usize) -> Vec<u8> {
    let mut b = SnapshotBuilder::new();
    for i in 0..STACKS_PER_WINDOW {
        let stack = (window * 7 + i * 11) % DISTINCT_STACKS;
        let frames = [
            Frame::function(format!("{run}::main")),
            Frame::function(format!("{run}::handler_{}", stack % 40)),
            Frame::function(format!("{run}::work_{stack}")),
        ];
        b.add(&frames, i as u32 % THREADS + 1, 1 + (i as u64 * 13) % 50);
    }
    for tid in 1..=THREADS {
        b.name_thread(tid, format!("worker-{tid}"));
    }
    let start = 1_700_000_000_000 + window as i64 * 10_000;
    b.build(SnapshotHeader {
        profile_id: profile,
        host: format!("host-{}", profile.as_u128() % 8),
        agent_id: "bench-agent".into(),
        sequence: window as u64,
        window_start_ms: start,
        window_end_ms: start + 10_000,
        event: EventKind::CpuClock,
        period: 1,
        frequency_hz: 99,
    })
    .encode()
}

/// Rows the run wrote for its profiles, counted in one statement so they
/// are those of one moment.
async fn rows_written(pool: &PgPool, profiles: &[Uuid]) -> i64 {
    let counts: Vec<String> = TABLES
        .iter()
        .map(|table| format!("(select count(*) from ({}) x)", selection(table)))
        .collect();
    sqlx::query_scalar(&format!("select {}", counts.join(" + ")))
        .bind(profiles)
        .fetch_one(pool)
        .await
        .unwrap()
}

fn selection(table: &str) -> String {
    format!("select * from {table} where profile_id = any($1)")
}

/// Times `COPY … FROM STDIN (format binary)` of the same rows, one table
/// after the other as the worker writes them, in one transaction, into
/// empty tables of the same shape as the real ones: logged, with the same
/// indexes, check constraints and triggers. They live in a schema of their
/// own, first on the search path, where the triggers' functions find them.
///
/// The baseline used to copy into temporary tables with the indexes only:
/// no WAL, buffers local to the backend, no checks and no reference
/// triggers. No write to the real tables can be that cheap (its `samples`
/// COPY took about half the time of the same COPY into a logged table with
/// the same indexes), so the ratio measured the schema as much as the
/// worker.
async fn copy_baseline(pool: &PgPool, profiles: &[Uuid]) -> f64 {
    let mut conn = pool.acquire().await.unwrap();
    let list = profiles
        .iter()
        .map(|p| format!("'{p}'"))
        .collect::<Vec<_>>()
        .join(",");
    sqlx::query("create schema copy_baseline")
        .execute(&mut *conn)
        .await
        .unwrap();
    let mut dumps = Vec::new();
    for (table, key) in TABLES.iter().zip(PRIMARY_KEYS) {
        // In the worker's order: by primary key (samples and threads are
        // sorted per batch, and snapshot ids grow).
        let query = format!("select * from ({}) x order by {key}", selection(table))
            .replace("$1", &format!("array[{list}]::uuid[]"));
        let mut out = conn
            .copy_out_raw(&format!("copy ({query}) to stdout (format binary)"))
            .await
            .unwrap();
        let mut bytes = Vec::new();
        while let Some(chunk) = out.next().await {
            bytes.extend_from_slice(&chunk.unwrap());
        }
        drop(out);
        sqlx::query(&format!(
            "create table copy_baseline.{table} (like public.{table} including all)"
        ))
        .execute(&mut *conn)
        .await
        .unwrap();
        let triggers: Vec<String> = sqlx::query_scalar(
            "select pg_get_triggerdef(oid) from pg_trigger
             where tgrelid = $1::regclass and not tgisinternal",
        )
        .bind(format!("public.{table}"))
        .fetch_all(&mut *conn)
        .await
        .unwrap();
        for trigger in triggers {
            let on = format!(" ON public.{table} ");
            assert!(trigger.contains(&on), "{trigger}");
            sqlx::query(&trigger.replace(&on, &format!(" ON copy_baseline.{table} ")))
                .execute(&mut *conn)
                .await
                .unwrap();
        }
        dumps.push((table, bytes));
    }
    sqlx::query("set search_path = copy_baseline, public")
        .execute(&mut *conn)
        .await
        .unwrap();
    let started = Instant::now();
    let mut tx = conn.begin().await.unwrap();
    for (table, bytes) in &dumps {
        let mut copy = tx
            .copy_in_raw(&format!("copy {table} from stdin (format binary)"))
            .await
            .unwrap();
        copy.send(bytes.as_slice()).await.unwrap();
        copy.finish().await.unwrap();
    }
    tx.commit().await.unwrap();
    let seconds = started.elapsed().as_secs_f64();
    sqlx::query("reset search_path")
        .execute(&mut *conn)
        .await
        .unwrap();
    sqlx::query("drop schema copy_baseline cascade")
        .execute(&mut *conn)
        .await
        .unwrap();
    seconds
}
