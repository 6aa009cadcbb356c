//! A TCP proxy on loopback that a test can sever: the network partition
//! between one client and a server, while every other client still reaches it.
//!
//! [`TcpProxy::sever`] stops forwarding at once, in both directions, on every
//! open connection, and holds new connections open without forwarding
//! anything: the client sees no error and no answer, as behind a partition or
//! a dead link (a refused connection would be the easier case: clients notice
//! it). [`TcpProxy::restore`] forwards new connections again and closes the
//! ones that were cut off, as a link that comes back with its connection state
//! lost.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Forwarding,
    Severed,
    Closed,
}

/// A proxy from a loopback port to `target`. Dropping it closes every connection.
pub struct TcpProxy {
    addr: SocketAddr,
    mode: watch::Sender<Mode>,
    accept: JoinHandle<()>,
    sent: Sent,
}

/// When the client last sent bytes that were forwarded, and how many times it did.
type Sent = Arc<Mutex<(Option<Instant>, u64)>>;

impl TcpProxy {
    /// Listens on a free loopback port and forwards every connection to `target`.
    pub async fn start(target: SocketAddr) -> crate::Result<Self> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), target).await
    }

    /// Listens on `listen` (port 0: a free one) and forwards every connection to `target`.
    pub async fn start_on(listen: SocketAddr, target: SocketAddr) -> crate::Result<Self> {
        let listener = TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        let (mode, _) = watch::channel(Mode::Forwarding);
        let modes = mode.clone();
        let sent = Sent::default();
        let record = sent.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(pipe(client, target, modes.subscribe(), record.clone()));
            }
        });
        Ok(Self { addr, mode, accept, sent })
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops forwarding anything on any connection, old or new, without closing them.
    pub fn sever(&self) {
        self.mode.send_replace(Mode::Severed);
    }

    /// When a client last sent something that was forwarded (a request reaching the server),
    /// and how many reads of client bytes were forwarded in all.
    pub fn last_forwarded(&self) -> (Option<Instant>, u64) {
        self.sent.lock().map(|s| *s).unwrap_or_default()
    }

    /// Forwards new connections again; the ones cut off are closed.
    pub fn restore(&self) {
        self.mode.send_replace(Mode::Forwarding);
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.mode.send_replace(Mode::Closed);
    }
}

async fn pipe(mut client: TcpStream, target: SocketAddr, mut mode: watch::Receiver<Mode>, sent: Sent) {
    if *mode.borrow_and_update() == Mode::Forwarding {
        let Ok(mut upstream) = TcpStream::connect(target).await else { return };
        {
            let (mut from_client, mut to_client) = client.split();
            let (mut from_upstream, mut to_upstream) = upstream.split();
            let up = async {
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    let n = from_client.read(&mut buf).await?;
                    if n == 0 {
                        return to_upstream.shutdown().await;
                    }
                    if let Ok(mut s) = sent.lock() {
                        *s = (Some(Instant::now()), s.1.saturating_add(1));
                    }
                    to_upstream.write_all(&buf[..n]).await?;
                }
            };
            let down = tokio::io::copy(&mut from_upstream, &mut to_client);
            tokio::select! {
                _ = async { tokio::join!(up, down) } => return,
                _ = mode.wait_for(|m| *m != Mode::Forwarding) => {}
            }
        }
        // Cut off: hold both ends, silent, until the link comes back or the proxy goes.
        let _ = mode.wait_for(|m| *m != Mode::Severed).await;
        drop(upstream);
    } else {
        // Accepted while severed: held open, never forwarded.
        let _ = mode.wait_for(|m| *m == Mode::Closed || *m == Mode::Forwarding).await;
    }
    drop(client);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    async fn echo() -> SocketAddr {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 64];
                    while let Ok(n @ 1..) = socket.read(&mut buf).await {
                        if socket.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    async fn round_trip(stream: &mut TcpStream) -> Option<Vec<u8>> {
        stream.write_all(b"ping").await.ok()?;
        let mut buf = [0u8; 4];
        tokio::time::timeout(Duration::from_millis(300), stream.read_exact(&mut buf)).await.ok()?.ok()?;
        Some(buf.to_vec())
    }

    #[tokio::test]
    async fn a_severed_proxy_forwards_nothing_on_old_or_new_connections_and_closes_neither() {
        let proxy = TcpProxy::start(echo().await).await.unwrap();
        let mut old = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(round_trip(&mut old).await.as_deref(), Some(&b"ping"[..]));
        let (forwarded, count) = proxy.last_forwarded();
        assert!(forwarded.is_some() && count == 1, "the forwarded request is counted: {count}");

        proxy.sever();
        assert_eq!(round_trip(&mut old).await, None, "nothing comes back on an open connection");
        let mut new = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(round_trip(&mut new).await, None, "nor on a new one");
        let mut buf = [0u8; 1];
        let closed = tokio::time::timeout(Duration::from_millis(200), new.read(&mut buf)).await;
        assert!(closed.is_err(), "the connection stays open, silent");
        assert_eq!(proxy.last_forwarded(), (forwarded, count), "nothing sent while severed was forwarded");

        proxy.restore();
        let mut after = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(round_trip(&mut after).await.as_deref(), Some(&b"ping"[..]));
        let closed = tokio::time::timeout(Duration::from_secs(2), old.read(&mut buf)).await;
        assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "the cut-off connection is closed: {closed:?}");
    }
}
