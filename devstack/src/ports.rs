//! Free loopback ports for the stack's servers.

use std::collections::HashSet;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::error::{IoContext, Result};

/// Asks the kernel for `count` distinct free ports on 127.0.0.1, none
/// handed out before by this process.
///
/// All listeners stay bound until every port is picked, so the kernel cannot
/// hand out the same port twice in one call. Across calls it can: a port is
/// free again once its listener is dropped, and a server binds it only
/// seconds later (Postgres after `initdb`), so parallel tests starting
/// stacks in one process would otherwise race for it. Another process may
/// still grab a port before our server binds it; that race is accepted for
/// dev tooling (servers then fail loudly on bind).
pub fn pick_free_ports(count: usize) -> Result<Vec<u16>> {
    static HANDED_OUT: OnceLock<Mutex<HashSet<u16>>> = OnceLock::new();
    let mut handed_out = HANDED_OUT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let mut held = Vec::new();
    let mut fresh = Vec::with_capacity(count);
    while fresh.len() < count {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .io_context(|| "binding 127.0.0.1:0 to pick a free port".to_owned())?;
        let port = listener
            .local_addr()
            .io_context(|| "reading the port of a bound listener".to_owned())?
            .port();
        if handed_out.insert(port) {
            fresh.push(port);
        }
        // Held (fresh or not) so that the kernel moves on to another port.
        held.push(listener);
    }
    Ok(fresh)
}

/// One free port on 127.0.0.1.
pub fn pick_free_port() -> Result<u16> {
    Ok(pick_free_ports(1)?[0])
}

/// True when something accepts TCP connections on 127.0.0.1:`port`.
pub fn port_accepts(port: u16) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Whether a picked port can still be bound later depends on what else
    // the machine does meanwhile (other tests connect out through the same
    // ephemeral range); every stack test binds its picked ports for real.
    #[test]
    fn picked_ports_are_distinct_and_nonzero() {
        let ports = pick_free_ports(8).unwrap();
        assert_eq!(ports.len(), 8);
        assert_eq!(ports.iter().collect::<HashSet<_>>().len(), 8);
        assert!(ports.iter().all(|&port| port != 0));
        assert!(pick_free_ports(0).unwrap().is_empty());
    }

    #[test]
    fn a_port_is_handed_out_once_per_process() {
        // Picked, then free again (its listener dropped): still not picked
        // a second time, however often the kernel offers it.
        let first: HashSet<u16> = (0..50).flat_map(|_| pick_free_ports(2).unwrap()).collect();
        assert_eq!(first.len(), 100);
    }

    #[test]
    fn a_listening_port_accepts_connections() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        assert!(port_accepts(port));
    }

    #[test]
    fn single_port_is_nonzero() {
        assert_ne!(pick_free_port().unwrap(), 0);
    }
}
