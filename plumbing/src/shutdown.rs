//! When a service should stop.

use tokio::signal::unix::{signal, SignalKind};

/// Resolves on SIGTERM (what a supervisor sends) or Ctrl-C.
///
/// # Panics
/// When the SIGTERM handler cannot be installed, at start-up.
pub async fn shutdown_signal() {
    let mut term = signal(SignalKind::terminate()).expect("install SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
