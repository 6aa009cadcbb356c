//! One connection, from the TCP accept to the close.
//!
//! - the TLS handshake must finish within `handshake_timeout`;
//! - the first request must arrive within `header_timeout` of the handshake, and on HTTP/1
//!   its head within `header_timeout` (hyper's own timer); an HTTP/1 connection carries one
//!   request;
//! - a connection with no request in flight for `idle_timeout`, or open for `max_age`, is
//!   shut down gracefully (a GOAWAY on HTTP/2, so the apiserver opens a new one without
//!   failing a request), then closed if it is not gone within `request_timeout`;
//! - each request, body included, is answered within `request_timeout` (the router's layer).
//!
//! The protocol comes from ALPN, never from sniffing the first bytes: hyper's sniffing waits
//! for 24 bytes without a timeout.

use super::activity::Activity;
use super::sources::Source;
use super::{Limits, Server, Transport};
use crate::metrics::Metrics;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::{Instant, timeout};

/// Streams on a single HTTP/2 connection at once.
const MAX_STREAMS: u32 = 32;
/// What a client may send on one HTTP/2 stream before the server reads it. The connection's
/// window is room for every stream's: a request that waits for its turn before its body is
/// read (the webhook's body budget) then never holds back the body of one being served.
const STREAM_WINDOW: u32 = 32 << 10;

/// What an open connection holds: its slot under the cap, its place in its address's count,
/// and the open-connections gauge; all given back when dropped.
pub(super) struct Held {
    server: &'static str,
    metrics: Arc<Metrics>,
    _slot: OwnedSemaphorePermit,
    _source: Source,
}

impl Held {
    pub(super) fn new(server: &'static str, metrics: Arc<Metrics>, slot: OwnedSemaphorePermit, source: Source) -> Self {
        metrics.connection(server, true);
        Self { server, metrics, _slot: slot, _source: source }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.metrics.connection(self.server, false);
    }
}

/// Serves one accepted connection to its end.
pub(super) async fn serve(stream: TcpStream, peer: SocketAddr, held: Held, server: Server) {
    let _held = held;
    match &server.transport {
        Transport::Plain => http(stream, false, peer, &server).await,
        Transport::Tls(acceptor) => {
            let tls = match timeout(server.limits.handshake_timeout, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(err)) => {
                    tracing::debug!(server = server.name, %peer, error = %err, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    server.metrics.connection_cut(server.name, "handshake_timeout");
                    tracing::debug!(server = server.name, %peer, "client did not finish the TLS handshake in time");
                    return;
                }
            };
            let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2".as_slice());
            http(tls, h2, peer, &server).await;
        }
    }
}

/// Serves HTTP on an established stream until the client leaves or stalls.
async fn http<I>(io: I, h2: bool, peer: SocketAddr, server: &Server)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let limits = server.limits;
    let activity = Activity::new();
    let requests = activity.clone();
    let app = server.app.clone();
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let in_flight = requests.begin();
        let mut app = app.clone();
        async move {
            let response = tower::Service::call(&mut app, request).await;
            drop(in_flight);
            response
        }
    });
    let builder = builder(h2, limits);
    let connection = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(connection);
    let first_request_by = crate::kit::backoff::after(Instant::now(), limits.header_timeout);
    let cut = tokio::select! {
        result = connection.as_mut() => {
            if let Err(err) = result {
                if !activity.requested() {
                    // hyper's own header timer cut an HTTP/1 client that sent no request.
                    server.metrics.connection_cut(server.name, "no_request");
                }
                tracing::debug!(server = server.name, %peer, error = %err, "connection ended with an error");
            }
            return;
        }
        reason = activity.stalled(first_request_by, limits.idle_timeout, limits.max_age) => reason,
    };
    server.metrics.connection_cut(server.name, cut);
    tracing::debug!(server = server.name, %peer, reason = cut, "closing a connection");
    if cut != "no_request" {
        // Let the client see a proper close (GOAWAY) and any request in flight finish.
        connection.as_mut().graceful_shutdown();
        let _ = timeout(limits.request_timeout, connection).await;
    }
}

fn builder(h2: bool, limits: Limits) -> hyper_util::server::conn::auto::Builder<TokioExecutor> {
    let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    let mut builder = if h2 { builder.http2_only() } else { builder.http1_only() };
    // One request per HTTP/1 connection: hyper's header timer would otherwise close idle
    // keep-alive connections after `header_timeout`, and a client's POST racing that close
    // fails (clients resend only idempotent requests). The apiserver speaks HTTP/2 anyway.
    builder.http1().timer(TokioTimer::new()).header_read_timeout(limits.header_timeout).keep_alive(false);
    // The keep-alive pings find dead peers; they do not count as activity (see `activity`).
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(MAX_STREAMS)
        .initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(STREAM_WINDOW * MAX_STREAMS)
        .keep_alive_interval(Some(limits.idle_timeout / 3))
        .keep_alive_timeout(limits.header_timeout);
    builder
}
