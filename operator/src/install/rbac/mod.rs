//! The operator's permissions: one table in code ([`table`]) lists, per component, every
//! resource and verb it uses, where (the watched namespaces, the operator's own namespace, or
//! the cluster) and for which feature. The ServiceAccount's ClusterRoles and Roles, the OLM
//! bundle's `permissions` and `clusterPermissions`, and the readiness check of the watches
//! (`/readyz`) are all rendered from it ([`render`]), so there is one truth.
//!
//! A controller states what its watches and its finalizer use with
//! [`require_access!`](crate::install::rbac::require_access), beside them (each controller's `controller.rs`):
//! the assertion is evaluated at compile time, so a watch the table does not grant does not
//! build. The writes of a reconcile are checked at run time instead, by the audit test and the
//! end-to-end tests that run the operator with the shipped permissions.

#[cfg(test)]
mod audit;
pub(crate) mod kinds;
pub mod render;
pub(crate) mod table;

pub(crate) use kinds::Kind;

/// A verb of Kubernetes' authorization.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
}

impl Verb {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::List => "list",
            Self::Watch => "watch",
            Self::Create => "create",
            Self::Update => "update",
            Self::Patch => "patch",
            Self::Delete => "delete",
        }
    }
}

/// An API resource: its group (`""` for the core group), plural and optional subresource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Resource {
    pub group: &'static str,
    pub plural: &'static str,
    pub subresource: Option<&'static str>,
}

impl Resource {
    pub const fn new(group: &'static str, plural: &'static str) -> Self {
        Self { group, plural, subresource: None }
    }

    /// The `status` subresource of this resource.
    pub const fn status(self) -> Self {
        Self { subresource: Some("status"), ..self }
    }

    /// The name RBAC rules use: `plural` or `plural/subresource`.
    pub fn rule_name(&self) -> String {
        match self.subresource {
            Some(sub) => format!("{}/{sub}", self.plural),
            None => self.plural.to_string(),
        }
    }
}

/// Where a permission applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reach {
    /// Every watched namespace (all of them when the operator watches the whole cluster).
    Watched,
    /// The operator's own namespace (its leader Lease, its webhook certificate).
    OperatorNamespace,
    /// The namespaces where an `Ironic` may run (`--ironic-namespaces`, the operator's own by
    /// default): an Ironic's workload, its generated Secrets and Jobs. Never the whole cluster
    /// unless an admin asks for it (`*`), because a Deployment, DaemonSet or Job created in
    /// any namespace runs as any ServiceAccount there.
    IronicNamespaces,
    /// Cluster-scoped objects; only ClusterRoles can grant these.
    Cluster,
}

/// Which installs grant a permission. Only [`Feature::Always`] is granted by default;
/// the others come with the feature that needs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Feature {
    /// Every install.
    Always,
    /// The operator makes its webhook certificate and publishes its CA in the
    /// ValidatingWebhookConfiguration (the default kustomize install; not with cert-manager
    /// or OLM, which provide the certificate and the CA).
    WebhookSelfManaged,
    /// `Ironic` TLS issued by cert-manager (`spec.tls.mode: CertManager`).
    CertManagerTls,
    /// `Ironic` TLS signed by the cluster's own signer through CertificateSigningRequests
    /// (`spec.tls.mode: CertificateSigningRequest`); CSRs are cluster-scoped.
    CsrTls,
    /// An `Ironic` on host networking without a fixed provisioning IP, whose serving
    /// certificate covers its nodes' addresses (the only cluster-wide read of the controllers).
    NodeAddresses,
}

impl Feature {
    /// Every optional feature (all but [`Feature::Always`]).
    pub const OPTIONAL: [Feature; 4] =
        [Feature::WebhookSelfManaged, Feature::CertManagerTls, Feature::CsrTls, Feature::NodeAddresses];

    /// Short name, used in object names and directories.
    pub const fn slug(self) -> &'static str {
        match self {
            Self::Always => "always",
            Self::WebhookSelfManaged => "webhook-certificates",
            Self::CertManagerTls => "cert-manager-tls",
            Self::CsrTls => "csr-tls",
            Self::NodeAddresses => "node-addresses",
        }
    }
}

/// One use of one resource by one component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub resource: Resource,
    pub verbs: &'static [Verb],
    /// Object names the verbs are limited to; empty for any object. Kubernetes cannot limit
    /// `create` (or `list`/`watch`) by name, so such verbs go in a separate entry.
    pub names: &'static [&'static str],
    pub reach: Reach,
    pub feature: Feature,
    /// Why the component needs it, for the reader of the table and of the rendered roles.
    pub why: &'static str,
}

/// A part of the operator with its permissions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Component {
    /// The controller's name (as in metrics and `--controllers`), or `runtime`/`webhook`.
    pub name: &'static str,
    pub access: &'static [Access],
}

impl Component {
    /// The resources this component watches in the watched namespaces, sorted.
    pub fn watched(&self) -> Vec<Resource> {
        let mut out: Vec<Resource> = self
            .access
            .iter()
            .filter(|a| a.reach == Reach::Watched && a.feature == Feature::Always && a.verbs.contains(&Verb::Watch))
            .map(|a| a.resource)
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn same_resource(a: &Resource, b: &Resource) -> bool {
    let subresource = match (a.subresource, b.subresource) {
        (None, None) => true,
        (Some(x), Some(y)) => same(x, y),
        _ => false,
    };
    subresource && same(a.group, b.group) && same(a.plural, b.plural)
}

const fn has_verb(verbs: &[Verb], verb: Verb) -> bool {
    let mut i = 0;
    while i < verbs.len() {
        if verbs[i] as u8 == verb as u8 {
            return true;
        }
        i += 1;
    }
    false
}

/// True when `component` may use every verb of `verbs` on `resource` (in any reach, for any
/// feature). `const`, so that [`require_access!`](crate::install::rbac::require_access) checks at compile
/// time.
pub(crate) const fn permits(component: &Component, resource: Resource, verbs: &[Verb]) -> bool {
    let mut v = 0;
    while v < verbs.len() {
        let mut found = false;
        let mut i = 0;
        while i < component.access.len() {
            let access = &component.access[i];
            if same_resource(&access.resource, &resource) && has_verb(access.verbs, verbs[v]) {
                found = true;
            }
            i += 1;
        }
        if !found {
            return false;
        }
        v += 1;
    }
    true
}

/// Fails the build unless the RBAC table grants `component` the verbs on `kind` (or on its
/// `status` subresource). Put it beside the code that uses the access:
/// `require_access!(IRONIC, Deployment: Get, List, Watch)`,
/// `require_access!(IRONIC, Ironic, status: Patch)`, `require_access!(HOST, [Secret, ConfigMap]: Get)`.
/// It asserts [`permits`] in a `const`, whose refusals the tests below show.
macro_rules! require_access {
    // Several kinds with the same verbs: one assertion each.
    ($component:path, [$($kind:ty),+ $(,)?]: $($verb:ident),+ $(,)?) => {
        $crate::install::rbac::require_access!(@each $component, [$($verb),+], $($kind),+);
    };
    (@each $component:path, $verbs:tt, $($kind:ty),+) => {
        $($crate::install::rbac::require_access!(@one $component, $kind, $verbs);)+
    };
    (@one $component:path, $kind:ty, [$($verb:ident),+]) => {
        $crate::install::rbac::require_access!($component, $kind: $($verb),+);
    };
    ($component:path, $kind:ty, status: $($verb:ident),+ $(,)?) => {
        const _: () = assert!(
            $crate::install::rbac::permits(
                &$component,
                <$kind as $crate::install::rbac::Kind>::RESOURCE.status(),
                &[$($crate::install::rbac::Verb::$verb),+],
            ),
            "the RBAC table (operator/src/install/rbac/table.rs) does not grant this access"
        );
    };
    ($component:path, $kind:ty: $($verb:ident),+ $(,)?) => {
        const _: () = assert!(
            $crate::install::rbac::permits(
                &$component,
                <$kind as $crate::install::rbac::Kind>::RESOURCE,
                &[$($crate::install::rbac::Verb::$verb),+],
            ),
            "the RBAC table (operator/src/install/rbac/table.rs) does not grant this access"
        );
    };
}
pub(crate) use require_access;

#[cfg(test)]
mod tests {
    use super::table::{HOST, IRONIC, NODESET};
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Node;

    // The macro in use: these lines would not compile if the table lost the access.
    crate::install::rbac::require_access!(IRONIC, Deployment: Get, List, Watch, Create, Patch, Delete);
    crate::install::rbac::require_access!(HOST, crds::baremetalhost::BareMetalHost, status: Patch);

    #[test]
    fn permits_needs_every_verb_on_the_exact_resource() {
        let deployments = <Deployment as Kind>::RESOURCE;
        assert!(permits(&IRONIC, deployments, &[Verb::Watch, Verb::Patch]));
        assert!(!permits(&IRONIC, deployments, &[Verb::Watch, Verb::Update]), "update is not granted");
        assert!(!permits(&IRONIC, deployments.status(), &[Verb::Patch]), "the subresource is another resource");
        assert!(!permits(&HOST, <Node as Kind>::RESOURCE, &[Verb::List]));
    }

    #[test]
    fn watched_resources_are_the_always_granted_watches() {
        let watched = HOST.watched();
        assert!(watched.contains(&Resource::new("metal3.io", "baremetalhosts")));
        assert!(watched.contains(&Resource::new("", "secrets")));
        assert!(!watched.contains(&Resource::new("metal3.io", "hardwaredata")), "written, not watched");
    }

    #[test]
    fn the_nodeset_controller_is_not_expected_to_watch_events() {
        // `/readyz` waits for a synced watch of every watched resource; the controller never
        // watches Events, so a Watch grant here kept a leading replica unready for ever.
        assert!(!NODESET.watched().contains(&Resource::new("events.k8s.io", "events")));
        assert!(NODESET.watched().contains(&Resource::new("metal3.io", "hardwaredata")));
    }
}
