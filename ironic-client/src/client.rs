//! The client handle and its version negotiation.

use std::fmt;
use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use url::Url;

use crate::config::IronicClientBuilder;
use crate::error::{Error, Result};
use crate::metrics::{Metrics, Operation};
use crate::transport::{Request, Response, Transport};
use crate::version::{ApiVersion, ServerVersions};

/// An async Ironic API client. Cheap to clone: clones share the connection
/// pool, the in-flight bound and the metrics.
#[derive(Clone)]
pub struct IronicClient {
    inner: Arc<Inner>,
}

struct Inner {
    transport: Transport,
    version: ApiVersion,
    server: ServerVersions,
}

impl fmt::Debug for IronicClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IronicClient")
            .field("endpoint", &self.inner.transport.base.as_str())
            .field("api_version", &self.inner.version)
            .field("server_versions", &self.inner.server)
            .finish_non_exhaustive()
    }
}

impl IronicClient {
    /// Starts building a client for `endpoint` (`https://ironic:6385`; a
    /// trailing `/v1` is accepted and ignored).
    pub fn builder(endpoint: impl Into<String>) -> IronicClientBuilder {
        IronicClientBuilder::new(endpoint)
    }

    /// Asks the server for its microversion range (`GET /v1`) and settles on
    /// the newest version both sides support.
    pub(crate) async fn connect(transport: Transport) -> Result<Self> {
        // Discovery sends our minimum: a server too old for it answers 406,
        // whose headers still carry its range, so the error can name both.
        let request =
            Request::new::<&str>(Operation::Discover, Method::GET, &[]).pass_status(StatusCode::NOT_ACCEPTABLE);
        let response = transport.send(request, ApiVersion::MINIMUM).await?;
        let server = ServerVersions::from_headers(&response.headers)
            .or_else(|| ServerVersions::from_discovery_body(&response.body))
            .ok_or_else(|| Error::Decode {
                operation: Operation::Discover,
                message: format!(
                    "HTTP {} without an Ironic version range; is {} an Ironic endpoint?",
                    response.status, transport.base
                ),
            })?;
        let version = server.negotiate()?;
        tracing::debug!(endpoint = %transport.base, %version, server_min = %server.min, server_max = %server.max, "negotiated Ironic API version");
        Ok(Self { inner: Arc::new(Inner { transport, version, server }) })
    }

    /// The microversion sent with every request.
    pub fn api_version(&self) -> ApiVersion {
        self.inner.version
    }

    /// The microversion range the server reported.
    pub fn server_versions(&self) -> ServerVersions {
        self.inner.server
    }

    /// The endpoint, without `/v1`.
    pub fn endpoint(&self) -> &Url {
        &self.inner.transport.base
    }

    /// The request counters of this client.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.inner.transport.metrics
    }

    /// Fails with [`Error::Unsupported`] unless the negotiated version is at
    /// least `required`.
    pub(crate) fn require(&self, feature: &'static str, required: ApiVersion) -> Result<()> {
        if self.inner.version >= required {
            Ok(())
        } else {
            Err(Error::Unsupported { feature, required, negotiated: self.inner.version })
        }
    }

    pub(crate) async fn send(&self, request: Request) -> Result<Response> {
        self.inner.transport.send(request, self.inner.version).await
    }

    /// Sends `request` and tells whether it was sent again after its connection broke.
    pub(crate) async fn send_tracked(&self, request: Request) -> crate::transport::Sent {
        self.inner.transport.send_tracked(request, self.inner.version).await
    }

    pub(crate) async fn send_json<T: DeserializeOwned>(&self, request: Request) -> Result<T> {
        self.send(request).await?.json()
    }

    pub(crate) async fn send_unit(&self, request: Request) -> Result<()> {
        self.send(request).await.map(|_| ())
    }
}
