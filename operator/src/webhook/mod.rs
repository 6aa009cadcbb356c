//! The validating webhooks, served by the operator over TLS.
//!
//! The apiserver sends every create and update of our kinds here; the
//! answer comes from the same pure validation functions the controllers run
//! (crate `crds`), so bad input is refused at admission and, if it got in
//! anyway (Kubernetes 1.20 drops the CRDs' CEL rules; a webhook may be
//! down), reported again as a condition.
//!
//! Certificates come from files (OLM or cert-manager mount them; they are
//! reloaded when they change) or are managed by the operator: a CA and a
//! serving certificate made with rcgen, kept in a Secret so replicas share
//! them, renewed at two-thirds of their lifetime, with the CA published in
//! the `caBundle` of the ValidatingWebhookConfiguration the operator applies;
//! the CA itself is rotated with an overlap (`rotation.rs`).
//!
//! The server bounds what any one client can hold: handshake, header, request
//! and idle timeouts, and a cap on connections (`connection.rs`, `server.rs`).
//! `design/webhooks.md` explains both.

mod admission;
mod authorize;
mod certs;
mod envelope;
mod firmware;
mod registration;
mod rotation;
mod server;

pub(crate) use crate::serve::Limits;
pub use admission::MAX_PARSE_COST;
pub(crate) use admission::Policy;
pub(crate) use certs::SECRET_NAME;
pub(crate) use registration::render_configuration;
pub use registration::{CONFIGURATION_NAME, ClientConfig};
pub use server::{BODY_BUDGET, MAX_REVIEW_BYTES, PARSING};

use crate::kit::Context;
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Flags of the webhook server.
#[derive(Debug, Args)]
pub struct WebhookArgs {
    /// Address of the webhook HTTPS server.
    #[arg(long = "webhook-addr", env = "WEBHOOK_ADDR", default_value = "0.0.0.0:9443")]
    pub addr: SocketAddr,
    /// Serve no webhooks at all.
    #[arg(long = "disable-webhooks", env = "DISABLE_WEBHOOKS")]
    pub disabled: bool,
    /// Serving certificate (PEM). With --webhook-key-file; reloaded when it
    /// changes. Under OLM: /apiserver.local.config/certificates/apiserver.crt.
    #[arg(long = "webhook-cert-file", env = "WEBHOOK_CERT_FILE", requires = "key_file")]
    pub cert_file: Option<PathBuf>,
    /// Serving key (PEM).
    #[arg(long = "webhook-key-file", env = "WEBHOOK_KEY_FILE", requires = "cert_file")]
    pub key_file: Option<PathBuf>,
    /// CA of the mounted certificate, published as the caBundle when the
    /// operator registers the webhooks itself.
    #[arg(long = "webhook-ca-file", env = "WEBHOOK_CA_FILE")]
    pub ca_file: Option<PathBuf>,
    /// Register the webhooks, reached through this Service
    /// (`namespace/name[:port]`).
    #[arg(long = "webhook-service", env = "WEBHOOK_SERVICE", conflicts_with = "url")]
    pub service: Option<String>,
    /// Register the webhooks, reached at this base URL (for an operator
    /// outside the cluster, e.g. the lab: `https://127.0.0.1:9443`).
    #[arg(long = "webhook-url", env = "WEBHOOK_URL")]
    pub url: Option<String>,
    /// Namespace of the Secret holding operator-managed webhook certificates.
    #[arg(long = "webhook-secret-namespace", env = "POD_NAMESPACE", default_value = "default")]
    pub secret_namespace: String,
    /// Connections the webhook server serves at once; more wait until one closes.
    #[arg(long = "webhook-max-connections", env = "WEBHOOK_MAX_CONNECTIONS", default_value_t = Limits::WEBHOOK.max_connections)]
    pub max_connections: usize,
    /// Connections the webhook server serves at once from one address; more are closed.
    #[arg(
        long = "webhook-max-connections-per-source",
        env = "WEBHOOK_MAX_CONNECTIONS_PER_SOURCE",
        default_value_t = Limits::WEBHOOK.max_per_source
    )]
    pub max_per_source: usize,
}

impl WebhookArgs {
    /// The webhook configuration, or `None` when disabled.
    pub fn into_config(self) -> Option<Config> {
        if self.disabled {
            return None;
        }
        let certificates = match (self.cert_file, self.key_file) {
            (Some(cert), Some(key)) => Certificates::Files { cert, key, ca: self.ca_file },
            _ => Certificates::SelfManaged { secret_namespace: self.secret_namespace },
        };
        let client = match (self.service, self.url) {
            (Some(service), _) => ClientConfig::parse_service(&service),
            (None, Some(url)) => Some(ClientConfig::Url(url)),
            (None, None) => None,
        };
        let mut config = Config::new(self.addr, certificates, client);
        config.limits.max_connections = self.max_connections;
        config.limits.max_per_source = self.max_per_source;
        Some(config)
    }
}

/// Where the serving certificate comes from.
#[derive(Clone, Debug)]
pub enum Certificates {
    /// Mounted files, reloaded when they change.
    Files { cert: PathBuf, key: PathBuf, ca: Option<PathBuf> },
    /// Made by the operator. Kept in a Secret in `secret_namespace` when the
    /// operator registers the webhooks (so every replica serves the CA it
    /// published), in memory otherwise.
    SelfManaged { secret_namespace: String },
}

/// The webhook server's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    pub addr: SocketAddr,
    pub certificates: Certificates,
    /// Apply the ValidatingWebhookConfiguration pointing here.
    pub register: Option<ClientConfig>,
    /// Timeouts and the connection caps.
    pub limits: Limits,
    /// How often the certificate is checked: mounted files re-read, the
    /// operator-managed Secret re-read and renewed or rotated when due.
    pub refresh: std::time::Duration,
}

/// How often the certificate is checked by default.
pub(crate) const DEFAULT_REFRESH: std::time::Duration = std::time::Duration::from_secs(30);

impl Config {
    /// A configuration with the default limits and refresh period.
    pub fn new(addr: SocketAddr, certificates: Certificates, register: Option<ClientConfig>) -> Self {
        Self { addr, certificates, register, limits: Limits::WEBHOOK, refresh: DEFAULT_REFRESH }
    }
}

/// Why the webhook server could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot bind the webhook server on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read {path}")]
    ReadFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid certificate or key: {0}")]
    InvalidCertificate(String),
    #[error("cannot generate a certificate")]
    Generate(#[source] rcgen::Error),
    // Boxed: a Kubernetes error is large, and this one travels up to the runtime's.
    #[error("cannot store or read the webhook certificate Secret")]
    Secret(#[source] Box<crate::kit::KubeError>),
    #[error("cannot apply the ValidatingWebhookConfiguration")]
    Register(#[source] Box<crate::kit::KubeError>),
}

impl From<crate::kit::KubeError> for Error {
    fn from(err: crate::kit::KubeError) -> Self {
        Self::Secret(Box::new(err))
    }
}

/// A running webhook server.
pub(crate) struct Webhook {
    pub addr: SocketAddr,
}

/// Starts serving; returns once the server is bound and, when asked to,
/// the webhooks are registered.
pub(crate) async fn start(ctx: Arc<Context>, config: Config, shutdown: CancellationToken) -> Result<Webhook, Error> {
    let (resolver, ca_pem) = certs::load(&ctx.client, &config).await?;
    let policy = Policy {
        features: ctx.features.clone(),
        ironic_namespaces: ctx.ironic_namespaces.clone(),
        host_pools: ctx.host_pools.clone(),
        host_access: ctx.host_access.clone(),
        reserved_account: ctx.reserved_account.clone(),
    };
    let served = server::Served {
        resolver: resolver.clone(),
        policy,
        client: ctx.client.clone(),
        watched: ctx.namespaces.clone(),
    };
    let addr = server::serve(config.addr, served, config.limits, ctx.metrics.clone(), shutdown.clone()).await?;
    if let Some(client) = &config.register {
        registration::apply(&ctx.client, client, ca_pem.as_deref()).await.map_err(|e| Error::Register(Box::new(e)))?;
    }
    certs::spawn_renewal(ctx.client.clone(), config, resolver, ca_pem, shutdown);
    Ok(Webhook { addr })
}
