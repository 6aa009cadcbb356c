//! The request of one reconcile: exactly what the Ironic calls of a step need, decoded once
//! from the host, its Secrets, its status and the node as the poll saw it. The BMC address is
//! parsed here and nowhere else; `actions` reads only this value, never the resource.

use crate::host::config::Config;
use crate::host::driver::{BmcOptions, DeployRamdisk, DriverSpec, IronicDriver, ironic_driver};
use crate::host::secrets::Credentials;
use crate::host::wake::HostKey;
use crds::baremetalhost::bmc::{BmcAddress, BmcScheme, parse_bmc_address};
use crds::baremetalhost::{
    AutomatedCleaningMode, BareMetalHost, BareMetalHostSpec, BareMetalHostStatus, BootMode, CredentialsStatus, Image,
    InspectionMode, RootDeviceHints,
};
use crds::baremetalhost::{BootMacRequirement, boot_mac_requirement};
use ironic_client::{ConfigDriveData, DriverInfo, NodeStatusSummary};
use kube::ResourceExt;

/// The host's BMC address, parsed: `None` when it has none, the parse error as the user reads it.
pub(super) fn parse_bmc(spec: &BareMetalHostSpec) -> Option<Result<BmcAddress, String>> {
    let bmc = spec.bmc.as_ref().filter(|b| !b.address.trim().is_empty())?;
    Some(parse_bmc_address(&bmc.address).map_err(|e| e.to_string()))
}

/// The address, unless the admin's BMC networks leave it out: then, like an address that does
/// not parse, a registration error and nothing sent to Ironic.
fn allowed(address: Option<Result<BmcAddress, String>>, config: &Config) -> Option<Result<BmcAddress, String>> {
    address.map(|parsed| {
        parsed.and_then(|a| match config.access.bmc_networks.refusal(&a) {
            Some(refusal) => Err(refusal),
            None => Ok(a),
        })
    })
}

/// Whether a parsed address is `fake://`, which talks to no BMC and needs no credentials.
pub(super) fn is_fake(address: &Option<Result<BmcAddress, String>>) -> bool {
    matches!(address, Some(Ok(a)) if a.scheme == BmcScheme::Fake)
}

/// The BMC as Ironic reaches it.
#[derive(Clone, Debug)]
pub(super) struct Bmc {
    /// The hardware type and interfaces of its scheme.
    pub driver: DriverSpec,
    /// `driver_info` with the credentials and the deploy ramdisk, or why the credentials
    /// cannot be used (for the user).
    pub driver_info: Result<DriverInfo, String>,
}

/// The boot settings a deployment or an adoption sets on the node.
#[derive(Clone, Debug, Default)]
pub(super) struct Boot {
    pub mode: BootMode,
    pub root_device_hints: Option<RootDeviceHints>,
}

/// The config drive of a deployment.
#[derive(Clone, Debug, Default)]
pub(super) enum ConfigDrive {
    /// None is sent: the plan does not deploy, or the image is a live ISO, which boots as it
    /// is (some hardware cannot attach a second virtual medium).
    #[default]
    None,
    /// Built from the userData, networkData and metaData Secrets.
    Ready(ConfigDriveData),
    /// What is wrong with those Secrets, for the user.
    Invalid(String),
}

/// What the Ironic calls of a step need.
#[derive(Clone, Debug)]
pub(super) struct Request {
    /// The node's name, `<namespace>~<name>`.
    pub node_name: String,
    /// The node's UUID, when the poll saw it.
    pub node: Option<String>,
    /// The shard the node carries (`--shards`): the host's, from its namespace and name.
    pub shard: Option<String>,
    /// The node's `automated_clean` as the poll saw it (`None`: no node, or Ironic's default).
    /// `provide` and undeploy compare it with [`Request::automated_clean`] instead of reading
    /// the node: the snapshot comes from a poll that started after this host's last call.
    pub node_automated_clean: Option<bool>,
    /// The host's UID: the node's instance UUID and the config drive's `uuid`.
    pub host_uid: String,
    /// The BMC, or why the host has none Ironic can use (for the user).
    pub bmc: Result<Bmc, String>,
    pub boot_mac: Option<String>,
    /// Why the host must have a boot MAC, when it must (the rule the webhook applies too).
    pub boot_mac_requirement: Option<BootMacRequirement>,
    /// Out-of-band inspection (`inspectionMode: fast`).
    pub fast_inspection: bool,
    pub automated_clean: bool,
    /// `properties.cpu_arch` at registration.
    pub architecture: Option<String>,
    pub disable_power_off: bool,
    /// The image to deploy (the spec's).
    pub image: Option<Image>,
    /// Why the image may not be read (a `file://` outside `--file-image-dirs`), for the user:
    /// the deployment stops before anything of it reaches Ironic.
    pub image_refused: Option<String>,
    pub custom_deploy: Option<String>,
    /// What runs on the host, for an adoption: the image provisioned, or for an externally
    /// provisioned host the one its spec names.
    pub running_image: Option<Image>,
    pub boot: Boot,
    /// The credentials Secret's reference and version, recorded as tried once Ironic has them.
    pub credentials: Option<CredentialsStatus>,
    /// Ironic was given these very credentials before (status records them as tried).
    pub credentials_sent: bool,
    /// Filled in only when the plan deploys (`decode::prepare`).
    pub config_drive: ConfigDrive,
    /// When the host's status was last written: an inspection Ironic started after it can
    /// only be one whose start the status has not recorded yet (a crash between the inspect
    /// call and the status write), never one to start again.
    pub status_written_at: Option<k8s_openapi::jiff::Timestamp>,
    /// The BIOS settings the host waits for (its `HostFirmwareSettings`), by name; for a
    /// provisioned host, only when its policy lets servicing apply them.
    pub bios: crate::host::firmware::Settings,
    /// The firmware updates its `HostFirmwareComponents` wants, the whole list, when some were
    /// not handed to Ironic and its policy lets servicing flash them; empty otherwise.
    pub updates: Vec<crds::firmware::FirmwareUpdate>,
    /// The updates its `HostFirmwareComponents` last showed handed over: the record for a node
    /// whose own record is lost (registered again).
    pub updates_recorded: Vec<crds::firmware::FirmwareUpdate>,
    /// The image the host's `DataImage` wants in its virtual CD, at its power on.
    pub data_image: Option<crate::host::dataimage::Want>,
    /// The deploy image of the host's `PreprovisioningImage`, read only before a step that
    /// boots it with image building on (`decode::prepare`).
    pub deploy_image: Option<crate::host::preprov::DeployImage>,
}

impl Request {
    /// The request of a host: its spec, the status drafted so far, its credentials, its BMC
    /// address as [`parse_bmc`] gave it, and the node when the poll saw it.
    pub(super) fn new(
        host: &BareMetalHost,
        status: &BareMetalHostStatus,
        key: &HostKey,
        credentials: &Credentials,
        address: Option<Result<BmcAddress, String>>,
        node: Option<&NodeStatusSummary>,
        config: &Config,
    ) -> Self {
        let spec = &host.spec;
        let tried = status.tried_credentials.as_ref();
        let credentials_sent = tried.is_some_and(|t| t.credentials_version.as_deref() == credentials.version());
        Self {
            node_name: key.node_name(),
            node: node.map(|n| n.uuid.clone()),
            shard: config.shard_of(&key.namespace, &key.name),
            node_automated_clean: node.and_then(|n| n.automated_clean),
            host_uid: host.uid().unwrap_or_default(),
            // A name Ironic would refuse stops the host before registration, like a bad address.
            bmc: match crds::baremetalhost::node_name_problem(&key.namespace, &key.name) {
                Some(problem) => Err(problem),
                None => bmc(spec, allowed(address, config), credentials, config),
            },
            boot_mac: spec.boot_mac_address.as_deref().map(str::trim).filter(|m| !m.is_empty()).map(str::to_string),
            boot_mac_requirement: boot_mac_requirement(host),
            fast_inspection: spec.inspection_mode == Some(InspectionMode::Fast),
            automated_clean: spec.automated_cleaning_mode != Some(AutomatedCleaningMode::Disabled),
            architecture: spec.architecture.clone().filter(|a| !a.is_empty()),
            disable_power_off: spec.disable_power_off == Some(true),
            image: spec.image.clone(),
            image_refused: spec.image.as_ref().and_then(|i| config.access.file_image_dirs.refusal(i)),
            custom_deploy: spec.custom_deploy.as_ref().map(|c| c.method.clone()).filter(|m| !m.is_empty()),
            running_image: status.provisioning.image.clone().or_else(|| spec.image.clone()),
            boot: Boot { mode: spec.boot_mode.unwrap_or_default(), root_device_hints: spec.root_device_hints.clone() },
            credentials: credentials.status.clone(),
            credentials_sent,
            config_drive: ConfigDrive::None,
            status_written_at: status.last_updated.as_ref().map(|t| t.0),
            bios: Default::default(),
            updates: Vec::new(),
            updates_recorded: Vec::new(),
            data_image: None,
            deploy_image: None,
        }
    }

    /// Whether the image is a live ISO, booted as it is: with no config drive.
    pub(super) fn boots_live_iso(&self) -> bool {
        self.image.as_ref().is_some_and(Image::is_live_iso)
    }
}

/// The BMC of a host, with `driver_info` for the credentials it names.
fn bmc(
    spec: &BareMetalHostSpec,
    address: Option<Result<BmcAddress, String>>,
    credentials: &Credentials,
    config: &Config,
) -> Result<Bmc, String> {
    let address = address.unwrap_or_else(|| Err("the host has no BMC address".to_string()))?;
    let usable = if address.scheme == BmcScheme::Fake {
        Ok(())
    } else if let Some(problem) = &credentials.problem {
        Err(problem.clone())
    } else if credentials.value.is_none() {
        Err("the host names no BMC credentials Secret".to_string())
    } else {
        Ok(())
    };
    let insecure = spec.bmc.as_ref().and_then(|b| b.disable_certificate_verification).unwrap_or(false);
    // With image building, the deploy image is the host's PreprovisioningImage's, set before
    // each step that boots it (`preprov`), never the operator's own at registration.
    let ramdisk = if config.build_preprov_image {
        DeployRamdisk::default()
    } else {
        DeployRamdisk {
            kernel: config.deploy_kernel_url.clone(),
            ramdisk: config.deploy_ramdisk_url.clone(),
            iso: config.deploy_iso_url.clone(),
        }
    };
    let options = BmcOptions {
        credentials: credentials.value.as_ref(),
        disable_certificate_verification: insecure,
        ramdisk: &ramdisk,
    };
    let IronicDriver { spec: driver, driver_info } = ironic_driver(&address, &options);
    Ok(Bmc { driver, driver_info: usable.map(|()| driver_info) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::driver::BmcCredentials;
    use crds::baremetalhost::{BmcDetails, CustomDeploy, ImageFormat};
    use ironic_client::Secret;

    fn spec(address: &str) -> BareMetalHostSpec {
        BareMetalHostSpec {
            bmc: Some(BmcDetails { address: address.into(), credentials_name: "bmc".into(), ..Default::default() }),
            ..Default::default()
        }
    }

    fn credentials(version: &str) -> Credentials {
        Credentials {
            value: Some(BmcCredentials { username: "admin".into(), password: Secret::new("pw".into()) }),
            status: Some(CredentialsStatus { credentials: None, credentials_version: Some(version.into()) }),
            problem: None,
        }
    }

    fn request(spec: &BareMetalHostSpec, status: &BareMetalHostStatus, credentials: &Credentials) -> Request {
        let config = Config { deploy_kernel_url: Some("http://k".into()), ..Config::default() };
        let key = HostKey::new("ns", "h");
        let mut host = BareMetalHost::new("h", spec.clone());
        host.metadata.uid = Some("uid".into());
        let node = NodeStatusSummary { uuid: "node".into(), ..NodeStatusSummary::default() };
        Request::new(&host, status, &key, credentials, parse_bmc(spec), Some(&node), &config)
    }

    #[test]
    fn the_bmc_is_parsed_once_into_driver_and_driver_info() {
        let spec = spec("redfish-virtualmedia://10.0.0.1/redfish/v1/Systems/1");
        let request = request(&spec, &BareMetalHostStatus::default(), &credentials("1"));
        let bmc = request.bmc.expect("a usable BMC");
        assert_eq!(bmc.driver.driver, "redfish");
        let info = bmc.driver_info.expect("driver_info");
        assert_eq!(info.get("redfish_address"), Some(&serde_json::json!("https://10.0.0.1")));
        assert_eq!(info.get("deploy_kernel"), Some(&serde_json::json!("http://k")), "the ramdisk is configured");
        assert_eq!(request.node_name, "ns~h");
    }

    #[test]
    fn a_node_name_ironic_would_refuse_stops_the_host_before_registration() {
        let spec = spec("redfish://10.0.0.1");
        let config = Config::default();
        let key = HostKey::new("n".repeat(63), "h".repeat(200));
        let host = BareMetalHost::new(&key.name, spec.clone());
        let request = Request::new(
            &host,
            &BareMetalHostStatus::default(),
            &key,
            &credentials("1"),
            parse_bmc(&spec),
            None,
            &config,
        );
        assert!(request.bmc.expect_err("too long").contains("264 characters"));
    }

    #[test]
    fn an_address_that_does_not_parse_and_missing_credentials_are_for_the_user() {
        let bad = request(&spec("nonsense://x"), &BareMetalHostStatus::default(), &credentials("1"));
        assert!(bad.bmc.expect_err("unparsable").contains("unknown BMC scheme"));
        let none = request(&BareMetalHostSpec::default(), &BareMetalHostStatus::default(), &credentials("1"));
        assert_eq!(none.bmc.expect_err("no address"), "the host has no BMC address");
        let unreadable =
            Credentials { problem: Some("the Secret ns/bmc does not exist".into()), ..Credentials::default() };
        let redfish = request(&spec("redfish://10.0.0.1"), &BareMetalHostStatus::default(), &unreadable);
        let bmc = redfish.bmc.expect("the address itself is fine");
        assert_eq!(bmc.driver_info.expect_err("no credentials"), "the Secret ns/bmc does not exist");
        let fake = request(&spec("fake://h"), &BareMetalHostStatus::default(), &Credentials::default());
        assert!(fake.bmc.expect("fake").driver_info.expect("no credentials needed").is_empty());
    }

    #[test]
    fn the_boot_mac_is_required_as_the_webhook_requires_it() {
        let status = BareMetalHostStatus::default();
        let virtual_media = spec("redfish-virtualmedia://10.0.0.1/redfish/v1/Systems/1");
        assert_eq!(request(&virtual_media, &status, &credentials("1")).boot_mac_requirement, None);
        let mut disabled = virtual_media.clone();
        disabled.inspection_mode = Some(crds::baremetalhost::InspectionMode::Disabled);
        let why = request(&disabled, &status, &credentials("1")).boot_mac_requirement.expect("required");
        assert_eq!(why, BootMacRequirement::InspectionDisabled);
        assert_eq!(format!("bootMACAddress {why}"), "bootMACAddress is required when inspection is disabled");
        let libvirt = request(&spec("libvirt://10.0.0.1"), &status, &credentials("1"));
        assert_eq!(libvirt.boot_mac_requirement, Some(BootMacRequirement::Driver(BmcScheme::Libvirt)));
    }

    #[test]
    fn credentials_count_as_sent_only_when_status_records_this_version() {
        let spec = spec("ipmi://10.0.0.1");
        let mut status = BareMetalHostStatus::default();
        assert!(!request(&spec, &status, &credentials("1")).credentials_sent, "never sent");
        status.tried_credentials = credentials("1").status;
        assert!(request(&spec, &status, &credentials("1")).credentials_sent);
        assert!(!request(&spec, &status, &credentials("2")).credentials_sent, "the Secret changed");
    }

    #[test]
    fn adoption_runs_the_provisioned_image_and_live_isos_boot_as_they_are() {
        let live = Image { url: "http://i/live.iso".into(), format: Some(ImageFormat::LiveIso), ..Default::default() };
        let disk = Image { url: "http://i/os.qcow2".into(), ..Default::default() };
        let mut spec = spec("fake://h");
        spec.image = Some(live.clone());
        let mut status = BareMetalHostStatus::default();
        let external = request(&spec, &status, &Credentials::default());
        assert_eq!(external.running_image, Some(live.clone()), "an externally provisioned host runs the spec's");
        assert!(external.boots_live_iso());
        status.provisioning.image = Some(disk.clone());
        let provisioned = request(&spec, &status, &Credentials::default());
        assert_eq!(provisioned.running_image, Some(disk));
        assert_eq!(provisioned.image, Some(live), "a deployment sends the spec's");
        spec.custom_deploy = Some(CustomDeploy { method: String::new() });
        assert_eq!(request(&spec, &status, &Credentials::default()).custom_deploy, None, "an empty method is none");
    }

    #[test]
    fn only_registration_and_new_credentials_stop_before_ironic_and_only_on_what_the_request_shows() {
        use crate::host::actions::stops_before_ironic;
        use crate::host::machine::Act;
        let status = BareMetalHostStatus::default();
        let bad = request(&spec("nonsense://10.0.0.1"), &status, &credentials("1"));
        let problem = stops_before_ironic(&bad, Act::Register).expect("an unknown scheme stops registration");
        assert!(problem.contains("unknown BMC scheme"), "{problem}");
        assert!(stops_before_ironic(&bad, Act::UpdateCredentials).is_some());
        assert_eq!(stops_before_ironic(&bad, Act::Manage), None, "other calls are not judged here");
        let good = request(&spec("ipmi://10.0.0.1"), &status, &credentials("1"));
        assert_eq!(stops_before_ironic(&good, Act::Register), None);
    }
}
