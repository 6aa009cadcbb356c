//! Building a client: endpoint, credentials, TLS, timeouts, limits.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use url::Url;

use crate::client::IronicClient;
use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::redact::Secret;
use crate::retry::RetryPolicy;
use crate::tls::{self, Trust};
use crate::transport::Transport;

/// How the client authenticates.
#[derive(Debug, Clone, Default)]
pub enum Auth {
    /// No credentials (`auth_strategy = noauth`).
    #[default]
    None,
    /// HTTP basic (`auth_strategy = http_basic`).
    Basic {
        /// User name.
        username: String,
        /// Password; never printed.
        password: Secret<String>,
    },
}

/// The default bound on requests in flight. Ironic's embedded cheroot server
/// has 10 worker threads and a listen backlog of 5 and resets connections
/// beyond that; 8 leaves room for a second client (a CLI, a probe).
pub const DEFAULT_MAX_IN_FLIGHT: usize = 8;

/// Builds an [`IronicClient`]; start from [`IronicClient::builder`].
#[derive(Clone)]
pub struct IronicClientBuilder {
    endpoint: String,
    auth: Auth,
    ca_pem: Option<Vec<u8>>,
    insecure: bool,
    connect_timeout: Duration,
    timeout: Duration,
    max_in_flight: usize,
    retry: RetryPolicy,
    metrics: Option<Arc<Metrics>>,
    connect_to: Option<std::net::SocketAddr>,
}

impl fmt::Debug for IronicClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IronicClientBuilder")
            .field("endpoint", &self.endpoint)
            .field("auth", &self.auth)
            .field("ca_pem", &self.ca_pem.as_ref().map(|pem| format!("{} bytes", pem.len())))
            .field("insecure", &self.insecure)
            .field("connect_timeout", &self.connect_timeout)
            .field("timeout", &self.timeout)
            .field("max_in_flight", &self.max_in_flight)
            .field("retry", &self.retry)
            .field("connect_to", &self.connect_to)
            .finish_non_exhaustive()
    }
}

impl IronicClientBuilder {
    pub(crate) fn new(endpoint: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            auth: Auth::None,
            ca_pem: None,
            insecure: false,
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(60),
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            retry: RetryPolicy::default(),
            metrics: None,
            connect_to: None,
        }
    }

    /// Authenticates with HTTP basic credentials.
    #[must_use]
    pub fn basic_auth(mut self, username: impl Into<String>, password: impl Into<String>) -> Self {
        self.auth = Auth::Basic { username: username.into(), password: Secret::new(password.into()) };
        self
    }

    /// Sets the authentication.
    #[must_use]
    pub fn auth(mut self, auth: Auth) -> Self {
        self.auth = auth;
        self
    }

    /// Trusts only the CAs of this PEM bundle (instead of the system store).
    #[must_use]
    pub fn ca_pem(mut self, pem: impl AsRef<[u8]>) -> Self {
        self.ca_pem = Some(pem.as_ref().to_vec());
        self
    }

    /// Accepts any server certificate. For labs only; cannot be combined
    /// with [`IronicClientBuilder::ca_pem`].
    #[must_use]
    pub fn insecure(mut self, insecure: bool) -> Self {
        self.insecure = insecure;
        self
    }

    /// How long establishing a connection may take (default 10 s).
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long one request may take, answer included (default 60 s).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The most requests this client has in flight at once (default
    /// [`DEFAULT_MAX_IN_FLIGHT`]).
    #[must_use]
    pub fn max_in_flight(mut self, max: usize) -> Self {
        self.max_in_flight = max;
        self
    }

    /// The retry policy for retryable failures.
    #[must_use]
    pub fn retry_policy(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Counts requests into `metrics` (shared between clients, or exported by
    /// the caller) instead of counters of the client's own.
    #[must_use]
    pub fn metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Connects to `addr` instead of resolving the endpoint's host name, like curl's
    /// `--connect-to`: the URL, the `Host` header and the name the server's certificate must
    /// carry stay the endpoint's, so a wrong address fails verification instead of receiving
    /// the credentials. For an Ironic Service reached from outside its cluster.
    #[must_use]
    pub fn connect_to(mut self, addr: std::net::SocketAddr) -> Self {
        self.connect_to = Some(addr);
        self
    }

    /// Builds the client and negotiates the microversion with the server.
    pub async fn build(self) -> Result<IronicClient> {
        let transport = self.transport()?;
        IronicClient::connect(transport).await
    }

    pub(crate) fn transport(self) -> Result<Transport> {
        let base = normalise_endpoint(&self.endpoint)?;
        if self.max_in_flight == 0 {
            return Err(Error::Config("max_in_flight must be at least 1".into()));
        }
        if self.retry.max_attempts == 0 {
            return Err(Error::Config("the retry policy needs at least one attempt".into()));
        }
        let trust = match (self.ca_pem, self.insecure) {
            (Some(_), true) => {
                return Err(Error::Config("a CA bundle and insecure mode exclude each other".into()));
            }
            (Some(pem), false) => Trust::CaBundle(pem),
            (None, true) => Trust::Insecure,
            (None, false) => Trust::System,
        };
        let tls = tls::client_config(&trust, base.scheme() == "https")?;
        let mut http = reqwest::Client::builder();
        if let (Some(addr), Some(host)) = (self.connect_to, base.host_str()) {
            // The endpoint's port when it names one, else the address's.
            http = http.resolve(host, addr);
        }
        let http = http
            .tls_backend_preconfigured(tls)
            .connect_timeout(self.connect_timeout)
            .timeout(self.timeout)
            // Ironic speaks HTTP/1.1 only; keep one idle connection per
            // permit, and drop idle ones well before cheroot's 10 s idle
            // timeout closes them under us.
            .http1_only()
            .pool_max_idle_per_host(self.max_in_flight)
            .pool_idle_timeout(Duration::from_secs(5))
            .user_agent(concat!("ferrometal-ironic-client/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Transport {
            http,
            base,
            auth: self.auth,
            limiter: Semaphore::new(self.max_in_flight),
            retry: self.retry,
            metrics: self.metrics.unwrap_or_default(),
        })
    }
}

/// Parses the endpoint and strips a trailing `/v1`, so both
/// `https://ironic:6385` and metal3's usual `https://ironic:6385/v1/` work.
fn normalise_endpoint(endpoint: &str) -> Result<Url> {
    let mut url =
        Url::parse(endpoint.trim()).map_err(|e| Error::Config(format!("invalid Ironic endpoint URL: {e}")))?;
    // Credentials in the URL would leak into every error message.
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Error::Config("put credentials in basic_auth, not in the endpoint URL".into()));
    }
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Error::Config(format!("Ironic endpoint {url} must be http or https")));
    }
    url.set_query(None);
    url.set_fragment(None);
    let segments: Vec<String> =
        url.path_segments().map(|s| s.filter(|s| !s.is_empty()).map(str::to_owned).collect()).unwrap_or_default();
    let keep = match segments.last() {
        Some(last) if last == "v1" => &segments[..segments.len() - 1],
        _ => &segments[..],
    };
    url.set_path(&format!("{}/", keep.join("/")));
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_normalised() {
        for (input, want) in [
            ("http://127.0.0.1:6385", "http://127.0.0.1:6385/"),
            ("http://127.0.0.1:6385/", "http://127.0.0.1:6385/"),
            ("https://ironic:6385/v1/", "https://ironic:6385/"),
            ("https://ironic:6385/v1", "https://ironic:6385/"),
            ("https://gw/baremetal/v1/", "https://gw/baremetal/"),
            ("https://gw/baremetal", "https://gw/baremetal/"),
        ] {
            assert_eq!(normalise_endpoint(input).unwrap().as_str(), want, "{input}");
        }
    }

    #[test]
    fn bad_endpoints_and_options_are_refused() {
        assert!(normalise_endpoint("ftp://x").is_err());
        assert!(normalise_endpoint("not a url").is_err());
        let err = normalise_endpoint("http://admin:pw@ironic:6385").unwrap_err();
        assert!(!err.to_string().contains("pw@"), "{err}");
        let both = IronicClientBuilder::new("https://x").ca_pem("pem").insecure(true);
        assert!(matches!(both.transport(), Err(Error::Config(_))));
        let zero = IronicClientBuilder::new("http://x").max_in_flight(0);
        assert!(matches!(zero.transport(), Err(Error::Config(_))));
    }

    #[test]
    fn debug_output_hides_the_password() {
        let b = IronicClientBuilder::new("http://x").basic_auth("admin", "hunter2");
        let debug = format!("{b:?}");
        assert!(!debug.contains("hunter2") && debug.contains("admin"), "{debug}");
    }
}
