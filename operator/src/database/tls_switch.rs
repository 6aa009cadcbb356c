//! When a running MariaDB that serves no TLS is to serve it (a deployment made before TLS was
//! the default, or a user dropping `tls.enabled: false`), the order matters: once the server
//! requires TLS, a pod of Ironic's without the CA can no longer connect. So the CA goes to
//! Ironic first (the connection names it at once; Ironic's pods roll with it mounted and keep
//! talking in clear text to the server, as PyMySQL uses TLS only when the server offers it),
//! and the server is switched, with one restart, only once Ironic's workload has rolled out
//! with the CA. A new database, or one that serves TLS already, needs no such wait.
//!
//! The workload is read by the name `status.workload` gives, and only counts when it is this
//! Ironic's (its controller owner reference): status is input like any other.

use super::names::TLS_HASH_ANNOTATION;
use super::run::Run;
use crate::kube::Progress;
use crate::kube::observe::{daemonset_rollout, deployment_rollout};
use crds::ironic::Ironic;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use kube::api::ObjectMeta;

/// Ironic's workload, as found.
#[derive(Clone, Debug)]
pub enum Workload {
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

/// Whether Ironic's pods can meet a server that requires TLS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Clients {
    /// They trust the CA, or there are none.
    Ready,
    /// Not yet; what they wait for.
    Pending(String),
}

/// Whether the StatefulSet's template serves TLS.
pub fn serves_tls(sts: &StatefulSet) -> bool {
    sts.spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref()?.annotations.as_ref())
        .is_some_and(|a| a.contains_key(TLS_HASH_ANNOTATION))
}

/// Whether the server is to serve TLS now: when TLS is wanted, and the server is new, serves it
/// already, or Ironic's pods are ready for it.
pub fn serve(wanted: bool, live: Option<&StatefulSet>, clients: &Clients) -> bool {
    wanted && (live.is_none_or(serves_tls) || *clients == Clients::Ready)
}

/// Whether `workload` (what `status.workload` names) lets the server require TLS: it mounts
/// `ca_secret` in its pod template and has rolled out. No workload, or one that is not this
/// Ironic's, has no pods to break.
pub fn clients(ironic: &Ironic, workload: Option<&Workload>, ca_secret: &str) -> Clients {
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
    if !mounts {
        return Clients::Pending(format!("Ironic's {kind} {name} does not mount the CA Secret {ca_secret} yet"));
    }
    match workload.rollout() {
        Progress::Done => Clients::Ready,
        Progress::Waiting { message, .. } | Progress::Failed { message, .. } => {
            Clients::Pending(format!("Ironic's {kind} {name} rolls out with the CA: {message}"))
        }
    }
}

/// Reads the workload `status.workload` names, if it exists.
pub(super) async fn workload(run: &Run<'_>) -> Result<Option<Workload>, crate::kube::KubeError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{DeploymentSpec, DeploymentStatus, StatefulSetSpec};
    use k8s_openapi::api::core::v1::{PodSpec, SecretVolumeSource, Volume};
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

    fn sts(tls: bool) -> StatefulSet {
        let annotations = tls.then(|| [(TLS_HASH_ANNOTATION.to_string(), "digest".to_string())].into());
        StatefulSet {
            spec: Some(StatefulSetSpec {
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta { annotations, ..Default::default() }),
                    ..Default::default()
                },
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_new_database_or_one_that_serves_tls_already_serves_it_at_once() {
        let pending = Clients::Pending("rolling".into());
        assert!(serve(true, None, &pending), "a new StatefulSet: no pod of Ironic's knows another server");
        assert!(serve(true, Some(&sts(true)), &pending), "never back to clear text while Ironic rolls");
        assert!(!serve(false, None, &Clients::Ready), "the opt-out");
        assert!(!serve(false, Some(&sts(true)), &Clients::Ready), "the opt-out turns it off");
    }

    #[test]
    fn a_clear_text_server_switches_only_once_ironic_rolled_out_with_the_ca() {
        let plain = sts(false);
        let ironic = ironic();
        let without = clients(&ironic, Some(&deployment("uid-1", false, 1)), CA);
        assert!(matches!(&without, Clients::Pending(m) if m.contains("does not mount the CA")), "{without:?}");
        assert!(!serve(true, Some(&plain), &without));
        let rolling = clients(&ironic, Some(&deployment("uid-1", true, 0)), CA);
        assert!(matches!(&rolling, Clients::Pending(m) if m.contains("rolls out with the CA")), "{rolling:?}");
        assert!(!serve(true, Some(&plain), &rolling));
        let rolled = clients(&ironic, Some(&deployment("uid-1", true, 1)), CA);
        assert_eq!(rolled, Clients::Ready);
        assert!(serve(true, Some(&plain), &rolled));
    }

    #[test]
    fn no_workload_or_someone_elses_has_no_pods_to_break() {
        let ironic = ironic();
        assert_eq!(clients(&ironic, None, CA), Clients::Ready);
        assert_eq!(clients(&ironic, Some(&deployment("another-uid", false, 0)), CA), Clients::Ready);
    }
}
