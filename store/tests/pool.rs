//! What a caller leaves on a connection never reaches the next one: an
//! open transaction is ended (its writes undone) and, on MySQL, named
//! locks are released, on both backends' pools.

mod support;

use odp_store::{Database, PoolConfig};
use sqlx::ConnectOptions as _;
use support::on_both_backends;

/// One connection, so the next caller gets the one just released.
async fn single_connection(db: &Database) -> Database {
    let url = match db {
        Database::Postgres(pool) => pool.connect_options().to_url_lossy(),
        Database::MySql(pool) => pool.connect_options().to_url_lossy(),
    };
    let config = PoolConfig {
        max_connections: 1,
        sleep: Some(|d| Box::pin(tokio::time::sleep(d))),
        ..PoolConfig::default()
    };
    Database::connect_with(url.as_str(), &config).await.unwrap()
}

async fn an_abandoned_transaction_is_undone_before_the_next_caller(db: Database) {
    let single = single_connection(&db).await;
    let insert = "insert into agents (agent_id, host, version, last_seen)
                  values ('a1', 'h1', '1', current_timestamp)";
    let count = "select count(*) from agents";
    let stored: i64 = match &single {
        Database::Postgres(pool) => {
            let mut conn = pool.acquire().await.unwrap();
            sqlx::raw_sql("begin").execute(&mut *conn).await.unwrap();
            sqlx::query(insert).execute(&mut *conn).await.unwrap();
            drop(conn);
            sqlx::query_scalar(count).fetch_one(pool).await.unwrap()
        }
        Database::MySql(pool) => {
            let mut conn = pool.acquire().await.unwrap();
            sqlx::raw_sql("begin").execute(&mut *conn).await.unwrap();
            sqlx::query(insert).execute(&mut *conn).await.unwrap();
            drop(conn);
            sqlx::query_scalar(count).fetch_one(pool).await.unwrap()
        }
    };
    assert_eq!(
        stored, 0,
        "the next caller ran inside the abandoned transaction"
    );
}

/// MySQL only: Postgres' advisory locks in ODP are transaction-scoped.
#[tokio::test]
async fn a_named_lock_is_released_with_its_connection() {
    let (_server, db) = support::mysql().await;
    let single = single_connection(&db).await;
    let (Database::MySql(pool), Database::MySql(other)) = (&single, &db) else {
        unreachable!()
    };
    let mut conn = pool.acquire().await.unwrap();
    let taken: i64 = sqlx::query_scalar("select get_lock('odp-test', 0)")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    assert_eq!(taken, 1);
    drop(conn);
    // Released once the pool has checked the connection.
    let mut free = 0;
    for _ in 0..50 {
        free = sqlx::query_scalar("select is_free_lock('odp-test')")
            .fetch_one(other)
            .await
            .unwrap();
        if free == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(free, 1, "the lock outlived its caller");
}

on_both_backends!(an_abandoned_transaction_is_undone_before_the_next_caller);
