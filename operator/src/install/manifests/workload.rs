//! The operator's workload: its Namespace, ServiceAccount, Deployment and metrics Service.

use crate::install::{
    CERT_MANAGER_SECRET, HEALTH_PORT, Layout, METRICS_SERVICE, MOUNTED_CERT_DIR, NAME, OLM_CERT_DIR, WEBHOOK_PORT,
    WEBHOOK_SERVICE, WebhookCertificates,
};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Affinity, Capabilities, Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource, HTTPGetAction,
    Namespace, ObjectFieldSelector, PodAffinityTerm, PodAntiAffinity, PodSecurityContext, PodSpec, PodTemplateSpec,
    Probe, ResourceRequirements, SeccompProfile, SecretVolumeSource, SecurityContext, Service, ServiceAccount,
    ServicePort, ServiceSpec, Volume, VolumeMount, WeightedPodAffinityTerm,
};
use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort, NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::ObjectMeta;
use std::collections::BTreeMap;

/// The numeric user and group the operator runs as (the image's `USER`).
pub const RUN_AS: i64 = 65532;
/// The operator's container.
pub(crate) const CONTAINER: &str = "manager";
/// Replicas: one leads, the others stand by and serve webhooks.
pub(crate) const REPLICAS: i32 = 2;

fn meta(layout: &Layout, name: &str, namespaced: bool) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: namespaced.then(|| layout.namespace.clone()),
        labels: Some(layout.labels()),
        ..Default::default()
    }
}

pub(crate) fn namespace(layout: &Layout) -> Namespace {
    Namespace { metadata: meta(layout, &layout.namespace, false), ..Default::default() }
}

pub(crate) fn service_account(layout: &Layout) -> ServiceAccount {
    ServiceAccount { metadata: meta(layout, NAME, true), ..Default::default() }
}

/// The namespace label that lets a namespace's pods (Prometheus) scrape the operator's metrics
/// through its NetworkPolicy.
pub(crate) const SCRAPE_LABEL: &str = "ferrometal.io/scrape-metrics";

/// Who may reach the operator's pods: the webhook port from anywhere (the apiserver is not a
/// pod, and its address differs from cluster to cluster: an admin narrows it with an
/// `ipBlock`), the health and metrics port from namespaces labelled [`SCRAPE_LABEL`]; the
/// kubelet's probes come from the node, which a NetworkPolicy always admits. Nothing else.
pub(crate) fn network_policy(layout: &Layout) -> NetworkPolicy {
    let port = |number: u16| NetworkPolicyPort {
        port: Some(IntOrString::Int(i32::from(number))),
        protocol: Some("TCP".to_string()),
        ..Default::default()
    };
    let scrapers = NetworkPolicyPeer {
        namespace_selector: Some(LabelSelector {
            match_labels: Some([(SCRAPE_LABEL.to_string(), "true".to_string())].into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    NetworkPolicy {
        metadata: meta(layout, NAME, true),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector { match_labels: Some(layout.selector()), ..Default::default() }),
            policy_types: Some(vec!["Ingress".to_string()]),
            ingress: Some(vec![
                NetworkPolicyIngressRule { ports: Some(vec![port(WEBHOOK_PORT)]), from: None },
                NetworkPolicyIngressRule { ports: Some(vec![port(HEALTH_PORT)]), from: Some(vec![scrapers]) },
            ]),
            ..Default::default()
        }),
    }
}

/// The Service Prometheus scrapes /metrics through.
pub(crate) fn metrics_service(layout: &Layout) -> Service {
    Service {
        metadata: meta(layout, METRICS_SERVICE, true),
        spec: Some(ServiceSpec {
            selector: Some(layout.selector()),
            ports: Some(vec![ServicePort {
                name: Some("metrics".to_string()),
                port: i32::from(HEALTH_PORT),
                target_port: Some(IntOrString::String("metrics".to_string())),
                protocol: Some("TCP".to_string()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn field(name: &str, path: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector { field_path: path.to_string(), api_version: None }),
            ..Default::default()
        }),
        value: None,
    }
}

fn value(name: &str, value: &str) -> EnvVar {
    EnvVar { name: name.to_string(), value: Some(value.to_string()), value_from: None }
}

/// The operator's arguments: `run` with leader election, and where its webhook certificate
/// comes from.
pub(crate) fn args(layout: &Layout, certificates: WebhookCertificates) -> Vec<String> {
    let mut args = vec!["run".to_string(), "--leader-elect".to_string()];
    match certificates {
        WebhookCertificates::SelfManaged => {
            args.push(format!("--webhook-service={}/{WEBHOOK_SERVICE}:443", layout.namespace));
        }
        WebhookCertificates::CertManager => {
            args.push(format!("--webhook-cert-file={MOUNTED_CERT_DIR}/tls.crt"));
            args.push(format!("--webhook-key-file={MOUNTED_CERT_DIR}/tls.key"));
        }
        WebhookCertificates::Olm => {
            args.push(format!("--webhook-cert-file={OLM_CERT_DIR}/apiserver.crt"));
            args.push(format!("--webhook-key-file={OLM_CERT_DIR}/apiserver.key"));
        }
    }
    args
}

fn env(layout: &Layout, certificates: WebhookCertificates) -> Vec<EnvVar> {
    let watch = match certificates {
        // OLM says which namespaces to watch in this annotation of the pod it makes.
        WebhookCertificates::Olm => field("WATCH_NAMESPACE", "metadata.annotations['olm.targetNamespaces']"),
        _ => value("WATCH_NAMESPACE", &layout.watch_namespaces.join(",")),
    };
    let mut env = vec![
        field("POD_NAME", "metadata.name"),
        field("POD_NAMESPACE", "metadata.namespace"),
        field("POD_SERVICE_ACCOUNT", "spec.serviceAccountName"),
        watch,
        value("LOG_FORMAT", "json"),
    ];
    let ironic = layout.ironic_namespaces.to_string();
    match certificates {
        // Under OLM the admin lists namespaces in the OperatorGroup, whose target namespaces get
        // the CSV's permissions: Ironics run there (empty, for AllNamespaces, is the operator's
        // own namespace).
        WebhookCertificates::Olm => {
            env.push(field("IRONIC_NAMESPACES", "metadata.annotations['olm.targetNamespaces']"))
        }
        // Unset, the operator's own namespace: where the workload Role is bound by default.
        _ if !ironic.is_empty() => env.push(value("IRONIC_NAMESPACES", &ironic)),
        _ => {}
    }
    env
}

fn probe(path: &str, period: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_string()),
            port: IntOrString::String("metrics".to_string()),
            ..Default::default()
        }),
        initial_delay_seconds: Some(5),
        period_seconds: Some(period),
        timeout_seconds: Some(5),
        failure_threshold: Some(3),
        ..Default::default()
    }
}

fn quantities(cpu: &str, memory: &str) -> BTreeMap<String, Quantity> {
    [("cpu".to_string(), Quantity(cpu.to_string())), ("memory".to_string(), Quantity(memory.to_string()))].into()
}

/// The operator's container.
pub(crate) fn container(layout: &Layout, certificates: WebhookCertificates) -> Container {
    let mut mounts =
        vec![VolumeMount { name: "tmp".to_string(), mount_path: "/tmp".to_string(), ..Default::default() }];
    if certificates == WebhookCertificates::CertManager {
        mounts.push(VolumeMount {
            name: "webhook-certificate".to_string(),
            mount_path: MOUNTED_CERT_DIR.to_string(),
            read_only: Some(true),
            ..Default::default()
        });
    }
    Container {
        name: CONTAINER.to_string(),
        image: Some(layout.image.clone()),
        image_pull_policy: Some("IfNotPresent".to_string()),
        args: Some(args(layout, certificates)),
        env: Some(env(layout, certificates)),
        ports: Some(vec![
            ContainerPort {
                name: Some("webhook".to_string()),
                container_port: i32::from(WEBHOOK_PORT),
                protocol: Some("TCP".to_string()),
                ..Default::default()
            },
            ContainerPort {
                name: Some("metrics".to_string()),
                container_port: i32::from(HEALTH_PORT),
                protocol: Some("TCP".to_string()),
                ..Default::default()
            },
        ]),
        liveness_probe: Some(probe("/healthz", 20)),
        readiness_probe: Some(probe("/readyz", 10)),
        resources: Some(ResourceRequirements {
            requests: Some(quantities("100m", "128Mi")),
            limits: Some(quantities("1", "512Mi")),
            ..Default::default()
        }),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            run_as_non_root: Some(true),
            capabilities: Some(Capabilities { drop: Some(vec!["ALL".to_string()]), add: None }),
            ..Default::default()
        }),
        volume_mounts: Some(mounts),
        ..Default::default()
    }
}

/// The Deployment: leader election on, probes, requests and limits, non-root with a read-only
/// root filesystem, no capabilities and the runtime's default seccomp profile.
pub fn deployment(layout: &Layout, certificates: WebhookCertificates) -> Deployment {
    let mut volumes = vec![Volume {
        name: "tmp".to_string(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Default::default()
    }];
    if certificates == WebhookCertificates::CertManager {
        volumes.push(Volume {
            name: "webhook-certificate".to_string(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(CERT_MANAGER_SECRET.to_string()),
                ..Default::default()
            }),
            ..Default::default()
        });
    }
    let selector = layout.selector();
    let mut template_labels = layout.labels();
    template_labels.extend(selector.clone());
    Deployment {
        metadata: meta(layout, NAME, true),
        spec: Some(DeploymentSpec {
            replicas: Some(REPLICAS),
            selector: LabelSelector { match_labels: Some(selector.clone()), match_expressions: None },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(template_labels),
                    annotations: Some(
                        [("kubectl.kubernetes.io/default-container".to_string(), CONTAINER.to_string())].into(),
                    ),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    service_account_name: Some(NAME.to_string()),
                    security_context: Some(PodSecurityContext {
                        run_as_non_root: Some(true),
                        run_as_user: Some(RUN_AS),
                        run_as_group: Some(RUN_AS),
                        seccomp_profile: Some(SeccompProfile {
                            type_: "RuntimeDefault".to_string(),
                            localhost_profile: None,
                        }),
                        ..Default::default()
                    }),
                    // Spread the replicas, so that one node going away leaves a webhook server.
                    affinity: Some(Affinity {
                        pod_anti_affinity: Some(PodAntiAffinity {
                            preferred_during_scheduling_ignored_during_execution: Some(vec![WeightedPodAffinityTerm {
                                weight: 100,
                                pod_affinity_term: PodAffinityTerm {
                                    topology_key: "kubernetes.io/hostname".to_string(),
                                    label_selector: Some(LabelSelector {
                                        match_labels: Some(selector),
                                        match_expressions: None,
                                    }),
                                    ..Default::default()
                                },
                            }]),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                    node_selector: Some([("kubernetes.io/os".to_string(), "linux".to_string())].into()),
                    termination_grace_period_seconds: Some(30),
                    containers: vec![container(layout, certificates)],
                    volumes: Some(volumes),
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deployment_is_locked_down_and_probed() {
        let deployment = deployment(&Layout::default(), WebhookCertificates::SelfManaged);
        let pod = deployment.spec.and_then(|s| s.template.spec).expect("pod spec");
        let security = pod.security_context.expect("pod security");
        assert_eq!((security.run_as_non_root, security.run_as_user), (Some(true), Some(RUN_AS)));
        assert_eq!(security.seccomp_profile.map(|p| p.type_).as_deref(), Some("RuntimeDefault"));
        let container = &pod.containers[0];
        let security = container.security_context.clone().expect("container security");
        assert_eq!(security.read_only_root_filesystem, Some(true));
        assert_eq!(security.allow_privilege_escalation, Some(false));
        assert_eq!(security.capabilities.and_then(|c| c.drop), Some(vec!["ALL".to_string()]));
        let probe = |p: &Option<Probe>| p.as_ref().and_then(|p| p.http_get.as_ref()).and_then(|h| h.path.clone());
        assert_eq!(probe(&container.liveness_probe).as_deref(), Some("/healthz"));
        assert_eq!(probe(&container.readiness_probe).as_deref(), Some("/readyz"));
        let resources = container.resources.clone().expect("resources");
        assert!(resources.requests.is_some() && resources.limits.is_some());
        assert!(container.args.iter().flatten().any(|a| a == "--leader-elect"));
    }

    #[test]
    fn the_network_policy_admits_the_webhook_from_anywhere_and_metrics_only_from_labelled_namespaces() {
        let policy = network_policy(&Layout::default()).spec.expect("spec");
        assert_eq!(policy.pod_selector.and_then(|s| s.match_labels), Some(Layout::default().selector()));
        assert_eq!(policy.policy_types, Some(vec!["Ingress".to_string()]));
        let rules = policy.ingress.expect("rules");
        let port_of =
            |rule: &NetworkPolicyIngressRule| rule.ports.iter().flatten().map(|p| p.port.clone()).collect::<Vec<_>>();
        assert_eq!(rules.len(), 2, "no port beyond the webhook's and the metrics'");
        assert_eq!(port_of(&rules[0]), [Some(IntOrString::Int(i32::from(WEBHOOK_PORT)))]);
        assert!(rules[0].from.is_none(), "the apiserver's address is not known here");
        assert_eq!(port_of(&rules[1]), [Some(IntOrString::Int(i32::from(HEALTH_PORT)))]);
        let from = rules[1].from.clone().expect("peers");
        let labels = from[0].namespace_selector.clone().and_then(|s| s.match_labels).expect("labels");
        assert_eq!(labels.get(SCRAPE_LABEL).map(String::as_str), Some("true"));
        assert!(from[0].pod_selector.is_none() && from[0].ip_block.is_none());
    }

    #[test]
    fn each_certificate_source_gets_its_flags() {
        let layout = Layout::default();
        assert!(
            args(&layout, WebhookCertificates::SelfManaged)
                .contains(&format!("--webhook-service=ferrometal-system/{WEBHOOK_SERVICE}:443"))
        );
        let cert_manager = args(&layout, WebhookCertificates::CertManager);
        assert!(cert_manager.iter().any(|a| a.starts_with("--webhook-cert-file=/tmp/k8s-webhook-server/")));
        assert!(!cert_manager.iter().any(|a| a.starts_with("--webhook-service")), "nothing to register");
        let olm = container(&layout, WebhookCertificates::Olm);
        let watch = olm.env.iter().flatten().find(|e| e.name == "WATCH_NAMESPACE").expect("WATCH_NAMESPACE");
        let path = watch.value_from.as_ref().and_then(|v| v.field_ref.as_ref()).map(|f| f.field_path.as_str());
        assert_eq!(path, Some("metadata.annotations['olm.targetNamespaces']"));
    }
}
