//! Every BareMetalHost validation rule, the BMC address parser, and the CEL twins.

mod common;

use common::{Case, assert_cases, assert_rejects, patched, yaml};
use crds::baremetalhost::bmc::{BmcAddressError, BmcScheme, Transport, parse_bmc_address};
use crds::baremetalhost::{BareMetalHost, validate_baremetalhost};
use serde_json::{Value, json};

fn full() -> Value {
    yaml(include_str!("../samples/baremetalhost-full.yaml"))
}

fn bmo() -> Value {
    yaml(include_str!("../samples/baremetalhost-bmo.yaml"))
}

fn host(value: &Value) -> BareMetalHost {
    serde_json::from_value(value.clone()).expect("host parses")
}

fn errors(value: &Value, old: Option<&Value>) -> Vec<crds::FieldError> {
    let old = old.map(host);
    validate_baremetalhost(&host(value), old.as_ref())
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
            "virtual media needs a boot MAC",
            bmo,
            json!({"spec": {"bmc": {"address": "redfish-virtualmedia://192.0.2.1/redfish/v1/Systems/1"},
                "bootMACAddress": null}}),
            "spec.bootMACAddress",
            "is required by BMC type redfish-virtualmedia",
        ),
        (
            "UEFI HTTP boot needs a boot MAC",
            bmo,
            json!({"spec": {"bmc": {"address": "redfish-uefihttp://192.0.2.1/redfish/v1/Systems/1"},
                "bootMACAddress": null}}),
            "spec.bootMACAddress",
            "is required by BMC type redfish-uefihttp",
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
            "status annotation JSON",
            bmo,
            json!({"metadata": {"annotations": {"baremetalhost.metal3.io/status": "{}"}}}),
            "metadata.annotations[baremetalhost.metal3.io/status]",
            "is not valid JSON",
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
        ("minimal", yaml(include_str!("../samples/baremetalhost-minimal.yaml"))),
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
        ("empty hardware RAID clears", patched(&bmo(), &json!({"spec": {"raid": {"hardwareRAIDVolumes": []}}}))),
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
            "bmc without address (unmanaged)",
            patched(&bmo(), &json!({"spec": {"bmc": {"address": "", "credentialsName": ""}}})),
        ),
    ];
    for (case, value) in good {
        let errs = errors(&value, None);
        assert!(errs.is_empty(), "{case}: {errs:#?}");
    }
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

    fn check(new: &Value, old: Option<&Value>) -> Result<(), String> {
        common::cel_check("BareMetalHost", new, old)
    }

    #[test]
    fn boot_mac_immutability_and_power_off_rule_in_cel() {
        let old = bmo();
        let err = check(&patched(&old, &json!({"spec": {"bootMACAddress": "00:5c:52:31:3a:9d"}})), Some(&old))
            .expect_err("mac change");
        assert!(err.contains("bootMACAddress can not be changed once it is set"), "{err}");
        check(&patched(&old, &json!({"spec": {"online": false}})), Some(&old)).expect("power change ok");
        let err = check(&patched(&full(), &json!({"spec": {"online": false}})), None).expect_err("power off");
        assert!(err.contains("online cannot be false when disablePowerOff is true"), "{err}");
        check(&full(), None).expect("full passes");
    }
}
