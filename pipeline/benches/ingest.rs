//! Ingest throughput, measured in one run against the same Postgres:
//!
//! 1. one worker (Kafka → decode → store → commit) versus a raw `COPY` of
//!    exactly the rows it wrote into tables of the same shape (goal ≥ 0.7×);
//! 2. two workers versus one on the four partitions of the stacks topic.
//!
//! Workers run as their own processes (the release `odp-pipeline`
//! binary), as in production. Run by hand:
//! `cargo bench -p odp-pipeline --bench ingest` (a few minutes; needs
//! Tansu and Postgres like the tests). Prints ratios, asserts nothing.

mod common;

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame};
use odp_devstack::{Stack, StackOptions, Topics};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::ClientConfig;
use sqlx::PgPool;
use uuid::Uuid;

const PROFILES: usize = 40;
const WINDOWS: usize = 100;
const STACKS_PER_WINDOW: usize = 60;
const DISTINCT_STACKS: usize = 600;
const THREADS: u32 = 4;
/// Rows the worker writes, table by table, in insert order.
const TABLES: [&str; 5] = [
    "frames",
    "stacks",
    "snapshots",
    "samples",
    "snapshot_threads",
];

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
    let one = ingest_run(&stack, &pool, &producer, 1, "one").await;
    let rows = rows_written(&pool, &one.profiles).await;
    let copy_secs = copy_baseline(&pool, &one.profiles).await;
    let rows_per_sec = rows as f64 / one.seconds;
    let copy_rows_per_sec = rows as f64 / copy_secs;
    println!(
        "1 worker : {rows} rows in {:.2} s = {rows_per_sec:.0} rows/s",
        one.seconds
    );
    println!("raw COPY : {rows} rows in {copy_secs:.2} s = {copy_rows_per_sec:.0} rows/s");
    println!(
        "ratio worker/COPY = {:.2}x (goal >= 0.7x)",
        rows_per_sec / copy_rows_per_sec
    );

    let two = ingest_run(&stack, &pool, &producer, 2, "two").await;
    println!("2 workers: {:.2} s for the same workload", two.seconds);
    println!(
        "ratio 2 workers/1 worker throughput = {:.2}x",
        one.seconds / two.seconds
    );
}

struct Run {
    profiles: Vec<Uuid>,
    seconds: f64,
}

/// Publishes the workload first, then times `workers` workers of a fresh
/// group from start until every snapshot is stored.
async fn ingest_run(
    stack: &Stack,
    pool: &PgPool,
    producer: &FutureProducer,
    workers: usize,
    group: &str,
) -> Run {
    let profiles: Vec<Uuid> = (0..PROFILES).map(|_| Uuid::new_v4()).collect();
    let mut sends = Vec::new();
    for window in 0..WINDOWS {
        for &profile in &profiles {
            let payload = snapshot(group, profile, window);
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
    // A group per run, reading from the start: each run sees only its own
    // profiles stored, the other runs' snapshots are duplicates or absent.
    let launched = Instant::now();
    let workers: Vec<_> = (0..workers)
        .map(|_| common::spawn_worker(stack, &format!("bench-{group}")))
        .collect();
    let want = (PROFILES * WINDOWS) as i64;
    // Timed from the first stored snapshot: joining the group and loading
    // the rules are start-up, not ingest.
    let mut started = None;
    loop {
        let stored: i64 =
            sqlx::query_scalar("select count(*) from snapshots where profile_id = any($1)")
                .bind(&profiles)
                .fetch_one(pool)
                .await
                .unwrap();
        if stored > 0 && started.is_none() {
            started = Some(Instant::now());
            println!(
                "{group}: first snapshot stored {:.2} s after start",
                launched.elapsed().as_secs_f64()
            );
        }
        if stored >= want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let seconds = started.expect("stored").elapsed().as_secs_f64();
    drop(workers);
    Run { profiles, seconds }
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

/// Rows the run wrote for its profiles.
async fn rows_written(pool: &PgPool, profiles: &[Uuid]) -> i64 {
    let mut rows = 0;
    for table in TABLES {
        rows += row_count(pool, table, profiles).await;
    }
    rows
}

fn selection(table: &str) -> String {
    let stack_ids = "select s.stack_id from samples s join snapshots n on n.id = s.snapshot_id
                     where n.profile_id = any($1)";
    match table {
        "stacks" => format!("select * from stacks where id in ({stack_ids})"),
        "frames" => format!(
            "select * from frames where id in (select distinct encode(substring(st.frame_ids from 1 + 16 * g for 16), 'hex')::uuid
             from stacks st, generate_series(0, length(st.frame_ids) / 16 - 1) g where st.id in ({stack_ids}))"
        ),
        "snapshots" => "select * from snapshots where profile_id = any($1)".to_owned(),
        _ => format!(
            "select t.* from {table} t join snapshots n on n.id = t.snapshot_id
             where n.profile_id = any($1)"
        ),
    }
}

async fn row_count(pool: &PgPool, table: &str, profiles: &[Uuid]) -> i64 {
    let sql = format!("select count(*) from ({}) x", selection(table));
    let query = sqlx::query_scalar(&sql);
    let query = if sql.contains("$1") {
        query.bind(profiles)
    } else {
        query
    };
    query.fetch_one(pool).await.unwrap()
}

/// Times `COPY … FROM STDIN` of the same rows into empty tables of the
/// same shape (columns, primary keys, unique indexes), one table after the
/// other as the worker writes them.
async fn copy_baseline(pool: &PgPool, profiles: &[Uuid]) -> f64 {
    let mut conn = pool.acquire().await.unwrap();
    let mut dumps = Vec::new();
    for table in TABLES {
        let list = profiles
            .iter()
            .map(|p| format!("'{p}'"))
            .collect::<Vec<_>>()
            .join(",");
        let query = selection(table).replace("$1", &format!("array[{list}]::uuid[]"));
        let mut out = conn
            .copy_out_raw(&format!("copy ({query}) to stdout"))
            .await
            .unwrap();
        let mut bytes = Vec::new();
        while let Some(chunk) = out.next().await {
            bytes.extend_from_slice(&chunk.unwrap());
        }
        drop(out);
        sqlx::query(&format!(
            "create temp table copy_{table} (like {table} including defaults including indexes)"
        ))
        .execute(&mut *conn)
        .await
        .unwrap();
        dumps.push((table, bytes));
    }
    let started = Instant::now();
    for (table, bytes) in &dumps {
        let mut copy = conn
            .copy_in_raw(&format!("copy copy_{table} from stdin"))
            .await
            .unwrap();
        copy.send(bytes.as_slice()).await.unwrap();
        copy.finish().await.unwrap();
    }
    started.elapsed().as_secs_f64()
}
