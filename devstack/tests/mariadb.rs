//! The private MariaDB server the MySQL backend is tested against: it
//! starts from nothing, takes connections and writes, compares names
//! case-sensitively, survives a restart with its data, and stops.

use odp_devstack::{pick_free_port, EphemeralMariaDb, MariaDbServer};
use sqlx::{Connection, MySqlConnection};

#[tokio::test]
async fn a_private_server_starts_keeps_its_data_across_a_restart_and_stops() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let server = StopOnDrop(
        MariaDbServer::prepare(dir.path().join("mariadb"), pick_free_port().unwrap()).unwrap(),
    );
    server.init_if_needed().await.unwrap();
    server.start(true).await.unwrap();
    server.create_database("odp").await.unwrap();
    let mut db = MySqlConnection::connect(&server.database_url("odp"))
        .await
        .unwrap();
    sqlx::query("create table kept (id bigint primary key, name varchar(20) not null unique)")
        .execute(&mut db)
        .await
        .unwrap();
    // Names compare case-sensitively, as Postgres' text does.
    sqlx::query("insert into kept values (1, 'one'), (2, 'One')")
        .execute(&mut db)
        .await
        .unwrap();
    db.close().await.unwrap();
    let pid = server.pid().unwrap();
    server.stop().unwrap();
    assert!(!alive(pid), "mariadbd {pid} still runs");

    server.init_if_needed().await.unwrap();
    server.start(true).await.unwrap();
    let mut db = MySqlConnection::connect(&server.database_url("odp"))
        .await
        .unwrap();
    let names: Vec<String> = sqlx::query_scalar("select name from kept order by id")
        .fetch_all(&mut db)
        .await
        .unwrap();
    assert_eq!(names, ["one", "One"]);
    db.close().await.unwrap();
    server.stop().unwrap();
}

#[tokio::test]
async fn an_ephemeral_server_has_the_database_and_is_gone_when_dropped() {
    let mariadb = EphemeralMariaDb::start().await.unwrap();
    let mut db = MySqlConnection::connect(&mariadb.database_url())
        .await
        .unwrap();
    let version: String = sqlx::query_scalar("select version()")
        .fetch_one(&mut db)
        .await
        .unwrap();
    assert!(version.contains("MariaDB"), "{version}");
    db.close().await.unwrap();
    let pid = mariadb.server().pid().unwrap();
    drop(mariadb);
    assert!(!alive(pid), "mariadbd {pid} outlived its test");
}

/// Exists and is not a zombie waiting for its parent.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// Stops the server when a failed assertion ends the test early.
struct StopOnDrop(MariaDbServer);

impl std::ops::Deref for StopOnDrop {
    type Target = MariaDbServer;

    fn deref(&self) -> &MariaDbServer {
        &self.0
    }
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop().ok();
    }
}

/// A whole stack on MariaDB, as `odp-dev quickstart --database mysql`
/// runs it: migrated, reachable through the store, and through an outage
/// (stop, start) with its data.
#[tokio::test]
async fn a_stack_runs_on_mariadb_and_comes_back_after_an_outage() {
    use odp_devstack::{DatabaseKind, Stack, StackOptions};
    let stack = Stack::start(StackOptions::ephemeral().database_kind(DatabaseKind::Mysql))
        .await
        .unwrap();
    assert!(
        stack.database_url().starts_with("mysql://"),
        "{}",
        stack.database_url()
    );
    assert_eq!(stack.database().kind(), DatabaseKind::Mysql);
    let db = stack.store().await.unwrap();
    let odp_store::Database::MySql(pool) = &db else {
        panic!("a MariaDB stack gives a MySQL store");
    };
    let (tables,): (i64,) =
        sqlx::query_as("select count(*) from information_schema.tables where table_schema = 'odp'")
            .fetch_one(pool)
            .await
            .unwrap();
    assert!(tables >= 19, "the schema is applied: {tables} tables");
    assert!(
        stack.connect().await.is_err(),
        "no Postgres pool from MariaDB"
    );

    stack.database().stop().unwrap();
    assert!(!stack.database().is_running());
    assert!(sqlx::query("select 1").execute(pool).await.is_err());
    stack.database().start(false, false).await.unwrap();
    let (one,): (i64,) = sqlx::query_as("select 1").fetch_one(pool).await.unwrap();
    assert_eq!(one, 1);
    stack.stop().unwrap();
}
