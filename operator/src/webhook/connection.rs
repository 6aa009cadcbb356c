//! One webhook connection, from the TCP accept to the close, with the
//! bounds that keep a slow or silent client from holding it forever.
//!
//! - the TLS handshake must finish within `handshake_timeout`;
//! - the first request must arrive within `header_timeout` of the handshake,
//!   and on HTTP/1 its head within `header_timeout` (hyper's own timer); an
//!   HTTP/1 connection carries one request;
//! - a connection that reads nothing for `idle_timeout` is shut down
//!   gracefully (a GOAWAY on HTTP/2, so the apiserver opens a new one without
//!   failing a request), then closed if it is not gone within `request_timeout`;
//! - each request, body included, is answered within `request_timeout` (the
//!   router's layer, see `server.rs`).
//!
//! The protocol comes from ALPN, never from sniffing the first bytes: hyper's
//! sniffing waits for 24 bytes without a timeout.

use crate::metrics::Metrics;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::{Instant, sleep_until, timeout};
use tokio_rustls::TlsAcceptor;

/// Bounds on what one client can hold of the webhook server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Connections served at once; more wait in the listen backlog.
    pub max_connections: usize,
    /// From the TCP accept to the end of the TLS handshake.
    pub handshake_timeout: Duration,
    /// From the handshake to the first request, and for each HTTP/1 request head.
    pub header_timeout: Duration,
    /// To read a request's body and answer it. The apiserver gives up after the
    /// webhook's `timeoutSeconds` (10) anyway.
    pub request_timeout: Duration,
    /// A connection that sends nothing for this long is closed.
    pub idle_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 128,
            handshake_timeout: Duration::from_secs(10),
            header_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(15),
            idle_timeout: Duration::from_secs(90),
        }
    }
}

/// Streams on a single HTTP/2 connection at once.
const MAX_STREAMS: u32 = 32;

/// Serves one accepted connection to its end. `permit` is its place under the cap.
pub async fn serve(
    stream: TcpStream,
    peer: SocketAddr,
    permit: OwnedSemaphorePermit,
    acceptor: TlsAcceptor,
    app: axum::Router,
    limits: Limits,
    metrics: Arc<Metrics>,
) {
    let _open = Open::new(metrics.clone(), permit);
    let tls = match timeout(limits.handshake_timeout, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(err)) => {
            tracing::debug!(%peer, error = %err, "webhook TLS handshake failed");
            return;
        }
        Err(_) => {
            metrics.webhook_connection_cut("handshake_timeout");
            tracing::debug!(%peer, "webhook client did not finish the TLS handshake in time");
            return;
        }
    };
    let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2".as_slice());
    let activity = Activity::new();
    let io = TokioIo::new(Watched { inner: tls, activity: activity.clone() });
    let requests = activity.clone();
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        requests.requested();
        let mut app = app.clone();
        async move { tower::Service::call(&mut app, request).await }
    });

    let builder = builder(h2, limits);
    let connection = builder.serve_connection(io, service);
    tokio::pin!(connection);
    let first_request_by = crate::kube::backoff::after(Instant::now(), limits.header_timeout);
    let cut = tokio::select! {
        result = connection.as_mut() => {
            if let Err(err) = result {
                tracing::debug!(%peer, error = %err, "webhook connection ended with an error");
            }
            return;
        }
        reason = activity.stalled(first_request_by, limits.idle_timeout) => reason,
    };
    metrics.webhook_connection_cut(cut);
    tracing::debug!(%peer, reason = cut, "closing a stalled webhook connection");
    if cut == "idle" {
        // Nothing in flight: let the client see a proper close (GOAWAY) first.
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
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(MAX_STREAMS)
        .keep_alive_interval(Some(limits.idle_timeout / 3))
        .keep_alive_timeout(limits.header_timeout);
    builder
}

/// Counts the connection as open (gauge) and holds its place under the cap until dropped.
struct Open {
    metrics: Arc<Metrics>,
    _permit: OwnedSemaphorePermit,
}

impl Open {
    fn new(metrics: Arc<Metrics>, permit: OwnedSemaphorePermit) -> Self {
        metrics.webhook_connection(true);
        Self { metrics, _permit: permit }
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.metrics.webhook_connection(false);
    }
}

/// What a connection has done: when it last sent a byte, whether it ever sent a request.
#[derive(Clone)]
struct Activity(Arc<ActivityState>);

struct ActivityState {
    start: Instant,
    /// Milliseconds after `start` of the last read that returned data.
    last_read: AtomicU64,
    requested: AtomicBool,
}

impl Activity {
    fn new() -> Self {
        Self(Arc::new(ActivityState {
            start: Instant::now(),
            last_read: AtomicU64::new(0),
            requested: AtomicBool::new(false),
        }))
    }

    fn read(&self) {
        let millis = u64::try_from(self.0.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.0.last_read.store(millis, Ordering::Relaxed);
    }

    fn requested(&self) {
        self.0.requested.store(true, Ordering::Relaxed);
    }

    /// Resolves with the reason once the connection has sent no request by
    /// `first_request_by`, or nothing at all for `idle`.
    async fn stalled(&self, first_request_by: Instant, idle: Duration) -> &'static str {
        sleep_until(first_request_by).await;
        if !self.0.requested.load(Ordering::Relaxed) {
            return "no_request";
        }
        loop {
            let last = self.0.start + Duration::from_millis(self.0.last_read.load(Ordering::Relaxed));
            let until = crate::kube::backoff::after(last, idle);
            if Instant::now() >= until {
                return "idle";
            }
            sleep_until(until).await;
        }
    }
}

/// The TLS stream, noting every read that brings data.
struct Watched<T> {
    inner: T,
    activity: Activity,
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.activity.read();
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, data)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_connection_without_a_request_stalls_at_the_first_request_deadline() {
        let activity = Activity::new();
        let by = Instant::now() + Duration::from_secs(10);
        assert_eq!(activity.stalled(by, Duration::from_secs(90)).await, "no_request");
        assert_eq!(Instant::now(), by);
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_that_keeps_reading_is_not_idle() {
        let activity = Activity::new();
        activity.requested();
        let start = Instant::now();
        let reader = activity.clone();
        tokio::spawn(async move {
            for _ in 0..5 {
                tokio::time::sleep(Duration::from_secs(60)).await;
                reader.read();
            }
        });
        let reason = activity.stalled(start + Duration::from_secs(10), Duration::from_secs(90)).await;
        assert_eq!(reason, "idle");
        // Five reads a minute apart, then 90 s of silence.
        assert!(start.elapsed() >= Duration::from_secs(390), "{:?}", start.elapsed());
    }
}
