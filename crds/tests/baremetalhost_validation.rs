//! Every BareMetalHost validation rule, the BMC address parser, and the CEL twins.

mod common;

use common::{
    Case, assert_accepted, assert_cases, assert_cel_accepts, assert_cel_rejects, assert_rejects, patched, validate_as,
    yaml,
};
use crds::baremetalhost::bmc::{BmcAddressError, BmcScheme, Transport, parse_bmc_address};
use crds::baremetalhost::validate_baremetalhost;
use serde_json::{Value, json};

fn full() -> Value {
    yaml(include_str!("../samples/baremetalhost-full.yaml"))
}

fn bmo() -> Value {
    yaml(include_str!("../samples/baremetalhost-bmo.yaml"))
}

fn minimal() -> Value {
    yaml(include_str!("../samples/baremetalhost-minimal.yaml"))
}

fn errors(value: &Value, old: Option<&Value>) -> Vec<crds::FieldError> {
    validate_as(value, old, validate_baremetalhost)
}

#[test]
fn every_bmc_scheme_parses_with_its_driver() {
    let cases = [
        ("ipmi://192.0.2.1:623", BmcScheme::Ipmi, None, "192.0.2.1", Some(623)),
        ("192.0.2.1", BmcScheme::Ipmi, None, "192.0.2.1", None),
        ("192.0.2.1:6230", BmcScheme::Ipmi, None, "192.0.2.1", Some(6230)),
        ("[fd00::1]:623", BmcScheme::Ipmi, None, "fd00::1", Some(623)),
        ("libvirt://192.0.2.1/", BmcScheme::Libvirt, None, "192.0.2.1", None),
        ("redfish://bmc.example.com/redfish/v1/Systems/1", BmcScheme::Redfish, None, "bmc.example.com", None),
        (
            "redfish+http://10.0.0.1:8000/redfish/v1/Systems/1",
            BmcScheme::Redfish,
            Some(Transport::Http),
            "10.0.0.1",
            Some(8000),
        ),
        (
            "redfish-virtualmedia+https://10.0.0.1/redfish/v1/Systems/1",
            BmcScheme::RedfishVirtualMedia,
            Some(Transport::Https),
            "10.0.0.1",
            None,
        ),
        ("redfish-uefihttp://10.0.0.1/redfish/v1/Systems/1", BmcScheme::RedfishUefiHttp, None, "10.0.0.1", None),
        (
            "idrac-redfish://10.0.0.1/redfish/v1/Systems/System.Embedded.1",
            BmcScheme::IdracRedfish,
            None,
            "10.0.0.1",
            None,
        ),
        (
            "idrac-virtualmedia+http://10.0.0.1/redfish/v1/Systems/System.Embedded.1",
            BmcScheme::IdracVirtualMedia,
            Some(Transport::Http),
            "10.0.0.1",
            None,
        ),
        ("ilo5-redfish://10.0.0.1/redfish/v1/Systems/1", BmcScheme::Ilo5Redfish, None, "10.0.0.1", None),
        ("ilo5-virtualmedia://10.0.0.1/redfish/v1/Systems/1", BmcScheme::Ilo5VirtualMedia, None, "10.0.0.1", None),
        ("fake://node-17", BmcScheme::Fake, None, "node-17", None),
        // Without `//`, as baremetal-operator reads them.
        ("ipmi:192.0.2.1", BmcScheme::Ipmi, None, "192.0.2.1", None),
        ("ipmi:bmc-1.example.com:6230", BmcScheme::Ipmi, None, "bmc-1.example.com", Some(6230)),
        ("redfish:bmc.example.com", BmcScheme::Redfish, None, "bmc.example.com", None),
        (
            "redfish+http:10.0.0.1:8000/redfish/v1/Systems/1",
            BmcScheme::Redfish,
            Some(Transport::Http),
            "10.0.0.1",
            Some(8000),
        ),
        ("bmc-1.example.com:623", BmcScheme::Ipmi, None, "bmc-1.example.com", Some(623)),
        ("IPMI://BMC-1.Example.com", BmcScheme::Ipmi, None, "BMC-1.Example.com", None),
    ];
    for (address, scheme, transport, host, port) in cases {
        let parsed = parse_bmc_address(address).unwrap_or_else(|e| panic!("{address}: {e}"));
        assert_eq!(
            (parsed.scheme, parsed.transport, parsed.host.as_str(), parsed.port),
            (scheme, transport, host, port),
            "{address}"
        );
    }
}

#[test]
fn bad_bmc_addresses_say_why() {
    assert_eq!(parse_bmc_address(""), Err(BmcAddressError::Empty));
    assert_eq!(parse_bmc_address("irmc://10.0.0.1"), Err(BmcAddressError::Removed("irmc".into())));
    assert_eq!(
        parse_bmc_address("ilo4-virtualmedia://10.0.0.1"),
        Err(BmcAddressError::Removed("ilo4-virtualmedia".into()))
    );
    assert!(matches!(parse_bmc_address("foo://10.0.0.1"), Err(BmcAddressError::Unknown(..))));
    assert!(matches!(parse_bmc_address("ipmi+https://10.0.0.1"), Err(BmcAddressError::TransportNotAllowed(..))));
    assert!(matches!(parse_bmc_address("redfish+ftp://10.0.0.1"), Err(BmcAddressError::Unknown(..))));
    assert!(matches!(parse_bmc_address("fake://"), Err(BmcAddressError::MissingHost(..))));
    assert!(matches!(parse_bmc_address("ipmi://10.0.0.1:99999"), Err(BmcAddressError::Malformed(..))));
    assert!(matches!(
        parse_bmc_address("redfish:///redfish/v1"),
        Err(BmcAddressError::MissingHost(..)) | Err(BmcAddressError::Malformed(..))
    ));
}

#[test]
fn bmc_host_names_are_checked_as_baremetal_operator_checks_them() {
    for address in
        ["ipmi://my-.example.com", "ipmi://-host", "ipmi://host+1", "redfish://bmc_1/redfish/v1", "-host:623"]
    {
        assert!(matches!(parse_bmc_address(address), Err(BmcAddressError::InvalidHost(..))), "{address}");
    }
    let message = parse_bmc_address("redfish://host+1/redfish/v1/Systems/1").expect_err("invalid").to_string();
    assert!(message.contains("invalid host \"host+1\""), "{message}");
}

#[test]
fn an_unknown_scheme_is_named_even_without_slashes() {
    for (address, scheme) in [("foo:10.0.0.1", "foo"), ("redfsh:bmc.example.com", "redfsh"), ("foo://10.0.0.1", "foo")]
    {
        let err = parse_bmc_address(address).expect_err(address);
        assert!(matches!(&err, BmcAddressError::Unknown(s, _) if s == scheme), "{address}: {err:?}");
        let message = err.to_string();
        assert!(message.starts_with(&format!("unknown BMC scheme \"{scheme}\"")), "{message}");
        assert!(!message.contains("invalid port"), "{message}");
    }
    assert_eq!(parse_bmc_address("irmc:10.0.0.1"), Err(BmcAddressError::Removed("irmc".into())));
}

fn rejected_cases() -> Vec<Case> {
    vec![
        (
            "name is not a UUID",
            bmo,
            json!({"metadata": {"name": "0f8fad5b-d9cb-469f-a165-70867728950e"}}),
            "metadata.name",
            "cannot be a UUID",
        ),
        (
            "name characters",
            bmo,
            json!({"metadata": {"name": "worker:0"}}),
            "metadata.name",
            "may contain only letters",
        ),
        (
            "unknown BMC scheme",
            bmo,
            json!({"spec": {"bmc": {"address": "foo://10.0.0.1"}}}),
            "spec.bmc.address",
            "unknown BMC scheme",
        ),
        (
            "removed BMC scheme",
            bmo,
            json!({"spec": {"bmc": {"address": "idrac://10.0.0.1"}}}),
            "spec.bmc.address",
            "is no longer supported",
        ),
        (
            "+https only for Redfish",
            bmo,
            json!({"spec": {"bmc": {"address": "libvirt+https://10.0.0.1"}}}),
            "spec.bmc.address",
            "does not accept a +http or +https suffix",
        ),
        (
            "BMC needs credentials",
            bmo,
            json!({"spec": {"bmc": {"credentialsName": ""}}}),
            "spec.bmc.credentialsName",
            "is required when the BMC address is set",
        ),
        (
            "boot MAC is a MAC",
            bmo,
            json!({"spec": {"bootMACAddress": "00:5c:52:31:3a"}}),
            "spec.bootMACAddress",
            "is not a valid MAC address",
        ),
        (
            "libvirt needs a boot MAC",
            bmo,
            json!({"spec": {"bmc": {"address": "libvirt://192.0.2.1/"}, "bootMACAddress": null}}),
            "spec.bootMACAddress",
            "is required by BMC type libvirt",
        ),
        (
            "virtual media needs a boot MAC without inspection",
            bmo,
            json!({"spec": {"bmc": {"address": "redfish-virtualmedia://192.0.2.1/redfish/v1/Systems/1"},
                "bootMACAddress": null, "inspectionMode": "disabled"}}),
            "spec.bootMACAddress",
            "is required when inspection is disabled",
        ),
        (
            "UEFI HTTP boot needs a boot MAC without inspection",
            bmo,
            json!({"spec": {"bmc": {"address": "redfish-uefihttp://192.0.2.1/redfish/v1/Systems/1"},
                "bootMACAddress": null, "inspectionMode": "disabled"}}),
            "spec.bootMACAddress",
            "is required when inspection is disabled",
        ),
        (
            "any driver needs a boot MAC without inspection",
            bmo,
            json!({"spec": {"bootMACAddress": null, "inspectionMode": "disabled"}}),
            "spec.bootMACAddress",
            "is required when inspection is disabled",
        ),
        (
            "the deprecated inspect annotation disables inspection too",
            bmo,
            json!({"metadata": {"annotations": {"inspect.metal3.io": "disabled"}}, "spec": {"bootMACAddress": null}}),
            "spec.bootMACAddress",
            "is required when inspection is disabled",
        ),
        (
            "BMC host names are DNS names",
            bmo,
            json!({"spec": {"bmc": {"address": "ipmi://my-.example.com"}}}),
            "spec.bmc.address",
            "has an invalid host \"my-.example.com\"",
        ),
        (
            "an unknown scheme without slashes is named",
            bmo,
            json!({"spec": {"bmc": {"address": "foo:10.0.0.1"}}}),
            "spec.bmc.address",
            "unknown BMC scheme \"foo\"",
        ),
        (
            "IPMI privilege levels are Ironic's",
            bmo,
            json!({"spec": {"bmc": {"address": "ipmi://192.168.111.1:6230?privilegelevel=admin"}}}),
            "spec.bmc.address",
            "privilegelevel \"admin\" is not one Ironic accepts",
        ),
        (
            "no power off means online",
            full,
            json!({"spec": {"online": false}}),
            "spec.online",
            "online cannot be false when disablePowerOff is true",
        ),
        (
            "firmware is rejected",
            bmo,
            json!({"spec": {"firmware": {"sriovEnabled": true}}}),
            "spec.firmware",
            "use a HostFirmwareSettings resource",
        ),
        (
            "image URL scheme",
            bmo,
            json!({"spec": {"image": {"url": "ftp://images/x.img"}}}),
            "spec.image.url",
            "expected one of http, https, file, oci",
        ),
        (
            "image needs a checksum",
            bmo,
            json!({"spec": {"image": {"checksum": null}}}),
            "spec.image.checksum",
            "is required unless format is live-iso",
        ),
        (
            "checksum is hex or a URL",
            bmo,
            json!({"spec": {"image": {"checksum": "not-a-digest"}}}),
            "spec.image.checksum",
            "must be a hexadecimal digest or the URL",
        ),
        (
            "checksum length matches the type",
            full,
            json!({"spec": {"image": {"checksumType": "md5"}}}),
            "spec.image.checksum",
            "a md5 digest has 32 hexadecimal digits, not 64",
        ),
        (
            "checksum length without a type",
            full,
            json!({"spec": {"image": {"checksumType": "auto", "checksum": "abcd"}}}),
            "spec.image.checksum",
            "must be an md5, sha256 or sha512 digest",
        ),
        (
            "an OCI image has no checksum",
            bmo,
            json!({"spec": {"image": {"url": "oci://quay.io/os/image:1", "checksumType": null}}}),
            "spec.image.checksum",
            "must be empty for oci:// images",
        ),
        (
            "a live ISO from OCI has no checksum either",
            bmo,
            json!({"spec": {"image": {"url": "oci://quay.io/os/image:1", "format": "live-iso"}}}),
            "spec.image.checksum",
            "must be empty for oci:// images",
        ),
        (
            "image URLs carry no control characters",
            bmo,
            json!({"spec": {"image": {"url": "http://172.22.0.1/images/x.img\u{0}"}}}),
            "spec.image.url",
            "control character",
        ),
        (
            "checksum URL must be a URL",
            bmo,
            json!({"spec": {"image": {"checksum": "gopher://x/sum"}}}),
            "spec.image.checksum",
            "expected one of http, https, file",
        ),
        (
            "device hint under /dev",
            bmo,
            json!({"spec": {"rootDeviceHints": {"deviceName": "sda"}}}),
            "spec.rootDeviceHints.deviceName",
            "must be a device path starting with /dev/",
        ),
        (
            "device hints by UUID are refused",
            bmo,
            json!({"spec": {"rootDeviceHints": {"deviceName": "/dev/disk/by-uuid/8d3e1f9a-6b1c-4f0e-9a37-2c1d5e7b9f10"}}}),
            "spec.rootDeviceHints.deviceName",
            "must be a device in /dev/ or a link in /dev/disk/by-path/",
        ),
        (
            "device hints by ID are refused",
            bmo,
            json!({"spec": {"rootDeviceHints": {"deviceName": "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"}}}),
            "spec.rootDeviceHints.deviceName",
            "must be a device in /dev/ or a link in /dev/disk/by-path/",
        ),
        (
            "hctl format",
            full,
            json!({"spec": {"rootDeviceHints": {"hctl": "0:2:0"}}}),
            "spec.rootDeviceHints.hctl",
            "must be a SCSI address",
        ),
        (
            "minimum size not negative",
            full,
            json!({"spec": {"rootDeviceHints": {"minSizeGigabytes": -1}}}),
            "spec.rootDeviceHints.minSizeGigabytes",
            "must not be negative",
        ),
        (
            "customDeploy needs a method",
            full,
            json!({"spec": {"customDeploy": {"method": ""}}}),
            "spec.customDeploy.method",
            "is required",
        ),
        (
            "one RAID kind",
            full,
            json!({"spec": {"raid": {"softwareRAIDVolumes": [{"level": "1"}]}}}),
            "spec.raid",
            "cannot both be set",
        ),
        (
            "hardware RAID needs a capable BMC",
            bmo,
            json!({"spec": {"raid": {"hardwareRAIDVolumes": [{"level": "5"}]}}}),
            "spec.raid.hardwareRAIDVolumes",
            "hardware RAID is not supported by BMC type ipmi",
        ),
        (
            "hardware RAID volume names",
            full,
            json!({"spec": {"raid": {"hardwareRAIDVolumes": [{"level": "1", "name": "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv"}]}}}),
            "spec.raid.hardwareRAIDVolumes[0].name",
            "must be at most 64 characters",
        ),
        (
            "a BMC address with credentials",
            bmo,
            json!({"spec": {"bmc": {"address": ""}}}),
            "spec.bmc.address",
            "is required when credentialsName is set",
        ),
        (
            "hardware RAID disk count",
            full,
            json!({"spec": {"raid": {"hardwareRAIDVolumes": [{"level": "1", "numberOfPhysicalDisks": 0}]}}}),
            "spec.raid.hardwareRAIDVolumes[0].numberOfPhysicalDisks",
            "at least 1",
        ),
        (
            "hardware RAID size",
            full,
            json!({"spec": {"raid": {"hardwareRAIDVolumes": [{"level": "1", "sizeGibibytes": -5}]}}}),
            "spec.raid.hardwareRAIDVolumes[0].sizeGibibytes",
            "must not be negative",
        ),
        (
            "physical disks need their controller",
            full,
            json!({"spec": {"raid": {"hardwareRAIDVolumes": [{"level": "1", "physicalDisks": ["Disk.Bay.0", "Disk.Bay.1"]}]}}}),
            "spec.raid.hardwareRAIDVolumes[0].controller",
            "is required when physicalDisks is set",
        ),
        (
            "the disk count matches the disks",
            full,
            json!({"spec": {"raid": {"hardwareRAIDVolumes": [{"level": "1", "controller": "RAID.Integrated.1-1",
                "numberOfPhysicalDisks": 3, "physicalDisks": ["Disk.Bay.0", "Disk.Bay.1"]}]}}}),
            "spec.raid.hardwareRAIDVolumes[0].numberOfPhysicalDisks",
            "is 3 but physicalDisks names 2 disks",
        ),
        (
            "one software RAID root volume",
            bmo,
            json!({"spec": {"raid": {"softwareRAIDVolumes": [{"level": "1", "rootVolume": true}, {"level": "0", "rootVolume": true}]}}}),
            "spec.raid.softwareRAIDVolumes",
            "at most one volume can be the rootVolume",
        ),
        (
            "software RAID starts with RAID-1",
            bmo,
            json!({"spec": {"raid": {"softwareRAIDVolumes": [{"level": "0"}]}}}),
            "spec.raid.softwareRAIDVolumes[0].level",
            "must be RAID-1",
        ),
        (
            "software RAID levels",
            bmo,
            json!({"spec": {"raid": {"softwareRAIDVolumes": [{"level": "1"}, {"level": "5"}]}}}),
            "spec.raid.softwareRAIDVolumes[1].level",
            "only levels 0, 1 and 1+0",
        ),
        (
            "at most two software RAID volumes",
            bmo,
            json!({"spec": {"raid": {"softwareRAIDVolumes": [{"level": "1"}, {"level": "0"}, {"level": "0"}]}}}),
            "spec.raid.softwareRAIDVolumes",
            "at most two",
        ),
        (
            "software RAID needs two disks",
            bmo,
            json!({"spec": {"raid": {"softwareRAIDVolumes": [{"level": "1", "physicalDisks": [{"deviceName": "/dev/sda"}]}]}}}),
            "spec.raid.softwareRAIDVolumes[0].physicalDisks",
            "at least two disks",
        ),
        (
            "software RAID disk hints",
            bmo,
            json!({"spec": {"raid": {"softwareRAIDVolumes": [{"level": "1", "physicalDisks": [{"deviceName": "sda"}, {"deviceName": "/dev/sdb"}]}]}}}),
            "spec.raid.softwareRAIDVolumes[0].physicalDisks[0].deviceName",
            "starting with /dev/",
        ),
        (
            "secure boot needs a capable BMC",
            bmo,
            json!({"spec": {"bootMode": "UEFISecureBoot"}}),
            "spec.bootMode",
            "UEFISecureBoot is not supported by BMC type ipmi",
        ),
        (
            "fast inspection needs Redfish",
            bmo,
            json!({"spec": {"inspectionMode": "fast"}}),
            "spec.inspectionMode",
            "not supported by BMC type ipmi",
        ),
        (
            "secrets stay in the namespace",
            bmo,
            json!({"spec": {"userData": {"namespace": "other"}}}),
            "spec.userData.namespace",
            "cross-namespace Secret references are forbidden",
        ),
        (
            "a NIC is named or has a MAC",
            full,
            json!({"spec": {"networkInterfaces": [{"name": "eno1", "macAddress": "b4:96:91:00:00:03"}]}}),
            "spec.networkInterfaces[0]",
            "exactly one of name and macAddress",
        ),
        (
            "NIC MACs are MACs",
            full,
            json!({"spec": {"networkInterfaces": [{"macAddress": "b4:96:91"}]}}),
            "spec.networkInterfaces[0].macAddress",
            "is not a valid MAC address",
        ),
        (
            "NIC names are unique",
            full,
            json!({"spec": {"networkInterfaces": [{"name": "eno1"}, {"name": "eno2"}, {"name": "eno1"}]}}),
            "spec.networkInterfaces[2].name",
            "\"eno1\" is already used by networkInterfaces[0]",
        ),
        (
            "NIC MACs are unique whatever their case",
            full,
            json!({"spec": {"networkInterfaces": [{"macAddress": "b4:96:91:00:00:03"}, {"macAddress": "B4:96:91:00:00:03"}]}}),
            "spec.networkInterfaces[1].macAddress",
            "is already used by networkInterfaces[0]",
        ),
        (
            "switch ports need both IDs",
            full,
            json!({"spec": {"networkInterfaces": [{"name": "eno1", "switchPort": {"switchID": "leaf-1", "portID": ""}}]}}),
            "spec.networkInterfaces[0].switchPort",
            "switchID and portID are both required",
        ),
        (
            "reboot annotation JSON",
            bmo,
            json!({"metadata": {"annotations": {"reboot.metal3.io": "{\"mode\":\"gentle\"}"}}}),
            "metadata.annotations[reboot.metal3.io]",
            "is not valid JSON for this annotation",
        ),
        (
            "detached annotation JSON",
            bmo,
            json!({"metadata": {"annotations": {"baremetalhost.metal3.io/detached": "{\"deleteAction\":\"never\"}"}}}),
            "metadata.annotations[baremetalhost.metal3.io/detached]",
            "is not valid JSON",
        ),
        (
            "inspect annotation values",
            bmo,
            json!({"metadata": {"annotations": {"inspect.metal3.io": "yes"}}}),
            "metadata.annotations[inspect.metal3.io]",
            "must be empty (inspect again) or \"disabled\"",
        ),
        (
            "the inspect annotation agrees with inspectionMode",
            bmo,
            json!({"metadata": {"annotations": {"inspect.metal3.io": "disabled"}}, "spec": {"inspectionMode": "agent"}}),
            "metadata.annotations[inspect.metal3.io]",
            "conflicts with spec.inspectionMode: agent",
        ),
        (
            "no inspection request while inspection is disabled",
            bmo,
            json!({"metadata": {"annotations": {"inspect.metal3.io": ""}}, "spec": {"inspectionMode": "disabled"}}),
            "metadata.annotations[inspect.metal3.io]",
            "requests inspection, which spec.inspectionMode: disabled turns off",
        ),
        (
            "hardware details need inspection disabled",
            bmo,
            json!({"metadata": {"annotations": {"inspect.metal3.io/hardwaredetails": "{}"}}}),
            "metadata.annotations[inspect.metal3.io/hardwaredetails]",
            "requires inspection to be disabled",
        ),
        (
            "hardware details JSON",
            bmo,
            json!({"metadata": {"annotations": {"inspect.metal3.io": "disabled", "inspect.metal3.io/hardwaredetails": "{\"ramMebibytes\":\"lots\"}"}}}),
            "metadata.annotations[inspect.metal3.io/hardwaredetails]",
            "is not valid JSON",
        ),
        (
            "hardware details have no unknown fields",
            bmo,
            json!({"metadata": {"annotations": {"inspect.metal3.io": "disabled", "inspect.metal3.io/hardwaredetails": "{\"cpu\":{\"arch\":\"x86_64\",\"cores\":8}}"}}}),
            "metadata.annotations[inspect.metal3.io/hardwaredetails]",
            "has an unknown field \"cpu.cores\"",
        ),
        (
            "status annotation JSON",
            bmo,
            json!({"metadata": {"annotations": {"baremetalhost.metal3.io/status": "{\"operationalStatus\":\"fine\"}"}}}),
            "metadata.annotations[baremetalhost.metal3.io/status]",
            "is not valid JSON",
        ),
        (
            "status annotation fields are known",
            bmo,
            json!({"metadata": {"annotations": {"baremetalhost.metal3.io/status": "{\"operationalStatus\":\"OK\",\"poweredon\":true}"}}}),
            "metadata.annotations[baremetalhost.metal3.io/status]",
            "has an unknown field \"poweredon\"",
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
        ("full", full()),
        ("bmo", bmo()),
        ("fake", yaml(include_str!("../samples/baremetalhost-fake.yaml"))),
        ("minimal", minimal()),
        (
            "live iso without checksum",
            patched(
                &bmo(),
                &json!({"spec": {"image": {"checksum": null, "checksumType": null, "format": "live-iso"}}}),
            ),
        ),
        (
            "oci image without checksum",
            patched(
                &bmo(),
                &json!({"spec": {"image": {"url": "oci://quay.io/os/image:1", "checksum": null, "checksumType": null}}}),
            ),
        ),
        (
            "md5 digest",
            patched(
                &bmo(),
                &json!({"spec": {"image": {"checksum": "d41d8cd98f00b204e9800998ecf8427e", "checksumType": "md5"}}}),
            ),
        ),
        (
            "software RAID 1 then 0",
            patched(&bmo(), &json!({"spec": {"raid": {"softwareRAIDVolumes": [{"level": "1"}, {"level": "0"}]}}})),
        ),
        (
            "one software RAID root volume",
            patched(
                &bmo(),
                &json!({"spec": {"raid": {"softwareRAIDVolumes": [{"level": "1"}, {"level": "0", "rootVolume": true}]}}}),
            ),
        ),
        ("empty hardware RAID clears", patched(&bmo(), &json!({"spec": {"raid": {"hardwareRAIDVolumes": []}}}))),
        (
            "physical disks with their controller and count",
            patched(
                &full(),
                &json!({"spec": {"raid": {"hardwareRAIDVolumes": [{"level": "1", "controller": "RAID.Integrated.1-1",
                    "numberOfPhysicalDisks": 2, "physicalDisks": ["Disk.Bay.0", "Disk.Bay.1"]}]}}}),
            ),
        ),
        ("one-shot reboot", patched(&bmo(), &json!({"metadata": {"annotations": {"reboot.metal3.io": ""}}}))),
        (
            "detached with delay",
            patched(
                &bmo(),
                &json!({"metadata": {"annotations": {"baremetalhost.metal3.io/detached": "{\"deleteAction\":\"delay\"}"}}}),
            ),
        ),
        (
            "external inspection data",
            patched(
                &bmo(),
                &json!({"spec": {"inspectionMode": "disabled"}, "metadata": {"annotations": {"inspect.metal3.io/hardwaredetails": "{\"ramMebibytes\": 4096}"}}}),
            ),
        ),
        (
            "a partial status annotation",
            patched(
                &bmo(),
                &json!({"metadata": {"annotations": {"baremetalhost.metal3.io/status": "{\"operationalStatus\":\"OK\"}"}}}),
            ),
        ),
        (
            "the deprecated annotation agrees with inspectionMode",
            patched(
                &bmo(),
                &json!({"metadata": {"annotations": {"inspect.metal3.io": "disabled"}}, "spec": {"inspectionMode": "disabled"}}),
            ),
        ),
        (
            "bmc without address (unmanaged)",
            patched(&bmo(), &json!({"spec": {"bmc": {"address": "", "credentialsName": ""}}})),
        ),
        (
            "virtual media finds its boot MAC by inspection",
            patched(&minimal(), &json!({"spec": {"bootMACAddress": null}})),
        ),
        (
            "UEFI HTTP boot finds its boot MAC by inspection",
            patched(
                &minimal(),
                &json!({"spec": {"bootMACAddress": null, "bmc": {"address": "redfish-uefihttp://10.0.0.21/redfish/v1/Systems/1"}}}),
            ),
        ),
        ("ipmi with inspection needs no boot MAC", patched(&bmo(), &json!({"spec": {"bootMACAddress": null}}))),
        (
            "fake hosts need no boot MAC, even without inspection",
            patched(
                &yaml(include_str!("../samples/baremetalhost-fake.yaml")),
                &json!({"spec": {"bootMACAddress": null, "inspectionMode": "disabled"}}),
            ),
        ),
        (
            "addresses without slashes",
            patched(&bmo(), &json!({"spec": {"bmc": {"address": "ipmi:192.168.111.1:6230"}}})),
        ),
        (
            "an IPMI privilege level",
            patched(
                &bmo(),
                &json!({"spec": {"bmc": {"address": "ipmi://192.168.111.1:6230?privilegelevel=OPERATOR"}}}),
            ),
        ),
    ];
    assert_accepted(good.map(|(case, value)| (case, value, None)), errors);
}

fn with_state(value: &Value, state: &str) -> Value {
    patched(
        value,
        &json!({"status": {"operationalStatus": "OK", "errorMessage": "", "errorCount": 0, "poweredOn": true, "provisioning": {"ID": "", "state": state}}}),
    )
}

#[test]
fn boot_mac_is_immutable_once_set() {
    let old = bmo();
    let new = patched(&old, &json!({"spec": {"bootMACAddress": "00:5c:52:31:3a:9d"}}));
    assert_rejects(&errors(&new, Some(&old)), "spec.bootMACAddress", "can not be changed once it is set", "mac change");
    let unset = patched(&old, &json!({"spec": {"bootMACAddress": null}}));
    assert_rejects(&errors(&unset, Some(&old)), "spec.bootMACAddress", "can not be changed", "mac removal");
    let first = patched(&old, &json!({"spec": {"bootMACAddress": null}}));
    assert!(errors(&old, Some(&first)).is_empty(), "setting it the first time is fine");
    let upper = patched(&old, &json!({"spec": {"bootMACAddress": "00:5C:52:31:3A:9C"}}));
    assert!(errors(&upper, Some(&old)).is_empty(), "the same MAC in upper case is no change");
}

#[test]
fn externally_provisioned_turns_on_only_while_available() {
    let on = json!({"spec": {"externallyProvisioned": true}});
    let refused = [("provisioned", "provisioned"), ("inspecting", "inspecting"), ("registering", "registering")];
    for (case, state) in refused {
        let old = with_state(&bmo(), state);
        assert_rejects(
            &errors(&patched(&old, &on), Some(&old)),
            "spec.externallyProvisioned",
            &format!("can only be turned on when the host is created or while it is available; it is {state}"),
            case,
        );
    }
    assert_rejects(
        &errors(&patched(&bmo(), &on), Some(&bmo())),
        "spec.externallyProvisioned",
        "it is not registered yet",
        "no status yet",
    );
    let available = with_state(&bmo(), "available");
    let provisioned_externally = with_state(&patched(&bmo(), &on), "externally provisioned");
    let off = json!({"spec": {"externallyProvisioned": false}});
    assert_accepted(
        [
            ("available", patched(&available, &on), Some(available.clone())),
            ("at creation", patched(&bmo(), &on), None),
            ("turned off again", patched(&provisioned_externally, &off), Some(provisioned_externally.clone())),
            ("left on", provisioned_externally.clone(), Some(provisioned_externally)),
        ],
        errors,
    );
}

#[test]
fn bmc_address_changes_only_while_registering_or_detached() {
    let change = json!({"spec": {"bmc": {"address": "ipmi://192.168.111.2:6230"}}});
    let provisioned = with_state(&bmo(), "provisioned");
    assert_rejects(
        &errors(&patched(&provisioned, &change), Some(&provisioned)),
        "spec.bmc.address",
        "only be changed while the host is registering or detached",
        "provisioned",
    );
    let registering = with_state(&bmo(), "registering");
    assert!(errors(&patched(&registering, &change), Some(&registering)).is_empty());
    let detached =
        patched(&provisioned, &json!({"metadata": {"annotations": {"baremetalhost.metal3.io/detached": ""}}}));
    assert!(errors(&patched(&detached, &change), Some(&detached)).is_empty());
    assert!(errors(&patched(&bmo(), &change), Some(&bmo())).is_empty(), "no status yet");
}

mod cel {
    use super::*;

    const KIND: &str = "BareMetalHost";

    #[test]
    fn boot_mac_immutability_and_power_off_rule_in_cel() {
        let old = bmo();
        let changed = patched(&old, &json!({"spec": {"bootMACAddress": "00:5c:52:31:3a:9d"}}));
        assert_cel_rejects(
            KIND,
            &changed,
            Some(&old),
            "bootMACAddress can not be changed once it is set",
            "mac change",
        );
        assert_cel_accepts(KIND, &patched(&old, &json!({"spec": {"online": false}})), Some(&old), "power change");
        let off = patched(&full(), &json!({"spec": {"online": false}}));
        assert_cel_rejects(KIND, &off, None, "online cannot be false when disablePowerOff is true", "power off");
        assert_cel_accepts(KIND, &full(), None, "full");
    }

    #[test]
    fn a_case_only_boot_mac_change_passes_cel() {
        let old = bmo();
        let upper = patched(&old, &json!({"spec": {"bootMACAddress": "00:5C:52:31:3A:9C"}}));
        assert_cel_accepts(KIND, &upper, Some(&old), "upper case");
        let removed = patched(&old, &json!({"spec": {"bootMACAddress": null}}));
        assert_cel_rejects(KIND, &removed, Some(&old), "can not be changed once it is set", "removal");
    }
}
