//! What a managed MariaDB does with TLS while Ironic's pods move to (or away from) its CA.
//!
//! A pod of Ironic's that mounts the CA connects with TLS and refuses a server that does not
//! offer it (PyMySQL with a CA requires TLS: "SSL is required but the server doesn't support
//! it"); a pod without the CA may speak clear text only (older PyMySQL releases), which a server
//! that requires TLS refuses. So a running server in
//! clear text (a deployment of the previous operator, or a user dropping `tls.enabled: false`)
//! first *offers* TLS without requiring it (one restart: both kinds of pod connect), the
//! connection names the CA and Ironic's pods roll with it, and only once Ironic's workload has
//! rolled out with the CA does the server *require* TLS (a second restart). Turning TLS off
//! goes the same way back: offered, Ironic's pods roll without the CA, then clear text. A new
//! database, or one already where it should be, goes there at once.
//!
//! The workload is read by the name `status.workload` gives, and only counts when it is this
//! Ironic's (its controller owner reference): status is input like any other.

use super::build::CONTAINER;
use super::build::stateful_set::{REQUIRE_TLS_ARG, SERVE_TLS_ARG_PREFIX};
use super::names::Names;
use super::run::Run;
use crate::kit::Progress;
use crate::kit::observe::{daemonset_rollout, deployment_rollout};
use crds::ironic::Ironic;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use kube::api::ObjectMeta;

/// What the server does with TLS on the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Transport {
    /// No TLS.
    Plain,
    /// TLS for the clients that ask, clear text for the others.
    Offered,
    /// TLS only (`require_secure_transport`).
    Required,
}

impl Transport {
    /// Whether the server serves a certificate.
    pub(crate) fn serves(self) -> bool {
        self != Self::Plain
    }
}

/// What the StatefulSet's template makes the server do.
pub(crate) fn live_transport(sts: &StatefulSet) -> Transport {
    let args = sts
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.containers.iter().find(|c| c.name == CONTAINER))
        .and_then(|c| c.args.clone())
        .unwrap_or_default();
    if args.iter().any(|a| a == REQUIRE_TLS_ARG) {
        Transport::Required
    } else if args.iter().any(|a| a.starts_with(SERVE_TLS_ARG_PREFIX)) {
        Transport::Offered
    } else {
        Transport::Plain
    }
}

/// Whether Ironic's pods are where the server can go next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Clients {
    /// They all run as the connection says (with the CA, or without it), or there are none.
    Ready,
    /// Not yet; what they wait for.
    Pending(String),
}

/// What the server is to do now: `wanted` is TLS as the spec asks, `live` what the running
/// StatefulSet does (`None`: there is none yet), `clients` whether Ironic's pods caught up
/// with the connection.
pub(crate) fn transport(wanted: bool, live: Option<Transport>, clients: &Clients) -> Transport {
    let ready = *clients == Clients::Ready;
    match (wanted, live) {
        (true, None | Some(Transport::Required)) => Transport::Required,
        (true, Some(_)) if ready => Transport::Required,
        (true, Some(_)) => Transport::Offered,
        (false, None | Some(Transport::Plain)) => Transport::Plain,
        (false, Some(_)) if ready => Transport::Plain,
        (false, Some(_)) => Transport::Offered,
    }
}

/// Whether the server must wait for Ironic's pods before it goes where `wanted` says.
pub(crate) fn needs_clients(wanted: bool, live: Option<Transport>) -> bool {
    match live {
        None => false,
        Some(live) => (wanted && live != Transport::Required) || (!wanted && live != Transport::Plain),
    }
}

/// Ironic's workload, as found.
#[derive(Clone, Debug)]
pub(crate) enum Workload {
    Deployment(Deployment),
    DaemonSet(DaemonSet),
}

impl Workload {
    fn kind(&self) -> &'static str {
        match self {
            Self::Deployment(_) => "Deployment",
            Self::DaemonSet(_) => "DaemonSet",
        }
    }

    fn meta(&self) -> &ObjectMeta {
        match self {
            Self::Deployment(d) => &d.metadata,
            Self::DaemonSet(d) => &d.metadata,
        }
    }

    fn template(&self) -> Option<&PodTemplateSpec> {
        match self {
            Self::Deployment(d) => d.spec.as_ref().map(|s| &s.template),
            Self::DaemonSet(d) => d.spec.as_ref().map(|s| &s.template),
        }
    }

    fn rollout(&self) -> Progress {
        match self {
            Self::Deployment(d) => deployment_rollout(d),
            Self::DaemonSet(d) => daemonset_rollout(d),
        }
    }
}

/// Whether `workload` (what `status.workload` names) has rolled out mounting `ca_secret`
/// (`with_ca`) or not mounting it. No workload, or one that is not this Ironic's, has no pods
/// to break.
pub(crate) fn clients(ironic: &Ironic, workload: Option<&Workload>, ca_secret: &str, with_ca: bool) -> Clients {
    let Some(workload) = workload else {
        return Clients::Ready;
    };
    let uid = ironic.metadata.uid.as_deref();
    let owned = workload
        .meta()
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && uid.is_some_and(|uid| o.uid == uid));
    if !owned {
        return Clients::Ready;
    }
    let (kind, name) = (workload.kind(), workload.meta().name.clone().unwrap_or_default());
    let mounts = workload
        .template()
        .and_then(|t| t.spec.as_ref()?.volumes.as_ref())
        .is_some_and(|v| v.iter().any(|v| v.secret.as_ref().and_then(|s| s.secret_name.as_deref()) == Some(ca_secret)));
    let (trust, verb) = if with_ca { ("trust", "with") } else { ("drop", "without") };
    if mounts != with_ca {
        return Clients::Pending(format!(
            "Ironic's pods {trust} the CA (Secret {ca_secret}) once their {kind} {name} rolls out {verb} it"
        ));
    }
    match workload.rollout() {
        Progress::Done => Clients::Ready,
        Progress::Waiting { message, .. } | Progress::Failed { message, .. } => {
            Clients::Pending(format!("Ironic's {kind} {name} rolls out {verb} the CA: {message}"))
        }
    }
}

/// Reads the workload `status.workload` names, if it exists.
pub(super) async fn workload(run: &Run<'_>) -> Result<Option<Workload>, crate::kit::KubeError> {
    let Some(named) = run.ironic.status.as_ref().and_then(|s| s.workload.as_ref()) else {
        return Ok(None);
    };
    let Some(name) = named.name.as_deref().filter(|n| !n.is_empty()) else {
        return Ok(None);
    };
    Ok(match named.kind.as_deref() {
        Some("Deployment") => run.ledger.get::<Deployment>(name).await?.map(Workload::Deployment),
        Some("DaemonSet") => run.ledger.get::<DaemonSet>(name).await?.map(Workload::DaemonSet),
        _ => None,
    })
}

/// Whether Ironic's pods caught up with the connection (only asked of a running server that
/// is not yet where `wanted` says).
pub(super) async fn clients_of(
    run: &Run<'_>,
    names: &Names,
    wanted: bool,
    live: Option<Transport>,
) -> Result<Clients, crate::kit::KubeError> {
    if !needs_clients(wanted, live) {
        return Ok(Clients::Ready);
    }
    let workload = workload(run).await?;
    Ok(clients(run.ironic, workload.as_ref(), &names.client_ca(), wanted))
}

/// The Event of a server that restarts to do something else with TLS.
pub(crate) fn notice(wanted: bool, transport: Transport) -> (&'static str, &'static str) {
    match (transport, wanted) {
        (Transport::Required, _) => {
            ("DatabaseTLSRequired", "MariaDB restarts to require TLS on the network: Ironic's pods trust its CA")
        }
        (Transport::Offered, true) => (
            "DatabaseTLSOffered",
            "MariaDB restarts to offer TLS; it requires it once Ironic's pods have rolled out with its CA",
        ),
        (Transport::Offered, false) => (
            "DatabaseTLSOffered",
            "MariaDB restarts to accept clear text besides TLS; it stops serving TLS once Ironic's pods have rolled \
             out without its CA",
        ),
        (Transport::Plain, _) => {
            ("DatabaseTLSDisabled", "MariaDB restarts without TLS: Ironic's pods no longer use its CA")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Transport::{Offered, Plain, Required};
    use k8s_openapi::api::apps::v1::{DeploymentSpec, DeploymentStatus, StatefulSetSpec};
    use k8s_openapi::api::core::v1::{Container, PodSpec, SecretVolumeSource, Volume};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    const CA: &str = "ironic-mariadb-ca";

    fn ironic() -> Ironic {
        let mut ironic = Ironic::new("ironic", Default::default());
        ironic.metadata.uid = Some("uid-1".into());
        ironic
    }

    fn deployment(owner_uid: &str, mounts_ca: bool, updated: i32) -> Workload {
        let volumes = mounts_ca.then(|| {
            vec![Volume {
                name: "cert-mariadb".into(),
                secret: Some(SecretVolumeSource { secret_name: Some(CA.into()), ..Default::default() }),
                ..Default::default()
            }]
        });
        Workload::Deployment(Deployment {
            metadata: ObjectMeta {
                name: Some("ironic-service".into()),
                generation: Some(2),
                owner_references: Some(vec![OwnerReference {
                    controller: Some(true),
                    uid: owner_uid.into(),
                    ..Default::default()
                }]),
                ..Default::default()
            },
            spec: Some(DeploymentSpec {
                replicas: Some(1),
                template: PodTemplateSpec {
                    spec: Some(PodSpec { volumes, ..Default::default() }),
                    ..Default::default()
                },
                ..Default::default()
            }),
            status: Some(DeploymentStatus {
                observed_generation: Some(2),
                replicas: Some(1),
                updated_replicas: Some(updated),
                available_replicas: Some(1),
                ..Default::default()
            }),
        })
    }

    fn sts(args: &[&str]) -> StatefulSet {
        let container = Container {
            name: CONTAINER.into(),
            args: Some(args.iter().map(|a| a.to_string()).collect()),
            ..Default::default()
        };
        StatefulSet {
            spec: Some(StatefulSetSpec {
                template: PodTemplateSpec {
                    spec: Some(PodSpec { containers: vec![container], ..Default::default() }),
                    ..Default::default()
                },
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn the_live_transport_is_read_from_the_servers_arguments() {
        assert_eq!(live_transport(&sts(&["--skip-name-resolve"])), Plain);
        assert_eq!(live_transport(&sts(&["--ssl-cert=/etc/mysql/tls/tls.crt"])), Offered);
        assert_eq!(live_transport(&sts(&["--ssl-cert=/etc/mysql/tls/tls.crt", REQUIRE_TLS_ARG])), Required);
    }

    #[test]
    fn a_new_database_or_one_already_there_goes_there_at_once() {
        let pending = Clients::Pending("rolling".into());
        assert_eq!(transport(true, None, &pending), Required, "no pod of Ironic's knows another server");
        assert_eq!(transport(true, Some(Required), &pending), Required, "never back while Ironic rolls");
        assert_eq!(transport(false, None, &pending), Plain, "the opt-out");
        assert_eq!(transport(false, Some(Plain), &pending), Plain);
        assert!(
            !needs_clients(true, None) && !needs_clients(true, Some(Required)) && !needs_clients(false, Some(Plain))
        );
    }

    #[test]
    fn clear_text_is_offered_tls_first_and_required_once_ironic_rolled_out_with_the_ca() {
        let ironic = ironic();
        assert!(needs_clients(true, Some(Plain)) && needs_clients(true, Some(Offered)));
        let without = clients(&ironic, Some(&deployment("uid-1", false, 1)), CA, true);
        assert!(matches!(&without, Clients::Pending(m) if m.contains("trust the CA")), "{without:?}");
        assert_eq!(transport(true, Some(Plain), &without), Offered, "offered: both kinds of pod connect");
        assert_eq!(transport(true, Some(Offered), &without), Offered);
        let rolling = clients(&ironic, Some(&deployment("uid-1", true, 0)), CA, true);
        assert!(matches!(&rolling, Clients::Pending(m) if m.contains("rolls out with the CA")), "{rolling:?}");
        assert_eq!(transport(true, Some(Offered), &rolling), Offered);
        let rolled = clients(&ironic, Some(&deployment("uid-1", true, 1)), CA, true);
        assert_eq!(rolled, Clients::Ready);
        assert_eq!(transport(true, Some(Offered), &rolled), Required);
    }

    #[test]
    fn turning_tls_off_waits_for_ironic_to_drop_the_ca_before_clear_text() {
        let ironic = ironic();
        assert!(needs_clients(false, Some(Required)));
        let still = clients(&ironic, Some(&deployment("uid-1", true, 1)), CA, false);
        assert!(matches!(&still, Clients::Pending(m) if m.contains("drop the CA")), "{still:?}");
        assert_eq!(transport(false, Some(Required), &still), Offered, "pods with the CA still connect");
        let dropped = clients(&ironic, Some(&deployment("uid-1", false, 1)), CA, false);
        assert_eq!(transport(false, Some(Offered), &dropped), Plain);
    }

    #[test]
    fn no_workload_or_someone_elses_has_no_pods_to_break() {
        let ironic = ironic();
        assert_eq!(clients(&ironic, None, CA, true), Clients::Ready);
        assert_eq!(clients(&ironic, Some(&deployment("another-uid", false, 0)), CA, true), Clients::Ready);
    }
}
