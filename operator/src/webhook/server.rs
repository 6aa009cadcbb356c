//! The HTTPS server that answers admission reviews, on the bounded server of [`crate::serve`].
//!
//! Reviews are bounded too, so that a few large ones at once cannot exhaust the pod's
//! memory: a body is at most [`MAX_REVIEW_BYTES`]; at most [`BODY_BUDGET`] bytes of bodies
//! are read at once (a request waits for its share before its body is read); at most
//! [`PARSING`] reviews are parsed at once, off the async workers. A request that cannot get
//! its turn within the request timeout is answered 408, which the apiserver reports as the
//! webhook failing (and, with `failurePolicy: Fail`, refuses the write): a flood of reviews
//! costs admission time, never the operator's memory.

use super::Error;
use super::admission::{Kind, Policy, review};
use super::authorize;
use super::certs::Resolver;
use super::envelope::Answer;
use crate::metrics::Metrics;
use crate::serve::{self, Limits, Server, Transport};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use kube::Client;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// The largest review read: an update carries two objects of etcd's 1.5 MiB at most, and
/// the envelope around them.
pub const MAX_REVIEW_BYTES: usize = 4 << 20;
/// Bytes of review bodies held at once, all requests together.
pub const BODY_BUDGET: usize = 6 * MAX_REVIEW_BYTES;
/// Reviews parsed and validated at once.
pub const PARSING: usize = 2;

/// What the server answers with: its certificate, the operator's policy, the client it asks
/// the apiserver's authorizer with, and the namespaces the operator watches (empty: all).
pub(super) struct Served {
    pub resolver: Arc<Resolver>,
    pub policy: Policy,
    pub client: Client,
    pub watched: Vec<String>,
}

/// Binds `addr` and serves until `shutdown`; returns the bound address.
pub(super) async fn serve(
    addr: SocketAddr,
    served: Served,
    limits: Limits,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> Result<SocketAddr, Error> {
    let Served { resolver, policy, client, watched } = served;
    let (listener, bound) = serve::bind(addr).await.map_err(|source| Error::Bind { addr, source })?;
    let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::InvalidCertificate(e.to_string()))?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let transport = Transport::Tls(TlsAcceptor::from(Arc::new(tls)));
    let app = router(Arc::new(Reviews::new(policy, client, watched)));
    tracing::info!(%bound, max_connections = limits.max_connections, "webhook server listening");
    serve::spawn(listener, Server { name: "webhook", transport, app, limits, metrics }, shutdown);
    Ok(bound)
}

/// What answering reviews needs: the operator's policy, the bounds on reviews at once, and
/// the client that asks the apiserver who may do what.
struct Reviews {
    policy: Arc<Policy>,
    bodies: Arc<Semaphore>,
    parsing: Arc<Semaphore>,
    client: Client,
    watched: Vec<String>,
}

impl Reviews {
    fn new(policy: Policy, client: Client, watched: Vec<String>) -> Self {
        Self {
            policy: Arc::new(policy),
            client,
            watched,
            bodies: Arc::new(Semaphore::new(BODY_BUDGET)),
            parsing: Arc::new(Semaphore::new(PARSING)),
        }
    }
}

fn router(reviews: Arc<Reviews>) -> Router {
    Router::new()
        .route("/validate/{kind}", post(validate))
        .with_state(reviews)
        .route("/healthz", get(|| async { "ok" }))
}

async fn validate(State(reviews): State<Arc<Reviews>>, Path(segment): Path<String>, request: Request) -> Response {
    let Some(kind) = Kind::from_segment(&segment) else { return StatusCode::NOT_FOUND.into_response() };
    // The body's share of the budget before the body: a request that does not say its length
    // is counted at the most a review may be.
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_REVIEW_BYTES) {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    }
    let share = u32::try_from(declared.unwrap_or(MAX_REVIEW_BYTES).max(1)).unwrap_or(u32::MAX);
    let Ok(_bytes) = reviews.bodies.clone().acquire_many_owned(share).await else {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    let body = match axum::body::to_bytes(request.into_body(), declared.unwrap_or(MAX_REVIEW_BYTES)).await {
        Ok(body) => body,
        Err(_) => return StatusCode::PAYLOAD_TOO_LARGE.into_response(),
    };
    let answer = {
        let Ok(_parsing) = reviews.parsing.clone().acquire_owned().await else {
            return StatusCode::SERVICE_UNAVAILABLE.into_response();
        };
        match answer(kind, body, reviews.policy.clone()).await {
            Ok(answer) => answer,
            Err(status) => return status.into_response(),
        }
    };
    let answer = authorized(&reviews.client, &reviews.watched, answer).await;
    let answer = super::firmware::checked(&reviews.client, &reviews.watched, answer).await;
    match serde_json::to_vec(&answer) {
        Ok(json) => ([(header::CONTENT_TYPE, "application/json")], Body::from(json)).into_response(),
        Err(err) => {
            tracing::error!(error = %err, "cannot encode an admission answer");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// Parses and validates on a blocking thread: a large review takes milliseconds of CPU that
/// the controllers' async workers should not wait behind.
async fn answer(kind: Kind, body: Bytes, policy: Arc<Policy>) -> Result<Answer, StatusCode> {
    tokio::task::spawn_blocking(move || review(kind, &body, &policy)).await.map_err(|err| {
        tracing::error!(error = %err, "an admission review panicked or was cancelled");
        StatusCode::INTERNAL_SERVER_ERROR
    })
}

/// The answer, once the apiserver's authorizer agrees that its author may do what it makes
/// the operator do; refused when it does not, or cannot be asked (refusing is the safe way
/// to fail, as the webhook's own `failurePolicy` is).
async fn authorized(client: &Client, watched: &[String], answer: Answer) -> Answer {
    let Some(author) = answer.requires.clone() else { return answer };
    if !answer.response.allowed || !authorize::concerns(watched, &author.namespace) {
        return answer;
    }
    let uid = answer.response.uid.clone();
    match authorize::may_create_jobs(client, &author).await {
        Ok(true) => answer,
        Ok(false) => Answer::deny(&uid, authorize::refusal(&author)),
        Err(err) => {
            tracing::warn!(error = %err, "cannot ask the apiserver whether a NodeSetService's author may create Jobs");
            Answer::deny(&uid, format!("cannot check that the author may create Jobs in {}: {err}", author.namespace))
        }
    }
}
