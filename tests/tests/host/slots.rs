//! Provisioning slots across namespaces: a busy status no host earned holds none.

use crate::host_common::{HostEnv, Options, secs, state_of};
use crds::baremetalhost::BareMetalHost;
use ferrometal_tests::wait;
use kube::api::{Api, PostParams};
use serde_json::json;
use std::time::Duration;

const STATUS: &str = "baremetalhost.metal3.io/status";

#[tokio::test]
async fn a_tenants_hosts_restored_busy_without_a_node_keep_no_slot_from_another_namespace() -> anyhow::Result<()> {
    let mut t = HostEnv::start("host-slots", Options::default()).await?;
    let tenant = t.env.cp.namespace("host-slots-tenant").await?;
    let mut config = t.host_config();
    config.provisioning_limit = 1;
    let mut operator_config = t.env.operator_config();
    operator_config.namespaces.push(tenant.clone());
    operator_config.host = Some(config);
    t.operator = Some(t.env.start_operator(operator_config).await?);

    // The tenant's host has no BMC, so no node, and says it is provisioning: a status anyone
    // who may create a host can have restored from its annotation.
    let squatters: Api<BareMetalHost> = Api::namespaced(t.env.client(), &tenant);
    let squatter: BareMetalHost = serde_json::from_value(json!({
        "apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
        "metadata": {"name": "squatter", "annotations": {STATUS: r#"{"provisioning":{"state":"provisioning"}}"#}},
        "spec": {"online": true},
    }))?;
    squatters.create(&PostParams::default(), &squatter).await?;
    wait::until_ok("the tenant's host restored as provisioning", secs(30), Duration::from_millis(100), || async {
        Ok(squatters.get_opt("squatter").await?.filter(|h| state_of(h) == "provisioning"))
    })
    .await?;

    // The only slot is free for another namespace's host all the same (it waited for ever).
    let (provisioned, _) = t.provisioned_fake_host("host-0").await?;
    assert!(provisioned.status.as_ref().is_some_and(|s| s.error_type.is_none()));
    let squatter = squatters.get("squatter").await?;
    assert_eq!(state_of(&squatter), "provisioning", "the tenant's host moved nowhere meanwhile");
    Ok(())
}
