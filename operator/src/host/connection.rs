//! The connection to Ironic: resolved from the configured source, built
//! once, and rebuilt only when what it was built from changes (an `Ironic`
//! resource that moved, rotated credentials, a new CA).
//!
//! With no Ironic configured the controller keeps running: hosts report
//! that no provisioner is configured instead of crashing the operator.

use crate::host::config::{CaSource, CredentialsSource, EndpointConfig, IronicSource};
use crds::ironic::Ironic;
use crds::ironic::tls::ReferenceKind;
use ironic_client::{Auth, IronicClient};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
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
pub enum ProvisionerError {
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
        digest.finalize().to_vec()
    }
}

#[derive(Default)]
struct State {
    client: Option<(IronicClient, Vec<u8>)>,
    checked: Option<Instant>,
    failure: Option<(Instant, ProvisionerError)>,
}

/// Hands out the Ironic client.
pub struct Provisioner {
    source: IronicSource,
    kube: kube::Client,
    timeout: Duration,
    metrics: Arc<ironic_client::Metrics>,
    state: tokio::sync::Mutex<State>,
}

impl Provisioner {
    pub fn new(
        source: IronicSource,
        kube: kube::Client,
        timeout: Duration,
        metrics: Arc<ironic_client::Metrics>,
    ) -> Self {
        Self { source, kube, timeout, metrics, state: tokio::sync::Mutex::new(State::default()) }
    }

    /// Whether any Ironic is configured at all.
    pub fn configured(&self) -> bool {
        !matches!(self.source, IronicSource::NotConfigured)
    }

    /// The client, connecting (or reconnecting after a change) as needed.
    pub async fn client(&self) -> Result<IronicClient, ProvisionerError> {
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
                let keep = matches!(err, ProvisionerError::Settings(_) | ProvisionerError::NotReady { .. });
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

    async fn connect(
        &self,
        current: Option<&(IronicClient, Vec<u8>)>,
    ) -> Result<(IronicClient, Vec<u8>), ProvisionerError> {
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
        let client = builder
            .build()
            .await
            .map_err(|source| ProvisionerError::Connect { endpoint: settings.endpoint.clone(), source })?;
        tracing::info!(endpoint = %settings.endpoint, api_version = %client.api_version(), "connected to Ironic");
        Ok((client, fingerprint))
    }

    async fn resolve(&self) -> Result<Settings, ProvisionerError> {
        match &self.source {
            IronicSource::NotConfigured => Err(ProvisionerError::NotConfigured),
            IronicSource::Endpoint(endpoint) => self.resolve_endpoint(endpoint).await,
            IronicSource::Resource { namespace, name } => self.resolve_resource(namespace, name).await,
        }
    }

    async fn resolve_endpoint(&self, config: &EndpointConfig) -> Result<Settings, ProvisionerError> {
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
        let ca_pem =
            match &config.ca {
                None => None,
                Some(CaSource::Pem(pem)) => Some(pem.clone().into_bytes()),
                Some(CaSource::File(path)) => Some(std::fs::read(path).map_err(|e| {
                    ProvisionerError::Settings(format!("cannot read the CA file {}: {e}", path.display()))
                })?),
            };
        Ok(Settings { endpoint: config.url.clone(), username, password, ca_pem, insecure: config.insecure })
    }

    async fn resolve_resource(&self, namespace: &str, name: &str) -> Result<Settings, ProvisionerError> {
        let ironic_name = format!("{namespace}/{name}");
        let not_ready = |reason: String| ProvisionerError::NotReady { ironic: ironic_name.clone(), reason };
        let api: Api<Ironic> = Api::namespaced(self.kube.clone(), namespace);
        let ironic = api
            .get_opt(name)
            .await
            .map_err(|e| not_ready(format!("cannot read it: {e}")))?
            .ok_or_else(|| not_ready("it does not exist".into()))?;
        let status = ironic.status.unwrap_or_default();
        let endpoint = status
            .api_endpoint
            .filter(|e| !e.is_empty())
            .ok_or_else(|| not_ready("it has no API endpoint in its status yet".into()))?;
        let secret_name = status
            .api_credentials_secret_name
            .or(ironic.spec.api_credentials_name)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| not_ready("it has no API credentials Secret yet".into()))?;
        let (username, password) = self.basic_auth_secret(namespace, &secret_name).await?;
        let ca_pem = match status.ca_ref {
            Some(reference) => {
                let ca_name = reference.name.clone().unwrap_or_default();
                let data = match reference.kind.unwrap_or(ReferenceKind::ConfigMap) {
                    ReferenceKind::ConfigMap => {
                        let api: Api<ConfigMap> = Api::namespaced(self.kube.clone(), namespace);
                        let cm = api
                            .get(&ca_name)
                            .await
                            .map_err(|e| ProvisionerError::Settings(format!("ConfigMap {namespace}/{ca_name}: {e}")))?;
                        cm.data.unwrap_or_default().into_iter().map(|(k, v)| (k, v.into_bytes())).collect()
                    }
                    ReferenceKind::Secret => {
                        let data = self.secret_data(namespace, &ca_name).await?;
                        data.into_iter().map(|(k, v)| (k, v.0)).collect::<BTreeMap<_, _>>()
                    }
                };
                Some(pick_key(&data, reference.key.as_deref()).ok_or_else(|| {
                    ProvisionerError::Settings(format!("{namespace}/{ca_name} holds no CA under the referenced key"))
                })?)
            }
            None => None,
        };
        Ok(Settings { endpoint, username: Some(username), password: Some(password), ca_pem, insecure: false })
    }

    async fn secret_data(&self, namespace: &str, name: &str) -> Result<BTreeMap<String, ByteString>, ProvisionerError> {
        let api: Api<Secret> = Api::namespaced(self.kube.clone(), namespace);
        let secret =
            api.get(name).await.map_err(|e| ProvisionerError::Settings(format!("Secret {namespace}/{name}: {e}")))?;
        Ok(secret.data.unwrap_or_default())
    }

    async fn basic_auth_secret(&self, namespace: &str, name: &str) -> Result<(String, String), ProvisionerError> {
        let data = self.secret_data(namespace, name).await?;
        let text =
            |key: &str| data.get(key).and_then(|v| String::from_utf8(v.0.clone()).ok()).map(|s| s.trim().to_string());
        match (text("username"), text("password")) {
            (Some(u), Some(p)) if !u.is_empty() => Ok((u, p)),
            _ => Err(ProvisionerError::Settings(format!(
                "Secret {namespace}/{name} must hold a username and a password"
            ))),
        }
    }
}

/// The value under `key`, or the only value when no key is named.
fn pick_key(data: &BTreeMap<String, Vec<u8>>, key: Option<&str>) -> Option<Vec<u8>> {
    match key {
        Some(key) => data.get(key).cloned(),
        None if data.len() == 1 => data.values().next().cloned(),
        None => data.get("ca.crt").cloned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ca_key_is_the_named_one_or_the_only_one() {
        let mut data = BTreeMap::new();
        data.insert("bundle.pem".to_string(), b"A".to_vec());
        assert_eq!(pick_key(&data, None), Some(b"A".to_vec()));
        assert_eq!(pick_key(&data, Some("other")), None);
        data.insert("ca.crt".to_string(), b"B".to_vec());
        assert_eq!(pick_key(&data, None), Some(b"B".to_vec()));
        assert_eq!(pick_key(&data, Some("bundle.pem")), Some(b"A".to_vec()));
    }

    #[test]
    fn fingerprints_change_with_any_setting() {
        let base = || Settings {
            endpoint: "http://x".into(),
            username: Some("u".into()),
            password: Some("p".into()),
            ca_pem: None,
            insecure: false,
        };
        let fp = base().fingerprint();
        assert_eq!(fp, base().fingerprint());
        assert_ne!(fp, Settings { password: Some("q".into()), ..base() }.fingerprint());
        assert_ne!(fp, Settings { ca_pem: Some(b"ca".to_vec()), ..base() }.fingerprint());
        assert_ne!(fp, Settings { endpoint: "http://y".into(), ..base() }.fingerprint());
    }
}
