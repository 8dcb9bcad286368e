//! A TCP proxy that delays every chunk it forwards by a fixed one-way
//! latency, both ways, without limiting bandwidth: Postgres as if on
//! another host. On this 2-core VM, with Postgres on loopback, one worker
//! and Postgres already use both cores, so a second worker cannot add
//! throughput; a production worker waits on network round trips, and
//! that wait is what more workers overlap.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Listens on an ephemeral loopback port until dropped.
pub(crate) struct LatencyProxy {
    pub(crate) addr: SocketAddr,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for LatencyProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl LatencyProxy {
    pub(crate) async fn start(upstream: SocketAddr, one_way: Duration) -> LatencyProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().unwrap();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    let (client_read, client_write) = client.into_split();
                    let (server_read, server_write) = server.into_split();
                    tokio::join!(
                        forward(client_read, server_write, one_way),
                        forward(server_read, client_write, one_way),
                    );
                });
            }
        });
        LatencyProxy { addr, accept }
    }
}

/// Copies `from` to `to`, each chunk written `delay` after it was read;
/// chunks in flight do not wait for each other.
async fn forward(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, delay: Duration) {
    let (chunks, mut due) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let writer = async move {
        while let Some((at, chunk)) = due.recv().await {
            tokio::time::sleep_until(at).await;
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    };
    let reader = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match from.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if chunks
                        .send((Instant::now() + delay, buf[..n].to_vec()))
                        .is_err()
                    {
                        return;
                    }
                }
            }
        }
    };
    tokio::join!(reader, writer);
}
