//! The resolve step: from the validated Ironic, what was dereferenced and what the database
//! reported, a [`Resolved`] value holding everything the builders need, with networking,
//! ports and addresses computed once. Pure apart from what it may have to make: a password,
//! the bcrypt hash of the htpasswd (off the async workers) and Auto TLS certificates.

pub(crate) mod network;
pub(crate) mod settings;

pub(crate) use network::{Network, VirtualIps};
pub(crate) use settings::Settings;

use super::config::{Config, DownloaderSettings};
use super::credentials::{self, ApiCredentials};
use super::dereference::Found;
use super::hash;
use super::linked::{self, CaReference, Source, SourceKind, fields};
use super::names::Names;
use super::tls::{self, TlsPlan, sans};
use super::upgrade::{self, UpgradeVersions, VersionPlan};
use super::validate::Valid;
use super::version::ResolvedVersion;
use crate::database::{Connection, DatabaseOutcome, SchemaPlan};
use crds::ironic::{Ironic, TlsMode};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{Resource, ResourceExt};
use std::time::Duration;

/// Why the inputs could not be resolved.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error("cannot resolve the API credentials")]
    Credentials(#[from] credentials::Error),
    #[error("cannot resolve TLS")]
    Tls(#[from] tls::Error),
}

/// Everything the builders need; the Ironic itself reaches them only as its names, namespace
/// and owner reference.
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    pub names: Names,
    pub namespace: String,
    /// The controller reference every object carries (the ledger stamps it again on apply).
    pub owner: Option<OwnerReference>,
    pub version: ResolvedVersion,
    /// What to do about the version: deploy it, or refuse a downgrade.
    pub plan: VersionPlan,
    /// The upgrade the Jobs are for, when Jobs are needed.
    pub upgrade: Option<UpgradeVersions>,
    /// The database has no Ironic schema (read just now): the schema Job must run whatever
    /// status remembers of earlier runs.
    pub schema_missing: bool,
    pub network: Network,
    pub settings: Settings,
    pub credentials: ApiCredentials,
    pub tls: TlsPlan,
    /// Where Ironic's database is; `None` with SQLite.
    pub database: Option<Connection>,
    /// CA bundle for BMC connections.
    pub bmc_ca: Option<CaReference>,
    /// CA bundle for image servers, with the key in use.
    pub trusted_ca: Option<(CaReference, String)>,
    /// Digest of every Secret and ConfigMap the pods use.
    pub content_hash: String,
    pub downloader: DownloaderSettings,
    /// `backoffLimit` of the upgrade Jobs.
    pub upgrade_job_backoff_limit: i32,
    pub upgrade_job_deadline_seconds: i64,
}

impl Resolved {
    /// When the Auto or CertificateSigningRequest serving certificate is due for renewal, from
    /// `now` (Unix seconds).
    pub(crate) fn renewal_after(&self, now: i64) -> Option<Duration> {
        let at = match self.tls.mode {
            // A time already past is a step waiting for the pods' rollout, which is watched, or
            // for the one pod's reload ([`Self::awaits_unwatched`]).
            Some(TlsMode::Auto) => self.tls.material.as_ref().and_then(|m| m.renewal_at).filter(|at| *at > now)?,
            // Once a renewal is requested, the request's own interval applies
            // ([`Self::awaits_unwatched`]): a renewal time already past is no reason to look again
            // every second.
            Some(TlsMode::CertificateSigningRequest)
                if self.tls.csr.as_ref().is_some_and(|c| c.state == tls::csr::State::Issued) =>
            {
                self.tls.material.as_ref().and_then(|m| m.renewal_at)?
            }
            _ => return None,
        };
        Some(Duration::from_secs(u64::try_from(at.saturating_sub(now).max(1)).unwrap_or(1)))
    }

    /// Whether the controller looks again on its progress interval, for what it does not
    /// watch: the one pod reloading a renewed Auto certificate (its API is asked,
    /// [`tls::presented`]), or a CertificateSigningRequest.
    ///
    /// A CertificateSigningRequest waits for an administrator or its signer, or, denied,
    /// failed or refused, for a person to delete it so that the operator asks again: the CSR is
    /// not watched (that would take reading every CSR of the cluster), so the controller looks
    /// again on its progress interval, also while an older certificate still serves.
    pub(crate) fn awaits_unwatched(&self) -> bool {
        self.tls.awaits_reload || self.awaits_signature()
    }

    fn awaits_signature(&self) -> bool {
        self.tls.csr.as_ref().is_some_and(|c| {
            c.state.is_failure() || matches!(c.state, tls::csr::State::Pending { .. } | tls::csr::State::Signing { .. })
        })
    }
}

/// Resolves the inputs of `ironic`; `now` is Unix seconds.
pub(crate) async fn run(
    ironic: &Ironic,
    found: &Found,
    valid: &Valid,
    database: &DatabaseOutcome,
    config: &Config,
    now: i64,
) -> Result<Resolved, Error> {
    let spec = &ironic.spec;
    let names = Names::of(ironic);
    let namespace = ironic.namespace().unwrap_or_default();
    let uid = ironic.uid().unwrap_or_default();

    // The user's credentials are checked present by validation; an empty stand-in still fails
    // with a clear error rather than generating credentials the user did not ask for.
    let user = spec.api_credentials_name.as_deref().filter(|n| !n.is_empty()).map(|name| {
        valid.linked.get(fields::API_CREDENTIALS).cloned().unwrap_or_else(|| Source {
            kind: SourceKind::Secret,
            name: name.to_string(),
            data: Default::default(),
        })
    });
    let credentials = credentials::resolve(&names, &uid, user.as_ref(), &found.credentials).await?;
    let names_to_cover = sans::compute(&names.service(), &namespace, &config.cluster_domain, spec, &found.node_ips);
    // Everything the pods mount but the serving certificate: Auto TLS tells from it whether
    // the pods run what its Secrets hold. A certificate the pods reload in place (the user's
    // Secret included) must not roll them.
    let reloaded = tls::reloaded_in_place(spec.high_availability());
    let mut sources: Vec<&Source> = valid
        .linked
        .sources
        .iter()
        .filter(|(field, _)| !(reloaded && *field == fields::TLS_CERTIFICATE))
        .map(|(_, s)| s)
        .collect();
    sources.push(&credentials.source);
    sources.extend(&database.mounted);
    let context = tls::AutoContext { renewal: config.auto_ca_renewal, others: &sources };
    let tls = tls::resolve(&names, &namespace, &uid, spec, &valid.linked, &found.tls, &names_to_cover, context, now)?;

    let installed = ironic.status.as_ref().and_then(|s| s.installed_version.as_deref());
    let requested = valid.version.version;
    let plan = upgrade::plan(installed, requested, spec.database.is_some());
    let schema = database.schema_plan(installed, &requested.to_string());
    let upgrade = match &plan {
        VersionPlan::Deploy { jobs } => upgrade::with_schema(jobs.clone(), schema.as_ref(), installed, requested),
        VersionPlan::DowngradeRefused { .. } => None,
    };

    if !reloaded {
        sources.extend(tls.material.as_ref().map(|m| &m.source));
    }
    let content_hash = hash::content_hash(sources);
    let trusted_ca = linked::trusted_ca(spec).and_then(|ca| {
        let key = ca.key.clone().or_else(|| valid.linked.get(fields::TRUSTED_CA)?.first_key().map(str::to_string))?;
        Some((ca, key))
    });
    Ok(Resolved {
        owner: ironic.controller_owner_ref(&()),
        version: valid.version.clone(),
        plan,
        upgrade,
        schema_missing: schema == Some(SchemaPlan::Create),
        network: Network::of(spec, tls.material.is_some()),
        settings: settings::Settings::of(spec),
        credentials,
        tls,
        database: database.connection.clone(),
        bmc_ca: linked::bmc_ca(spec),
        trusted_ca,
        content_hash,
        downloader: config.downloader.clone(),
        upgrade_job_backoff_limit: config.upgrade_job_backoff_limit,
        upgrade_job_deadline_seconds: config.upgrade_job_deadline_seconds,
        names,
        namespace,
    })
}

#[cfg(test)]
mod tests;
