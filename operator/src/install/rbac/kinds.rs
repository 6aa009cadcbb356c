//! Every Kubernetes kind the operator reads or writes, with its API resource as a constant,
//! so that [`require_access!`](crate::install::rbac::require_access) can check an access at compile time.

use super::Resource;

/// A kind with its API resource (group and plural).
pub(crate) trait Kind {
    const RESOURCE: Resource;
}

macro_rules! kinds {
    ($($ty:ty => $group:literal, $plural:literal;)*) => {
        $(impl Kind for $ty {
            const RESOURCE: Resource = Resource::new($group, $plural);
        })*

        /// Every kind above: its Rust name (the last path segment), group and plural (for the
        /// audit test).
        #[cfg(test)]
        pub(crate) const ALL: &[(&str, Resource)] = &[
            $((kinds!(@name $ty), Resource::new($group, $plural)),)*
        ];
    };
    (@name $ty:ty) => {{
        let full = stringify!($ty);
        full
    }};
}

kinds! {
    k8s_openapi::api::core::v1::ConfigMap => "", "configmaps";
    k8s_openapi::api::core::v1::Event => "", "events";
    k8s_openapi::api::core::v1::Node => "", "nodes";
    k8s_openapi::api::core::v1::PersistentVolumeClaim => "", "persistentvolumeclaims";
    k8s_openapi::api::core::v1::Pod => "", "pods";
    k8s_openapi::api::core::v1::Secret => "", "secrets";
    k8s_openapi::api::core::v1::Service => "", "services";
    k8s_openapi::api::core::v1::ServiceAccount => "", "serviceaccounts";
    k8s_openapi::api::apps::v1::DaemonSet => "apps", "daemonsets";
    k8s_openapi::api::apps::v1::Deployment => "apps", "deployments";
    k8s_openapi::api::apps::v1::StatefulSet => "apps", "statefulsets";
    k8s_openapi::api::batch::v1::Job => "batch", "jobs";
    k8s_openapi::api::networking::v1::Ingress => "networking.k8s.io", "ingresses";
    k8s_openapi::api::coordination::v1::Lease => "coordination.k8s.io", "leases";
    k8s_openapi::api::certificates::v1::CertificateSigningRequest => "certificates.k8s.io", "certificatesigningrequests";
    k8s_openapi::api::events::v1::Event => "events.k8s.io", "events";
    k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration => "admissionregistration.k8s.io", "validatingwebhookconfigurations";
    crds::ironic::Ironic => "ironic.metal3.io", "ironics";
    crds::baremetalhost::BareMetalHost => "metal3.io", "baremetalhosts";
    crds::hardwaredata::HardwareData => "metal3.io", "hardwaredata";
    crds::firmware::HostFirmwareSettings => "metal3.io", "hostfirmwaresettings";
    crds::firmware::HostFirmwareComponents => "metal3.io", "hostfirmwarecomponents";
    crds::firmware::FirmwareSchema => "metal3.io", "firmwareschemas";
    crds::firmware::HostUpdatePolicy => "metal3.io", "hostupdatepolicies";
    crds::dataimage::DataImage => "metal3.io", "dataimages";
    crds::bmceventsubscription::BMCEventSubscription => "metal3.io", "bmceventsubscriptions";
    crds::preprovisioningimage::PreprovisioningImage => "metal3.io", "preprovisioningimages";
    crds::nodeset::NodeSet => "ferrometal.io", "nodesets";
    crds::nodesetservice::NodeSetService => "ferrometal.io", "nodesetservices";
}

/// cert-manager's Certificate, which the operator has no Rust type for (it applies it as a
/// dynamic object).
pub(crate) const CERT_MANAGER_CERTIFICATES: Resource = Resource::new("cert-manager.io", "certificates");

/// The Prometheus operator's ServiceMonitor, which the operator has no Rust type for either.
pub(crate) const SERVICE_MONITORS: Resource = Resource::new("monitoring.coreos.com", "servicemonitors");

/// The Rust name of a kind: the last segment of its path.
#[cfg(test)]
pub(crate) fn short_name(path: &str) -> &str {
    path.rsplit("::").next().unwrap_or(path).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_builtin<K: k8s_openapi::Resource + Kind>() {
        assert_eq!((K::RESOURCE.group, K::RESOURCE.plural), (K::GROUP, K::URL_PATH_SEGMENT), "{}", K::KIND);
    }

    fn check_custom<K: kube::Resource<DynamicType = ()> + Kind>() {
        assert_eq!(K::RESOURCE.group, K::group(&()).as_ref());
        assert_eq!(K::RESOURCE.plural, K::plural(&()).as_ref());
    }

    #[test]
    fn every_constant_is_the_resource_of_its_type() {
        use k8s_openapi::api::{
            admissionregistration, apps, batch, certificates, coordination, core, events, networking,
        };
        check_builtin::<core::v1::ConfigMap>();
        check_builtin::<core::v1::Event>();
        check_builtin::<core::v1::Node>();
        check_builtin::<core::v1::PersistentVolumeClaim>();
        check_builtin::<core::v1::Pod>();
        check_builtin::<core::v1::Secret>();
        check_builtin::<core::v1::Service>();
        check_builtin::<core::v1::ServiceAccount>();
        check_builtin::<apps::v1::DaemonSet>();
        check_builtin::<apps::v1::Deployment>();
        check_builtin::<apps::v1::StatefulSet>();
        check_builtin::<batch::v1::Job>();
        check_builtin::<networking::v1::Ingress>();
        check_builtin::<coordination::v1::Lease>();
        check_builtin::<certificates::v1::CertificateSigningRequest>();
        check_builtin::<events::v1::Event>();
        check_builtin::<admissionregistration::v1::ValidatingWebhookConfiguration>();
        check_custom::<crds::ironic::Ironic>();
        check_custom::<crds::baremetalhost::BareMetalHost>();
        check_custom::<crds::hardwaredata::HardwareData>();
        check_custom::<crds::nodeset::NodeSet>();
        check_custom::<crds::nodesetservice::NodeSetService>();
        check_custom::<crds::firmware::HostFirmwareSettings>();
        check_custom::<crds::firmware::HostFirmwareComponents>();
        check_custom::<crds::firmware::FirmwareSchema>();
        check_custom::<crds::firmware::HostUpdatePolicy>();
        check_custom::<crds::dataimage::DataImage>();
        check_custom::<crds::bmceventsubscription::BMCEventSubscription>();
        check_custom::<crds::preprovisioningimage::PreprovisioningImage>();
        assert_eq!(ALL.len(), 29, "every kind above is checked here");
    }

    #[test]
    fn short_names_are_the_last_segment() {
        assert_eq!(short_name("k8s_openapi::api::core::v1::Secret"), "Secret");
        assert!(ALL.iter().any(|(path, _)| short_name(path) == "BareMetalHost"));
    }
}
