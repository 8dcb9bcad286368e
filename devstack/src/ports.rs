//! Free loopback ports for the stack's servers.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use crate::error::{IoContext, Result};

/// Asks the kernel for `count` distinct free ports on 127.0.0.1.
///
/// All listeners stay bound until every port is picked, so the kernel cannot
/// hand out the same port twice; they are dropped before returning. Another
/// process may still grab a port before our server binds it; that race is
/// accepted for dev tooling (servers then fail loudly on bind).
pub fn pick_free_ports(count: usize) -> Result<Vec<u16>> {
    let listeners = (0..count)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))
        .collect::<std::io::Result<Vec<_>>>()
        .io_context(|| "binding 127.0.0.1:0 to pick a free port".to_owned())?;
    listeners
        .iter()
        .map(|listener| {
            listener
                .local_addr()
                .map(|addr| addr.port())
                .io_context(|| "reading the port of a bound listener".to_owned())
        })
        .collect()
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
    use std::collections::HashSet;

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
