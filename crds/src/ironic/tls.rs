//! `spec.tls`: ironic-standalone-operator's fields plus our TLS modes (`Auto`, `CertManager`,
//! `CertificateSigningRequest`).

use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Default lifetime of the operator-managed CA in `Auto` mode, in days.
pub const DEFAULT_AUTO_CA_VALIDITY_DAYS: i32 = 3650;
/// Default lifetime of the serving certificate in `Auto` mode, in days. The operator renews it
/// at about two thirds of its lifetime.
pub const DEFAULT_AUTO_CERTIFICATE_VALIDITY_DAYS: i32 = 365;
/// cert-manager's API group, the default of `issuerRef.group`.
pub const CERT_MANAGER_GROUP: &str = "cert-manager.io";

/// TLS settings for the API, the image server, JSON RPC and BMC connections.
///
/// Ours: `mode`, `auto`, `certManager` and `disabled`. Without `mode` the behaviour is
/// ironic-standalone-operator's, HTTPS with the Secret in `certificateName` when it is set,
/// except that without a certificate the API is served with the operator-managed CA (Auto)
/// instead of plain HTTP; `disabled: true` asks for plain HTTP.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Tls {
    /// Our addition. Settings of the operator-managed CA, for mode Auto.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto: Option<AutoTls>,
    /// CA bundle (ConfigMap or Secret) for verifying BMC certificates. Ironic 32.0 or newer.
    #[serde(default, rename = "bmcCA", skip_serializing_if = "Option::is_none")]
    pub bmc_ca: Option<ResourceReference>,
    /// Deprecated: use bmcCA. Name of a Secret with the BMC CA bundle (as
    /// ironic-standalone-operator reads it); when bmcCA is also set, it must name the same
    /// Secret.
    #[serde(default, rename = "bmcCAName", skip_serializing_if = "Option::is_none")]
    pub bmc_ca_name: Option<String>,
    /// Our addition. cert-manager issues the serving certificate, for mode CertManager.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_manager: Option<CertManagerTls>,
    /// Our addition. The cluster's own signer issues the serving certificate through a
    /// Kubernetes CertificateSigningRequest, for mode CertificateSigningRequest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_signing_request: Option<CsrTls>,
    /// Secret with the serving certificate and key (`tls.crt`, `tls.key`, optionally
    /// `ca.crt`); enables HTTPS. Mode Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_name: Option<String>,
    /// Our addition. Serve the API and the image server over plain HTTP: the opt-out of the
    /// default, mode Auto. Basic-auth credentials then cross the network in clear. Excludes
    /// mode, certificateName, certManager and certificateSigningRequest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
    /// Serve virtual media over plain HTTP, for hardware that cannot fetch HTTPS links.
    #[serde(default, rename = "disableVirtualMediaTLS", skip_serializing_if = "Option::is_none")]
    pub disable_virtual_media_tls: Option<bool>,
    /// Skip certificate verification on JSON RPC between replicas. Only with
    /// highAvailability.
    #[serde(default, rename = "insecureRPC", skip_serializing_if = "Option::is_none")]
    pub insecure_rpc: Option<bool>,
    /// Our addition. Where the serving certificate comes from: Secret (certificateName), Auto
    /// (a CA and certificate the operator creates and renews), CertManager (a cert-manager
    /// Certificate for certManager.issuerRef) or CertificateSigningRequest (a Kubernetes
    /// CertificateSigningRequest for certificateSigningRequest.signerName, approved and signed
    /// by the cluster's administrators). Unset: Secret when certificateName is set,
    /// CertManager when certManager is set, CertificateSigningRequest when
    /// certificateSigningRequest is set, otherwise Auto (disabled turns TLS off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<TlsMode>,
    /// CA bundle for verifying image servers (`WEBSERVER_CACERT_FILE`).
    #[serde(default, rename = "trustedCA", skip_serializing_if = "Option::is_none")]
    pub trusted_ca: Option<ResourceReferenceWithKey>,
    /// Deprecated: use trustedCA. Name of a ConfigMap with the trusted CA bundle; must agree
    /// with trustedCA when both are set.
    #[serde(default, rename = "trustedCAName", skip_serializing_if = "Option::is_none")]
    pub trusted_ca_name: Option<String>,
}

impl Tls {
    /// The mode in force: none when `disabled`, else the explicit one, else inferred the way
    /// ironic-standalone-operator users expect (Secret with `certificateName`, CertManager
    /// with `certManager`), else Auto. `None` means plain HTTP. See `IronicSpec::tls_mode`
    /// for an Ironic without `spec.tls`.
    pub fn effective_mode(&self) -> Option<TlsMode> {
        if self.disabled == Some(true) {
            return None;
        }
        if self.mode.is_some() {
            return self.mode;
        }
        if self.certificate_name.as_deref().is_some_and(|n| !n.is_empty()) {
            Some(TlsMode::Secret)
        } else if self.cert_manager.is_some() {
            Some(TlsMode::CertManager)
        } else if self.certificate_signing_request.is_some() {
            Some(TlsMode::CertificateSigningRequest)
        } else {
            Some(TlsMode::Auto)
        }
    }
}

/// Source of the serving certificate. Values: Secret, Auto, CertManager,
/// CertificateSigningRequest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum TlsMode {
    /// The user's Secret named by certificateName.
    Secret,
    /// A self-signed CA and serving certificate managed by the operator.
    Auto,
    /// A cert-manager Certificate.
    CertManager,
    /// A Kubernetes CertificateSigningRequest signed by the cluster's own signer.
    CertificateSigningRequest,
}

/// Kubernetes' format of a signer name: a DNS subdomain, a slash, a path.
pub const SIGNER_NAME_PATTERN: &str =
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$";
/// The longest signer name Kubernetes accepts (a 253-character domain, `/`, a path).
pub const SIGNER_NAME_MAX_LENGTH: usize = 571;
/// Message of the rule against Kubernetes' built-in signers, shared with the webhook.
pub const BUILT_IN_SIGNER_MESSAGE: &str = "cannot be a kubernetes.io signer: Kubernetes' built-in signers do not issue serving certificates for arbitrary names; name the cluster's own signer";
/// The shortest lifetime Kubernetes lets a CertificateSigningRequest ask for, in seconds.
pub const MIN_EXPIRATION_SECONDS: i32 = 600;

/// The CertificateSigningRequest the operator makes (mode CertificateSigningRequest). The
/// operator generates the key and keeps it in a Secret; the cluster's administrators approve
/// the request (`kubectl certificate approve`) and their signer signs it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!self.signerName.startsWith('kubernetes.io/') && !self.signerName.matches('^[^/]*[.]kubernetes[.]io/')").message(Message::Message(format!("signerName {BUILT_IN_SIGNER_MESSAGE}"))))]
pub struct CsrTls {
    /// The signer that issues the certificate, in Kubernetes' format (`example.com/serving`).
    /// Required; not a `kubernetes.io/` signer.
    #[schemars(
        regex(
            pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
        ),
        length(min = 3, max = 571)
    )]
    pub signer_name: String,
    /// Requested lifetime of the certificate in seconds, at least 600; the signer may issue a
    /// shorter one. Sent only to apiservers that know the field (Kubernetes 1.22 and newer);
    /// older ones get the signer's default. Renewed at two thirds of the lifetime issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 600))]
    pub expiration_seconds: Option<i32>,
    /// The signer's CA bundle (ConfigMap or Secret in the Ironic's namespace), published for
    /// clients in the CA bundle ConfigMap and given to Ironic for JSON RPC. Without it no CA
    /// is published: clients must already trust the signer.
    #[serde(default, rename = "signerCA", skip_serializing_if = "Option::is_none")]
    pub signer_ca: Option<ResourceReferenceWithKey>,
}

/// Settings of the operator-managed CA (mode Auto).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoTls {
    /// Lifetime of the CA in days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 3650), range(min = 1))]
    pub ca_validity_days: Option<i32>,
    /// Lifetime of the serving certificate in days; renewed at about two thirds of it. Must
    /// not exceed caValidityDays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 365), range(min = 1))]
    pub certificate_validity_days: Option<i32>,
}

impl AutoTls {
    /// CA lifetime in days, defaulted.
    pub fn ca_validity_days(&self) -> i32 {
        self.ca_validity_days.unwrap_or(DEFAULT_AUTO_CA_VALIDITY_DAYS)
    }
    /// Serving certificate lifetime in days, defaulted.
    pub fn certificate_validity_days(&self) -> i32 {
        self.certificate_validity_days.unwrap_or(DEFAULT_AUTO_CERTIFICATE_VALIDITY_DAYS)
    }
}

/// The cert-manager Certificate the operator creates (mode CertManager).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CertManagerTls {
    /// Certificate lifetime as a Go duration (e.g. 2160h); cert-manager's default when unset.
    /// At least 1h.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    /// Issuer that signs the certificate.
    pub issuer_ref: IssuerRef,
    /// How long before expiry cert-manager renews, as a Go duration; at least 5m and shorter
    /// than duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_before: Option<String>,
}

/// Reference to a cert-manager Issuer or ClusterIssuer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IssuerRef {
    /// API group of the issuer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "cert-manager.io"))]
    pub group: Option<String>,
    /// Issuer (same namespace) or ClusterIssuer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Issuer"))]
    pub kind: Option<IssuerKind>,
    /// Name of the issuer.
    pub name: String,
}

impl IssuerRef {
    /// The group, defaulted; always set explicitly on the Certificate to avoid reissuance.
    pub fn group(&self) -> &str {
        self.group.as_deref().unwrap_or(CERT_MANAGER_GROUP)
    }
    /// The kind, defaulted.
    pub fn kind(&self) -> IssuerKind {
        self.kind.unwrap_or(IssuerKind::Issuer)
    }
}

/// Kind of cert-manager issuer. Values: Issuer, ClusterIssuer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum IssuerKind {
    /// A namespaced Issuer in the Ironic's namespace.
    Issuer,
    /// A cluster-scoped ClusterIssuer.
    ClusterIssuer,
}

/// Kind of object holding a CA bundle. Values: ConfigMap, Secret.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum ReferenceKind {
    /// A ConfigMap.
    ConfigMap,
    /// A Secret.
    Secret,
}

/// A ConfigMap or Secret in the Ironic's namespace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceReference {
    /// ConfigMap or Secret; ConfigMap when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ReferenceKind>,
    /// Name of the object. Required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A key within a ConfigMap or Secret in the Ironic's namespace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceReferenceWithKey {
    /// Key holding the PEM bundle; the only key when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// ConfigMap or Secret; ConfigMap when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ReferenceKind>,
    /// Name of the object. Required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}
