//! Finding Ironic through an `Ironic` resource (`--ironic-name`): the endpoint is its
//! Service, the credentials its own Secret and the CA the bundle it publishes, all derived
//! from its spec and names. Its status is never trusted: whoever may patch `ironics/status`
//! must not be able to send the Ironic password anywhere.

use crate::host_common::{HostEnv, Options, secs};
use crds::ironic::Ironic;
use ferrometal_tests::ironic::{IronicAuth, IronicConfig};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Resource;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use operator::testing::host::IronicSource;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Plays the Ironic controller: an `Ironic` named `ironic` with no TLS settings (so mode
/// Auto), its CA bundle and, when `owned`, its generated credentials Secret controlled by it.
async fn ironic_resource(t: &HostEnv, owned: bool) -> anyhow::Result<Ironic> {
    let client = t.env.client();
    let ironics: Api<Ironic> = Api::namespaced(client.clone(), t.ns());
    let resource: Ironic = serde_json::from_value(json!({
        "apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic", "metadata": {"name": "ironic"}, "spec": {}
    }))?;
    let ironic = ironics.create(&PostParams::default(), &resource).await?;
    let owner = ironic.controller_owner_ref(&()).into_iter().collect::<Vec<_>>();
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), t.ns());
    let ca = ConfigMap {
        metadata: ObjectMeta {
            name: Some("ironic-ca-bundle".into()),
            owner_references: Some(owner.clone()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("ca.crt".to_string(), t.ironic.ca_pem().unwrap_or_default().to_string())])),
        ..Default::default()
    };
    configmaps.create(&PostParams::default(), &ca).await?;
    let (username, password) = t.ironic.credentials().unwrap_or_default();
    let secrets: Api<Secret> = Api::namespaced(client, t.ns());
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("ironic-api-credentials".into()),
            owner_references: owned.then_some(owner),
            ..Default::default()
        },
        string_data: Some(BTreeMap::from([
            ("username".to_string(), username.to_string()),
            ("password".to_string(), password.to_string()),
        ])),
        ..Default::default()
    };
    secrets.create(&PostParams::default(), &secret).await?;
    Ok(ironic)
}

async fn start(prefix: &str) -> anyhow::Result<HostEnv> {
    let ironic = IronicConfig {
        auth: IronicAuth::Basic { username: "ironic-user".into(), password: "ironic-secret".into() },
        tls: true,
        ..IronicConfig::default()
    };
    HostEnv::start(prefix, Options { ironic, ironic_service: Some("ironic"), ..Options::default() }).await
}

fn resource_config(t: &HostEnv) -> anyhow::Result<operator::testing::host::Config> {
    let mut config = t.host_config();
    config.ironic = IronicSource::Resource {
        namespace: t.ns().to_string(),
        name: "ironic".into(),
        connect_to: Some(t.ironic.socket_addr()?),
    };
    Ok(config)
}

#[tokio::test]
async fn hosts_are_provisioned_through_the_ironic_resource_and_a_patched_status_redirects_nothing() -> anyhow::Result<()>
{
    let mut t = start("host-ironic-cr").await?;
    ironic_resource(&t, true).await?;
    // Whoever can patch the status points it at their own server, Secret and CA.
    let thief = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let thief_addr = thief.local_addr()?;
    let connections = Arc::new(AtomicUsize::new(0));
    let seen = connections.clone();
    tokio::spawn(async move {
        while thief.accept().await.is_ok() {
            seen.fetch_add(1, Ordering::SeqCst);
        }
    });
    t.credentials_secret("stolen", "thief", "thief").await?;
    let ironics: Api<Ironic> = Api::namespaced(t.env.client(), t.ns());
    let status = json!({"status": {
        "apiEndpoint": format!("http://{thief_addr}"),
        "apiCredentialsSecretName": "stolen",
        "caRef": {"kind": "ConfigMap", "name": "thief-ca", "key": "ca.crt"},
    }});
    ironics.patch_status("ironic", &PatchParams::default(), &Patch::Merge(status)).await?;

    t.start_operator(resource_config(&t)?).await?;
    let (_, iso) = t.provisioned_fake_host("fake-0").await?;
    let node = t.node("fake-0").await?.unwrap_or_default();
    assert_eq!(node["instance_info"]["boot_iso"], iso.as_str());
    assert_eq!(node["provision_state"], "active");
    assert_eq!(t.node_count().await?, 1);
    assert_eq!(connections.load(Ordering::SeqCst), 0, "nothing ever connected to the status' endpoint");
    Ok(())
}

#[tokio::test]
async fn a_credentials_secret_the_ironic_does_not_control_is_never_used() -> anyhow::Result<()> {
    let mut t = start("host-ironic-forged").await?;
    let ironic = ironic_resource(&t, false).await?;
    t.start_operator(resource_config(&t)?).await?;
    t.create_host("fake-0", t.fake_spec("fake-0"), json!({})).await?;
    tokio::time::sleep(secs(8)).await;
    assert_eq!(t.ironic_requests()?, 0, "no request went to Ironic with a Secret anyone could have made");
    assert_eq!(t.node_count().await?, 0);

    // Once the Secret is the Ironic's, the same credentials are used.
    let secrets: Api<Secret> = Api::namespaced(t.env.client(), t.ns());
    let owner = ironic.controller_owner_ref(&()).into_iter().collect::<Vec<_>>();
    let patch = json!({"metadata": {"ownerReferences": owner}});
    secrets.patch("ironic-api-credentials", &PatchParams::default(), &Patch::Merge(patch)).await?;
    t.wait_for("fake-0", "registered", secs(90), |h| h.status.as_ref().is_some_and(|s| !s.provisioning.id.is_empty()))
        .await?;
    Ok(())
}
