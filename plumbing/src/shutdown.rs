//! When a service should stop.

use std::io;

use tokio::signal::unix::{signal, Signal, SignalKind};

/// Resolves on SIGTERM (what a supervisor sends) or Ctrl-C.
///
/// # Panics
/// When the signal handlers cannot be installed, at start-up.
pub async fn shutdown_signal() {
    ShutdownSignals::install()
        .expect("install SIGTERM handler")
        .recv()
        .await;
}

/// A signal asking a service to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    /// SIGTERM, what a supervisor sends.
    Term,
    /// SIGINT, Ctrl-C.
    Interrupt,
}

impl StopSignal {
    pub fn name(self) -> &'static str {
        match self {
            StopSignal::Term => "SIGTERM",
            StopSignal::Interrupt => "SIGINT",
        }
    }
}

/// The SIGTERM and SIGINT handlers, installed when made: from then on
/// neither signal kills the process, it is kept for [`recv`](Self::recv).
#[derive(Debug)]
pub struct ShutdownSignals {
    term: Signal,
    interrupt: Signal,
}

impl ShutdownSignals {
    /// Installs both handlers (inside a Tokio runtime); fails when the
    /// system refuses one.
    pub fn install() -> io::Result<ShutdownSignals> {
        Ok(ShutdownSignals {
            term: signal(SignalKind::terminate())?,
            interrupt: signal(SignalKind::interrupt())?,
        })
    }

    /// Resolves on the first of the two signals received since
    /// [`install`](Self::install), and says which.
    pub async fn recv(mut self) -> StopSignal {
        tokio::select! {
            _ = self.term.recv() => StopSignal::Term,
            _ = self.interrupt.recv() => StopSignal::Interrupt,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_signal_received_after_install_is_kept_and_named() {
        let signals = ShutdownSignals::install().unwrap();
        // Sent before anyone waits: the handler keeps it, nothing dies.
        let kill = std::process::Command::new("kill")
            .args(["-TERM", &std::process::id().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), signals.recv()).await;
        assert_eq!(got.map(StopSignal::name), Ok("SIGTERM"));
    }
}
