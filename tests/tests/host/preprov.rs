//! PreprovisioningImage with image building on (`--build-preprov-image`), against Ironic and an
//! emulated Redfish BMC: a host about to deploy makes its image (owned by it, with the spec it
//! asks for) and waits for it without calling Ironic; once a builder (this test, as an external
//! one) writes the built image into the status, the node boots that image (`deploy_iso`) and the
//! agent deployment starts. Our own builder serves the operator's deploy ISO, and says in the
//! status what it cannot build: a format it does not serve, a network data Secret that is
//! missing (until it exists).

use super::firmware::object_until;
use crate::host_common::{BMC_PASSWORD, BMC_USER, HostEnv, Options, secs};
use anyhow::Context as _;
use crds::condition::find;
use crds::preprovisioningimage::PreprovisioningImage;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

fn condition(image: &PreprovisioningImage, type_: &str) -> Option<(String, String)> {
    let status = image.status.as_ref()?;
    find(&status.conditions, type_).map(|c| (c.status.clone(), c.reason.clone()))
}

fn image(name: &str, spec: Value) -> anyhow::Result<PreprovisioningImage> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "metal3.io/v1alpha1", "kind": "PreprovisioningImage",
        "metadata": {"name": name}, "spec": spec
    }))?)
}

/// Starts the operator with image building on and the webhooks; `deploy_iso` is what our
/// builder serves (none: it does not run, and images are this test's to build).
async fn started(prefix: &str, systems: Option<usize>, deploy_iso: Option<String>) -> anyhow::Result<HostEnv> {
    let mut t = HostEnv::start(prefix, Options { sushy_systems: systems, ..Options::default() }).await?;
    let mut host = t.host_config();
    host.build_preprov_image = true;
    host.deploy_iso_url = deploy_iso;
    let mut config = t.env.operator_config();
    config.host = Some(host);
    t.env.with_webhooks(&mut config)?;
    t.operator = Some(t.env.start_operator(config).await?);
    Ok(t)
}

#[tokio::test]
async fn a_host_waits_for_its_preprovisioning_image_then_boots_the_image_built() -> anyhow::Result<()> {
    let t = started("host-preprov", Some(1), None).await?;
    t.credentials_secret("bmc", BMC_USER, BMC_PASSWORD).await?;
    let network = t.data_secret("pp-net", "nmstate", "interfaces: []\n").await?;
    let images = t.ironic.image_server();
    std::fs::write(images.root().join("os.qcow2"), b"not really a qcow2 image")?;
    let mut spec = t.redfish_spec(0, "bmc")?;
    spec["image"] =
        json!({"url": format!("{}/os.qcow2", images.url()), "checksum": "5".repeat(64), "checksumType": "sha256"});
    spec["preprovisioningNetworkDataName"] = json!("pp-net");
    spec["architecture"] = json!("x86_64");
    let host = t.create_host("pp-0", spec, json!({})).await?;

    // The host makes its image, owned by it, and waits: Progressing says why, Ironic is not asked
    // to deploy, and the node has no deploy image of the operator's.
    let api: Api<PreprovisioningImage> = Api::namespaced(t.env.client(), t.ns());
    let made = object_until(&api, "pp-0", "made by the host", |_| true).await?;
    assert_eq!(made.spec.network_data_name, "pp-net");
    assert_eq!(made.spec.architecture, "x86_64");
    assert_eq!(
        serde_json::to_value(&made.spec.accept_formats)?,
        json!(["iso", "initrd"]),
        "virtual media boots an ISO"
    );
    let owner = made.owner_references().first().context("owned")?;
    assert_eq!(owner.uid, host.uid().unwrap_or_default());
    assert_eq!(made.labels().get("app.kubernetes.io/managed-by").map(String::as_str), Some("ferrometal"));
    let waiting = t
        .wait_for("pp-0", "waiting for its image", secs(120), |h| {
            let conditions = h.status.as_ref().and_then(|s| s.conditions.as_deref()).unwrap_or_default();
            find(conditions, "Progressing").is_some_and(|c| c.reason == "WaitingForImage")
        })
        .await?;
    assert_eq!(waiting.status.as_ref().map(|s| s.provisioning.state.as_str()), Some("provisioning"));
    let node = t.node("pp-0").await?.context("registered")?;
    assert_eq!(node["provision_state"], "available", "not deployed without its image");
    assert!(node["driver_info"].get("deploy_iso").is_none(), "{}", node["driver_info"]);

    // An external builder writes the built image: the node boots it, and deployment starts.
    let built = images.write_live_iso("built-deploy.iso")?;
    let generation = made.metadata.generation.unwrap_or_default();
    let ok = |type_: &str, status: &str| {
        json!({"type": type_, "status": status, "reason": "ImageSuccess", "message": "built by the test",
               "lastTransitionTime": "2026-12-05T00:00:00Z", "observedGeneration": generation})
    };
    let status = json!({"status": {
        "imageUrl": built, "format": "iso", "architecture": "x86_64",
        "networkData": {"name": "pp-net", "version": network.resource_version()},
        "conditions": [ok("Ready", "True"), ok("Error", "False")],
    }});
    api.patch_status("pp-0", &PatchParams::default(), &Patch::Merge(&status)).await?;
    let node = t.wait_node_state("pp-0", "wait call-back", secs(120)).await?;
    assert_eq!(node["driver_info"]["deploy_iso"], json!(built), "the image built, not the operator's");
    let host = t.wait_state("pp-0", "provisioning", secs(10)).await?;
    assert!(host.status.and_then(|s| s.error_type).is_none(), "waiting for the agent is not an error");
    Ok(())
}

#[tokio::test]
async fn our_builder_serves_the_deploy_iso_and_says_what_it_cannot_build() -> anyhow::Result<()> {
    let iso = "http://192.0.2.10/images/deploy.iso".to_string();
    let t = started("host-preprov-builder", None, Some(iso.clone())).await?;
    let api: Api<PreprovisioningImage> = Api::namespaced(t.env.client(), t.ns());

    // What no image can be built for is refused at admission.
    let refused = api.create(&PostParams::default(), &image("bad", json!({"architecture": "x86 64"}))?).await;
    assert!(format!("{refused:?}").contains("spec.architecture"), "{refused:?}");

    api.create(&PostParams::default(), &image("iso", json!({"acceptFormats": ["iso", "initrd"]}))?).await?;
    let ready = object_until(&api, "iso", "ready", |i| condition(i, "Ready").is_some_and(|c| c.0 == "True")).await?;
    let status = ready.status.context("status")?;
    assert_eq!((status.image_url.as_str(), status.observed_generation), (iso.as_str(), ready.metadata.generation));

    api.create(&PostParams::default(), &image("initrd", json!({"acceptFormats": ["initrd"]}))?).await?;
    let error = |reason: &'static str| {
        move |i: &PreprovisioningImage| condition(i, "Error") == Some(("True".into(), reason.into()))
    };
    object_until(&api, "initrd", "no initramfs served", error("ConfigurationError")).await?;

    api.create(&PostParams::default(), &image("net", json!({"acceptFormats": ["iso"], "networkDataName": "later"}))?)
        .await?;
    object_until(&api, "net", "its Secret missing", error("MissingNetworkData")).await?;
    let secret = t.data_secret("later", "nmstate", "interfaces: []\n").await?;
    let version = secret.resource_version().unwrap_or_default();
    let built = object_until(&api, "net", "built once the Secret exists", |i| {
        i.status.as_ref().and_then(|s| s.network_data.as_ref()).is_some_and(|d| d.version == version)
    })
    .await?;
    assert_eq!(condition(&built, "Ready").map(|c| c.0).as_deref(), Some("True"));
    let secrets: Api<Secret> = Api::namespaced(t.env.client(), t.ns());
    assert!(secrets.get("later").await?.owner_references().is_empty(), "the user's Secret is not written");
    Ok(())
}
