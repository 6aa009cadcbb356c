//! The table: every resource and verb each part of the operator uses. The roles in
//! `config/rbac/`, the bundle's CSV permissions and the readiness check of the watches are
//! rendered from these constants; `design/install.md` explains the choices.
//!
//! Server-side apply of an object that does not exist yet creates it, which the apiserver
//! authorizes as `create` as well as `patch`; hence `create` beside every applied kind.

use super::kinds::{CERT_MANAGER_CERTIFICATES, SERVICE_MONITORS};
use super::{Access, Component, Feature, Reach, Resource, Verb};
use Verb::{Create, Delete, Get, List, Patch, Update, Watch};

const fn access(resource: Resource, verbs: &'static [Verb], why: &'static str) -> Access {
    Access { resource, verbs, names: &[], reach: Reach::Watched, feature: Feature::Always, why }
}

/// An access in the namespaces where an `Ironic` may run.
const fn workload(resource: Resource, verbs: &'static [Verb], why: &'static str) -> Access {
    Access { reach: Reach::IronicNamespaces, ..access(resource, verbs, why) }
}

const IRONICS: Resource = Resource::new("ironic.metal3.io", "ironics");
const BAREMETALHOSTS: Resource = Resource::new("metal3.io", "baremetalhosts");
const HARDWAREDATA: Resource = Resource::new("metal3.io", "hardwaredata");
const HOSTFIRMWARESETTINGS: Resource = Resource::new("metal3.io", "hostfirmwaresettings");
const HOSTFIRMWARECOMPONENTS: Resource = Resource::new("metal3.io", "hostfirmwarecomponents");
const FIRMWARESCHEMAS: Resource = Resource::new("metal3.io", "firmwareschemas");
const HOSTUPDATEPOLICIES: Resource = Resource::new("metal3.io", "hostupdatepolicies");
const DATAIMAGES: Resource = Resource::new("metal3.io", "dataimages");
const BMCEVENTSUBSCRIPTIONS: Resource = Resource::new("metal3.io", "bmceventsubscriptions");
const PREPROVISIONINGIMAGES: Resource = Resource::new("metal3.io", "preprovisioningimages");
const NODESETS: Resource = Resource::new("ferrometal.io", "nodesets");
const NODESETSERVICES: Resource = Resource::new("ferrometal.io", "nodesetservices");
const DEPLOYMENTS: Resource = Resource::new("apps", "deployments");
const DAEMONSETS: Resource = Resource::new("apps", "daemonsets");
const STATEFULSETS: Resource = Resource::new("apps", "statefulsets");
const JOBS: Resource = Resource::new("batch", "jobs");
const INGRESSES: Resource = Resource::new("networking.k8s.io", "ingresses");
const SERVICES: Resource = Resource::new("", "services");
const SECRETS: Resource = Resource::new("", "secrets");
const CONFIGMAPS: Resource = Resource::new("", "configmaps");
const PODS: Resource = Resource::new("", "pods");
const PVCS: Resource = Resource::new("", "persistentvolumeclaims");
const NODES: Resource = Resource::new("", "nodes");
const EVENTS: Resource = Resource::new("events.k8s.io", "events");
const CSRS: Resource = Resource::new("certificates.k8s.io", "certificatesigningrequests");
const LEASES: Resource = Resource::new("coordination.k8s.io", "leases");
const VALIDATING_WEBHOOKS: Resource = Resource::new("admissionregistration.k8s.io", "validatingwebhookconfigurations");
const LOCAL_SUBJECT_ACCESS_REVIEWS: Resource = Resource::new("authorization.k8s.io", "localsubjectaccessreviews");

/// The name of the leader Lease (`--leader-election-lease`'s default).
pub(crate) const LEADER_LEASE: &str = "ferrometal-leader";
/// The Secret with the operator-managed webhook certificate.
pub(crate) const WEBHOOK_SECRET: &str = crate::webhook::SECRET_NAME;
/// The ValidatingWebhookConfiguration the operator publishes its CA in.
pub(crate) const WEBHOOK_CONFIGURATION: &str = crate::webhook::CONFIGURATION_NAME;

/// The `Ironic` controller (`operator/src/ironic`): Ironic's workload, Services, Ingress,
/// Secrets, ConfigMaps, upgrade Jobs, cert-manager Certificate and ServiceMonitor, with the user's
/// Secrets and ConfigMaps an Ironic refers to.
pub(crate) const IRONIC: Component = Component {
    name: "ironic",
    access: &[
        access(IRONICS, &[Get, List, Watch, Patch], "reconcile Ironics; add and remove the finalizer"),
        access(IRONICS.status(), &[Patch], "write status (a refusal too, in any namespace)"),
        // The watches of what an Ironic owns and names, by their metadata: only in the
        // namespaces where an Ironic may run, as everything else of its workload.
        workload(DEPLOYMENTS, &[List, Watch], "Ironic's Deployment: its rollout moves status"),
        workload(DAEMONSETS, &[List, Watch], "Ironic's DaemonSet for HA: its rollout moves status"),
        workload(SERVICES, &[List, Watch], "Ironic's Service"),
        workload(INGRESSES, &[List, Watch], "Ironic's Ingress"),
        workload(JOBS, &[List, Watch], "upgrade Jobs: their completion moves the sequence"),
        workload(STATEFULSETS, &[List, Watch], "the managed database's StatefulSet: its pod becoming ready moves on"),
        workload(SECRETS, &[List, Watch], "the Secrets an Ironic owns or names, watched by their metadata only"),
        workload(CONFIGMAPS, &[List, Watch], "the ConfigMaps an Ironic owns or names, watched by their metadata only"),
        access(EVENTS, &[Create, Patch], "Events on transitions (a refusal too, in any namespace)"),
        workload(DEPLOYMENTS, &[Get, Create, Patch, Delete], "Ironic's Deployment (removed when HA turns on)"),
        workload(DAEMONSETS, &[Get, Create, Patch, Delete], "Ironic's DaemonSet for HA (removed when HA turns off)"),
        workload(SERVICES, &[Get, Create, Patch], "Ironic's Service"),
        workload(INGRESSES, &[Get, Create, Patch, Delete], "Ironic's Ingress, removed when the spec drops it"),
        workload(JOBS, &[Get, Create, Delete], "upgrade Jobs, created once; earlier ones deleted"),
        workload(PODS, &[Get, List], "why a Job's pod failed"),
        workload(
            SECRETS,
            &[Get, Create, Patch, Delete],
            "generated credentials and certificates; the user's Secrets an Ironic names",
        ),
        workload(CONFIGMAPS, &[Get, Create, Patch, Delete], "the CA bundle; the user's ConfigMaps an Ironic names"),
        // Granted always, unlike cert-manager's Certificates: prometheusExporter asks for a
        // ServiceMonitor unless it says otherwise (as in ironic-standalone-operator), and the
        // grant is inert where the API is not installed. No watch: it is read by name (the
        // ledger applies only over what it controls), applied, listed for the prune, deleted.
        workload(
            SERVICE_MONITORS,
            &[Get, List, Create, Patch, Delete],
            "the exporter's ServiceMonitor where the Prometheus operator is installed; removed when the spec drops it",
        ),
        Access {
            feature: Feature::CertManagerTls,
            ..workload(
                CERT_MANAGER_CERTIFICATES,
                &[Get, List, Create, Patch, Delete],
                "the Certificate of tls.mode CertManager",
            )
        },
        Access {
            reach: Reach::Cluster,
            feature: Feature::CsrTls,
            ..access(
                CSRS,
                &[Get, Create, Delete],
                "the CertificateSigningRequests of tls.mode CertificateSigningRequest, found by name (never listed or watched: that would read every request of the cluster); deleted once used or abandoned",
            )
        },
        Access {
            reach: Reach::Cluster,
            feature: Feature::NodeAddresses,
            ..access(NODES, &[List], "node addresses for the serving certificate of a host-network Ironic")
        },
    ],
};

/// The database module of the `Ironic` controller (`operator/src/database`): a managed
/// MariaDB's StatefulSet, Service, Secrets, volumes and Jobs, or an external database's Secrets,
/// all in the namespaces where an Ironic may run.
pub(crate) const DATABASE: Component = Component {
    name: "database",
    access: &[
        access(IRONICS.status(), &[Patch], "persist the database's progress mid-sequence"),
        workload(STATEFULSETS, &[Get, Create, Patch], "the managed MariaDB"),
        workload(SERVICES, &[Get, Create, Patch], "the managed MariaDB's Service"),
        workload(SECRETS, &[Get, Create, Patch], "the database's credentials and certificates"),
        workload(PVCS, &[Get, Create, Patch], "the backup volume; growing the data volume"),
        workload(PODS, &[Get, List], "the MariaDB pod's readiness; why a Job's pod failed"),
        workload(DEPLOYMENTS, &[Get], "whether Ironic's pods trust the CA before a running MariaDB requires TLS"),
        workload(DAEMONSETS, &[Get], "whether Ironic's pods trust the CA before a running MariaDB requires TLS"),
        workload(JOBS, &[Get, Create, Patch], "backup and upgrade Jobs"),
        access(EVENTS, &[Create, Patch], "Events on transitions"),
    ],
};

/// The `BareMetalHost` controller (`operator/src/host`): hosts, their HardwareData, the
/// Secrets they name, and the `Ironic` it provisions through.
pub(crate) const HOST: Component = Component {
    name: "host",
    access: &[
        access(BAREMETALHOSTS, &[Get, List, Watch, Patch], "reconcile hosts; finalizer and consumed annotations"),
        access(BAREMETALHOSTS.status(), &[Patch], "write status"),
        access(HARDWAREDATA, &[Get, Create, Patch], "inspection results"),
        access(
            SECRETS,
            &[Get, List, Watch],
            "BMC credentials, user data and network data; an event subscription's HTTP headers",
        ),
        access(CONFIGMAPS, &[Get], "the CA of the Ironic it provisions through"),
        access(IRONICS, &[Get], "the endpoint and credentials of --ironic-name"),
        access(
            DATAIMAGES,
            &[Get, List, Watch, Patch],
            "a host's data image at its power on; the DataImage controller's finalizer and owner",
        ),
        access(DATAIMAGES.status(), &[Patch], "write a data image's status"),
        access(
            BMCEVENTSUBSCRIPTIONS,
            &[Get, List, Watch, Patch],
            "make each subscription's BMC subscription; the ids the others of a host claim; the finalizer",
        ),
        access(BMCEVENTSUBSCRIPTIONS.status(), &[Patch], "write a subscription's id, error and conditions"),
        access(
            PREPROVISIONINGIMAGES,
            &[Get, List, Watch, Create, Patch],
            "each host's deploy image, made and kept to the host's spec with --build-preprov-image; the images our builder serves",
        ),
        access(PREPROVISIONINGIMAGES.status(), &[Patch], "write a preprovisioning image's built image and conditions"),
        access(EVENTS, &[Create, Patch], "Events on transitions"),
    ],
};

/// The `HostFirmwareSettings` and `HostFirmwareComponents` controllers
/// (`operator/src/host/firmware`, `operator/src/host/components`), run with the host
/// controller: the objects they make for hosts and read, their hosts, and the schemas they
/// publish.
pub(crate) const FIRMWARE: Component = Component {
    name: "firmware",
    access: &[
        access(
            HOSTFIRMWARESETTINGS,
            &[Get, List, Watch, Create],
            "read wanted BIOS settings (a host being prepared reads its own); one per host at registration",
        ),
        access(HOSTFIRMWARESETTINGS.status(), &[Patch], "write the settings read and the conditions"),
        access(
            HOSTFIRMWARECOMPONENTS,
            &[Get, List, Watch, Create],
            "read wanted firmware updates (a provisioned host reads its own); one per host at registration",
        ),
        access(
            HOSTFIRMWARECOMPONENTS.status(),
            &[Patch],
            "write the components read, the updates handed over and the conditions",
        ),
        access(FIRMWARESCHEMAS, &[Get, Create, Patch], "the schema of each model's BIOS settings, shared by its hosts"),
        access(BAREMETALHOSTS, &[Get], "the host of a settings object: its Ironic node"),
        access(
            HOSTUPDATEPOLICIES,
            &[Get],
            "whether a provisioned host with settings or updates waiting may be serviced",
        ),
        access(EVENTS, &[Create, Patch], "Events on transitions"),
    ],
};

/// The `NodeSet` controller (`operator/src/nodeset`, `design/nodeset.md`): NodeSets and their
/// services, the BareMetalHosts it claims (as their consumer; it reads them, and HardwareData,
/// from watch caches), service Jobs and their inventory Secrets, and the first-boot network
/// data it generates, and the record of what ran on preProvisioned hosts (a ConfigMap). Its
/// Secret and ConfigMap watches (but the records') are of metadata only; it reads a Secret's or
/// ConfigMap's content only by GET, in a NodeSet's own namespace, when the NodeSet's
/// `variablesFrom` or a service it lists names it.
pub(crate) const NODESET: Component = Component {
    name: "nodeset",
    access: &[
        access(NODESETS, &[Get, List, Watch, Patch], "reconcile NodeSets; add and remove the finalizer"),
        access(NODESETS.status(), &[Patch], "write status"),
        access(NODESETSERVICES, &[Get, List, Watch], "the services a NodeSet runs"),
        access(NODESETSERVICES.status(), &[Patch], "write a service's status (whether its spec may run)"),
        access(BAREMETALHOSTS, &[Get, List, Watch, Patch], "claim, provision, release hosts as their consumer"),
        access(HARDWAREDATA, &[Get, List, Watch], "match hosts to hardware requirements"),
        access(
            HOSTFIRMWARESETTINGS,
            &[Get, List, Watch, Patch],
            "hand a NodeSet's firmwareSettings to its claimed hosts' settings objects (applied; never created), and read whether they were applied",
        ),
        access(
            HOSTFIRMWARECOMPONENTS,
            &[Get, List, Watch, Patch],
            "hand a NodeSet's firmwareUpdates to its claimed hosts' components objects (applied; never created), and read whether they were flashed",
        ),
        access(JOBS, &[Get, List, Watch, Create, Delete], "service Jobs"),
        access(PODS, &[List], "a failed Job's pods, once, to quote why it failed"),
        access(
            SECRETS,
            &[Get, List, Watch, Create, Patch, Delete],
            "inventory Secrets (read by name before an apply, to write only over its own; applied, watched by metadata, pruned) and generated network data; the Secrets a NodeSet's variablesFrom or its services name, in its own namespace (watched by metadata, read by name)",
        ),
        access(
            CONFIGMAPS,
            &[Get, List, Watch, Create, Patch, Delete],
            "the record of what ran on a preProvisioned NodeSet's hosts, which outlives the NodeSet (watched by label; read by name before an apply, to write only over its own); the ConfigMaps a NodeSet's variablesFrom or its services name, in its own namespace (watched by metadata, read by name)",
        ),
        access(EVENTS, &[Create, Patch], "Events on transitions"),
    ],
};

/// The runtime: leader election in the operator's namespace.
pub(crate) const RUNTIME: Component = Component {
    name: "runtime",
    access: &[
        Access {
            reach: Reach::OperatorNamespace,
            ..access(LEASES, &[Create], "create the leader Lease (creation cannot be limited by name)")
        },
        Access {
            names: &[LEADER_LEASE],
            reach: Reach::OperatorNamespace,
            // The elector takes the Lease with a replace (PUT: verb update) carrying its
            // resourceVersion, so that two replicas never both win one write; it renews and
            // releases it with JSON patches tested on the holder (verb patch).
            ..access(LEASES, &[Get, Update, Patch], "hold, renew and release the leader Lease")
        },
    ],
};

/// The webhook server: its operator-managed certificate and CA.
pub(crate) const WEBHOOK: Component = Component {
    name: "webhook",
    access: &[
        Access {
            reach: Reach::OperatorNamespace,
            feature: Feature::WebhookSelfManaged,
            ..access(SECRETS, &[Create], "create the certificate Secret shared by the replicas")
        },
        Access {
            names: &[WEBHOOK_SECRET],
            reach: Reach::OperatorNamespace,
            feature: Feature::WebhookSelfManaged,
            ..access(SECRETS, &[Get, Patch], "read and renew the certificate Secret")
        },
        Access {
            names: &[WEBHOOK_CONFIGURATION],
            reach: Reach::Cluster,
            feature: Feature::WebhookSelfManaged,
            ..access(VALIDATING_WEBHOOKS, &[Get, Patch], "publish the CA in the caBundle of its own configuration")
        },
        access(
            LOCAL_SUBJECT_ACCESS_REVIEWS,
            &[Create],
            "ask whether a NodeSetService's author may create Jobs in its namespace (a service runs its image as a Job); reads nothing",
        ),
        access(
            FIRMWARESCHEMAS,
            &[Get],
            "check wanted BIOS settings against the schema their status names, in their namespace",
        ),
    ],
};

/// Everything: the controllers, the runtime and the webhook server.
pub(crate) const ALL: [&Component; 7] = [&IRONIC, &DATABASE, &HOST, &FIRMWARE, &NODESET, &RUNTIME, &WEBHOOK];

/// The components that run with a controller the runtime starts: the database module runs
/// inside the Ironic controller, the firmware controller beside the host controller.
pub(crate) fn of_controller(name: &str) -> Vec<&'static Component> {
    match name {
        "ironic" => vec![&IRONIC, &DATABASE],
        "host" => vec![&HOST, &FIRMWARE],
        "nodeset" => vec![&NODESET],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_limit_only_verbs_kubernetes_can_limit_by_name() {
        for component in ALL {
            for access in component.access {
                if !access.names.is_empty() {
                    for verb in access.verbs {
                        assert!(
                            !matches!(verb, Verb::Create | Verb::List | Verb::Watch),
                            "{} {}: {verb:?} cannot be limited by name",
                            component.name,
                            access.resource.rule_name()
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn only_optional_features_reach_the_cluster() {
        for component in ALL {
            for access in component.access {
                if access.reach == Reach::Cluster {
                    assert_ne!(access.feature, Feature::Always, "{}: {}", component.name, access.why);
                }
            }
        }
    }

    #[test]
    fn every_watch_can_list_and_get() {
        for component in ALL {
            for access in component.access.iter().filter(|a| a.verbs.contains(&Verb::Watch)) {
                assert!(access.verbs.contains(&Verb::List), "{} watches without list", component.name);
            }
        }
    }
}
