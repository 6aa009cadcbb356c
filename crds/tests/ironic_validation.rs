//! Every Ironic validation rule: bad input is rejected at the right path with the right
//! message, good input is accepted.

mod common;

use common::{
    Case, assert_accepted, assert_cases, assert_cel_accepts, assert_cel_rejects, assert_rejects, assert_update_cases,
    patched, typed, validate_as, yaml,
};
use crds::ironic::{Ironic, IronicSpec, IronicValidationOptions, validate_ironic};
use serde_json::{Value, json};

fn spec_of(sample: &str) -> Value {
    yaml(sample)["spec"].clone()
}

fn full() -> Value {
    spec_of(include_str!("../samples/ironic-full.yaml"))
}

fn ha() -> Value {
    spec_of(include_str!("../samples/ironic-full-ha.yaml"))
}

fn spec(value: &Value) -> IronicSpec {
    typed(value)
}

fn errors(value: &Value, old: Option<&Value>) -> Vec<crds::FieldError> {
    validate_as(value, old, |new, old| validate_ironic(new, old, &IronicValidationOptions::default()))
}

fn rejected_cases() -> Vec<Case> {
    let none = || json!({});
    vec![
        (
            "ha needs a database",
            none,
            json!({"highAvailability": true}),
            "spec.database",
            "a database is required when highAvailability is true",
        ),
        (
            "external database needs host",
            none,
            json!({"database": {"credentialsName": "c", "name": "n"}}),
            "spec.database.host",
            "is required for an external database",
        ),
        (
            "external database needs credentials",
            none,
            json!({"database": {"host": "h", "name": "n"}}),
            "spec.database.credentialsName",
            "is required for an external database",
        ),
        (
            "external database needs a name",
            none,
            json!({"database": {"host": "h", "credentialsName": "c"}}),
            "spec.database.name",
            "is required for an external database",
        ),
        (
            "database forms are exclusive",
            none,
            json!({"database": {"managed": {}, "host": "h"}}),
            "spec.database.managed",
            "not both",
        ),
        (
            "no host network excludes bindInterface",
            full,
            json!({"networking": {"disableHostNetwork": true}}),
            "spec.networking.bindInterface",
            "cannot be used with disableHostNetwork",
        ),
        (
            "no host network excludes dhcp",
            full,
            json!({"networking": {"disableHostNetwork": true}}),
            "spec.networking.dhcp",
            "cannot be used with disableHostNetwork",
        ),
        (
            "no host network excludes interface",
            full,
            json!({"networking": {"disableHostNetwork": true}}),
            "spec.networking.interface",
            "cannot be used with disableHostNetwork",
        ),
        (
            "no host network excludes ipAddress",
            full,
            json!({"networking": {"disableHostNetwork": true}}),
            "spec.networking.ipAddress",
            "cannot be used with disableHostNetwork",
        ),
        (
            "no host network excludes macAddresses",
            full,
            json!({"networking": {"disableHostNetwork": true}}),
            "spec.networking.macAddresses",
            "cannot be used with disableHostNetwork",
        ),
        (
            "no host network excludes keepalived",
            full,
            json!({"networking": {"disableHostNetwork": true}}),
            "spec.networking.keepalived",
            "cannot be used with disableHostNetwork",
        ),
        (
            "ipAddress must be an IP",
            full,
            json!({"networking": {"ipAddress": "192.0.2.300"}}),
            "spec.networking.ipAddress",
            "is not a valid IP address",
        ),
        (
            "externalIP must be an IP",
            ha,
            json!({"networking": {"externalIP": "ironic.example.com"}}),
            "spec.networking.externalIP",
            "is not a valid IP address",
        ),
        (
            "externalIP excludes ingress",
            full,
            json!({"networking": {"externalIP": "203.0.113.1"}}),
            "spec.networking.ingress",
            "cannot be used together with externalIP",
        ),
        (
            "externalIP excludes externalCallbackURL",
            full,
            json!({"networking": {"externalIP": "203.0.113.1"}}),
            "spec.networking.externalCallbackURL",
            "cannot be used together with externalIP",
        ),
        (
            "externalIP excludes imageServerExternalURL",
            full,
            json!({"networking": {"externalIP": "203.0.113.1"}}),
            "spec.networking.imageServerExternalURL",
            "cannot be used together with externalIP",
        ),
        (
            "external URLs go together without ingress",
            full,
            json!({"networking": {"ingress": null, "imageServerExternalURL": null}}),
            "spec.networking.imageServerExternalURL",
            "must be set together",
        ),
        (
            "external URLs must be URLs",
            full,
            json!({"networking": {"externalCallbackURL": "ftp://ironic"}}),
            "spec.networking.externalCallbackURL",
            "expected one of http, https",
        ),
        (
            "ingress host must be a DNS name",
            full,
            json!({"networking": {"ingress": {"host": "Not A Host"}}}),
            "spec.networking.ingress.host",
            "is not a valid host name",
        ),
        (
            "mac addresses must be MACs",
            full,
            json!({"networking": {"macAddresses": ["52:54:00"]}}),
            "spec.networking.macAddresses[0]",
            "is not a valid MAC address",
        ),
        (
            "ports stay below 65536",
            full,
            json!({"networking": {"apiPort": 70000}}),
            "spec.networking.apiPort",
            "is not a valid port",
        ),
        (
            "ha excludes ipAddress",
            full,
            json!({"highAvailability": true}),
            "spec.networking.ipAddress",
            "cannot be used with highAvailability",
        ),
        (
            "ha excludes dhcp",
            full,
            json!({"highAvailability": true}),
            "spec.networking.dhcp",
            "DHCP is not supported with highAvailability",
        ),
        (
            "ha excludes keepalived",
            full,
            json!({"highAvailability": true}),
            "spec.networking.keepalived",
            "keepalived is not supported with highAvailability",
        ),
        (
            "ha excludes keepalived in its deprecated form",
            ha,
            json!({"networking": {"keepalived": null, "ipAddressManager": "keepalived", "ipAddress": "192.0.2.2",
                "interface": "eno1"}}),
            "spec.networking.keepalived",
            "keepalived is not supported with highAvailability",
        ),
        (
            "ha needs the service monitor disabled",
            full,
            json!({"highAvailability": true}),
            "spec.prometheusExporter.disableServiceMonitor",
            "must be true with highAvailability",
        ),
        (
            "insecureRPC needs ha",
            full,
            json!({"tls": {"insecureRPC": true}}),
            "spec.tls.insecureRPC",
            "only has an effect with highAvailability",
        ),
        (
            "keepalived needs ipAddress",
            none,
            json!({"networking": {"interface": "eno1", "keepalived": {"enabled": true}}}),
            "spec.networking.ipAddress",
            "is required when keepalived is enabled",
        ),
        (
            "keepalived needs interface",
            none,
            json!({"networking": {"ipAddress": "192.0.2.2", "ipAddressManager": "keepalived"}}),
            "spec.networking.interface",
            "is required when keepalived is enabled",
        ),
        (
            "keepalived and ipAddressManager exclude each other",
            full,
            json!({"networking": {"ipAddressManager": "keepalived"}}),
            "spec.networking.ipAddressManager",
            "cannot be used together with keepalived",
        ),
        (
            "additional VIPs need an IP",
            full,
            json!({"networking": {"keepalived": {"additionalVIPs": [{"interface": "eno2"}]}}}),
            "spec.networking.keepalived.additionalVIPs[0].ipAddress",
            "a valid IP address is required",
        ),
        (
            "additional VIPs need an interface",
            full,
            json!({"networking": {"keepalived": {"additionalVIPs": [{"ipAddress": "198.51.100.2"}]}}}),
            "spec.networking.keepalived.additionalVIPs[0].interface",
            "is required",
        ),
        (
            "additional VIP prefixes fit the family",
            full,
            json!({"networking": {"keepalived": {"additionalVIPs": [{"ipAddress": "198.51.100.2", "interface": "eno2", "prefix": 33}]}}}),
            "spec.networking.keepalived.additionalVIPs[0].prefix",
            "is not a valid prefix length",
        ),
        (
            "exporter address must be an IP",
            full,
            json!({"prometheusExporter": {"bindAddress": "localhost"}}),
            "spec.prometheusExporter.bindAddress",
            "is not a valid IP address",
        ),
        (
            "loopback exporter cannot be scraped",
            full,
            json!({"prometheusExporter": {"bindAddress": "127.0.0.1"}}),
            "spec.prometheusExporter.bindAddress",
            "cannot be scraped",
        ),
        (
            "sensor interval at least 60",
            full,
            json!({"prometheusExporter": {"sensorCollectionInterval": 30}}),
            "spec.prometheusExporter.sensorCollectionInterval",
            "at least 60",
        ),
        (
            "dhcp needs a provisioning interface",
            none,
            json!({"networking": {"dhcp": {"networkCIDR": "192.0.2.0/24", "rangeBegin": "192.0.2.10", "rangeEnd": "192.0.2.20"}}}),
            "spec.networking.dhcp",
            "requires networking.ipAddress",
        ),
        (
            "dhcp range fields go together",
            full,
            json!({"networking": {"dhcp": {"rangeEnd": null}}}),
            "spec.networking.dhcp.networkCIDR",
            "must be set together",
        ),
        (
            "dhcp needs a range",
            full,
            json!({"networking": {"dhcp": {"networkCIDR": null, "rangeBegin": null, "rangeEnd": null, "extraRanges": null}}}),
            "spec.networking.dhcp.networkCIDR",
            "are required unless extraRanges is set",
        ),
        (
            "dhcp CIDR must parse",
            full,
            json!({"networking": {"dhcp": {"networkCIDR": "192.0.2.0"}}}),
            "spec.networking.dhcp.networkCIDR",
            "is not a valid CIDR",
        ),
        (
            "dhcp begin inside the network",
            full,
            json!({"networking": {"dhcp": {"rangeBegin": "192.0.3.1"}}}),
            "spec.networking.dhcp.rangeBegin",
            "is not inside 192.0.2.0/24",
        ),
        (
            "dhcp end inside the network",
            full,
            json!({"networking": {"dhcp": {"rangeEnd": "10.0.0.1"}}}),
            "spec.networking.dhcp.rangeEnd",
            "is not inside 192.0.2.0/24",
        ),
        (
            "dhcp begin before end",
            full,
            json!({"networking": {"dhcp": {"rangeBegin": "192.0.2.201"}}}),
            "spec.networking.dhcp.rangeEnd",
            "must not be before rangeBegin",
        ),
        (
            "dhcp network contains ipAddress",
            full,
            json!({"networking": {"ipAddress": "198.51.100.200"}}),
            "spec.networking.ipAddress",
            "must be inside dhcp.networkCIDR",
        ),
        (
            "dhcp addresses must be IPs",
            full,
            json!({"networking": {"dhcp": {"gatewayAddress": "gw"}}}),
            "spec.networking.dhcp.gatewayAddress",
            "is not a valid IP address",
        ),
        (
            "dnsAddress excludes serveDNS",
            full,
            json!({"networking": {"dhcp": {"serveDNS": true}}}),
            "spec.networking.dhcp.serveDNS",
            "cannot be used together with dnsAddress",
        ),
        (
            "dhcp pools must not overlap",
            full,
            json!({"networking": {"dhcp": {"extraRanges": [{"networkCIDR": "192.0.2.0/24", "rangeBegin": "192.0.2.150", "rangeEnd": "192.0.2.250"}]}}}),
            "spec.networking.dhcp.extraRanges[0].rangeBegin",
            "overlaps with the range of spec.networking.dhcp",
        ),
        (
            "extra ranges need all fields",
            full,
            json!({"networking": {"dhcp": {"extraRanges": [{"networkCIDR": "198.51.100.0/24", "rangeBegin": "198.51.100.10"}]}}}),
            "spec.networking.dhcp.extraRanges[0].rangeEnd",
            "is required",
        ),
        (
            "no per-range IPv6 gateway",
            full,
            json!({"networking": {"dhcp": {"extraRanges": [{"networkCIDR": "2001:db8::/64", "rangeBegin": "2001:db8::10", "rangeEnd": "2001:db8::20", "gatewayAddress": "2001:db8::1"}]}}}),
            "spec.networking.dhcp.extraRanges[0].gatewayAddress",
            "not supported for IPv6",
        ),
        (
            "a range's gateway is inside its network",
            full,
            json!({"networking": {"dhcp": {"extraRanges": [{"networkCIDR": "198.51.100.0/24", "rangeBegin": "198.51.100.10", "rangeEnd": "198.51.100.20", "gatewayAddress": "203.0.113.1"}]}}}),
            "spec.networking.dhcp.extraRanges[0].gatewayAddress",
            "203.0.113.1 is not inside 198.51.100.0/24",
        ),
        (
            "a range's network has a prefix",
            full,
            json!({"networking": {"dhcp": {"extraRanges": [{"networkCIDR": "0.0.0.0/0", "rangeBegin": "198.51.100.10", "rangeEnd": "198.51.100.20"}]}}}),
            "spec.networking.dhcp.extraRanges[0].networkCIDR",
            "0.0.0.0/0 must have a non-zero prefix length",
        ),
        (
            "extra ranges need Ironic 37.0",
            full,
            json!({"version": "35.0"}),
            "spec.networking.dhcp.extraRanges",
            "requires Ironic 37.0 or newer",
        ),
        (
            "version must be supported",
            none,
            json!({"version": "34.0"}),
            "spec.version",
            "is not supported; supported versions are latest, 38.0, 37.0, 35.0",
        ),
        (
            "version must be MAJOR.MINOR",
            none,
            json!({"version": "v38"}),
            "spec.version",
            "must be \"latest\" or MAJOR.MINOR",
        ),
        (
            "agent image URLs",
            full,
            json!({"overrides": {"agentImages": [{"kernel": "ftp://k", "initramfs": "http://i"}]}}),
            "spec.overrides.agentImages[0].kernel",
            "expected one of file, http, https, oci",
        ),
        (
            "agent image file URLs are absolute",
            full,
            json!({"overrides": {"agentImages": [{"kernel": "file:ipa.kernel", "initramfs": "http://i"}]}}),
            "spec.overrides.agentImages[0].kernel",
            "needs an absolute path",
        ),
        (
            "agent image URLs name a host",
            full,
            json!({"overrides": {"agentImages": [{"kernel": "http://k", "initramfs": "http:///ipa.initramfs"}]}}),
            "spec.overrides.agentImages[0].initramfs",
            "has no host",
        ),
        (
            "agent image URLs carry no control characters",
            full,
            json!({"overrides": {"agentImages": [{"kernel": "http://k/ipa.kernel\u{0}", "initramfs": "http://i"}]}}),
            "spec.overrides.agentImages[0].kernel",
            "control character",
        ),
        (
            "external URLs name a host",
            full,
            json!({"networking": {"externalCallbackURL": "https:///callback"}}),
            "spec.networking.externalCallbackURL",
            "has no host",
        ),
        (
            "agent image architectures are unique",
            full,
            json!({"overrides": {"agentImages": [{"kernel": "http://k", "initramfs": "http://i"}, {"architecture": "", "kernel": "http://k", "initramfs": "http://i"}]}}),
            "spec.overrides.agentImages[1].architecture",
            "only once",
        ),
        (
            "toleration Exists has no value",
            full,
            json!({"overrides": {"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}}),
            "spec.overrides.tolerations[0].value",
            "must be empty when operator is Exists",
        ),
        (
            "toleration operators",
            full,
            json!({"overrides": {"tolerations": [{"key": "k", "operator": "In"}]}}),
            "spec.overrides.tolerations[0].operator",
            "must be Equal or Exists",
        ),
        (
            "a toleration without a key matches every key",
            full,
            json!({"overrides": {"tolerations": [{"operator": "Equal", "value": "v"}]}}),
            "spec.overrides.tolerations[0].operator",
            "must be Exists when key is empty",
        ),
        (
            "toleration effects",
            full,
            json!({"overrides": {"tolerations": [{"key": "k", "effect": "Never"}]}}),
            "spec.overrides.tolerations[0].effect",
            "must be NoSchedule",
        ),
        (
            "extraConfig needs a name",
            full,
            json!({"extraConfig": [{"value": "1"}]}),
            "spec.extraConfig[0].name",
            "is required",
        ),
        (
            "extraConfig names are identifiers",
            full,
            json!({"extraConfig": [{"group": "a-b", "name": "x"}]}),
            "spec.extraConfig[0].group",
            "letters, digits and underscores",
        ),
        (
            "provider network types are unique",
            full,
            json!({"networkingService": {"providerNetworks": [{"type": "idle", "mode": "access"}, {"type": "idle", "mode": "access"}]}}),
            "spec.networkingService.providerNetworks[1].type",
            "only once",
        ),
        (
            "access ports take no tagged VLANs",
            full,
            json!({"networkingService": {"providerNetworks": [{"type": "idle", "mode": "access", "allowedVLANs": ["10"]}]}}),
            "spec.networkingService.providerNetworks[0].allowedVLANs",
            "must be empty for access ports",
        ),
        (
            "access, the default mode, takes no allowed VLANs",
            full,
            json!({"networkingService": {"providerNetworks": [{"type": "idle", "allowedVLANs": ["10"]}]}}),
            "spec.networkingService.providerNetworks[0].allowedVLANs",
            "must be empty for access ports",
        ),
        (
            "trunk ports need tagged VLANs",
            full,
            json!({"networkingService": {"providerNetworks": [{"type": "idle", "mode": "trunk"}]}}),
            "spec.networkingService.providerNetworks[0].allowedVLANs",
            "is required for trunk and hybrid ports",
        ),
        (
            "VLAN ranges are valid",
            full,
            json!({"networkingService": {"providerNetworks": [{"type": "idle", "mode": "hybrid", "allowedVLANs": ["300-200"]}]}}),
            "spec.networkingService.providerNetworks[0].allowedVLANs[0]",
            "within 1-4094",
        ),
        (
            "native VLANs are valid",
            full,
            json!({"networkingService": {"providerNetworks": [{"type": "idle", "mode": "access", "nativeVLAN": 4095}]}}),
            "spec.networkingService.providerNetworks[0].nativeVLAN",
            "is not a valid VLAN ID",
        ),
        (
            "switch MTUs are valid",
            full,
            json!({"networkingService": {"providerNetworks": [{"type": "idle", "mode": "access", "mtu": 1000}]}}),
            "spec.networkingService.providerNetworks[0].mtu",
            "outside 1280-9216",
        ),
        (
            "bmcCA needs a name",
            full,
            json!({"tls": {"bmcCA": {"name": null}, "bmcCAName": null}}),
            "spec.tls.bmcCA.name",
            "is required",
        ),
        (
            "bmcCAName agrees with bmcCA",
            full,
            json!({"tls": {"bmcCAName": "other"}}),
            "spec.tls.bmcCAName",
            "must name the same Secret as bmcCA when both are set",
        ),
        (
            "bmcCAName is a Secret",
            full,
            json!({"tls": {"bmcCA": {"kind": "ConfigMap"}}}),
            "spec.tls.bmcCAName",
            "must name the same Secret as bmcCA",
        ),
        (
            "trustedCAName agrees with trustedCA",
            full,
            json!({"tls": {"trustedCA": {"kind": "Secret"}}}),
            "spec.tls.trustedCAName",
            "must name the same ConfigMap as trustedCA when both are set",
        ),
        (
            "mode Secret needs certificateName",
            full,
            json!({"tls": {"certificateName": null}}),
            "spec.tls.certificateName",
            "is required when mode is Secret",
        ),
        (
            "certificateName only with mode Secret",
            full,
            json!({"tls": {"mode": "Auto"}}),
            "spec.tls.certificateName",
            "can only be used with mode Secret",
        ),
        (
            "mode CertManager needs certManager",
            none,
            json!({"tls": {"mode": "CertManager"}}),
            "spec.tls.certManager",
            "is required when mode is CertManager",
        ),
        (
            "certManager only with mode CertManager",
            ha,
            json!({"tls": {"mode": "Auto"}}),
            "spec.tls.certManager",
            "can only be used with mode CertManager",
        ),
        (
            "auto only with mode Auto",
            full,
            json!({"tls": {"auto": {}}}),
            "spec.tls.auto",
            "can only be used with mode Auto",
        ),
        (
            "issuer needs a name",
            ha,
            json!({"tls": {"certManager": {"issuerRef": {"name": " "}}}}),
            "spec.tls.certManager.issuerRef.name",
            "is required",
        ),
        (
            "certificate duration at least 1h",
            ha,
            json!({"tls": {"certManager": {"duration": "30m", "renewBefore": null}}}),
            "spec.tls.certManager.duration",
            "must be at least 1h",
        ),
        (
            "durations are Go durations",
            ha,
            json!({"tls": {"certManager": {"duration": "90d"}}}),
            "spec.tls.certManager.duration",
            "is not a duration",
        ),
        (
            "renewBefore shorter than duration",
            ha,
            json!({"tls": {"certManager": {"renewBefore": "2160h"}}}),
            "spec.tls.certManager.renewBefore",
            "must be shorter than duration",
        ),
        (
            "renewBefore at least 5m",
            ha,
            json!({"tls": {"certManager": {"renewBefore": "1m"}}}),
            "spec.tls.certManager.renewBefore",
            "must be at least 5m",
        ),
        (
            "auto certificates within the CA lifetime",
            none,
            json!({"tls": {"mode": "Auto", "auto": {"caValidityDays": 30, "certificateValidityDays": 60}}}),
            "spec.tls.auto.certificateValidityDays",
            "cannot exceed caValidityDays",
        ),
        (
            "auto lifetimes are positive",
            none,
            json!({"tls": {"mode": "Auto", "auto": {"caValidityDays": 0}}}),
            "spec.tls.auto.caValidityDays",
            "must be at least 1",
        ),
        (
            "mode CertificateSigningRequest needs its settings",
            none,
            json!({"tls": {"mode": "CertificateSigningRequest"}}),
            "spec.tls.certificateSigningRequest",
            "is required when mode is CertificateSigningRequest",
        ),
        (
            "certificateSigningRequest only with its mode",
            none,
            json!({"tls": {"mode": "Auto", "certificateSigningRequest": {"signerName": "example.com/serving"}}}),
            "spec.tls.certificateSigningRequest",
            "can only be used with mode CertificateSigningRequest",
        ),
        (
            "signerName is required",
            none,
            json!({"tls": {"certificateSigningRequest": {"signerName": ""}}}),
            "spec.tls.certificateSigningRequest.signerName",
            "is required",
        ),
        (
            "signerName has a domain and a path",
            none,
            json!({"tls": {"certificateSigningRequest": {"signerName": "serving"}}}),
            "spec.tls.certificateSigningRequest.signerName",
            "must be a signer name of the form example.com/signer-name",
        ),
        (
            "signerName's domain is a DNS subdomain",
            none,
            json!({"tls": {"certificateSigningRequest": {"signerName": "Example_Com/serving"}}}),
            "spec.tls.certificateSigningRequest.signerName",
            "must be a signer name of the form",
        ),
        (
            "signerName is not a kubernetes.io signer",
            none,
            json!({"tls": {"certificateSigningRequest": {"signerName": "kubernetes.io/kubelet-serving"}}}),
            "spec.tls.certificateSigningRequest.signerName",
            "cannot be a kubernetes.io signer",
        ),
        (
            "signerName is not under kubernetes.io",
            none,
            json!({"tls": {"certificateSigningRequest": {"signerName": "beta.kubernetes.io/serving"}}}),
            "spec.tls.certificateSigningRequest.signerName",
            "cannot be a kubernetes.io signer",
        ),
        (
            "expirationSeconds at least ten minutes",
            none,
            json!({"tls": {"certificateSigningRequest": {"signerName": "example.com/serving", "expirationSeconds": 599}}}),
            "spec.tls.certificateSigningRequest.expirationSeconds",
            "must be at least 600",
        ),
        (
            "signerCA names its object",
            none,
            json!({"tls": {"certificateSigningRequest": {"signerName": "example.com/serving", "signerCA": {"kind": "Secret"}}}}),
            "spec.tls.certificateSigningRequest.signerCA.name",
            "is required",
        ),
        (
            "certificateName only with mode Secret, not with a CSR",
            none,
            json!({"tls": {"certificateName": "c", "mode": "CertificateSigningRequest", "certificateSigningRequest": {"signerName": "example.com/serving"}}}),
            "spec.tls.certificateName",
            "can only be used with mode Secret",
        ),
        (
            "mariadb versions",
            ha,
            json!({"database": {"managed": {"version": "eleven"}}}),
            "spec.database.managed.version",
            "must be a MariaDB version",
        ),
        (
            "volume sizes parse",
            ha,
            json!({"database": {"managed": {"storage": {"size": "20GB"}}}}),
            "spec.database.managed.storage.size",
            "is not a quantity",
        ),
        (
            "volume sizes are positive",
            ha,
            json!({"database": {"managed": {"backup": {"storage": {"size": "0"}}}}}),
            "spec.database.managed.backup.storage.size",
            "must be greater than zero",
        ),
        (
            "backups kept at least 1",
            ha,
            json!({"database": {"managed": {"backup": {"keep": 0}}}}),
            "spec.database.managed.backup.keep",
            "must be at least 1",
        ),
        (
            "grace period long enough",
            ha,
            json!({"database": {"managed": {"terminationGracePeriodSeconds": 5}}}),
            "spec.database.managed.terminationGracePeriodSeconds",
            "at least 30 seconds",
        ),
        (
            "database TLS certificate needs TLS",
            ha,
            json!({"database": {"managed": {"tls": {"enabled": false}}}}),
            "spec.database.managed.tls.certificateName",
            "tls.enabled is false",
        ),
    ]
}

#[test]
fn each_rule_rejects_bad_input_with_its_path_and_message() {
    assert_cases(rejected_cases(), |v| errors(v, None));
}

#[test]
fn good_input_for_each_rule_is_accepted() {
    let good = [
        ("every sample field", full(), None),
        ("ha with managed database and cert-manager", ha(), None),
        ("auto TLS and deprecated keepalived", spec_of(include_str!("../samples/ironic-full-auto-tls.yaml")), None),
        ("irso yaml", spec_of(include_str!("../samples/ironic-irso.yaml")), None),
        ("minimal", json!({}), None),
        (
            "extra ranges alone",
            json!({"networking": {"interface": "eno1", "dhcp": {"extraRanges": [{"networkCIDR": "192.0.2.0/24", "rangeBegin": "192.0.2.10", "rangeEnd": "192.0.2.20"}]}}}),
            None,
        ),
        (
            "ipv4 gateway per range",
            patched(
                &full(),
                &json!({"networking": {"dhcp": {"extraRanges": [{"networkCIDR": "198.51.100.0/24", "rangeBegin": "198.51.100.10", "rangeEnd": "198.51.100.20", "gatewayAddress": "198.51.100.1"}]}}}),
            ),
            None,
        ),
        (
            "ingress replaces the external URLs pair",
            patched(&full(), &json!({"networking": {"imageServerExternalURL": null}})),
            None,
        ),
        (
            "loopback exporter without service monitor",
            patched(
                &full(),
                &json!({"prometheusExporter": {"bindAddress": "127.0.0.1", "disableServiceMonitor": true}}),
            ),
            None,
        ),
        ("latest allows extra ranges", patched(&full(), &json!({"version": "latest"})), None),
        (
            "credentials rotation keeps the database",
            patched(&full(), &json!({"database": {"credentialsName": "rotated", "tlsCertificateName": "new-ca"}})),
            Some(full()),
        ),
        (
            "mariadb upgrade and volume growth",
            patched(&ha(), &json!({"database": {"managed": {"version": "11.8", "storage": {"size": "40Gi"}}}})),
            Some(ha()),
        ),
        ("adding a database to a SQLite Ironic", full(), Some(patched(&full(), &json!({"database": null})))),
        (
            "provider networks default to access",
            patched(&full(), &json!({"networkingService": {"providerNetworks": [{"type": "idle", "nativeVLAN": 10}]}})),
            None,
        ),
        (
            "agent images from files, the web and registries",
            patched(
                &full(),
                &json!({"overrides": {"agentImages": [
                    {"kernel": "file:///shared/html/images/ipa.kernel", "initramfs": "https://images.example.com/ipa.initramfs"},
                    {"architecture": "aarch64", "kernel": "oci://quay.io/metal3/ipa:arm64", "initramfs": "file:/images/ipa-arm64.initramfs"}]}}),
            ),
            None,
        ),
        (
            "a CertificateSigningRequest for the cluster's signer",
            json!({"tls": {"mode": "CertificateSigningRequest", "certificateSigningRequest": {
                "signerName": "pki.example.com/ironic-serving", "expirationSeconds": 600,
                "signerCA": {"kind": "ConfigMap", "name": "signer-ca", "key": "ca.crt"}}}}),
            None,
        ),
        (
            "the CSR mode inferred from its settings",
            json!({"tls": {"certificateSigningRequest": {"signerName": "example.com/a.b_c-d"}}}),
            None,
        ),
    ];
    assert_accepted(good, errors);
}

#[test]
fn update_rules_reject_replacing_or_removing_the_database() {
    let old = full();
    let cases = [
        ("another host", json!({"database": {"host": "other.example.com"}})),
        ("another name", json!({"database": {"name": "ironic2"}})),
        ("removed", json!({"database": null})),
        (
            "managed instead",
            json!({"database": {"credentialsName": null, "host": null, "name": null, "tlsCertificateName": null, "managed": {}}}),
        ),
    ];
    assert_update_cases(
        &old,
        cases.map(|(_, patch)| (patch, "spec.database", "cannot change to a new database or remove it")),
        errors,
    );
}

#[test]
fn update_rules_protect_the_managed_database() {
    let old = ha();
    let cases = [
        (
            json!({"database": {"managed": {"version": "10.11"}}}),
            "spec.database.managed.version",
            "cannot downgrade MariaDB from 11.4 to 10.11",
        ),
        (
            json!({"database": {"managed": {"storage": {"storageClassName": "slow"}}}}),
            "spec.database.managed.storage.storageClassName",
            "storageClassName is immutable",
        ),
        (
            json!({"database": {"managed": {"storage": {"size": "10Gi"}}}}),
            "spec.database.managed.storage.size",
            "cannot shrink a volume",
        ),
        (
            json!({"database": {"managed": {"backup": {"storage": {"storageClassName": "other"}}}}}),
            "spec.database.managed.backup.storage.storageClassName",
            "storageClassName is immutable",
        ),
    ];
    assert_update_cases(&old, cases, errors);
}

#[test]
fn feature_switches_reject_ha_and_overrides_when_turned_off() {
    let off = IronicValidationOptions {
        allow_high_availability: false,
        allow_overrides: false,
        allow_privileged_overrides: false,
    };
    let ha_errors = validate_ironic(&spec(&ha()), None, &off);
    assert_rejects(&ha_errors, "spec.highAvailability", "feature gate HighAvailability", "ha off");
    let full_errors = validate_ironic(&spec(&full()), None, &off);
    assert_rejects(&full_errors, "spec.overrides", "feature gate Overrides", "overrides off");
    assert!(validate_ironic(&spec(&ha()), None, &IronicValidationOptions::default()).is_empty());
}

/// The CEL twins of the update rules, evaluated client-side on the generated schema.
mod cel {
    use super::*;

    /// An Ironic object around a spec.
    fn ironic(spec: &Value) -> Value {
        json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic", "metadata": {"name": "i"}, "spec": spec})
    }

    fn rejects(new: &Value, old: Option<&Value>, fragment: &str, case: &str) {
        assert_cel_rejects("Ironic", &ironic(new), old.map(ironic).as_ref(), fragment, case);
    }

    fn accepts(new: &Value, old: Option<&Value>, case: &str) {
        assert_cel_accepts("Ironic", &ironic(new), old.map(ironic).as_ref(), case);
    }

    #[test]
    fn database_replacement_is_refused_by_cel() {
        let old = full();
        let moved = patched(&old, &json!({"database": {"host": "elsewhere"}}));
        rejects(&moved, Some(&old), "cannot change to a new database or remove it", "host change refused");
        rejects(&patched(&old, &json!({"database": null})), Some(&old), "cannot change to a new database", "removal");
        let rotated = patched(&old, &json!({"database": {"credentialsName": "rotated"}}));
        accepts(&rotated, Some(&old), "credential rotation allowed");
    }

    #[test]
    fn database_forms_and_ha_are_checked_by_cel() {
        rejects(&json!({"database": {"managed": {}, "host": "h"}}), None, "not both", "both forms");
        rejects(&json!({"highAvailability": true}), None, "highAvailability requires a database", "ha without db");
        accepts(&ha(), None, "ha sample passes");
        accepts(&full(), None, "full sample passes");
    }

    #[test]
    fn signer_names_are_checked_by_the_schema_and_cel() {
        let csr = |signer: &str| json!({"tls": {"certificateSigningRequest": {"signerName": signer}}});
        rejects(&csr("kubernetes.io/kubelet-serving"), None, "cannot be a kubernetes.io signer", "built-in signer");
        rejects(&csr("beta.kubernetes.io/serving"), None, "cannot be a kubernetes.io signer", "under kubernetes.io");
        accepts(&csr("pki.example.com/ironic-serving"), None, "the cluster's signer");
        accepts(&csr("notkubernetes.io/serving"), None, "a domain that only ends alike");
        let schema = common::schema_of("Ironic");
        let settings = &schema["properties"]["spec"]["properties"]["tls"]["properties"]["certificateSigningRequest"];
        assert_eq!(settings["required"], json!(["signerName"]));
        let signer = &settings["properties"]["signerName"];
        assert_eq!(signer["pattern"].as_str(), Some(crds::ironic::tls::SIGNER_NAME_PATTERN));
        assert_eq!(signer["maxLength"], json!(571));
        assert_eq!(settings["properties"]["expirationSeconds"]["minimum"].as_f64(), Some(600.0));
        assert!(signer["description"].as_str().is_some_and(|d| d.contains("kubernetes.io")));
    }

    #[test]
    fn a_managed_database_certificate_without_tls_is_refused_by_cel() {
        let tls = |tls: Value| json!({"database": {"managed": {"tls": tls}}});
        let conflict = tls(json!({"enabled": false, "certificateName": "db-tls"}));
        rejects(&conflict, None, "tls.enabled is false", "a certificate with TLS off");
        accepts(&tls(json!({"enabled": false})), None, "the explicit opt-out");
        accepts(&tls(json!({"certificateName": "db-tls"})), None, "a certificate, TLS on by default");
        accepts(&json!({"database": {"managed": {}}}), None, "TLS unset: on");
        let schema = common::schema_of("Ironic");
        let enabled = &schema["properties"]["spec"]["properties"]["database"]["properties"]["managed"]["properties"]["tls"]
            ["properties"]["enabled"];
        assert_eq!(enabled["default"], json!(true), "the schema documents the default");
    }

    #[test]
    fn storage_class_is_immutable_in_cel() {
        let old = ha();
        let class = patched(&old, &json!({"database": {"managed": {"storage": {"storageClassName": "slow"}}}}));
        rejects(&class, Some(&old), "storageClassName is immutable", "class change refused");
        let grown = patched(&old, &json!({"database": {"managed": {"storage": {"size": "30Gi"}}}}));
        accepts(&grown, Some(&old), "growing allowed");
    }
}

#[test]
fn parsed_ironic_objects_validate_through_the_root_type() {
    let ironic: Ironic = serde_json::from_value(yaml(include_str!("../samples/ironic-full.yaml"))).expect("ironic");
    assert!(validate_ironic(&ironic.spec, None, &IronicValidationOptions::default()).is_empty());
}

#[test]
fn an_empty_spec_is_not_required_and_defaults_to_an_empty_object() {
    // ironic-standalone-operator's own sample has `spec:` and nothing under it: the apiserver
    // receives null, prunes it, then applies the default.
    let schema = common::schema_of("Ironic");
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    assert!(!required.contains(&json!("spec")), "spec is optional: {required:?}");
    assert_eq!(schema["properties"]["spec"]["default"], json!({}));
    assert!(validate_ironic(&spec(&json!({})), None, &IronicValidationOptions::default()).is_empty());
    let ironic: Ironic = typed(&json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic",
        "metadata": {"name": "ironic"}, "spec": schema["properties"]["spec"]["default"]}));
    assert_eq!(ironic.spec, IronicSpec::default());
}

#[test]
fn provider_network_mode_defaults_to_access_in_the_schema() {
    let schema = common::schema_of("Ironic");
    let network =
        &schema["properties"]["spec"]["properties"]["networkingService"]["properties"]["providerNetworks"]["items"];
    assert_eq!(network["properties"]["mode"]["default"], "access");
    let required = network["required"].as_array().cloned().unwrap_or_default();
    assert!(!required.contains(&json!("mode")), "mode is optional: {required:?}");
    let parsed: crds::ironic::ProviderNetwork = typed(&json!({"type": "idle"}));
    assert_eq!(parsed.mode(), crds::ironic::SwitchPortMode::Access);
}
