//! The HTTPS server that answers admission reviews.
//!
//! At most `max_connections` connections are served at once: beyond that the
//! server stops accepting, and new connections wait in the kernel's listen
//! backlog until a slot frees, rather than being refused. Slots free quickly
//! because no client can hold one without making progress (`connection.rs`).

use super::Error;
use super::admission::{Kind, Policy, review};
use super::certs::Resolver;
use super::connection::{self, Limits};
use crate::metrics::Metrics;
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use kube::core::DynamicObject;
use kube::core::admission::AdmissionReview;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// Binds `addr` and serves until `shutdown`; returns the bound address.
pub async fn serve(
    addr: SocketAddr,
    resolver: Arc<Resolver>,
    limits: Limits,
    metrics: Arc<Metrics>,
    policy: Policy,
    shutdown: CancellationToken,
) -> Result<SocketAddr, Error> {
    let listener = TcpListener::bind(addr).await.map_err(|source| Error::Bind { addr, source })?;
    let bound = listener.local_addr().map_err(|source| Error::Bind { addr, source })?;
    let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::InvalidCertificate(e.to_string()))?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = TlsAcceptor::from(Arc::new(tls));
    let app = router(limits.request_timeout, Arc::new(policy));
    // At least one slot, whatever the flag says: zero would serve nobody.
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    tracing::info!(%bound, max_connections = limits.max_connections, "webhook server listening");
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
                        tracing::warn!(error = %err, "webhook accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(connection::serve(
                stream,
                peer,
                permit,
                acceptor.clone(),
                app.clone(),
                limits,
                metrics.clone(),
            ));
        }
    });
    Ok(bound)
}

fn router(request_timeout: Duration, policy: Arc<Policy>) -> Router {
    Router::new()
        .route("/validate/{kind}", post(validate))
        .with_state(policy)
        .route("/healthz", get(|| async { "ok" }))
        .layer(middleware::from_fn_with_state(request_timeout, bounded))
}

/// Answers within `limit`, reading the body included: a client that trickles
/// its body gets 408 instead of holding the request open.
async fn bounded(State(limit): State<Duration>, request: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => (StatusCode::REQUEST_TIMEOUT, "request took too long").into_response(),
    }
}

async fn validate(
    State(policy): State<Arc<Policy>>,
    Path(segment): Path<String>,
    Json(body): Json<AdmissionReview<DynamicObject>>,
) -> Result<Json<AdmissionReview<DynamicObject>>, StatusCode> {
    let kind = Kind::from_segment(&segment).ok_or(StatusCode::NOT_FOUND)?;
    Ok(Json(review(kind, body, &policy)))
}
