//! Rules about a host that the webhook and the host controller must decide alike, so a host
//! admitted by one is never refused by the other.

use super::BareMetalHost;
use super::annotations::{INSPECT, INSPECT_DISABLED};
use super::bmc::{BmcScheme, parse_bmc_address};
use super::spec::InspectionMode;
use std::fmt;

/// True when the host is not to be inspected: `spec.inspectionMode: disabled`, or the
/// deprecated `inspect.metal3.io: disabled` annotation (baremetal-operator's
/// `InspectionDisabled`).
pub fn inspection_disabled(host: &BareMetalHost) -> bool {
    host.spec.inspection_mode == Some(InspectionMode::Disabled)
        || host.metadata.annotations.as_ref().and_then(|a| a.get(INSPECT)).map(|v| v.trim()) == Some(INSPECT_DISABLED)
}

/// Why a host needs `spec.bootMACAddress`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootMacRequirement {
    /// The driver needs it whatever the inspection settings ([`BmcScheme::needs_boot_mac`]).
    Driver(BmcScheme),
    /// Inspection is disabled, so nothing discovers the host's NICs: Ironic has no port to
    /// recognise the host's agent by.
    InspectionDisabled,
}

impl fmt::Display for BootMacRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Driver(scheme) => write!(f, "is required by BMC type {scheme}"),
            Self::InspectionDisabled => f.write_str("is required when inspection is disabled"),
        }
    }
}

/// Whether the host must have `spec.bootMACAddress`, as baremetal-operator 0.14 decides it
/// (`NeedsMAC() || InspectionDisabled()`): `libvirt` always, any other driver when inspection
/// is disabled, and virtual media and UEFI HTTP boot otherwise not (the MAC is learnt by
/// inspection). Hosts without a usable BMC address need none yet, and `fake://` hosts never
/// do: no agent boots on them.
pub fn boot_mac_requirement(host: &BareMetalHost) -> Option<BootMacRequirement> {
    let address = host.spec.bmc.as_ref().map(|b| b.address.as_str()).filter(|a| !a.trim().is_empty())?;
    let scheme = parse_bmc_address(address).ok()?.scheme;
    if scheme == BmcScheme::Fake {
        None
    } else if scheme.needs_boot_mac() {
        Some(BootMacRequirement::Driver(scheme))
    } else if inspection_disabled(host) {
        Some(BootMacRequirement::InspectionDisabled)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baremetalhost::spec::BmcDetails;

    fn host(address: &str, mode: Option<InspectionMode>, annotation: Option<&str>) -> BareMetalHost {
        let mut host = BareMetalHost::new("h", Default::default());
        host.spec.bmc =
            Some(BmcDetails { address: address.into(), credentials_name: "c".into(), ..Default::default() });
        host.spec.inspection_mode = mode;
        host.metadata.annotations = annotation.map(|v| [(INSPECT.to_string(), v.to_string())].into());
        host
    }

    #[test]
    fn boot_mac_follows_baremetal_operator_0_14() {
        use BootMacRequirement::*;
        let disabled = Some(InspectionMode::Disabled);
        let cases = [
            ("libvirt needs it always", host("libvirt://10.0.0.1", None, None), Some(Driver(BmcScheme::Libvirt))),
            (
                "virtual media with inspection",
                host("redfish-virtualmedia://10.0.0.1/redfish/v1/Systems/1", None, None),
                None,
            ),
            (
                "UEFI HTTP boot with inspection",
                host("redfish-uefihttp://10.0.0.1/redfish/v1/Systems/1", None, None),
                None,
            ),
            ("ipmi with agent inspection", host("ipmi://10.0.0.1", Some(InspectionMode::Agent), None), None),
            ("ipmi without inspection", host("ipmi://10.0.0.1", disabled, None), Some(InspectionDisabled)),
            (
                "virtual media without inspection",
                host("redfish-virtualmedia://10.0.0.1/redfish/v1/Systems/1", disabled, None),
                Some(InspectionDisabled),
            ),
            (
                "the deprecated annotation",
                host("idrac-redfish://10.0.0.1/redfish/v1/Systems/1", None, Some("disabled")),
                Some(InspectionDisabled),
            ),
            ("re-inspection is not disabling", host("ipmi://10.0.0.1", None, Some("")), None),
            ("fake needs none", host("fake://f", disabled, None), None),
            ("no address yet", host("", disabled, None), None),
            ("an unparsable address is reported elsewhere", host("nonsense://x", disabled, None), None),
        ];
        for (case, host, expected) in cases {
            assert_eq!(boot_mac_requirement(&host), expected, "{case}");
        }
    }

    #[test]
    fn requirements_read_as_field_messages() {
        assert_eq!(BootMacRequirement::Driver(BmcScheme::Libvirt).to_string(), "is required by BMC type libvirt");
        assert_eq!(BootMacRequirement::InspectionDisabled.to_string(), "is required when inspection is disabled");
    }
}
