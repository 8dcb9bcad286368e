//! A Tansu broker alone, for tests of one service (the agent).

use std::time::Duration;

use crate::error::{IoContext, Result};
use crate::kafka::{spawn_tansu, wait_broker_ready, BrokerStorage};
use crate::process::ServiceProcess;

/// A Tansu broker alone, in memory, on a loopback port: what tests of a
/// single service (the agent) talk to. Stopped when dropped; its log is
/// kept in a temporary directory removed with it.
pub struct Broker {
    bootstrap: String,
    // Fields drop in order: the broker stops before its log directory goes.
    _process: ServiceProcess,
    _log_dir: tempfile::TempDir,
}

impl Broker {
    /// A broker on a spare port.
    pub async fn start() -> Result<Broker> {
        Broker::start_on(crate::ports::pick_free_port()?).await
    }

    /// A broker on `port`, e.g. one clients were pointed at before it ran.
    pub async fn start_on(port: u16) -> Result<Broker> {
        let tansu = crate::tools::tansu_binary()?;
        let log_dir = tempfile::Builder::new()
            .prefix("odp-broker-")
            .tempdir()
            .io_context(|| "creating the broker's log directory".to_owned())?;
        let mut process = spawn_tansu(&tansu, port, &BrokerStorage::Memory, log_dir.path(), false)?;
        let bootstrap = format!("127.0.0.1:{port}");
        wait_broker_ready(&bootstrap, port, &mut process, Duration::from_secs(30)).await?;
        Ok(Broker {
            bootstrap,
            _process: process,
            _log_dir: log_dir,
        })
    }

    /// `host:port`, for `bootstrap.servers`.
    pub fn bootstrap(&self) -> &str {
        &self.bootstrap
    }
}
