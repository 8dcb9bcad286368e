//! Dev tooling for ODP: a local stack (Tansu broker + a private Postgres, or
//! MariaDB for the MySQL backend) for the quick start and the end-to-end
//! tests, a private MariaDB alone for the store's tests
//! ([`EphemeralMariaDb`]), child-process helpers, and the demo workload.
//!
//! ```no_run
//! # async fn example() -> odp_devstack::Result<()> {
//! use odp_devstack::{Stack, StackOptions};
//! let stack = Stack::start(StackOptions::ephemeral()).await?;
//! println!("{} {}", stack.kafka_bootstrap(), stack.database_url());
//! stack.stop()
//! # }
//! ```

pub mod agent_identity;
mod broker;
mod database;
mod demo;
mod dev;
mod error;
pub mod fixtures;
pub mod fleet;
mod kafka;
mod mariadb;
mod platform;
mod ports;
mod postgres;
mod process;
mod quickstart;
mod stack;
mod state;
mod state_dir;
mod sys;
mod tools;

pub use broker::Broker;
pub use database::{DatabaseKind, DatabaseServer};
pub use demo::{build_demo, cpu_seconds, cpu_seconds_of_named, demo_source, DEMO_CFLAGS};
pub use dev::{default_state_dir, down, running_record, status, up, StackStatus, UpOutcome};
pub use error::{DevError, Result};
pub use kafka::{create_topics, fetch_metadata, TANSU_KAFKA_OPTIONS};
pub use mariadb::{EphemeralMariaDb, MariaDbServer};
pub use odp_client::{http_client, ApiClient, ClientError, Reply};
pub use platform::{
    mint_scoped_token, mint_token, write_dev_cert, write_signing_keys, Platform, PlatformOptions,
    StackEndpoints,
};
pub use ports::{pick_free_port, pick_free_ports, port_accepts};
pub use postgres::{ensure_service_user, PostgresCluster, RunAs, SERVICE_USER};
pub use process::{
    log_tail, wait_for, wait_for_some, ServiceBuilder, ServiceProcess, DEFAULT_STOP_TIMEOUT,
};
pub use quickstart::{hostname, quickstart, stop_services, QuickstartOptions, ServicesRecord};
pub use stack::{Stack, StackOptions};
pub use state::{StackRecord, STACK_RECORD_VERSION};
pub use state_dir::StateDir;
pub use tools::{
    c_compiler, find_on_path, postgres_bindir, repo_root, tansu_binary, workspace_binary,
};
