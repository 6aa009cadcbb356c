//! How the server and Ironic's pods talk: what the spec asks, what the running server does,
//! and Ironic's pods in between (a server moves to or away from TLS only as they follow).

use super::super::names::Names;
use super::super::run::Run;
use super::super::status::reasons;
use super::super::tls::{self, Material};
use super::super::tls_switch::{self, Clients, Transport};
use super::error::Error;
use super::found::Found;
use crate::kit::Progress;
use crds::ironic::database::ManagedDatabase;
use k8s_openapi::api::core::v1::Secret;
use std::time::Duration;

pub(super) struct Wire {
    /// TLS is what the spec asks for.
    pub wanted: bool,
    /// What the running server does, when one runs.
    pub live: Option<Transport>,
    /// The certificates, when the server serves or may serve TLS.
    pub material: Option<Material>,
    /// Where Ironic's pods stand on the CA.
    pub clients: Clients,
    /// What the server does from this reconcile on.
    pub transport: Transport,
}

impl Wire {
    /// The certificates the server serves, when it serves TLS.
    pub(super) fn serving(&self) -> Option<&Material> {
        self.material.as_ref().filter(|_| self.transport.serves())
    }

    /// How long until the generated serving certificate is renewed.
    pub(super) fn renewal(&self, now: i64) -> Option<Duration> {
        let at = self.material.as_ref()?.generated.as_ref()?.renew_at?;
        Some(Duration::from_secs(u64::try_from(at.saturating_sub(now).max(1)).unwrap_or(1)))
    }

    /// How Ironic reaches the server, in DatabaseReady's message.
    pub(super) fn describe(&self) -> String {
        match (self.transport, &self.clients) {
            (Transport::Offered, Clients::Pending(waiting)) if self.wanted => {
                format!("over verified TLS, not yet required ({waiting})")
            }
            (Transport::Offered, Clients::Pending(waiting)) => {
                format!("over verified TLS, clear text accepted too, until TLS is off ({waiting})")
            }
            (Transport::Plain, _) => "without TLS".to_string(),
            _ => "over verified TLS".to_string(),
        }
    }
}

/// The transport, or why TLS the spec asks for cannot be served.
pub(super) async fn run(run: &Run<'_>, found: &Found) -> Result<Result<Wire, Progress>, Error> {
    let wanted = tls::enabled(&found.managed);
    let live = found.stateful_set.as_ref().map(tls_switch::live_transport);
    let material = if wanted || live.is_some_and(Transport::serves) {
        match material(run, &found.names, &found.managed).await? {
            // Turning TLS off, a server keeps offering what Ironic's pods trust, never a new CA.
            Ok(material) if !wanted && material.generated.as_ref().is_some_and(|g| g.issued.is_some()) => None,
            Ok(material) => Some(material),
            Err(message) if wanted => return Ok(Err(Progress::failed(reasons::TLS_INVALID, message))),
            Err(_) => None,
        }
    } else {
        None
    };
    let clients = tls_switch::clients_of(run, &found.names, wanted, live).await.map_err(Error::Transport)?;
    let transport = if material.is_some() { tls_switch::transport(wanted, live, &clients) } else { Transport::Plain };
    Ok(Ok(Wire { wanted, live, material, clients, transport }))
}

/// The TLS material, or why the user's Secret cannot serve.
async fn material(run: &Run<'_>, names: &Names, managed: &ManagedDatabase) -> Result<Result<Material, String>, Error> {
    let get = |name: String| async move { run.ledger.get::<Secret>(&name).await.map_err(Error::Transport) };
    if let Some(name) = tls::user_secret(managed) {
        let secret = get(name.to_string()).await?;
        return Ok(tls::from_user_secret(name, secret.as_ref()).map_err(|e| e.to_string()));
    }
    let ca = get(names.tls_ca()).await?;
    let serving = get(names.tls_serving()).await?;
    let sans = tls::subject_alt_names(names, run.namespace(), &run.config.cluster_domain);
    match tls::generated(names, run.namespace(), ca.as_ref(), serving.as_ref(), &sans, run.now) {
        Ok(material) => Ok(Ok(material)),
        Err(tls::Error::Generate(e)) => Err(Error::Certificates(e)),
        Err(other) => Ok(Err(other.to_string())),
    }
}
