//! Probes and metrics: /healthz (alive), /readyz (ready: see [`super::readiness`]), /metrics,
//! in plain HTTP on the bounded server of [`crate::serve`]: a client that connects and sends
//! nothing, or opens connection after connection, cannot starve the kubelet's probes.

use super::readiness::Readiness;
use crate::metrics::Metrics;
use crate::serve::{self, Limits, Server, Transport};
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
pub(crate) async fn serve(
    addr: SocketAddr,
    limits: Limits,
    metrics: Arc<Metrics>,
    ready: Arc<Readiness>,
    shutdown: CancellationToken,
) -> Result<SocketAddr, crate::runtime::error::Error> {
    let (listener, bound) = serve::bind(addr).await.map_err(|source| crate::runtime::error::Error::Bind {
        what: "the health server",
        addr,
        source,
    })?;
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .with_state(Health { metrics: metrics.clone(), ready });
    serve::spawn(listener, Server { name: "health", transport: Transport::Plain, app, limits, metrics }, shutdown);
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
