//! Probes and metrics: /healthz (alive), /readyz (ready: see [`super::readiness`]), /metrics.

use super::readiness::Readiness;
use crate::metrics::Metrics;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

#[derive(Clone)]
struct Health {
    metrics: Arc<Metrics>,
    ready: Arc<Readiness>,
}

/// Binds `addr` and serves until `shutdown`; returns the bound address.
pub async fn serve(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    ready: Arc<Readiness>,
    shutdown: CancellationToken,
) -> Result<SocketAddr, crate::runtime::error::Error> {
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|source| crate::runtime::error::Error::Bind {
        what: "the health server",
        addr,
        source,
    })?;
    let bound = listener.local_addr().map_err(|source| crate::runtime::error::Error::Bind {
        what: "the health server",
        addr,
        source,
    })?;
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .with_state(Health { metrics, ready });
    tokio::spawn(async move {
        let served = axum::serve(listener, app).with_graceful_shutdown(shutdown.cancelled_owned()).await;
        if let Err(err) = served {
            tracing::error!(error = %err, "health server failed");
        }
    });
    tracing::info!(%bound, "health server listening");
    Ok(bound)
}

async fn readyz(State(health): State<Health>) -> (StatusCode, String) {
    let (ready, report) = health.ready.report();
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, format!("{report}readyz check {}\n", if ready { "passed" } else { "failed" }))
}

async fn metrics_text(State(health): State<Health>) -> ([(&'static str, &'static str); 1], String) {
    ([("content-type", "application/openmetrics-text; version=1.0.0; charset=utf-8")], health.metrics.encode())
}
