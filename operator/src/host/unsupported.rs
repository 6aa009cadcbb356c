//! Spec fields baremetal-operator acts on and this controller does not (yet): never accepted
//! and silently ignored. A host asking for one of them stops in `preparing` with a
//! `preparation error` (and the `Ready`/`Degraded` conditions that come with it) that names
//! the field, as baremetal-operator stops a host whose RAID cannot be applied; removing the
//! field lets it move on. `design/hosts.md` says why each is refused.

use crds::baremetalhost::BareMetalHostSpec;

/// Why the host's spec cannot be applied, naming every field refused; `None` when nothing is.
pub(super) fn unsupported(spec: &BareMetalHostSpec) -> Option<String> {
    let mut refused = Vec::new();
    if let Some(raid) = &spec.raid {
        // An empty hardware list is a request too (clear the controller's volumes).
        let hardware = raid.hardware_raid_volumes.is_some();
        let software = raid.software_raid_volumes.as_ref().is_some_and(|v| !v.is_empty());
        if hardware || software {
            refused.push("spec.raid (RAID is not configured by ferrometal yet; configure the volumes out of band and remove the field)");
        }
    }
    if spec.network_interfaces.as_ref().is_some_and(|n| !n.is_empty()) {
        refused.push("spec.networkInterfaces (ferrometal runs no Ironic networking service to configure switch ports)");
    }
    if spec.image.as_ref().and_then(|i| i.oci_auth_secret_name.as_deref()).is_some_and(|s| !s.trim().is_empty()) {
        refused.push("spec.image.ociAuthSecretName (registry credentials are not passed to Ironic yet; use a registry that needs none)");
    }
    (!refused.is_empty()).then(|| format!("not supported: {}", refused.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::baremetalhost::{Image, NetworkInterface, RaidConfig};

    #[test]
    fn raid_network_interfaces_and_oci_credentials_are_refused_by_name() {
        let none = BareMetalHostSpec::default();
        let empty_raid = BareMetalHostSpec { raid: Some(RaidConfig::default()), ..Default::default() };
        let no_software = BareMetalHostSpec {
            raid: Some(RaidConfig { software_raid_volumes: Some(vec![]), ..Default::default() }),
            ..Default::default()
        };
        let clear_hardware = BareMetalHostSpec {
            raid: Some(RaidConfig { hardware_raid_volumes: Some(vec![]), ..Default::default() }),
            ..Default::default()
        };
        let nics =
            BareMetalHostSpec { network_interfaces: Some(vec![NetworkInterface::default()]), ..Default::default() };
        let oci = BareMetalHostSpec {
            image: Some(Image {
                url: "oci://r/i".into(),
                oci_auth_secret_name: Some("pull".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let cases = [
            ("nothing asked", &none, None),
            ("raid: {} asks nothing", &empty_raid, None),
            ("no software volumes asks nothing", &no_software, None),
            ("an empty hardware list clears volumes", &clear_hardware, Some("spec.raid")),
            ("network interfaces", &nics, Some("spec.networkInterfaces")),
            ("OCI credentials", &oci, Some("spec.image.ociAuthSecretName")),
        ];
        for (row, spec, field) in cases {
            let refused = unsupported(spec);
            assert_eq!(refused.is_some(), field.is_some(), "{row}: {refused:?}");
            if let (Some(message), Some(field)) = (refused, field) {
                assert!(message.starts_with("not supported: ") && message.contains(field), "{row}: {message}");
            }
        }
    }
}
