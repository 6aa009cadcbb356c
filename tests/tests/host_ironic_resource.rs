//! Finding Ironic through an `Ironic` resource (`--ironic-name`): its
//! status names the endpoint, the credentials Secret and the CA, and hosts
//! are provisioned through it over TLS with basic auth.

mod common;
mod host_common;

use crds::ironic::Ironic;
use ferrometal_tests::ironic::{IronicAuth, IronicConfig};
use host_common::{HostEnv, Options};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use operator::host::IronicSource;
use serde_json::json;
use std::collections::BTreeMap;

#[tokio::test]
async fn hosts_are_provisioned_through_the_ironic_resource_the_operator_is_pointed_at() -> anyhow::Result<()> {
    let ironic = IronicConfig {
        auth: IronicAuth::Basic { username: "ironic-user".into(), password: "ironic-secret".into() },
        tls: true,
        ..IronicConfig::default()
    };
    let mut t = HostEnv::start("host-ironic-cr", Options { ironic, ..Options::default() }).await?;
    let client = t.env.client();
    let (username, password) = t.ironic.credentials().unwrap_or_default();
    t.credentials_secret("ironic-credentials", username, password).await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), t.ns());
    let ca = ConfigMap {
        metadata: kube::api::ObjectMeta { name: Some("ironic-ca".into()), ..Default::default() },
        data: Some(BTreeMap::from([("ca.crt".to_string(), t.ironic.ca_pem().unwrap_or_default().to_string())])),
        ..Default::default()
    };
    configmaps.create(&PostParams::default(), &ca).await?;
    // No Ironic controller runs here: the test plays it and writes the status.
    let ironics: Api<Ironic> = Api::namespaced(client, t.ns());
    let resource: Ironic = serde_json::from_value(json!({
        "apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic", "metadata": {"name": "ironic"}, "spec": {}
    }))?;
    ironics.create(&PostParams::default(), &resource).await?;
    let status = json!({"status": {
        "apiEndpoint": t.ironic.endpoint(),
        "apiCredentialsSecretName": "ironic-credentials",
        "caRef": {"kind": "ConfigMap", "name": "ironic-ca", "key": "ca.crt"},
    }});
    ironics.patch_status("ironic", &PatchParams::default(), &Patch::Merge(status)).await?;

    let mut config = t.host_config();
    config.ironic = IronicSource::Resource { namespace: t.ns().to_string(), name: "ironic".into() };
    t.start_operator(config).await?;
    let (_, iso) = t.provisioned_fake_host("fake-0").await?;
    let node = t.node("fake-0").await?.unwrap_or_default();
    assert_eq!(node["instance_info"]["boot_iso"], iso.as_str());
    assert_eq!(node["provision_state"], "active");
    assert_eq!(t.node_count().await?, 1);
    Ok(())
}
