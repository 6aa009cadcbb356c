use super::*;
use crds::baremetalhost::bmc::parse_bmc_address;
use serde_json::json;

fn creds() -> BmcCredentials {
    BmcCredentials { username: "admin".into(), password: Secret::new("pw".into()) }
}

fn info(address: &str) -> serde_json::Value {
    let parsed = parse_bmc_address(address).expect("address parses");
    serde_json::to_value(driver_info(&parsed, Some(&creds()), false, &DeployRamdisk::default())).expect("serialises")
}

#[test]
fn every_scheme_maps_to_its_driver_and_interfaces() {
    // (address, driver, boot, firmware, raid)
    let cases = [
        ("ipmi://10.0.0.1", "ipmi", "ipxe", None, "no-raid"),
        ("10.0.0.1:6230", "ipmi", "ipxe", None, "no-raid"),
        ("libvirt://10.0.0.1", "ipmi", "ipxe", None, "no-raid"),
        ("redfish://10.0.0.1/redfish/v1/Systems/1", "redfish", "ipxe", Some("redfish"), "redfish"),
        // baremetal-operator gives virtual-media hosts redfish firmware updates too.
        (
            "redfish-virtualmedia://10.0.0.1/redfish/v1/Systems/1",
            "redfish",
            "redfish-virtual-media",
            Some("redfish"),
            "redfish",
        ),
        (
            "redfish-uefihttp+https://10.0.0.1/redfish/v1/Systems/1",
            "redfish",
            "redfish-https",
            Some("redfish"),
            "redfish",
        ),
        ("idrac-redfish://10.0.0.1/redfish/v1/Systems/1", "idrac", "ipxe", Some("redfish"), "idrac-redfish"),
        (
            "idrac-virtualmedia://10.0.0.1/redfish/v1/Systems/1",
            "idrac",
            "idrac-redfish-virtual-media",
            Some("redfish"),
            "idrac-redfish",
        ),
        ("ilo5-redfish://10.0.0.1/redfish/v1/Systems/1", "redfish", "ipxe", Some("redfish"), "redfish"),
        (
            "ilo5-virtualmedia://10.0.0.1/redfish/v1/Systems/1",
            "redfish",
            "redfish-virtual-media",
            Some("redfish"),
            "redfish",
        ),
        ("fake://anything", "fake-hardware", "fake", None, ""),
    ];
    for (address, driver, boot, firmware, raid) in cases {
        let scheme = parse_bmc_address(address).expect("parses").scheme;
        let spec = driver_spec(scheme);
        assert_eq!(spec.driver, driver, "{address}");
        assert_eq!(spec.interfaces.boot_interface.as_deref(), Some(boot), "{address}");
        assert_eq!(spec.interfaces.firmware_interface.as_deref(), firmware, "{address}");
        assert_eq!(spec.interfaces.raid_interface.as_deref().unwrap_or(""), raid, "{address}");
    }
    let idrac = driver_spec(BmcScheme::IdracRedfish);
    assert_eq!(idrac.interfaces.vendor_interface.as_deref(), Some("idrac-redfish"));
    assert_eq!(idrac.interfaces.power_interface.as_deref(), Some("idrac-redfish"));
    let fake = driver_spec(BmcScheme::Fake);
    assert_eq!(fake.interfaces.deploy_interface.as_deref(), Some("fake"));
    assert!(!fake.uses_deploy_ramdisk);
}

/// The public mapping, one row per behaviour baremetal-operator has: what a host with this
/// address and these options is registered with.
#[test]
fn ironic_driver_maps_addresses_and_options_as_baremetal_operator_does() {
    let ramdisk = DeployRamdisk { kernel: Some("http://k".into()), ramdisk: Some("http://r".into()), iso: None };
    let creds = creds();
    let with = |credentials, insecure| BmcOptions {
        credentials,
        disable_certificate_verification: insecure,
        ramdisk: &ramdisk,
    };
    let ramdisk_info = json!({"deploy_kernel": "http://k", "deploy_ramdisk": "http://r"});
    let merged = |extra: serde_json::Value| {
        let mut all = ramdisk_info.clone();
        all.as_object_mut().expect("object").extend(extra.as_object().expect("object").clone());
        all
    };
    // (what the row shows, address, options, driver, firmware interface, driver_info)
    let cases = [
        (
            "ipmi honours privilegelevel",
            "ipmi://10.0.0.1?privilegelevel=OPERATOR",
            with(Some(&creds), false),
            "ipmi",
            None,
            merged(json!({"ipmi_address": "10.0.0.1", "ipmi_port": "623", "ipmi_priv_level": "OPERATOR",
                          "ipmi_username": "admin", "ipmi_password": "pw"})),
        ),
        (
            "ipmi defaults to ADMINISTRATOR",
            "ipmi:10.0.0.1:6230",
            with(None, false),
            "ipmi",
            None,
            merged(json!({"ipmi_address": "10.0.0.1", "ipmi_port": "6230", "ipmi_priv_level": "ADMINISTRATOR"})),
        ),
        (
            "libvirt is ipmi with its privilege level",
            "libvirt://10.0.0.1/?privilegelevel=USER",
            with(None, true),
            "ipmi",
            None,
            merged(json!({"ipmi_address": "10.0.0.1", "ipmi_port": "623", "ipmi_priv_level": "USER",
                          "ipmi_verify_ca": false})),
        ),
        (
            "virtual media without a path sends no system",
            "redfish-virtualmedia://bmc.example",
            with(None, false),
            "redfish",
            Some("redfish"),
            merged(json!({"redfish_address": "https://bmc.example"})),
        ),
        (
            "virtual media at the service root sends no system",
            "redfish-virtualmedia+http://bmc.example:8000/redfish/v1/",
            with(None, false),
            "redfish",
            Some("redfish"),
            merged(json!({"redfish_address": "http://bmc.example:8000"})),
        ),
        (
            "ilo5 virtual media names its system and gets redfish firmware",
            "ilo5-virtualmedia://10.0.0.1/redfish/v1/Systems/1",
            with(Some(&creds), true),
            "redfish",
            Some("redfish"),
            merged(json!({"redfish_address": "https://10.0.0.1", "redfish_system_id": "/redfish/v1/Systems/1",
                          "redfish_username": "admin", "redfish_password": "pw", "redfish_verify_ca": false})),
        ),
        (
            "idrac at the service root sends no system",
            "idrac-virtualmedia://[fd00::1]:8443/redfish/v1",
            with(None, false),
            "idrac",
            Some("redfish"),
            merged(json!({"redfish_address": "https://[fd00::1]:8443"})),
        ),
        (
            "fake hardware has no driver_info and boots no ramdisk",
            "fake://host-1",
            with(Some(&creds), true),
            "fake-hardware",
            None,
            json!({}),
        ),
    ];
    for (row, address, options, driver, firmware, expected) in cases {
        let parsed = parse_bmc_address(address).unwrap_or_else(|e| panic!("{row}: {e}"));
        let mapped = ironic_driver(&parsed, &options);
        assert_eq!(mapped.spec.driver, driver, "{row}");
        assert_eq!(mapped.spec.interfaces.firmware_interface.as_deref(), firmware, "{row}");
        assert_eq!(serde_json::to_value(&mapped.driver_info).expect("serialises"), expected, "{row}");
        assert!(!format!("{mapped:?}").contains("\"pw\""), "{row}: the password never shows");
    }
}

#[test]
fn redfish_driver_info_keeps_transport_port_and_system() {
    assert_eq!(
        info("redfish-virtualmedia+http://127.0.0.1:8000/redfish/v1/Systems/abc"),
        json!({"redfish_address": "http://127.0.0.1:8000", "redfish_system_id": "/redfish/v1/Systems/abc",
               "redfish_username": "admin", "redfish_password": "pw"})
    );
    // Plain redfish without a system path lets Ironic find the system.
    let root = info("redfish://bmc.example/redfish/v1/");
    assert_eq!(root["redfish_address"], "https://bmc.example");
    assert!(root.get("redfish_system_id").is_none());
    let v6 = info("redfish-virtualmedia://[fd00::1]:8443/redfish/v1/Systems/1");
    assert_eq!(v6["redfish_address"], "https://[fd00::1]:8443");
    // Every redfish scheme, not only plain redfish, omits an empty path or the service root.
    for address in ["redfish-virtualmedia://bmc.example", "idrac-redfish://bmc.example/redfish/v1/", "redfish://h/"] {
        assert!(info(address).get("redfish_system_id").is_none(), "{address}");
    }
}

#[test]
fn ipmi_driver_info_defaults_the_port() {
    assert_eq!(
        info("ipmi://10.0.0.1"),
        json!({"ipmi_address": "10.0.0.1", "ipmi_port": "623", "ipmi_priv_level": "ADMINISTRATOR",
               "ipmi_username": "admin", "ipmi_password": "pw"})
    );
    assert_eq!(info("10.0.0.1:6230")["ipmi_port"], "6230");
    assert_eq!(info("ipmi://10.0.0.1?privilegelevel=OPERATOR")["ipmi_priv_level"], "OPERATOR");
}

#[test]
fn certificate_verification_and_ramdisk_are_passed_on() {
    let parsed = parse_bmc_address("redfish://10.0.0.1/redfish/v1/Systems/1").expect("parses");
    let ramdisk = DeployRamdisk { kernel: Some("k".into()), ramdisk: Some("r".into()), iso: Some("i".into()) };
    let value = serde_json::to_value(driver_info(&parsed, None, true, &ramdisk)).expect("serialises");
    assert_eq!(value["redfish_verify_ca"], false);
    assert_eq!(value["deploy_kernel"], "k");
    assert_eq!(value["deploy_ramdisk"], "r");
    assert_eq!(value["deploy_iso"], "i");
    let fake = parse_bmc_address("fake://x").expect("parses");
    assert!(driver_info(&fake, Some(&creds()), false, &ramdisk).is_empty());
}

#[test]
fn inspection_is_agent_unless_fast_or_fake() {
    let redfish = driver_spec(BmcScheme::RedfishVirtualMedia);
    assert_eq!(inspect_interface(&redfish, false), "agent");
    assert_eq!(inspect_interface(&redfish, true), "redfish");
    assert_eq!(inspect_interface(&driver_spec(BmcScheme::Fake), false), "fake");
}

#[test]
fn driver_info_never_prints_the_password() {
    let parsed = parse_bmc_address("ipmi://10.0.0.1").expect("parses");
    let info = driver_info(&parsed, Some(&creds()), false, &DeployRamdisk::default());
    assert!(!format!("{info:?}").contains("\"pw\""));
}
