//! Host errors: bad BMC credentials (and recovery once the Secret is
//! fixed), and BMC addresses the controller refuses without ever calling
//! Ironic. The validating webhook is off here, as when it is down: the
//! controller must catch bad input on its own.

use crate::host_common::{BMC_PASSWORD, BMC_USER, HostEnv, Options, secs};
use anyhow::Context as _;
use crds::baremetalhost::{ErrorType, OperationalStatus};
use kube::ResourceExt;
use serde_json::json;

#[tokio::test]
async fn bad_bmc_credentials_give_a_registration_error_until_the_secret_is_fixed() -> anyhow::Result<()> {
    let mut t = HostEnv::start("host-creds", Options { sushy_systems: Some(1), ..Options::default() }).await?;
    // A backoff far longer than this test: only the watch on the Secret can bring the host
    // back in time.
    let mut config = t.host_config();
    config.error_backoff_base = std::time::Duration::from_secs(900);
    config.error_backoff_max = std::time::Duration::from_secs(900);
    t.start_operator(config).await?;
    t.credentials_secret("bmc", BMC_USER, "wrong-password").await?;
    t.create_host("rf-0", t.redfish_spec(0, "bmc")?, json!({})).await?;

    let failed = t
        .wait_for("rf-0", "a registration error", secs(90), |h| {
            h.status.as_ref().is_some_and(|s| s.error_type == Some(ErrorType::Registration))
        })
        .await?;
    let status = failed.status.clone().unwrap_or_default();
    assert_eq!(status.operational_status, OperationalStatus::Error);
    assert_eq!(status.provisioning.state.as_str(), "registering");
    assert!(status.error_count >= 1);
    assert!(!status.error_message.is_empty());
    assert!(!status.error_message.contains("wrong-password"), "secrets never reach status");
    assert!(status.good_credentials.is_none());
    let node = t.node("rf-0").await?.context("the node was registered")?;
    assert_eq!(node["provision_state"], "enroll", "verification failed, as Ironic reports it");

    // Fixing the Secret is noticed at once (the controller watches the
    // Secrets hosts refer to), whatever the backoff.
    let fixed = t.credentials_secret("bmc", BMC_USER, BMC_PASSWORD).await?;
    let recovered = t
        .wait_for("rf-0", "registered with the fixed credentials", secs(60), |h| {
            h.status.as_ref().is_some_and(|s| {
                s.error_type.is_none()
                    && matches!(s.provisioning.state.as_str(), "inspecting" | "preparing" | "available")
            })
        })
        .await?;
    let status = recovered.status.unwrap_or_default();
    assert_eq!(status.operational_status, OperationalStatus::Ok);
    let good = status.good_credentials.and_then(|c| c.credentials_version);
    assert_eq!(good, fixed.resource_version(), "the fixed Secret is recorded as the working one");
    t.wait_state("rf-0", "available", secs(60)).await?;
    Ok(())
}

#[tokio::test]
async fn unknown_or_malformed_bmc_addresses_are_rejected_without_calling_ironic() -> anyhow::Result<()> {
    let t = HostEnv::with_operator("host-scheme", Options::default()).await?;
    t.credentials_secret("bmc", BMC_USER, BMC_PASSWORD).await?;
    let hosts = [
        ("unknown", "nonsense://10.0.0.1/redfish/v1/Systems/1", "unknown BMC scheme"),
        ("removed", "ilo4://10.0.0.1", "no longer supported"),
        ("no-host", "redfish-virtualmedia://", "has no host"),
    ];
    for (name, address, _) in hosts {
        let spec = json!({"bmc": {"address": address, "credentialsName": "bmc"}, "online": true,
                          "bootMACAddress": "52:54:00:00:00:01"});
        t.create_host(name, spec, json!({})).await?;
    }
    for (name, _, message) in hosts {
        let host = t
            .wait_for(name, "a registration error", secs(30), |h| {
                h.status.as_ref().is_some_and(|s| s.error_type == Some(ErrorType::Registration))
            })
            .await?;
        let status = host.status.unwrap_or_default();
        assert!(status.error_message.contains(message), "{name}: {:?}", status.error_message);
        assert_eq!(status.operational_status, OperationalStatus::Error);
        assert!(status.provisioning.id.is_empty());
    }
    assert_eq!(t.node_count().await?, 0, "nothing was registered in Ironic");
    assert_eq!(t.ironic_request_count("create_node")?, 0);
    assert_eq!(t.ironic_request_count("get_node")?, 0, "not even a lookup was sent");
    Ok(())
}

#[tokio::test]
async fn a_config_drive_secret_of_another_namespace_is_refused_without_reaching_ironic() -> anyhow::Result<()> {
    // The webhook, which refuses the same, is off: the controller must refuse on its own.
    let mut t = HostEnv::with_operator("host-xns", Options::default()).await?;
    let victim = t.env.cp.namespace("victim").await?;
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> = kube::Api::namespaced(t.env.client(), &victim);
    let stolen = k8s_openapi::api::core::v1::Secret {
        metadata: kube::api::ObjectMeta { name: Some("stolen".into()), ..Default::default() },
        string_data: Some([("userData".to_string(), "#cloud-config\n# victim-only-sentinel\n".to_string())].into()),
        ..Default::default()
    };
    secrets.create(&kube::api::PostParams::default(), &stolen).await?;
    let images = t.ironic.image_server();
    std::fs::write(images.root().join("os.qcow2"), b"not really a qcow2 image")?;
    let mut spec = t.fake_spec("xns-0");
    spec["image"] = json!({"url": format!("{}/os.qcow2", images.url()), "checksum": "5".repeat(64),
                           "checksumType": "sha256", "format": "qcow2"});
    spec["userData"] = json!({"name": "stolen", "namespace": victim});
    t.create_host("xns-0", spec, json!({})).await?;

    let failed = t
        .wait_for("xns-0", "a provisioning error", secs(90), |h| {
            h.status.as_ref().is_some_and(|s| s.error_type == Some(ErrorType::Provisioning))
        })
        .await?;
    let status = failed.status.unwrap_or_default();
    assert!(status.error_message.contains("spec.userData.namespace"), "{:?}", status.error_message);
    assert!(!status.error_message.contains("victim-only-sentinel"));
    let node = t.node("xns-0").await?.context("the host was registered")?;
    assert_ne!(node["provision_state"], "deploying");
    assert_ne!(node["provision_state"], "active");
    assert!(node["instance_info"].get("image_source").is_none(), "nothing of the deployment reached Ironic: {node}");
    Ok(())
}

#[tokio::test]
async fn a_bmc_outside_the_admins_networks_and_a_file_image_are_refused_without_reaching_ironic() -> anyhow::Result<()>
{
    // No webhook: the controller applies the admin's lists itself.
    let mut t = HostEnv::start("host-reach", Options::default()).await?;
    let mut config = t.host_config();
    config.access = crds::baremetalhost::access::HostAccess {
        bmc_networks: "10.1.0.0/16".parse().map_err(anyhow::Error::msg)?,
        file_image_dirs: Default::default(),
    };
    t.start_operator(config).await?;
    t.credentials_secret("bmc", BMC_USER, BMC_PASSWORD).await?;
    let spec = json!({"bmc": {"address": "redfish://169.254.169.254/redfish/v1/Systems/1", "credentialsName": "bmc"},
                      "online": true, "bootMACAddress": "52:54:00:00:00:02"});
    t.create_host("metadata-service", spec, json!({})).await?;
    let refused = t
        .wait_for("metadata-service", "a registration error", secs(30), |h| {
            h.status.as_ref().is_some_and(|s| s.error_type == Some(ErrorType::Registration))
        })
        .await?;
    let message = refused.status.unwrap_or_default().error_message;
    assert!(message.contains("--bmc-networks"), "{message}");
    assert_eq!(t.ironic_request_count("create_node")?, 0, "nothing was registered in Ironic");

    // fake:// reaches nothing, so it is allowed; its file:// image is not.
    let mut spec = t.fake_spec("file-image");
    spec["image"] = json!({"url": "file:///etc/ironic/ironic.conf", "checksum": "5".repeat(64),
                           "checksumType": "sha256", "format": "raw"});
    t.create_host("file-image", spec, json!({})).await?;
    let failed = t
        .wait_for("file-image", "a provisioning error", secs(90), |h| {
            h.status.as_ref().is_some_and(|s| s.error_type == Some(ErrorType::Provisioning))
        })
        .await?;
    let message = failed.status.unwrap_or_default().error_message;
    assert!(message.contains("--file-image-dirs"), "{message}");
    let node = t.node("file-image").await?.context("the host was registered")?;
    assert!(node["instance_info"].get("image_source").is_none(), "nothing of the deployment reached Ironic: {node}");
    Ok(())
}
