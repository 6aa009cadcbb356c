use super::*;
use crate::host::driver::driver_spec;
use crds::baremetalhost::bmc::BmcScheme;
use crds::baremetalhost::{BareMetalHostSpec, BareMetalHostStatus, Cpu, HardwareDetails};
use crds::preprovisioningimage::{PreprovisioningImageStatus, SecretStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

fn condition(type_: &str, status: bool, generation: i64, message: &str) -> Condition {
    Condition {
        type_: type_.into(),
        status: if status { "True" } else { "False" }.into(),
        reason: "ImageSuccess".into(),
        message: message.into(),
        observed_generation: Some(generation),
        last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
    }
}

fn spec(formats: Vec<ImageFormat>, network: &str) -> PreprovisioningImageSpec {
    PreprovisioningImageSpec {
        network_data_name: network.into(),
        architecture: "x86_64".into(),
        accept_formats: formats,
    }
}

/// An image built as `format` from `spec`, at generation 2, ready.
fn built(spec: &PreprovisioningImageSpec, format: ImageFormat, version: &str) -> PreprovisioningImage {
    let mut image = PreprovisioningImage::new("h", spec.clone());
    image.metadata.generation = Some(2);
    image.status = Some(PreprovisioningImageStatus {
        image_url: "http://images/h.img".into(),
        format: Some(format),
        architecture: spec.architecture.clone(),
        network_data: Some(SecretStatus { name: spec.network_data_name.clone(), version: version.into() })
            .filter(|s| !s.name.is_empty()),
        conditions: vec![condition("Ready", true, 2, "Generated image"), condition("Error", false, 2, "")],
        ..Default::default()
    });
    image
}

#[test]
fn a_virtual_media_host_asks_for_an_iso_first_and_an_ipmi_host_for_an_initramfs() {
    let mut host = BareMetalHost::new("h", BareMetalHostSpec::default());
    host.spec.preprovisioning_network_data_name = Some("h-net".into());
    host.status = Some(BareMetalHostStatus {
        hardware: Some(HardwareDetails {
            cpu: Some(Cpu { arch: Some("aarch64".into()), ..Default::default() }),
            ..Default::default()
        }),
        ..Default::default()
    });
    let vmedia = wanted(&host, &driver_spec(BmcScheme::RedfishVirtualMedia));
    assert_eq!(vmedia.accept_formats, vec![ImageFormat::Iso, ImageFormat::Initrd]);
    assert_eq!(vmedia.architecture, "aarch64", "inspection's architecture without the spec's");
    assert_eq!(vmedia.network_data_name, "h-net");
    host.spec.architecture = Some("x86_64".into());
    let ipmi = wanted(&host, &driver_spec(BmcScheme::Ipmi));
    assert_eq!(ipmi.accept_formats, vec![ImageFormat::Initrd]);
    assert_eq!(ipmi.architecture, "x86_64", "the spec's first");
}

#[test]
fn a_ready_iso_boots_by_virtual_media() {
    let wanted = spec(vec![ImageFormat::Iso, ImageFormat::Initrd], "");
    let found = judge(&built(&wanted, ImageFormat::Iso, ""), &wanted, None, true, None);
    assert_eq!(found, DeployImage::Ready(Boot { iso: Some("http://images/h.img".into()), ..Boot::default() }));
    let found = judge(&built(&wanted, ImageFormat::Iso, ""), &wanted, None, false, None);
    assert!(matches!(found, DeployImage::Refused(_)), "no virtual media: {found:?}");
}

#[test]
fn an_initramfs_boots_with_its_kernel_or_the_operators_and_its_parameters_after_ironics() {
    let wanted = spec(vec![ImageFormat::Initrd], "");
    let mut image = built(&wanted, ImageFormat::Initrd, "");
    assert!(matches!(judge(&image, &wanted, None, false, None), DeployImage::Refused(_)), "no kernel anywhere");
    let DeployImage::Ready(boot) = judge(&image, &wanted, None, false, Some("http://k")) else { panic!("ready") };
    assert_eq!(boot.kernel.as_deref(), Some("http://k"));
    if let Some(status) = image.status.as_mut() {
        status.kernel_url = "http://own-kernel".into();
        status.extra_kernel_params = "console=ttyS0".into();
    }
    let DeployImage::Ready(boot) = judge(&image, &wanted, None, false, Some("http://k")) else { panic!("ready") };
    assert_eq!(boot.kernel.as_deref(), Some("http://own-kernel"));
    assert_eq!(boot.initrd.as_deref(), Some("http://images/h.img"));
    assert_eq!(boot.kernel_params.as_deref(), Some("%default% console=ttyS0"));
}

#[test]
fn an_image_of_an_older_spec_generation_or_network_data_is_waited_for() {
    let wanted = spec(vec![ImageFormat::Iso], "net");
    let image = built(&wanted, ImageFormat::Iso, "7");
    assert!(matches!(judge(&image, &wanted, Some("7"), true, None), DeployImage::Ready(_)));
    let waits = |found: DeployImage| matches!(found, DeployImage::Waiting(_));
    assert!(waits(judge(&image, &wanted, Some("8"), true, None)), "the Secret changed since");
    assert!(waits(judge(&image, &spec(vec![ImageFormat::Iso], "other"), Some("7"), true, None)), "spec not updated");
    let mut newer = image.clone();
    newer.metadata.generation = Some(3);
    assert!(waits(judge(&newer, &wanted, Some("7"), true, None)), "Ready is of generation 2");
    let mut other_arch = image.clone();
    if let Some(s) = other_arch.status.as_mut() {
        s.architecture = "aarch64".into();
    }
    assert!(waits(judge(&other_arch, &wanted, Some("7"), true, None)));
    let unbuilt = PreprovisioningImage::new("h", wanted.clone());
    assert!(waits(judge(&unbuilt, &wanted, Some("7"), true, None)));
}

#[test]
fn an_image_that_could_not_be_built_is_refused_with_the_builders_message() {
    let wanted = spec(vec![ImageFormat::Iso], "");
    let mut image = built(&wanted, ImageFormat::Iso, "");
    if let Some(s) = image.status.as_mut() {
        s.conditions = vec![condition("Ready", false, 2, ""), condition("Error", true, 2, "disk full")];
    }
    let found = judge(&image, &wanted, None, true, None);
    assert!(matches!(&found, DeployImage::Refused(m) if m.contains("disk full")), "{found:?}");
    // As our builder leaves a failed build: no format, no architecture.
    if let Some(s) = image.status.as_mut() {
        s.format = None;
        s.architecture = String::new();
    }
    assert!(matches!(judge(&image, &wanted, None, true, None), DeployImage::Refused(_)));
    // Missing network data that exists now is built again: waited for.
    let mut missing = image.clone();
    if let Some(s) = missing.status.as_mut() {
        s.conditions =
            vec![condition("Ready", false, 2, ""), condition("Error", true, 2, "NetworkData secret not found")];
        s.conditions[1].reason = "MissingNetworkData".into();
    }
    assert!(matches!(judge(&missing, &wanted, None, true, None), DeployImage::Refused(_)), "still missing");
    assert!(matches!(judge(&missing, &wanted, Some("9"), true, None), DeployImage::Waiting(_)), "it exists now");
    image.metadata.generation = Some(3);
    let found = judge(&image, &wanted, None, true, None);
    assert!(matches!(found, DeployImage::Waiting(_)), "an error of an older spec is waited past: {found:?}");
}

#[test]
fn driver_info_changes_only_what_differs_and_drops_the_other_format() {
    let iso = Boot { iso: Some("http://i.iso".into()), ..Boot::default() };
    let mut current = DriverInfo::new();
    current.insert("deploy_kernel", "http://k").insert("deploy_ramdisk", "http://r").insert("redfish_address", "x");
    let ops: Vec<String> = driver_info_ops(&iso, &current).iter().map(|o| format!("{o:?}")).collect();
    assert_eq!(ops.len(), 3, "{ops:?}");
    current = DriverInfo::new();
    current.insert("deploy_iso", "http://i.iso");
    assert!(driver_info_ops(&iso, &current).is_empty(), "nothing to change");
}
