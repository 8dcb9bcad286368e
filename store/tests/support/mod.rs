//! The two backends a behaviour suite runs on: a private Postgres and a
//! private MariaDB, each migrated, one per test.

use odp_devstack::{EphemeralMariaDb, Stack, StackOptions};
use odp_store::Database;

/// What keeps a test's database server running until it is dropped.
pub(crate) type Server = Box<dyn std::any::Any>;

pub(crate) async fn postgres() -> (Server, Database) {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let db = Database::connect_and_migrate(stack.database_url())
        .await
        .unwrap();
    (Box::new(stack), db)
}

pub(crate) async fn mysql() -> (Server, Database) {
    let mariadb = EphemeralMariaDb::start().await.unwrap();
    let db = Database::connect_and_migrate(&mariadb.database_url())
        .await
        .unwrap();
    (Box::new(mariadb), db)
}

/// Runs each behaviour on both backends: `postgres::name` and `mysql::name`.
macro_rules! on_both_backends {
    ($($behaviour:ident),+ $(,)?) => {
        mod postgres {
            $(#[tokio::test]
            async fn $behaviour() {
                let (_server, db) = super::support::postgres().await;
                super::$behaviour(db).await;
            })+
        }

        mod mysql {
            $(#[tokio::test]
            async fn $behaviour() {
                let (_server, db) = super::support::mysql().await;
                super::$behaviour(db).await;
            })+
        }
    };
}

pub(crate) use on_both_backends;

/// Runs `sql`, written with `?` placeholders, on either backend, binding
/// `texts` in order: setup the store has no operation for.
#[allow(dead_code)] // not every suite needs it
pub(crate) async fn execute(db: &Database, sql: &str, texts: &[&str]) {
    match db {
        Database::Postgres(pool) => {
            let mut numbered = String::new();
            for (n, part) in sql.split('?').enumerate() {
                if n > 0 {
                    numbered.push_str(&format!("${n}"));
                }
                numbered.push_str(part);
            }
            let mut query = sqlx::query(&numbered);
            for text in texts {
                query = query.bind(*text);
            }
            query.execute(pool).await.unwrap();
        }
        Database::MySql(pool) => {
            let mut query = sqlx::query(sql);
            for text in texts {
                query = query.bind(*text);
            }
            query.execute(pool).await.unwrap();
        }
    }
}

/// A requested profile on `h-1`, owned by no agent yet.
#[allow(dead_code)] // not every suite needs it
pub(crate) async fn requested_profile(db: &Database) -> uuid::Uuid {
    use odp_store::{Inserted, Labels, NewProfile, ProfileMode, Profiles};
    let id = uuid::Uuid::new_v4();
    let new = NewProfile {
        id,
        host: "h-1".into(),
        service: "checkout".into(),
        idempotency_key: None,
        target: odp_core::Target::ProcessName(id.to_string()),
        duration_ms: 60_000,
        frequency_hz: 99,
        requested_by: "ci".into(),
        labels: Labels::new(),
        mode: ProfileMode::of(None),
        options: Default::default(),
        run_id: None,
    };
    let Inserted::Created(_) = Profiles::new(db).insert(&new).await.unwrap() else {
        panic!("a new target creates")
    };
    id
}
