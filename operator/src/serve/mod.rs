//! The operator's HTTP servers (the webhook's over TLS, the health server's in plain HTTP),
//! built so that no client can hold them: anything that reaches a port (any pod, without a
//! NetworkPolicy) must not be able to take admission or the probes down.
//!
//! - at most `max_connections` connections are served at once; beyond that the server stops
//!   accepting and new connections wait in the kernel's listen backlog until a slot frees;
//! - at most `max_per_source` of them come from one address: one more is closed at once, so
//!   a single client cannot fill the slots the apiserver (or the kubelet) needs;
//! - every request, its body included, is answered within `request_timeout`;
//! - a slot frees when its client stops making progress ([`connection`]): no TLS handshake in
//!   time, no first request in time, no request for `idle_timeout` (requests count, not bytes:
//!   HTTP/2 pings and window updates keep no connection), or `max_age` reached.

mod activity;
mod connection;
mod sources;

use crate::metrics::Metrics;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use sources::Sources;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// Bounds on what clients can hold of one server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Connections served at once; more wait in the listen backlog.
    pub max_connections: usize,
    /// Connections served at once from one IP address; more are closed at once.
    pub max_per_source: usize,
    /// From the TCP accept to the end of the TLS handshake.
    pub handshake_timeout: Duration,
    /// From the handshake to the first request, and for each HTTP/1 request head.
    pub header_timeout: Duration,
    /// To read a request's body and answer it. The apiserver gives up on a webhook after
    /// its `timeoutSeconds` (10) anyway.
    pub request_timeout: Duration,
    /// A connection with no request in flight for this long is closed.
    pub idle_timeout: Duration,
    /// A connection this old is closed once its requests in flight are answered: its client
    /// opens a new one, so no connection holds a slot for ever.
    pub max_age: Duration,
}

impl Limits {
    /// The webhook server's defaults: room for several apiservers, each of which multiplexes
    /// its reviews over a few HTTP/2 connections.
    pub const WEBHOOK: Limits = Limits {
        max_connections: 128,
        max_per_source: 16,
        handshake_timeout: Duration::from_secs(10),
        header_timeout: Duration::from_secs(10),
        request_timeout: Duration::from_secs(15),
        idle_timeout: Duration::from_secs(90),
        max_age: Duration::from_secs(600),
    };

    /// The health server's defaults: the kubelet's probes and a few scrapers.
    pub const HEALTH: Limits = Limits {
        max_connections: 32,
        max_per_source: 8,
        handshake_timeout: Duration::from_secs(10),
        header_timeout: Duration::from_secs(10),
        request_timeout: Duration::from_secs(15),
        idle_timeout: Duration::from_secs(60),
        max_age: Duration::from_secs(600),
    };
}

/// How a server's connections start.
#[derive(Clone)]
pub(crate) enum Transport {
    /// TLS, with HTTP/2 or HTTP/1.1 chosen by ALPN.
    Tls(TlsAcceptor),
    /// Plain HTTP/1.1.
    Plain,
}

/// One server: what it is called in metrics and logs, and what it serves.
#[derive(Clone)]
pub(crate) struct Server {
    pub name: &'static str,
    pub transport: Transport,
    pub app: axum::Router,
    pub limits: Limits,
    pub metrics: Arc<Metrics>,
}

/// Serves `listener` until `shutdown`, in a task of its own.
pub(crate) fn spawn(listener: TcpListener, mut server: Server, shutdown: CancellationToken) {
    server.app = server.app.layer(middleware::from_fn_with_state(server.limits.request_timeout, within));
    // At least one slot, whatever the flags say: zero would serve nobody.
    let slots = Arc::new(Semaphore::new(server.limits.max_connections.max(1)));
    let sources = Sources::new(server.limits.max_per_source.max(1));
    tokio::spawn(async move {
        loop {
            // A slot first, then the connection: at the cap, clients wait in the backlog.
            let permit = tokio::select! {
                () = shutdown.cancelled() => return,
                permit = slots.clone().acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => return,
                },
            };
            let (stream, peer) = tokio::select! {
                () = shutdown.cancelled() => return,
                accepted = listener.accept() => match accepted {
                    Ok(conn) => conn,
                    Err(err) => {
                        // Out of file descriptors, most likely: wait rather than spin.
                        tracing::warn!(server = server.name, error = %err, "accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
            };
            let Some(source) = sources.admit(peer.ip()) else {
                server.metrics.connection_cut(server.name, "per_source");
                tracing::debug!(server = server.name, %peer, "closing a connection over the per-source cap");
                continue;
            };
            let _ = stream.set_nodelay(true);
            let held = connection::Held::new(server.name, server.metrics.clone(), permit, source);
            tokio::spawn(connection::serve(stream, peer, held, server.clone()));
        }
    });
}

/// Answers within `limit`, reading the body included: a client that trickles its body gets
/// 408 instead of holding the request open.
async fn within(State(limit): State<Duration>, request: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => (StatusCode::REQUEST_TIMEOUT, "request took too long").into_response(),
    }
}

/// Binds `addr`; the bound address comes back with the listener (port 0 picks one).
pub(crate) async fn bind(addr: SocketAddr) -> std::io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    Ok((listener, bound))
}
