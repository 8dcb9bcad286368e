//! End-to-end tests: a real Kafka-protocol broker (Tansu), a real Postgres
//! cluster (or MariaDB, for the core scenarios' MySQL runs) and the three
//! ODP binaries, each test on its own ports, topics and database. Run `cargo build --workspace --bins` first (the README's
//! test command does).

mod aggregate;
mod api;
mod channels;
mod cli;
mod clock_skew;
mod commands;
mod common;
mod continuous;
mod control;
mod coverage;
mod db;
mod db_faults;
mod dead_letter;
mod deploy;
mod docs;
mod enrollment;
mod faults;
mod fleet;
mod formats;
mod hosts;
mod identity;
mod ingest_otlp;
mod ingest_pyroscope;
mod labels;
mod metrics;
mod one_agent;
mod openapi;
mod options;
mod profile;
mod rules;
mod run_agents;
mod run_lifecycle;
mod run_reads;
mod runs;
mod schedules;
mod security_edge;
mod security_outbound;
mod security_reads;
mod security_replay;
mod security_scopes;
mod security_sizes;
mod security_wire;
mod services;
mod trend;
mod triggers;
mod waits;
mod web;
