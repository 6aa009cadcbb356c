//! What a client of an `Ironic` relies on to find what the operator publishes for it: the
//! Service's name and ports, the generated credentials' Secret, the CA bundle's ConfigMap and
//! its key. The Ironic controller renders these objects and the host controller reads them;
//! both take the names from here, so neither imports the other (and the host controller never
//! has to trust an `Ironic`'s status for where to connect).

/// The key of a CA in the CA bundle ConfigMap (and of every Secret's CA: `ca.crt`, as
/// cert-manager and kubernetes.io/tls Secrets name it).
pub const CA_CERT_KEY: &str = "ca.crt";

/// Service port of the image server.
pub const IMAGES_SERVICE_PORT: i32 = 8080;

/// Service port of the API: 443 with TLS, 80 without.
pub fn api_service_port(tls: bool) -> i32 {
    if tls { 443 } else { 80 }
}

/// The Service: the Ironic's own name, so clients find `<name>.<namespace>.svc`.
pub fn service(ironic: &str) -> String {
    ironic.to_string()
}

/// The generated API credentials' Secret, when `apiCredentialsName` is empty.
pub fn generated_credentials(ironic: &str) -> String {
    format!("{ironic}-api-credentials")
}

/// The ConfigMap publishing the CA that signs the serving certificate ([`CA_CERT_KEY`]).
pub fn ca_bundle(ironic: &str) -> String {
    format!("{ironic}-ca-bundle")
}

/// The API and image server URLs inside the cluster (no image server URL with
/// `highAvailability`, whose image servers are per node).
pub fn endpoints(ironic: &str, namespace: &str, high_availability: bool, tls: bool) -> (String, Option<String>) {
    let host = format!("{}.{namespace}.svc", service(ironic));
    let scheme = if tls { "https" } else { "http" };
    let api = format!("{scheme}://{host}:{}", api_service_port(tls));
    let images = (!high_availability).then(|| format!("http://{host}:{IMAGES_SERVICE_PORT}"));
    (api, images)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_find_the_api_at_the_services_dns_name_on_the_tls_port() {
        let (api, images) = endpoints("ironic", "metal3", false, true);
        assert_eq!(api, "https://ironic.metal3.svc:443");
        assert_eq!(images.as_deref(), Some("http://ironic.metal3.svc:8080"));
        assert_eq!(endpoints("ironic", "metal3", true, false), ("http://ironic.metal3.svc:80".to_string(), None));
    }

    #[test]
    fn the_published_objects_are_named_after_the_ironic() {
        assert_eq!(generated_credentials("ironic"), "ironic-api-credentials");
        assert_eq!(ca_bundle("ironic"), "ironic-ca-bundle");
    }
}
