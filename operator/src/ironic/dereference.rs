//! The dereference step, the only one of the Ironic's own steps that reads: the Ironic afresh,
//! the user's linked Secrets and ConfigMaps, the Secrets the operator generated for it
//! (credentials, htpasswd, Auto TLS, the CertificateSigningRequest's key and certificate), the
//! Secret cert-manager writes, the CertificateSigningRequest in flight, the addresses of the
//! nodes Ironic may run on, and, while the Auto CA is renewed, the certificate the API
//! presents. What it finds is judged later (validate, resolve); here a missing
//! object is just absent.

use super::build::network::api_service_port;
use super::credentials;
use super::linked::{self, Reference, Source, SourceKind};
use super::names::Names;
use super::nodes;
use super::tls::{self, sans};
use crate::kit::ledger::Unstored;
use crate::kit::names::controlled_by;
use crate::kit::{KubeError, Ledger, Verb};
use crds::ironic::{Ironic, TlsMode};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use kube::api::Api;
use kube::{Client, ResourceExt};
use std::net::{IpAddr, SocketAddr};

/// Why the Ironic or what it refers to could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error(transparent)]
    Kube(#[from] KubeError),
    #[error("the Ironic was never stored")]
    Unstored(#[from] Unstored),
}

impl Error {
    /// The Kubernetes failure, when there is one.
    pub(crate) fn kube(&self) -> Option<&KubeError> {
        match self {
            Self::Kube(err) => Some(err),
            Self::Unstored(_) => None,
        }
    }
}

/// What the Ironic refers to, as read, for the later steps to judge.
#[derive(Clone, Debug)]
pub(crate) struct Found {
    /// The user's linked Secrets and ConfigMaps; `None` for one that does not exist.
    pub linked: Vec<(Reference, Option<Source>)>,
    pub credentials: credentials::Stored,
    pub tls: tls::Stored,
    /// InternalIP addresses of the nodes Ironic may serve on, when its certificate must
    /// cover them.
    pub node_ips: Vec<IpAddr>,
    /// The certificate should cover node addresses, but the operator may not list nodes.
    pub node_ips_forbidden: bool,
}

/// Reads the Ironic afresh and makes the ledger of this reconcile for it. The watch cache can
/// trail the controller's own last status write, and the version sequences (the database's
/// and Ironic's) decide their next step from status: a stale status would repeat a step.
/// `None` when the Ironic is gone.
pub(crate) async fn owner(client: &Client, cached: &Ironic) -> Result<Option<(Ironic, Ledger)>, Error> {
    let namespace = cached.namespace().unwrap_or_default();
    let name = cached.name_any();
    let api: Api<Ironic> = Api::namespaced(client.clone(), &namespace);
    let Some(ironic) = api.get_opt(&name).await.map_err(KubeError::of::<Ironic>(Verb::Get, &name))? else {
        return Ok(None);
    };
    let ledger = Ledger::new(client.clone(), &ironic, Names::of(&ironic).scope())?;
    Ok(Some((ironic, ledger)))
}

async fn secret(ledger: &Ledger, name: &str) -> Result<Option<Secret>, Error> {
    Ok(ledger.get::<Secret>(name).await?)
}

/// Reads what `ironic` refers to, in its namespace (the ledger's).
pub(crate) async fn run(ledger: &Ledger, ironic: &Ironic) -> Result<Found, Error> {
    let spec = &ironic.spec;
    let names = Names::of(ironic);
    let mut linked = Vec::new();
    for reference in linked::references(spec) {
        let source = match reference.kind {
            SourceKind::Secret => secret(ledger, &reference.name).await?.map(|s| Source::from_secret(&s)),
            SourceKind::ConfigMap => {
                ledger.get::<ConfigMap>(&reference.name).await?.map(|c| Source::from_config_map(&c))
            }
        };
        linked.push((reference, source));
    }
    let user_credentials = spec.api_credentials_name.as_deref().is_some_and(|n| !n.is_empty());
    let credentials = credentials::Stored {
        generated: if user_credentials { None } else { secret(ledger, &names.generated_credentials()).await? },
        htpasswd: secret(ledger, &names.htpasswd()).await?,
    };
    let mut stored = tls::Stored::default();
    match tls::to_read(spec, &names) {
        (Some([ca, serving]), _) => {
            stored.auto_ca = secret(ledger, &ca).await?;
            stored.auto_serving = secret(ledger, &serving).await?;
            stored.rollout = tls::auto::read_rollout(ledger, &names, spec.high_availability()).await?;
            if let Some(rollout) = stored.rollout.as_mut().filter(|r| r.reloads) {
                rollout.presented =
                    presented_during_renewal(ledger, ironic, &names, &stored.auto_ca, &stored.auto_serving).await?;
            }
        }
        (None, Some(cert_manager)) => stored.cert_manager = secret(ledger, &cert_manager).await?,
        (None, None) => {}
    }
    let mode = spec.tls_mode();
    if mode == Some(TlsMode::CertificateSigningRequest) {
        stored.csr = signing_request(ledger, ironic, &names).await?;
    }
    let computes_names =
        matches!(mode, Some(TlsMode::Auto | TlsMode::CertManager | TlsMode::CertificateSigningRequest));
    let nodes = if computes_names && sans::uses_node_addresses(spec) {
        nodes::addresses(ledger.client(), spec.node_selector.as_ref()).await
    } else {
        nodes::NodeAddresses::default()
    };
    Ok(Found { linked, credentials, tls: stored, node_ips: nodes.ips, node_ips_forbidden: nodes.forbidden })
}

/// Mode Auto with one pod that reloads its certificate in place, while a renewal of the CA is
/// under way: the certificate its API presents through the Service, verified against every CA
/// the operator publishes. `None` between renewals (nothing waits for it; a reconcile then
/// makes no connection) and when the API presents nothing trusted.
async fn presented_during_renewal(
    ledger: &Ledger,
    ironic: &Ironic,
    names: &Names,
    ca: &Option<Secret>,
    serving: &Option<Secret>,
) -> Result<Option<Vec<u8>>, Error> {
    // Only this Ironic's own Secrets: someone else's is a conflict resolve reports.
    let uid = ironic.uid().unwrap_or_default();
    let ours =
        |secret: &Option<Secret>| secret.as_ref().filter(|s| controlled_by(&s.metadata, &uid)).map(Source::from_secret);
    let Some(bundle) = tls::auto::stored(ours(ca).as_ref(), ours(serving).as_ref()) else { return Ok(None) };
    if bundle.next.is_none() && bundle.retired.is_none() {
        return Ok(None);
    }
    let service = ledger.get::<Service>(&names.service()).await?;
    let cluster_ip = service.and_then(|s| s.spec?.cluster_ip).and_then(|ip| ip.parse::<IpAddr>().ok());
    let Some(ip) = cluster_ip else { return Ok(None) };
    let port = u16::try_from(api_service_port(true)).unwrap_or(443);
    let server_name = format!("{}.{}.svc", names.service(), ironic.namespace().unwrap_or_default());
    match tls::presented::presented(SocketAddr::new(ip, port), &server_name, &bundle.trusted()).await {
        Ok(leaf) => Ok(Some(leaf)),
        Err(why) => {
            tracing::debug!(%why, "the API presents no certificate the published CAs trust yet");
            Ok(None)
        }
    }
}

/// Mode CertificateSigningRequest: the serving Secret, the key of the request in flight, that
/// request (named after the key, so found again after a crash) and whether the apiserver knows
/// `expirationSeconds`.
async fn signing_request(ledger: &Ledger, ironic: &Ironic, names: &Names) -> Result<tls::csr::Stored, Error> {
    let serving = secret(ledger, &names.csr_serving()).await?;
    let request_key = secret(ledger, &names.csr_request_key()).await?;
    let namespace = ironic.namespace().unwrap_or_default();
    let key = request_key.as_ref().and_then(|s| s.data.as_ref()?.get(tls::csr::REQUEST_KEY)).map(|k| &k.0);
    let name = key.and_then(|k| std::str::from_utf8(k).ok()).and_then(|k| tls::csr::request_name(&namespace, names, k));
    let request = match &name {
        Some(name) => {
            let api: Api<CertificateSigningRequest> = Api::all(ledger.client().clone());
            api.get_opt(name).await.map_err(KubeError::of::<CertificateSigningRequest>(Verb::Get, name))?
        }
        None => None,
    };
    // An apiserver that cannot say its version gets the request without the field: the
    // signer's default lifetime rather than a request 1.20 to 1.21 would refuse.
    let supports_expiration = match ledger.client().apiserver_version().await {
        Ok(info) => kubernetes_minor(&info.major, &info.minor)
            .is_some_and(|minor| minor >= tls::csr::EXPIRATION_SECONDS_SINCE_MINOR),
        Err(_) => false,
    };
    Ok(tls::csr::Stored { serving, request_key, request, supports_expiration })
}

/// The minor version of a Kubernetes 1.x apiserver (`"20+"` as some distributions say it).
fn kubernetes_minor(major: &str, minor: &str) -> Option<u32> {
    if major != "1" {
        return major.parse::<u32>().ok().filter(|m| *m > 1).map(|_| u32::MAX);
    }
    minor.trim_end_matches('+').parse().ok()
}

#[cfg(test)]
mod tests {
    use super::kubernetes_minor;

    #[test]
    fn the_minor_version_reads_distribution_suffixes() {
        assert_eq!(kubernetes_minor("1", "20"), Some(20));
        assert_eq!(kubernetes_minor("1", "22+"), Some(22));
        assert_eq!(kubernetes_minor("1", "x"), None);
        assert_eq!(kubernetes_minor("2", "0"), Some(u32::MAX));
    }
}
