//! Sending one API call: headers, the in-flight bound, retries, metrics,
//! error mapping and traces.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::Semaphore;
use url::Url;

use crate::config::Auth;
use crate::error::{Error, Result};
use crate::metrics::{Metrics, Operation};
use crate::redact::{redact_json, scrub, secret_strings};
use crate::retry::RetryPolicy;
use crate::version::{ApiVersion, VERSION_HEADER};
use crate::{fault, net_error};

/// The header Ironic puts its request id in.
const REQUEST_ID_HEADER: &str = "x-openstack-request-id";

/// One API call, described before it is sent (and possibly re-sent).
pub(crate) struct Request {
    op: Operation,
    method: Method,
    path: Vec<String>,
    query: Vec<(&'static str, String)>,
    body: Option<Body>,
    pass_status: Option<StatusCode>,
    /// Whether a call whose connection broke is sent again. A reset can come after Ironic
    /// received and acted on the request; calls that cannot tell a repeat from the original
    /// (a create without a name) are not repeated.
    resend_after_reset: bool,
}

/// What became of a call, and whether it was sent again after its connection broke: then
/// Ironic may have acted on an earlier attempt, and an error about a conflict or a state can
/// be the trace of that attempt's success.
pub(crate) struct Sent {
    pub(crate) result: Result<Response>,
    pub(crate) resent_after_reset: bool,
}

/// A serialised JSON body, kept with what it needs to stay secret.
struct Body {
    bytes: Bytes,
    /// The body with secrets replaced, for traces.
    redacted: Value,
    /// The secret strings it holds, to scrub from error messages.
    secrets: Vec<String>,
}

impl Request {
    /// A call of `method` on `/v1/<path…>`; each path element is one
    /// percent-encoded segment, so node names cannot escape it.
    pub(crate) fn new<S: AsRef<str>>(op: Operation, method: Method, path: &[S]) -> Self {
        Self {
            op,
            method,
            path: path.iter().map(|s| s.as_ref().to_owned()).collect(),
            query: Vec::new(),
            body: None,
            pass_status: None,
            resend_after_reset: true,
        }
    }

    /// Not sent again when its connection breaks (see `resend_after_reset`).
    pub(crate) fn once_if_reset(mut self) -> Self {
        self.resend_after_reset = false;
        self
    }

    /// Adds query pairs.
    pub(crate) fn query(mut self, pairs: impl IntoIterator<Item = (&'static str, String)>) -> Self {
        self.query.extend(pairs);
        self
    }

    /// Sets a JSON body.
    pub(crate) fn json<T: Serialize + ?Sized>(mut self, body: &T) -> Result<Self> {
        let value = serde_json::to_value(body)
            .map_err(|e| Error::Decode { operation: self.op, message: format!("cannot serialise the request: {e}") })?;
        self.body = Some(Body {
            bytes: Bytes::from(value.to_string()),
            redacted: redact_json(&value),
            secrets: secret_strings(&value),
        });
        Ok(self)
    }

    /// Hands back an answer with this status instead of turning it into an
    /// error (discovery reads the version range from a 406).
    pub(crate) fn pass_status(mut self, status: StatusCode) -> Self {
        self.pass_status = Some(status);
        self
    }

    fn secrets(&self) -> &[String] {
        self.body.as_ref().map_or(&[], |b| b.secrets.as_slice())
    }
}

/// An answer that was not turned into an error.
pub(crate) struct Response {
    pub(crate) op: Operation,
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Response {
    /// The body parsed as `T`.
    pub(crate) fn json<T: DeserializeOwned>(&self) -> Result<T> {
        serde_json::from_slice(&self.body)
            .map_err(|e| Error::Decode { operation: self.op, message: format!("cannot parse the answer: {e}") })
    }
}

/// What every call shares: the HTTP client and the limits around it.
pub(crate) struct Transport {
    pub(crate) http: reqwest::Client,
    /// The endpoint, without `/v1`.
    pub(crate) base: Url,
    pub(crate) auth: Auth,
    pub(crate) limiter: Semaphore,
    pub(crate) retry: RetryPolicy,
    pub(crate) metrics: Arc<Metrics>,
}

impl Transport {
    fn url(&self, req: &Request) -> Result<Url> {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .map_err(|()| Error::Config(format!("endpoint {} cannot take a path", self.base)))?
            .pop_if_empty()
            .push("v1")
            .extend(&req.path);
        if !req.query.is_empty() {
            url.query_pairs_mut().extend_pairs(&req.query);
        }
        Ok(url)
    }

    /// Sends `req` with microversion `version`, retrying what is retryable.
    pub(crate) async fn send(&self, req: Request, version: ApiVersion) -> Result<Response> {
        self.send_tracked(req, version).await.result
    }

    /// [`Self::send`], also telling whether the call was sent again after its connection broke.
    pub(crate) async fn send_tracked(&self, req: Request, version: ApiVersion) -> Sent {
        let url = match self.url(&req) {
            Ok(url) => url,
            Err(err) => return Sent { result: Err(err), resent_after_reset: false },
        };
        let version = version.to_string();
        let mut attempt = 1;
        let mut resent_after_reset = false;
        loop {
            let result = self.attempt(&req, &url, &version, attempt).await;
            match result {
                Err(err)
                    if err.is_retryable()
                        && self.retry.allows_another(attempt)
                        && (req.resend_after_reset || !matches!(err, Error::ConnectionReset { .. })) =>
                {
                    let delay = self.retry.delay(attempt);
                    tracing::debug!(operation = %req.op, attempt, ?delay, error = %err, "retrying Ironic call");
                    self.metrics.record_retry(req.op);
                    resent_after_reset |= matches!(err, Error::ConnectionReset { .. });
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                }
                Err(err) => {
                    self.metrics.record_failure(req.op);
                    return Sent { result: Err(err), resent_after_reset };
                }
                Ok(resp) => return Sent { result: Ok(resp), resent_after_reset },
            }
        }
    }

    async fn attempt(&self, req: &Request, url: &Url, version: &str, attempt: u32) -> Result<Response> {
        // The permit is held for one attempt only, never across a backoff
        // sleep, so a retrying call does not block the others.
        let _permit = self.limiter.acquire().await.map_err(|_| Error::Transport {
            operation: req.op,
            message: "the client's request limiter was closed".into(),
        })?;
        self.metrics.record_request(req.op);
        let started = Instant::now();
        let mut builder = self
            .http
            .request(req.method.clone(), url.clone())
            .header(VERSION_HEADER, version)
            .header(ACCEPT, "application/json");
        if let Some(body) = &req.body {
            tracing::trace!(operation = %req.op, body = %body.redacted, "Ironic request body");
            builder = builder.header(CONTENT_TYPE, "application/json").body(body.bytes.clone());
        }
        if let Auth::Basic { username, password } = &self.auth {
            builder = builder.basic_auth(username, Some(password.expose()));
        }
        let response = builder.send().await.map_err(|e| net_error::from_reqwest(req.op, &e))?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.bytes().await.map_err(|e| net_error::from_reqwest(req.op, &e))?;
        tracing::debug!(
            operation = %req.op,
            method = %req.method,
            path = url.path(),
            status = status.as_u16(),
            attempt,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "Ironic call"
        );
        if status.is_success() || req.pass_status == Some(status) {
            return Ok(Response { op: req.op, status, headers, body });
        }
        let message = scrub(&fault::message_for(status, &body), req.secrets());
        let request_id = headers.get(REQUEST_ID_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
        Err(fault::classify(req.op, status, message, request_id))
    }
}

#[cfg(test)]
mod tests {
    //! The transport's own behaviour against a scripted loopback peer: what
    //! it does when connections are reset and how many requests it has in
    //! flight. (Ironic itself is exercised by the integration tests.)

    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::*;
    use crate::config::IronicClientBuilder;

    /// A peer that resets the first `resets` connections, then answers every
    /// request with `{}` after `delay`, counting requests in progress.
    struct Peer {
        resets: AtomicUsize,
        delay: Duration,
        in_flight: AtomicUsize,
        max_in_flight: AtomicUsize,
    }

    impl Peer {
        async fn start(resets: usize, delay: Duration) -> (Arc<Peer>, String) {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}", listener.local_addr().unwrap());
            let peer = Arc::new(Peer {
                resets: AtomicUsize::new(resets),
                delay,
                in_flight: AtomicUsize::new(0),
                max_in_flight: AtomicUsize::new(0),
            });
            let serving = peer.clone();
            tokio::spawn(async move {
                while let Ok((socket, _)) = listener.accept().await {
                    tokio::spawn(serving.clone().serve(socket));
                }
            });
            (peer, url)
        }

        async fn serve(self: Arc<Self>, mut socket: TcpStream) {
            let reset = self.resets.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok();
            let mut buf = vec![0u8; 8192];
            loop {
                let mut read = 0;
                while !buf[..read].windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf[read..]).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => read += n,
                    }
                }
                if reset {
                    // An RST, as cheroot's overflowing backlog produces.
                    let _ = socket.set_zero_linger();
                    return;
                }
                let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                self.max_in_flight.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(self.delay).await;
                self.in_flight.fetch_sub(1, Ordering::SeqCst);
                let answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
                if socket.write_all(answer.as_bytes()).await.is_err() {
                    return;
                }
            }
        }
    }

    fn transport(url: &str, max_in_flight: usize) -> Transport {
        let retry = RetryPolicy {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(40),
        };
        IronicClientBuilder::new(url).max_in_flight(max_in_flight).retry_policy(retry).transport().unwrap()
    }

    fn get() -> Request {
        Request::new(Operation::GetNode, Method::GET, &["nodes", "n1"])
    }

    #[tokio::test]
    async fn connection_resets_are_retried_until_an_answer_comes() {
        let (_peer, url) = Peer::start(2, Duration::ZERO).await;
        let t = transport(&url, 8);
        let response = t.send(get(), ApiVersion::MINIMUM).await.unwrap();
        assert_eq!(response.status, StatusCode::OK);
        assert_eq!(t.metrics.requests(Operation::GetNode), 3);
        let stats = t.metrics.snapshot();
        let get_node = stats.iter().find(|s| s.operation == Operation::GetNode).unwrap();
        assert_eq!((get_node.retries, get_node.failures), (2, 0));
    }

    #[tokio::test]
    async fn resets_beyond_the_retry_budget_surface_as_a_typed_error() {
        let (_peer, url) = Peer::start(10, Duration::ZERO).await;
        let t = transport(&url, 8);
        let err = t.send(get(), ApiVersion::MINIMUM).await.err().unwrap();
        assert!(matches!(err, Error::ConnectionReset { .. }), "{err:?}");
        assert!(err.is_retryable());
        assert_eq!(t.metrics.requests(Operation::GetNode), 4, "max_attempts bounds it");
    }

    #[tokio::test]
    async fn a_call_sent_again_after_a_reset_says_so_and_one_marked_once_is_not_sent_again() {
        let (_peer, url) = Peer::start(1, Duration::ZERO).await;
        let t = transport(&url, 8);
        let sent = t.send_tracked(get(), ApiVersion::MINIMUM).await;
        assert!(sent.result.is_ok());
        assert!(sent.resent_after_reset, "the first attempt's connection broke");

        let (_peer, url) = Peer::start(1, Duration::ZERO).await;
        let t = transport(&url, 8);
        let create = Request::new(Operation::CreateNode, Method::POST, &["nodes"]).once_if_reset();
        let sent = t.send_tracked(create, ApiVersion::MINIMUM).await;
        assert!(matches!(sent.result, Err(Error::ConnectionReset { .. })), "not repeated");
        assert!(!sent.resent_after_reset);
        assert_eq!(t.metrics.requests(Operation::CreateNode), 1);
    }

    #[tokio::test]
    async fn a_call_answered_at_once_was_not_sent_again() {
        let (_peer, url) = Peer::start(0, Duration::ZERO).await;
        let t = transport(&url, 8);
        let sent = t.send_tracked(get(), ApiVersion::MINIMUM).await;
        assert!(sent.result.is_ok());
        assert!(!sent.resent_after_reset);
    }

    #[tokio::test]
    async fn requests_in_flight_never_exceed_the_bound() {
        let (peer, url) = Peer::start(0, Duration::from_millis(20)).await;
        let t = Arc::new(transport(&url, 3));
        let calls = (0..24).map(|_| {
            let t = t.clone();
            tokio::spawn(async move { t.send(get(), ApiVersion::MINIMUM).await.map(|_| ()) })
        });
        for call in calls.collect::<Vec<_>>() {
            call.await.unwrap().unwrap();
        }
        assert_eq!(peer.max_in_flight.load(Ordering::SeqCst), 3);
        assert_eq!(t.metrics.requests(Operation::GetNode), 24);
    }

    #[tokio::test]
    async fn a_refused_connection_is_a_retryable_connect_error() {
        // Bind and drop, so nothing listens on the port.
        let url = {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            format!("http://{}", listener.local_addr().unwrap())
        };
        let t = transport(&url, 8);
        let err = t.send(get(), ApiVersion::MINIMUM).await.err().unwrap();
        assert!(matches!(err, Error::Connect { .. }), "{err:?}");
        assert_eq!(t.metrics.requests(Operation::GetNode), 4);
    }
}
