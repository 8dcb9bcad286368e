//! The references of samples and snapshot threads to snapshots and
//! stacks, checked once per statement (migration 0012) rather than by
//! per-row foreign keys, hold as the foreign keys did, against a real
//! Postgres: a missing snapshot or stack is refused with a foreign key
//! violation, a referenced stack cannot be deleted, a deleted snapshot
//! takes its samples and threads along, a stack the ingest cache wrongly
//! believes stored is stored again, and a stack deleted concurrently with
//! an insert referencing it is either kept or refused, never left dangling.

mod support;

use std::time::Duration;

use odp_devstack::{Stack, StackOptions};
use odp_store::{store_snapshots_cached, StoredIds};
use sqlx::PgPool;
use support::{count, snapshot};
use uuid::Uuid;

const HOT: (&[&str], u64) = (&["main", "hot"], 3);

fn is_foreign_key_violation(result: Result<sqlx::postgres::PgQueryResult, sqlx::Error>) -> bool {
    matches!(result, Err(sqlx::Error::Database(db)) if db.is_foreign_key_violation())
}

/// A stack row no sample references yet.
async fn bare_stack(pool: &PgPool) -> Uuid {
    let id = Uuid::new_v4();
    sqlx::query("insert into stacks (id, frame_ids) values ($1, decode(repeat('00', 16), 'hex'))")
        .bind(id)
        .execute(pool)
        .await
        .unwrap();
    id
}

/// Waits until a statement starting with `prefix` waits for a lock.
async fn waiting_for_lock(pool: &PgPool, prefix: &str) {
    for _ in 0..600 {
        let waiting: i64 = sqlx::query_scalar(
            "select count(*) from pg_stat_activity
             where wait_event_type = 'Lock' and query like $1 || '%'",
        )
        .bind(prefix)
        .fetch_one(pool)
        .await
        .unwrap();
        if waiting > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{prefix:?} never waited for a lock");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn references_are_checked_and_deletes_cascade() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let pool = stack.connect().await.unwrap();
    let profile = Uuid::new_v4();
    let mut known = StoredIds::new(1000);
    let first = snapshot(profile, 0, &[HOT]);
    store_snapshots_cached(&pool, &[&first], &mut known)
        .await
        .unwrap();
    let (snapshot_id, stack_id): (i64, Uuid) =
        sqlx::query_as("select snapshot_id, stack_id from samples")
            .fetch_one(&pool)
            .await
            .unwrap();

    let sample = "insert into samples (snapshot_id, stack_id, tid, count) values ($1, $2, 9, 1)";
    let missing_snapshot = sqlx::query(sample)
        .bind(snapshot_id + 1)
        .bind(stack_id)
        .execute(&pool)
        .await;
    assert!(is_foreign_key_violation(missing_snapshot));
    let missing_stack = sqlx::query(sample)
        .bind(snapshot_id)
        .bind(Uuid::new_v4())
        .execute(&pool)
        .await;
    assert!(is_foreign_key_violation(missing_stack));
    let thread = sqlx::query("insert into snapshot_threads values ($1, 9, 't')")
        .bind(snapshot_id + 1)
        .execute(&pool)
        .await;
    assert!(is_foreign_key_violation(thread));
    let referenced = sqlx::query("delete from stacks where id = $1")
        .bind(stack_id)
        .execute(&pool)
        .await;
    assert!(is_foreign_key_violation(referenced));

    // Retention removes the window, then the stack only it used.
    sqlx::query("delete from snapshots where id = $1")
        .bind(snapshot_id)
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(count(&pool, "select count(*) from samples").await, 0);
    assert_eq!(
        count(&pool, "select count(*) from snapshot_threads").await,
        0
    );
    sqlx::query("delete from stacks where id = $1")
        .bind(stack_id)
        .execute(&pool)
        .await
        .unwrap();

    // The cache still holds the stack as stored: the next window's batch
    // is refused, then stored again with the cache cleared.
    let second = snapshot(profile, 1, &[HOT]);
    let outcome = store_snapshots_cached(&pool, &[&second], &mut known)
        .await
        .unwrap();
    assert_eq!((outcome.stored, outcome.samples), (1, 3));
    let stored = "select count(*) from samples s join stacks t on t.id = s.stack_id";
    assert_eq!(count(&pool, stored).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stack_deleted_during_an_insert_is_kept_or_the_insert_refused() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let pool = stack.connect().await.unwrap();
    let first = snapshot(Uuid::new_v4(), 0, &[HOT]);
    store_snapshots_cached(&pool, &[&first], &mut StoredIds::new(0))
        .await
        .unwrap();
    let snapshot_id: i64 = sqlx::query_scalar("select id from snapshots")
        .fetch_one(&pool)
        .await
        .unwrap();
    let sample = "insert into samples (snapshot_id, stack_id, tid, count) values ($1, $2, 5, 1)";
    // Retention's delete: stacks no committed sample references.
    let collect = "delete from stacks s where s.id = $1
                   and not exists (select 1 from samples x where x.stack_id = s.id)";

    // The insert locks the stack first: the delete waits for it to commit,
    // then sees its sample and is refused.
    let kept = bare_stack(&pool).await;
    let mut insert = pool.begin().await.unwrap();
    sqlx::query(sample)
        .bind(snapshot_id)
        .bind(kept)
        .execute(&mut *insert)
        .await
        .unwrap();
    let delete = tokio::spawn({
        let pool = pool.clone();
        async move { sqlx::query(collect).bind(kept).execute(&pool).await }
    });
    waiting_for_lock(&pool, "delete from stacks").await;
    insert.commit().await.unwrap();
    assert!(is_foreign_key_violation(delete.await.unwrap()));

    // The delete goes first: the insert waits for it to commit, then finds
    // the stack gone and is refused.
    let gone = bare_stack(&pool).await;
    let mut delete = pool.begin().await.unwrap();
    sqlx::query(collect)
        .bind(gone)
        .execute(&mut *delete)
        .await
        .unwrap();
    let insert = tokio::spawn({
        let pool = pool.clone();
        async move {
            sqlx::query(sample)
                .bind(snapshot_id)
                .bind(gone)
                .execute(&pool)
                .await
        }
    });
    waiting_for_lock(&pool, "insert into samples").await;
    delete.commit().await.unwrap();
    assert!(is_foreign_key_violation(insert.await.unwrap()));

    let dangling = "select count(*) from samples s
                    where not exists (select 1 from stacks t where t.id = s.stack_id)";
    assert_eq!(count(&pool, dangling).await, 0);
    assert_eq!(count(&pool, "select count(*) from samples").await, 2);
}

/// Inserts a snapshot header row on `conn` and returns its id.
async fn header(conn: &mut sqlx::PgConnection) -> i64 {
    sqlx::query_scalar(
        "insert into snapshots (profile_id, agent_id, sequence, host, window_start, window_end,
                                event, period, frequency_hz, samples)
         values ($1, 'a', 0, 'h', now(), now(), 'cpu-clock', 1, 99, 1) returning id",
    )
    .bind(Uuid::new_v4())
    .fetch_one(conn)
    .await
    .unwrap()
}

/// Whether snapshot `id` is locked or deleted: `xmax` is 0 until then.
async fn locked(conn: &mut sqlx::PgConnection, id: i64) -> bool {
    sqlx::query_scalar("select xmax <> '0'::xid from snapshots where id = $1")
        .bind(id)
        .fetch_one(conn)
        .await
        .unwrap()
}

/// Migration 0014: the checks do not lock rows their own transaction
/// inserted (nobody else can see them), but such rows must still exist,
/// and rows of other transactions are locked as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_of_the_checking_transaction_are_referenced_without_a_lock() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let pool = stack.connect().await.unwrap();
    let sample = "insert into samples (snapshot_id, stack_id, tid, count) values ($1, $2, 1, 1)";

    let committed_stack = bare_stack(&pool).await;
    let mut tx = pool.begin().await.unwrap();
    let own = header(&mut tx).await;
    let own_stack = Uuid::new_v4();
    sqlx::query("insert into stacks (id, frame_ids) values ($1, decode(repeat('00', 16), 'hex'))")
        .bind(own_stack)
        .execute(&mut *tx)
        .await
        .unwrap();
    for stack_id in [own_stack, committed_stack] {
        sqlx::query(sample)
            .bind(own)
            .bind(stack_id)
            .execute(&mut *tx)
            .await
            .unwrap();
    }
    sqlx::query("insert into snapshot_threads values ($1, 1, 't')")
        .bind(own)
        .execute(&mut *tx)
        .await
        .unwrap();
    assert!(
        !locked(&mut tx, own).await,
        "the own snapshot is not locked"
    );
    let stack_locked: i64 =
        sqlx::query_scalar("select count(*) from stacks where id = $1 and xmax <> '0'::xid")
            .bind(committed_stack)
            .fetch_one(&mut *tx)
            .await
            .unwrap();
    assert_eq!(stack_locked, 1, "a committed stack is locked");
    tx.commit().await.unwrap();

    // Committed, the snapshot is another transaction's row: locked.
    let mut tx = pool.begin().await.unwrap();
    sqlx::query("insert into snapshot_threads values ($1, 2, 'u')")
        .bind(own)
        .execute(&mut *tx)
        .await
        .unwrap();
    assert!(locked(&mut tx, own).await);
    tx.rollback().await.unwrap();

    // A row the transaction inserted and deleted is missing.
    let mut tx = pool.begin().await.unwrap();
    let gone = header(&mut tx).await;
    sqlx::query("delete from snapshots where id = $1")
        .bind(gone)
        .execute(&mut *tx)
        .await
        .unwrap();
    let refused = sqlx::query(sample)
        .bind(gone)
        .bind(committed_stack)
        .execute(&mut *tx)
        .await;
    assert!(is_foreign_key_violation(refused));
}
