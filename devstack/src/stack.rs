//! [`Stack`]: a Tansu broker plus a private database server (Postgres, or
//! MariaDB for the MySQL backend), ready for ODP.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;
use tempfile::TempDir;

use crate::error::{DevError, Result};
use odp_plumbing::Topics;

use crate::database::{DatabaseKind, DatabaseServer};
use crate::kafka::{create_topics, spawn_tansu, wait_broker_ready, BrokerStorage};
use crate::ports::pick_free_ports;
use crate::postgres::check_traversable;
use crate::process::{ServiceBuilder, ServiceProcess};
use crate::state::{env_lines, unix_now, StackRecord, STACK_RECORD_VERSION};
use crate::state_dir::{prepare_state_dir, StateDir};
use crate::tools::tansu_binary;

/// How to start a [`Stack`].
#[derive(Debug, Clone)]
pub struct StackOptions {
    pub state_dir: StateDir,
    /// The database without fsync: fast, but a crash may corrupt it. For tests.
    pub ephemeral: bool,
    /// Put the servers in their own process groups so they survive the
    /// starting terminal; needed for [`Stack::detach`].
    pub detached_processes: bool,
    pub topics: Topics,
    /// The database server to run (Postgres unless told otherwise).
    pub database_kind: DatabaseKind,
    pub database: String,
    /// Run the store migrations once the database exists.
    pub migrate: bool,
    /// Per readiness wait (broker, database).
    pub startup_timeout: Duration,
    /// Keep the broker's records in `<state dir>/kafka` (SQLite), so a
    /// broker restart loses nothing it acknowledged; off, in memory.
    pub durable_broker: bool,
}

impl StackOptions {
    /// For tests: temporary state dir, fsync off, everything stopped on drop.
    pub fn ephemeral() -> Self {
        Self {
            state_dir: StateDir::Temporary,
            ephemeral: true,
            detached_processes: false,
            topics: Topics::default(),
            database_kind: DatabaseKind::default(),
            database: "odp".to_owned(),
            migrate: true,
            startup_timeout: Duration::from_secs(60),
            durable_broker: true,
        }
    }

    /// For the quick start: state kept in `state_dir`, fsync on, servers
    /// detachable.
    pub fn persistent(state_dir: impl Into<PathBuf>) -> Self {
        Self {
            state_dir: StateDir::Persistent(state_dir.into()),
            ephemeral: false,
            detached_processes: true,
            ..Self::ephemeral()
        }
    }

    pub fn topics(mut self, topics: Topics) -> Self {
        self.topics = topics;
        self
    }

    pub fn migrate(mut self, migrate: bool) -> Self {
        self.migrate = migrate;
        self
    }

    pub fn database_kind(mut self, kind: DatabaseKind) -> Self {
        self.database_kind = kind;
        self
    }
}

/// A running broker and database server. Dropping it stops both (and removes
/// a temporary state dir) unless it was [`detach`](Self::detach)ed.
#[derive(Debug)]
pub struct Stack {
    state_dir: PathBuf,
    broker: Option<ServiceProcess>,
    broker_storage: BrokerStorage,
    detached_processes: bool,
    startup_timeout: Duration,
    kafka_port: u16,
    kafka_bootstrap: String,
    database: DatabaseServer,
    database_url: String,
    topics: Topics,
    stopped: bool,
    // Last, so the directory is removed only after the processes using it stopped.
    temporary_dir: Option<TempDir>,
}

impl Stack {
    /// Starts the broker and the database server, creates the topics and the database,
    /// and runs the migrations. On error, whatever was started is stopped.
    pub async fn start(options: StackOptions) -> Result<Stack> {
        let tansu = tansu_binary()?;
        let (state_dir, temporary_dir) = prepare_state_dir(&options.state_dir)?;
        let ports = pick_free_ports(2)?;
        let (kafka_port, database_port) = (ports[0], ports[1]);

        let database = DatabaseServer::prepare(options.database_kind, &state_dir, database_port)?;
        if database.runs_as_service_user() {
            check_traversable(database.root())?;
        }
        let broker_storage = if options.durable_broker {
            BrokerStorage::Durable(state_dir.join("kafka"))
        } else {
            BrokerStorage::Memory
        };
        let mut stack = Stack {
            broker_storage,
            detached_processes: options.detached_processes,
            startup_timeout: options.startup_timeout,
            kafka_bootstrap: format!("127.0.0.1:{kafka_port}"),
            kafka_port,
            database_url: database.database_url(&options.database),
            database,
            broker: None,
            topics: options.topics.clone(),
            stopped: false,
            temporary_dir,
            state_dir,
        };
        // The broker boots while the database initialises.
        tracing::info!(port = kafka_port, "starting tansu");
        stack.broker = Some(spawn_tansu(
            &tansu,
            kafka_port,
            &stack.broker_storage,
            &stack.log_dir(),
            options.detached_processes,
        )?);

        tracing::info!(
            port = database_port,
            dir = %stack.database.root().display(),
            "starting {}", options.database_kind.server_name()
        );
        stack
            .database
            .start_with_database(
                &options.database,
                !options.ephemeral,
                options.detached_processes,
            )
            .await?;

        if let Some(broker) = stack.broker.as_mut() {
            wait_broker_ready(
                &stack.kafka_bootstrap,
                kafka_port,
                broker,
                options.startup_timeout,
            )
            .await?;
        }
        create_topics(&stack.kafka_bootstrap, &stack.topics).await?;

        if options.migrate {
            tracing::info!("running migrations");
            let db = odp_store::Database::connect_and_migrate(&stack.database_url)
                .await
                .map_err(|error| DevError::Migrations(Box::new(error)))?;
            db.close().await;
        }
        tracing::info!(kafka = %stack.kafka_bootstrap, database = %stack.database_url, "stack ready");
        Ok(stack)
    }

    /// `host:port` of the broker, for `bootstrap.servers`.
    pub fn kafka_bootstrap(&self) -> &str {
        &self.kafka_bootstrap
    }

    pub fn kafka_port(&self) -> u16 {
        self.kafka_port
    }

    /// `postgres://postgres@127.0.0.1:PORT/odp`, or `mysql://root@127.0.0.1:PORT/odp`.
    pub fn database_url(&self) -> &str {
        &self.database_url
    }

    pub fn topics(&self) -> &Topics {
        &self.topics
    }

    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// Where process logs go (`tansu.log`, and services spawned via [`Self::service`]).
    pub fn log_dir(&self) -> PathBuf {
        self.state_dir.join("logs")
    }

    /// The database server, e.g. to stop and start it in a fault test.
    pub fn database(&self) -> &DatabaseServer {
        &self.database
    }

    /// Freezes the broker (SIGSTOP) as a hung server would be: it keeps
    /// its connections and answers nothing until [`Self::thaw_broker`].
    pub fn freeze_broker(&self) -> bool {
        self.broker
            .as_ref()
            .is_some_and(|broker| crate::sys::send_signal(broker.pid(), crate::sys::Signal::Stop))
    }

    pub fn thaw_broker(&self) -> bool {
        self.broker
            .as_ref()
            .is_some_and(|broker| crate::sys::send_signal(broker.pid(), crate::sys::Signal::Cont))
    }

    /// Stops the broker (SIGTERM) and starts it again on the same port and
    /// storage; returns once it answers. With a durable broker nothing it
    /// acknowledged is lost.
    pub async fn restart_broker(&mut self) -> Result<()> {
        if let Some(mut broker) = self.broker.take() {
            broker.stop()?;
        }
        let mut broker = spawn_tansu(
            &tansu_binary()?,
            self.kafka_port,
            &self.broker_storage,
            &self.log_dir(),
            self.detached_processes,
        )?;
        let ready = wait_broker_ready(
            &self.kafka_bootstrap,
            self.kafka_port,
            &mut broker,
            self.startup_timeout,
        )
        .await;
        self.broker = Some(broker);
        ready
    }

    /// `ODP_KAFKA_BOOTSTRAP=...` and `ODP_DATABASE_URL=...`.
    pub fn env_lines(&self) -> Vec<String> {
        env_lines(&self.kafka_bootstrap, &self.database_url)
    }

    /// A small pool on the stack's database, for tests that read Postgres
    /// directly; [`Self::store`] works on either backend.
    pub async fn connect(&self) -> Result<PgPool> {
        if self.database.kind() != DatabaseKind::Postgres {
            return Err(DevError::Invalid(format!(
                "this stack runs {}, not Postgres",
                self.database.kind().server_name()
            )));
        }
        PgPoolOptions::new()
            .max_connections(4)
            .connect(&self.database_url)
            .await
            .map_err(|source| DevError::Database {
                context: format!("connecting to {}", self.database_url),
                source,
            })
    }

    /// The store's handle on the stack's database, whichever it is.
    pub async fn store(&self) -> Result<odp_store::Database> {
        odp_store::Database::connect_and_migrate(&self.database_url)
            .await
            .map_err(|error| DevError::Migrations(Box::new(error)))
    }

    /// A builder for one of our service binaries wired to this stack: log in
    /// [`Self::log_dir`], `ODP_KAFKA_BOOTSTRAP` and `ODP_DATABASE_URL` in its
    /// environment, and the four `--topic-*` flags.
    pub fn service(&self, name: &str, program: impl Into<PathBuf>) -> ServiceBuilder {
        ServiceProcess::builder(name, program)
            .log_dir(self.log_dir())
            .env("ODP_KAFKA_BOOTSTRAP", &self.kafka_bootstrap)
            .env("ODP_DATABASE_URL", &self.database_url)
            .args(self.topics.cli_args())
    }

    /// Stops the database and the broker, reporting failures (drop ignores them).
    pub fn stop(mut self) -> Result<()> {
        self.stop_processes()
    }

    /// Leaves the servers running, writes `stack.json` into the state dir and
    /// returns what it wrote. Only for a persistent state dir.
    pub fn detach(mut self) -> Result<StackRecord> {
        if self.temporary_dir.is_some() {
            return Err(DevError::Invalid(
                "a stack in a temporary state dir cannot be detached".to_owned(),
            ));
        }
        let broker_pid = self.broker.as_ref().map(ServiceProcess::pid).unwrap_or(0);
        let record = StackRecord {
            version: STACK_RECORD_VERSION,
            state_dir: self.state_dir.clone(),
            kafka_port: self.kafka_port,
            kafka_bootstrap: self.kafka_bootstrap.clone(),
            broker_pid,
            database: self.database.clone(),
            database_pid: self.database.pid(),
            database_url: self.database_url.clone(),
            topics: self.topics.clone(),
            started_at_unix: unix_now(),
        };
        record.save(&StackRecord::path_in(&self.state_dir))?;
        if let Some(broker) = self.broker.take() {
            broker.detach();
        }
        self.stopped = true;
        Ok(record)
    }

    fn stop_processes(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.stopped, true) {
            return Ok(());
        }
        let database_result = self.database.stop();
        if let Some(mut broker) = self.broker.take() {
            broker.stop()?;
        }
        database_result
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        if let Err(error) = self.stop_processes() {
            tracing::warn!(%error, "stopping the stack");
        }
    }
}
