//! The api-server stays correct after database faults and abandoned
//! requests (issue 12, part 7).
//!
//! One api-server, with a short request timeout, goes through imports and
//! flame graphs its clients abandon mid-flight, requests that run into the
//! timeout, and a Postgres restart; after each fault every answer to
//! hundreds of requests (`/top`, flame graph, import), sequential and
//! concurrent, is a 200 equal to the answer taken before the faults.
//! While Postgres is down, requests get a 503 with `Retry-After` within
//! the bound. A pool test shows the two sqlx cancellations that
//! left connections answering with earlier replies, and that the store's
//! pool never hands such a connection out again.

use std::time::{Duration, Instant};

use odp_devstack::{Stack, StackOptions};
use odp_plumbing::Topics;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use sqlx::{Connection as _, Executor as _};
use tokio::task::JoinSet;

use crate::common::{self, Harness};

/// The api-server's request timeout (and statement timeout) in these
/// tests: short, so requests held on a lock run into it soon, while
/// importing the big profile (6 to 8 s on a 2-core VM with debug binaries)
/// fits the imports' twice as long, with room for a loaded machine.
const REQUEST_TIMEOUT_SECS: u64 = 10;
/// The bound for a 503 while Postgres is down is about 2 s.
const UNAVAILABLE_BOUND: Duration = Duration::from_secs(3);
/// Requests checked against the reference answers after each fault.
const CHECKS: usize = 100;
/// Requests in flight at once in the concurrent half of a check.
const CONCURRENCY: usize = 6;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_stay_exact_through_abandoned_requests_timeouts_and_a_postgres_restart() {
    let h = start("db-faults").await;
    let api = Api::new(&h);
    let reference = Reference::take(&api).await;
    let big = big_folded();
    let started = Instant::now();
    let big_id = api.import_ok("big", &big, Duration::from_secs(120)).await;
    let big_import = started.elapsed();
    println!("big import of {} MiB: {big_import:?}", big.len() >> 20);

    let pool = h.pool().await;
    // Every pooled connection has prepared the checked queries, as on a
    // server that has run a while (a connection that has to prepare one
    // anew fails once and is then in step again).
    reference.check(&h, &api, "no fault").await;

    // Imports abandoned while their statement waits in Postgres, then at
    // points spread over an import's duration.
    for _ in 0..2 {
        abandon_import_while_its_insert_waits(&h, &api, &pool, &big).await;
    }
    for step in 1..=10 {
        let after = big_import.mul_f64(0.1 * step as f64);
        api.abandon(api.import("big", big.clone()), after).await;
    }
    reference.check(&h, &api, "abandoned imports").await;

    // Flame graphs of the big profile abandoned mid-query.
    for after_ms in [50, 150, 300, 600, 1000, 1500, 2200] {
        api.abandon(
            api.get(&format!("/api/v1/profiles/{big_id}/flamegraph")),
            Duration::from_millis(after_ms),
        )
        .await;
    }
    reference.check(&h, &api, "abandoned flame graphs").await;

    // Requests that run into the timeout: their statements wait on a lock
    // this test holds until Postgres or the server gives up on them.
    let mut lock = pool.begin().await.expect("begin");
    sqlx::query("lock table snapshots in access exclusive mode")
        .execute(&mut *lock)
        .await
        .expect("lock snapshots");
    let mut waiting = JoinSet::new();
    for (what, request) in [
        ("/top", api.get(&reference.top_path)),
        ("flame graph", api.get(&reference.flame_path)),
        (
            "import",
            api.import("small", SMALL_FOLDED.as_bytes().to_vec()),
        ),
    ] {
        let api = api.clone();
        waiting.spawn(async move { (what, api.send(request).await) });
    }
    for (what, answer) in waiting.join_all().await {
        assert!(
            [StatusCode::GATEWAY_TIMEOUT, StatusCode::SERVICE_UNAVAILABLE].contains(&answer.status),
            "{what} behind a lock ran into no timeout: {} {}\n{}",
            answer.status,
            answer.text(),
            h.platform.logs()
        );
    }
    lock.rollback().await.expect("release the lock");
    reference.check(&h, &api, "timed-out requests").await;

    // Postgres stopped under flame graphs that are then abandoned; while
    // it is down, every request times out waiting for a connection.
    let mut abandoned = JoinSet::new();
    for after_ms in [300, 900, 1800] {
        let (api, path) = (api.clone(), format!("/api/v1/profiles/{big_id}/flamegraph"));
        abandoned.spawn(async move {
            api.abandon(api.get(&path), Duration::from_millis(after_ms))
                .await
        });
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    h.stack.database().stop().expect("stop postgres");
    let down = Instant::now();
    while down.elapsed() < Duration::from_secs(8) {
        let during = api.send(api.get(&reference.top_path)).await;
        assert_unavailable(&during, "a /top while Postgres is down");
    }
    abandoned.join_all().await;
    h.stack
        .database()
        .start(false, false)
        .await
        .expect("start postgres");
    api.wait_healthy(&h).await;
    reference.check(&h, &api, "a Postgres restart").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_postgres_down_requests_get_503_and_retry_after_quickly() {
    let h = start("db-down").await;
    let api = Api::new(&h);
    let reference = Reference::take(&api).await;

    h.stack.database().stop().expect("stop postgres");
    let import = || api.import("small", SMALL_FOLDED.as_bytes().to_vec());
    for (what, request) in [
        ("/top", api.get(&reference.top_path)),
        ("flame graph", api.get(&reference.flame_path)),
        ("import", import()),
        ("/healthz", api.get("/healthz")),
    ] {
        let started = Instant::now();
        let answer = api.send(request).await;
        let took = started.elapsed();
        assert_unavailable(&answer, what);
        assert!(
            took < UNAVAILABLE_BOUND,
            "{what} took {took:?} to answer 503, over {UNAVAILABLE_BOUND:?}"
        );
    }

    h.stack
        .database()
        .start(false, false)
        .await
        .expect("start postgres");
    api.wait_healthy(&h).await;
    reference.check(&h, &api, "Postgres down and back").await;
}

/// sqlx 0.8 hands a connection back to its pool after a dropped COPY or
/// `BEGIN` in a state where it answers with earlier replies, or inside a
/// transaction nobody owns. The store's pool closes such connections: on
/// a pool of one connection, every later answer is right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_never_reuses_a_connection_left_mid_copy_or_mid_begin() {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter("warn")
        .try_init();
    let stack = Stack::start(
        StackOptions::ephemeral()
            .migrate(false)
            .topics(Topics::with_prefix("db-pool-")),
    )
    .await
    .expect("start the stack");
    let url = stack.database_url();
    let pool = odp_store::connect_with(
        url,
        &odp_store::PoolConfig {
            max_connections: 1,
            sleep: Some(|d| Box::pin(tokio::time::sleep(d))),
            ..odp_store::PoolConfig::default()
        },
    )
    .await
    .expect("connect");
    // A table whose inserts take a second to check, as large imports do.
    sqlx::raw_sql(
        "create table slow_check (v int);
         create function slow_check() returns trigger language plpgsql as
             $$ begin perform pg_sleep(1); return null; end $$;
         create trigger slow_check after insert on slow_check
             for each statement execute function slow_check();",
    )
    .execute(&pool)
    .await
    .expect("create the table");

    // The connection has prepared the probe query, as a server's
    // connections have their queries.
    assert_answers_exactly(&pool, "at first").await;

    // A COPY dropped after `CopyDone`, while the server checks the rows.
    {
        let mut tx = pool.begin().await.expect("begin");
        drop_copy_while_checked(&mut tx, b"1\n").await;
    }
    assert_answers_exactly(&pool, "after a dropped COPY").await;
    // The same outside a transaction: nothing is left queued to tell.
    {
        let mut conn = pool.acquire().await.expect("acquire");
        drop_copy_while_checked(&mut conn, b"2\n").await;
    }
    assert_answers_exactly(&pool, "after a dropped COPY outside a transaction").await;

    // A `BEGIN` dropped before its answer (queued behind a slow query).
    {
        let mut conn = pool.acquire().await.expect("acquire");
        let slow = tokio::time::timeout(
            Duration::from_millis(100),
            conn.execute("select pg_sleep(0.5)"),
        )
        .await;
        assert!(slow.is_err(), "pg_sleep(0.5) returned within 100 ms");
        let begin = tokio::time::timeout(Duration::from_millis(100), conn.begin()).await;
        assert!(begin.is_err(), "BEGIN answered behind pg_sleep");
    }
    assert_answers_exactly(&pool, "after a dropped BEGIN").await;
    // A write through the pool is committed: another connection sees it.
    sqlx::query("insert into slow_check values (42)")
        .execute(&pool)
        .await
        .expect("insert");
    let mut other = sqlx::PgConnection::connect(url).await.expect("connect");
    let seen: i64 = sqlx::query_scalar("select count(*) from slow_check where v = 42")
        .fetch_one(&mut other)
        .await
        .expect("count");
    assert_eq!(seen, 1, "a write through the pool is not committed");
    pool.close().await;
}

/// Sends an import of `big` and drops it once its window's insert waits,
/// statement sent, on a lock this test holds on `snapshots` until the
/// import is gone: the server abandons a connection in the middle of a
/// statement, which must then be closed, never reused.
async fn abandon_import_while_its_insert_waits(
    h: &Harness,
    api: &Api,
    pool: &sqlx::PgPool,
    big: &[u8],
) {
    let mut lock = pool.begin().await.expect("begin");
    sqlx::query("lock table snapshots in share mode")
        .execute(&mut *lock)
        .await
        .expect("lock snapshots");
    let in_flight = tokio::spawn(api.import("big", big.to_vec()).send());
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let waiting: bool = sqlx::query_scalar(
            "select exists (select 1 from pg_stat_activity
                            where query like 'insert into snapshots%' and wait_event_type = 'Lock')",
        )
        .fetch_one(pool)
        .await
        .expect("read pg_stat_activity");
        if waiting {
            break;
        }
        assert!(
            Instant::now() < deadline && !in_flight.is_finished(),
            "the import never waited in its insert\n{}",
            h.platform.logs()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    in_flight.abort();
    let _ = in_flight.await;
    // The server drops the request before the insert can go on.
    tokio::time::sleep(Duration::from_millis(500)).await;
    lock.rollback().await.expect("release snapshots");
}

/// Sends `row` to `slow_check` by COPY and drops the COPY after its
/// `CopyDone`, while the server's one-second trigger still checks it.
async fn drop_copy_while_checked(conn: &mut sqlx::PgConnection, row: &[u8]) {
    let mut copy = conn
        .copy_in_raw("copy slow_check from stdin")
        .await
        .expect("copy");
    copy.send(row).await.expect("send a row");
    let finish = tokio::time::timeout(Duration::from_millis(200), copy.finish()).await;
    assert!(finish.is_err(), "the COPY finished within 200 ms");
}

/// Twenty queries through `pool`, each answered with its own value.
async fn assert_answers_exactly(pool: &sqlx::PgPool, when: &str) {
    for i in 0..20i32 {
        let answer: Result<i32, _> = sqlx::query_scalar("select $1::int4")
            .bind(i)
            .fetch_one(pool)
            .await;
        assert_eq!(answer.ok(), Some(i), "query {i} {when}");
    }
}

async fn start(name: &str) -> Harness {
    common::start_configured(name, |options| {
        options.with_agent = false;
        options.api_env.push((
            "ODP_REQUEST_TIMEOUT_SECS".into(),
            REQUEST_TIMEOUT_SECS.to_string(),
        ));
    })
    .await
}

fn assert_unavailable(answer: &Answer, what: &str) {
    assert_eq!(
        answer.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{what}: {}",
        answer.text()
    );
    let body: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    assert_eq!(
        body["error"]["code"],
        "unavailable",
        "{what}: {}",
        answer.text()
    );
    let retry_after = answer
        .retry_after
        .as_deref()
        .unwrap_or_else(|| panic!("{what}: 503 without Retry-After"));
    assert!(
        retry_after.parse::<u64>().is_ok_and(|secs| secs > 0),
        "{what}: Retry-After {retry_after:?}"
    );
}

/// Folded stacks of a small profile: 40 stacks over 30 functions.
const SMALL_FOLDED: &str = "main;serve;parse 17\nmain;serve;parse;lex 9\n\
    main;serve;render 31\nmain;serve;render;escape 4\nmain;gc 12\nmain;gc;mark 20\n\
    main;gc;sweep 6\nmain;serve;db;query 40\nmain;serve;db;query;decode 11\n\
    main;serve;db;pool 3\nmain;idle 50\nmain;serve;auth;verify 8\nmain;serve;auth;hash 19\n";

/// Folded stacks of a big profile: 60,000 distinct stacks 12 to 35
/// frames deep over 50,000 functions (9 MiB), so importing it and reading
/// its flame graph (80 MB of JSON) take seconds.
fn big_folded() -> Vec<u8> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        // xorshift64*: deterministic, so the profile is the same each run.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let mut out = Vec::with_capacity(10 << 20);
    for _ in 0..60_000 {
        let depth = 12 + next() % 24;
        out.extend_from_slice(b"main");
        for _ in 0..depth {
            out.extend_from_slice(format!(";f{}", next() % 50_000).as_bytes());
        }
        out.extend_from_slice(format!(" {}\n", 1 + next() % 1000).as_bytes());
    }
    out
}

/// One answer of the API.
struct Answer {
    status: StatusCode,
    retry_after: Option<String>,
    body: Vec<u8>,
}

impl Answer {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body[..self.body.len().min(400)]).into_owned()
    }

    fn json(&self, what: &str) -> Value {
        assert_eq!(self.status, StatusCode::OK, "{what}: {}", self.text());
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{what}: {e}"))
    }
}

/// The API under test, reached directly with reqwest so that a request
/// can be dropped mid-flight.
#[derive(Clone)]
struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Api {
    fn new(h: &Harness) -> Self {
        Api {
            http: h.platform.http(),
            base: h.platform.api_url.clone(),
            token: h.platform.token.clone(),
        }
    }

    fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .timeout(Duration::from_secs(120))
    }

    fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.request(Method::GET, path)
    }

    fn import(&self, service: &str, file: Vec<u8>) -> reqwest::RequestBuilder {
        self.request(
            Method::POST,
            &format!("/api/v1/profiles/import?service={service}&format=folded"),
        )
        .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
        .body(file)
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Answer {
        let response = request.send().await.expect("send the request");
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response.bytes().await.expect("read the answer").to_vec();
        Answer {
            status,
            retry_after,
            body,
        }
    }

    /// Imports `file` for `service`; returns the new profile's id.
    async fn import_ok(&self, service: &str, file: &[u8], timeout: Duration) -> String {
        let answer = self
            .send(self.import(service, file.to_vec()).timeout(timeout))
            .await;
        assert_eq!(
            answer.status,
            StatusCode::CREATED,
            "import: {}",
            answer.text()
        );
        let profile: Value = serde_json::from_slice(&answer.body).expect("import answer");
        profile["id"].as_str().expect("profile id").to_owned()
    }

    /// Sends `request` and drops it, unanswered, after `after` (the
    /// connection closes with it).
    async fn abandon(&self, request: reqwest::RequestBuilder, after: Duration) {
        let in_flight = tokio::spawn(request.send());
        tokio::time::sleep(after).await;
        in_flight.abort();
        let _ = in_flight.await;
    }

    /// Waits until `/healthz` answers 200 again.
    async fn wait_healthy(&self, h: &Harness) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.send(self.get("/healthz")).await.status != StatusCode::OK {
            assert!(
                Instant::now() < deadline,
                "the api-server never answered /healthz again\n{}",
                h.platform.logs()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

/// The answers taken before any fault, for a small imported profile.
#[derive(Clone)]
struct Reference {
    profile_id: String,
    top_path: String,
    flame_path: String,
    top: Value,
    flame: Value,
}

impl Reference {
    async fn take(api: &Api) -> Self {
        let profile_id = api
            .import_ok("small", SMALL_FOLDED.as_bytes(), Duration::from_secs(30))
            .await;
        let top_path = format!("/api/v1/profiles/{profile_id}/top?limit=50");
        let flame_path = format!("/api/v1/profiles/{profile_id}/flamegraph");
        let top = api.send(api.get(&top_path)).await.json("reference /top");
        let flame = api
            .send(api.get(&flame_path))
            .await
            .json("reference flame graph");
        Reference {
            profile_id,
            top_path,
            flame_path,
            top,
            flame,
        }
    }

    /// [`CHECKS`] requests one after the other, then as many
    /// [`CONCURRENCY`] at a time: `/top`, the flame graph, and an import
    /// of the same file whose `/top` must be the reference's.
    async fn check(&self, h: &Harness, api: &Api, after: &str) {
        for i in 0..CHECKS {
            if let Err(wrong) = self.one(api, i).await {
                panic!("after {after}, request {i}: {wrong}\n{}", h.platform.logs());
            }
        }
        let mut set = JoinSet::new();
        let mut failures = Vec::new();
        for i in 0..CHECKS {
            if set.len() == CONCURRENCY {
                failures.extend(set.join_next().await.expect("a check").expect("join"));
            }
            let (reference, api) = (self.clone(), api.clone());
            set.spawn(async move { reference.one(&api, i).await.err() });
        }
        for result in set.join_all().await {
            failures.extend(result);
        }
        assert!(
            failures.is_empty(),
            "after {after}, concurrent requests answered wrongly:\n{}\n{}",
            failures.join("\n"),
            h.platform.logs()
        );
    }

    /// Request `i` of a check, compared with the reference.
    async fn one(&self, api: &Api, i: usize) -> Result<(), String> {
        let (what, answer, want) = match i % 3 {
            0 => ("/top", api.send(api.get(&self.top_path)).await, &self.top),
            1 => (
                "flame graph",
                api.send(api.get(&self.flame_path)).await,
                &self.flame,
            ),
            _ => {
                let imported = api
                    .send(api.import("small", SMALL_FOLDED.as_bytes().to_vec()))
                    .await;
                if imported.status != StatusCode::CREATED {
                    return Err(format!("import: {} {}", imported.status, imported.text()));
                }
                let profile: Value =
                    serde_json::from_slice(&imported.body).map_err(|e| e.to_string())?;
                let id = profile["id"].as_str().unwrap_or_default();
                let path = format!("/api/v1/profiles/{id}/top?limit=50");
                let mut answer = api.send(api.get(&path)).await;
                // The copy's `/top` names the copy; otherwise identical.
                answer.body = String::from_utf8_lossy(&answer.body)
                    .replace(id, &self.profile_id)
                    .into_bytes();
                ("/top of an import", answer, &self.top)
            }
        };
        if answer.status != StatusCode::OK {
            return Err(format!("{what}: {} {}", answer.status, answer.text()));
        }
        let got: Value =
            serde_json::from_slice(&answer.body).map_err(|e| format!("{what}: {e}"))?;
        if &got != want {
            return Err(format!("{what}: answered {}", answer.text()));
        }
        Ok(())
    }
}
