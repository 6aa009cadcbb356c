//! The connection to Ironic: resolved from the configured source, built
//! once, and rebuilt only when what it was built from changes (an `Ironic`
//! resource that moved, rotated credentials, a new CA).
//!
//! With no Ironic configured the controller keeps running: hosts report
//! that no provisioner is configured instead of crashing the operator.

use crate::host::config::{CaSource, CredentialsSource, EndpointConfig, IronicSource};
use crate::kit::names::controlled_by;
use crds::ironic::names::{CA_CERT_KEY, ca_bundle, endpoints, generated_credentials};
use crds::ironic::{Ironic, TlsMode};
use ironic_client::{Auth, IronicClient};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::{Api, ResourceExt};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the source is read again to notice rotated credentials or a
/// moved endpoint. Reading it costs no Ironic call.
const RECHECK: Duration = Duration::from_secs(60);
/// How long a failure to connect is remembered before trying again.
const RETRY: Duration = Duration::from_secs(5);

/// Why there is no Ironic client.
#[derive(Clone, Debug, thiserror::Error)]
pub(super) enum Error {
    #[error("no provisioner is configured: start the operator with --ironic-name or --ironic-endpoint")]
    NotConfigured,
    #[error("Ironic {ironic} is not ready: {reason}")]
    NotReady { ironic: String, reason: String },
    #[error("cannot read the Ironic credentials or CA: {0}")]
    Settings(String),
    #[error("cannot connect to Ironic at {endpoint}: {source}")]
    Connect {
        endpoint: String,
        #[source]
        source: ironic_client::Error,
    },
}

/// What a client is built from.
struct Settings {
    endpoint: String,
    username: Option<String>,
    password: Option<String>,
    ca_pem: Option<Vec<u8>>,
    insecure: bool,
    /// Where to connect instead of resolving the endpoint's host.
    connect_to: Option<std::net::SocketAddr>,
}

impl Settings {
    /// A digest of everything, to notice changes without keeping secrets around.
    fn fingerprint(&self) -> Vec<u8> {
        let mut digest = Sha256::new();
        for part in [Some(self.endpoint.as_str()), self.username.as_deref(), self.password.as_deref()] {
            digest.update(part.unwrap_or_default().as_bytes());
            digest.update([0]);
        }
        digest.update(self.ca_pem.as_deref().unwrap_or_default());
        digest.update([u8::from(self.insecure)]);
        digest.update(self.connect_to.map(|a| a.to_string()).unwrap_or_default().as_bytes());
        digest.finalize().to_vec()
    }
}

#[derive(Default)]
struct State {
    client: Option<(IronicClient, Vec<u8>)>,
    checked: Option<Instant>,
    failure: Option<(Instant, Error)>,
}

/// Hands out the Ironic client.
pub(super) struct Provisioner {
    source: IronicSource,
    kube: kube::Client,
    timeout: Duration,
    metrics: Arc<ironic_client::Metrics>,
    state: tokio::sync::Mutex<State>,
}

impl Provisioner {
    pub(super) fn new(
        source: IronicSource,
        kube: kube::Client,
        timeout: Duration,
        metrics: Arc<ironic_client::Metrics>,
    ) -> Self {
        Self { source, kube, timeout, metrics, state: tokio::sync::Mutex::new(State::default()) }
    }

    /// Whether any Ironic is configured at all.
    pub(super) fn configured(&self) -> bool {
        !matches!(self.source, IronicSource::NotConfigured)
    }

    /// The client, connecting (or reconnecting after a change) as needed.
    pub(super) async fn client(&self) -> Result<IronicClient, Error> {
        let mut state = self.state.lock().await;
        if let (Some((client, _)), Some(checked)) = (&state.client, state.checked)
            && checked.elapsed() < RECHECK
        {
            return Ok(client.clone());
        }
        if let Some((at, err)) = &state.failure
            && at.elapsed() < RETRY
        {
            return Err(err.clone());
        }
        match self.connect(state.client.as_ref()).await {
            Ok((client, fingerprint)) => {
                state.client = Some((client.clone(), fingerprint));
                state.checked = Some(Instant::now());
                state.failure = None;
                Ok(client)
            }
            Err(err) => {
                // An unreadable source does not invalidate a working client.
                let keep = matches!(err, Error::Settings(_) | Error::NotReady { .. });
                if let (true, Some((client, _))) = (keep, state.client.clone()) {
                    tracing::warn!(error = %err, "keeping the current Ironic connection");
                    state.checked = Some(Instant::now());
                    return Ok(client);
                }
                state.failure = Some((Instant::now(), err.clone()));
                Err(err)
            }
        }
    }

    async fn connect(&self, current: Option<&(IronicClient, Vec<u8>)>) -> Result<(IronicClient, Vec<u8>), Error> {
        let settings = self.resolve().await?;
        let fingerprint = settings.fingerprint();
        if let Some((client, current)) = current
            && *current == fingerprint
        {
            return Ok((client.clone(), fingerprint));
        }
        let mut builder = IronicClient::builder(settings.endpoint.clone())
            .timeout(self.timeout)
            .metrics(self.metrics.clone())
            .insecure(settings.insecure);
        if let (Some(username), Some(password)) = (settings.username, settings.password) {
            builder = builder.auth(Auth::Basic { username, password: password.into() });
        }
        if let Some(pem) = settings.ca_pem {
            builder = builder.ca_pem(pem);
        }
        if let Some(addr) = settings.connect_to {
            builder = builder.connect_to(addr);
        }
        let client =
            builder.build().await.map_err(|source| Error::Connect { endpoint: settings.endpoint.clone(), source })?;
        tracing::info!(endpoint = %settings.endpoint, api_version = %client.api_version(), "connected to Ironic");
        Ok((client, fingerprint))
    }

    async fn resolve(&self) -> Result<Settings, Error> {
        match &self.source {
            IronicSource::NotConfigured => Err(Error::NotConfigured),
            IronicSource::Endpoint(endpoint) => self.resolve_endpoint(endpoint).await,
            IronicSource::Resource { namespace, name, connect_to } => {
                self.resolve_resource(namespace, name, *connect_to).await
            }
        }
    }

    async fn resolve_endpoint(&self, config: &EndpointConfig) -> Result<Settings, Error> {
        let (username, password) = match &config.credentials {
            CredentialsSource::None => (None, None),
            CredentialsSource::Inline { username, password } => {
                (Some(username.clone()), Some(password.expose().clone()))
            }
            CredentialsSource::Directory(dir) => {
                let read = |file: &str| std::fs::read_to_string(dir.join(file)).ok().map(|s| s.trim().to_string());
                match (read("username"), read("password")) {
                    (Some(u), Some(p)) if !u.is_empty() => (Some(u), Some(p)),
                    _ => (None, None),
                }
            }
            CredentialsSource::Secret { namespace, name } => {
                let (u, p) = self.basic_auth_secret(namespace, name).await?;
                (Some(u), Some(p))
            }
        };
        let ca_pem = match &config.ca {
            None => None,
            Some(CaSource::Pem(pem)) => Some(pem.clone().into_bytes()),
            Some(CaSource::File(path)) => Some(
                std::fs::read(path)
                    .map_err(|e| Error::Settings(format!("cannot read the CA file {}: {e}", path.display())))?,
            ),
        };
        Ok(Settings {
            endpoint: config.url.clone(),
            username,
            password,
            ca_pem,
            insecure: config.insecure,
            connect_to: None,
        })
    }

    /// The connection to an `Ironic` resource, from what only its spec and names say:
    /// whoever may patch `ironics/status` must not be able to choose where the Ironic password
    /// (and with it every BMC password) is sent. The endpoint is its Service's; the credentials
    /// are the Secret its spec names, else the generated one, which must be controlled by this
    /// very Ironic; the CA is the bundle it publishes, controlled by it too.
    async fn resolve_resource(
        &self,
        namespace: &str,
        name: &str,
        connect_to: Option<std::net::SocketAddr>,
    ) -> Result<Settings, Error> {
        let ironic_name = format!("{namespace}/{name}");
        let not_ready = |reason: String| Error::NotReady { ironic: ironic_name.clone(), reason };
        let api: Api<Ironic> = Api::namespaced(self.kube.clone(), namespace);
        let ironic = api
            .get_opt(name)
            .await
            .map_err(|e| not_ready(format!("cannot read it: {e}")))?
            .ok_or_else(|| not_ready("it does not exist".into()))?;
        let uid = ironic.uid().unwrap_or_default();
        let mode = ironic.spec.tls_mode();
        let (endpoint, _) = endpoints(name, namespace, false, mode.is_some());
        let (secret_name, generated) =
            match ironic.spec.api_credentials_name.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
                Some(named) => (named.to_string(), false),
                None => (generated_credentials(name), true),
            };
        let secrets: Api<Secret> = Api::namespaced(self.kube.clone(), namespace);
        let secret = secrets
            .get_opt(&secret_name)
            .await
            .map_err(|e| Error::Settings(format!("Secret {namespace}/{secret_name}: {e}")))?
            .ok_or_else(|| not_ready(format!("its API credentials Secret {secret_name} does not exist yet")))?;
        if generated && !controlled_by(&secret.metadata, &uid) {
            return Err(Error::Settings(format!(
                "Secret {namespace}/{secret_name} is not controlled by Ironic {ironic_name}: its credentials are not used"
            )));
        }
        let (username, password) = basic_auth(namespace, &secret_name, &secret.data.unwrap_or_default())?;
        let ca_pem = match mode {
            None => None,
            Some(mode) => {
                let configmaps: Api<ConfigMap> = Api::namespaced(self.kube.clone(), namespace);
                let bundle_name = ca_bundle(name);
                let bundle = configmaps
                    .get_opt(&bundle_name)
                    .await
                    .map_err(|e| Error::Settings(format!("ConfigMap {namespace}/{bundle_name}: {e}")))?;
                match bundle {
                    Some(bundle) if !controlled_by(&bundle.metadata, &uid) => {
                        return Err(Error::Settings(format!(
                            "ConfigMap {namespace}/{bundle_name} is not controlled by Ironic {ironic_name}: its CA is not trusted"
                        )));
                    }
                    Some(bundle) => Some(
                        bundle
                            .data
                            .unwrap_or_default()
                            .remove(CA_CERT_KEY)
                            .filter(|pem| !pem.trim().is_empty())
                            .ok_or_else(|| {
                                Error::Settings(format!("ConfigMap {namespace}/{bundle_name} holds no {CA_CERT_KEY}"))
                            })?
                            .into_bytes(),
                    ),
                    // The operator's own CA is always published; a user's certificate without
                    // a CA is verified against the system's roots.
                    None if mode == TlsMode::Auto => {
                        return Err(not_ready("its CA bundle is not published yet".into()));
                    }
                    None => None,
                }
            }
        };
        Ok(Settings {
            endpoint,
            username: Some(username),
            password: Some(password),
            ca_pem,
            insecure: false,
            connect_to,
        })
    }

    async fn secret_data(&self, namespace: &str, name: &str) -> Result<BTreeMap<String, ByteString>, Error> {
        let api: Api<Secret> = Api::namespaced(self.kube.clone(), namespace);
        let secret = api.get(name).await.map_err(|e| Error::Settings(format!("Secret {namespace}/{name}: {e}")))?;
        Ok(secret.data.unwrap_or_default())
    }

    async fn basic_auth_secret(&self, namespace: &str, name: &str) -> Result<(String, String), Error> {
        basic_auth(namespace, name, &self.secret_data(namespace, name).await?)
    }
}

/// `username` and `password` of a Secret's data.
fn basic_auth(namespace: &str, name: &str, data: &BTreeMap<String, ByteString>) -> Result<(String, String), Error> {
    let text =
        |key: &str| data.get(key).and_then(|v| String::from_utf8(v.0.clone()).ok()).map(|s| s.trim().to_string());
    match (text("username"), text("password")) {
        (Some(u), Some(p)) if !u.is_empty() => Ok((u, p)),
        _ => Err(Error::Settings(format!("Secret {namespace}/{name} must hold a username and a password"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_change_with_any_setting() {
        let base = || Settings {
            endpoint: "http://x".into(),
            username: Some("u".into()),
            password: Some("p".into()),
            ca_pem: None,
            insecure: false,
            connect_to: None,
        };
        let fp = base().fingerprint();
        assert_eq!(fp, base().fingerprint());
        assert_ne!(fp, Settings { password: Some("q".into()), ..base() }.fingerprint());
        assert_ne!(fp, Settings { ca_pem: Some(b"ca".to_vec()), ..base() }.fingerprint());
        assert_ne!(fp, Settings { endpoint: "http://y".into(), ..base() }.fingerprint());
    }
}
