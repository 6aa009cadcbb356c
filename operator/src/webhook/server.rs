//! The HTTPS server that answers admission reviews.

use super::Error;
use super::admission::{Kind, review};
use super::certs::Resolver;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use hyper_util::rt::{TokioExecutor, TokioIo};
use kube::core::DynamicObject;
use kube::core::admission::AdmissionReview;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// Binds `addr` and serves until `shutdown`; returns the bound address.
pub async fn serve(
    addr: SocketAddr,
    resolver: Arc<Resolver>,
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
    let app = router();
    tracing::info!(%bound, "webhook server listening");
    tokio::spawn(async move {
        loop {
            let (stream, peer) = tokio::select! {
                () = shutdown.cancelled() => return,
                accepted = listener.accept() => match accepted {
                    Ok(conn) => conn,
                    Err(err) => { tracing::warn!(error = %err, "webhook accept failed"); continue }
                },
            };
            let acceptor = acceptor.clone();
            let app = app.clone();
            tokio::spawn(async move {
                let stream = match acceptor.accept(stream).await {
                    Ok(stream) => stream,
                    Err(err) => {
                        tracing::debug!(%peer, error = %err, "webhook TLS handshake failed");
                        return;
                    }
                };
                let service = hyper_util::service::TowerToHyperService::new(app);
                let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                if let Err(err) = builder.serve_connection(TokioIo::new(stream), service).await {
                    tracing::debug!(%peer, error = %err, "webhook connection ended with an error");
                }
            });
        }
    });
    Ok(bound)
}

fn router() -> Router {
    Router::new().route("/validate/{kind}", post(validate)).route("/healthz", get(|| async { "ok" }))
}

async fn validate(
    Path(segment): Path<String>,
    Json(body): Json<AdmissionReview<DynamicObject>>,
) -> Result<Json<AdmissionReview<DynamicObject>>, StatusCode> {
    let kind = Kind::from_segment(&segment).ok_or(StatusCode::NOT_FOUND)?;
    Ok(Json(review(kind, body)))
}
