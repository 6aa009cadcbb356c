//! The status annotation is the user's to write (baremetal-operator restores a host's status
//! from it): a host whose restored status names another node's ID leads none of the objects
//! named for it (HostFirmwareSettings, HostFirmwareComponents, DataImage, BMCEventSubscription)
//! to that node. Without the webhook, as a tenant may find the cluster.

use crate::host_common::{HostEnv, Options, secs};
use ferrometal_tests::wait;
use ironic_client::NodeCreate;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::ApiResource;
use serde_json::{Value, json};
use std::time::Duration;

const STATUS: &str = "baremetalhost.metal3.io/status";

/// The objects a user may name for a host, each with a spec the admission accepts, and what
/// its status says once its controller asked Ironic for the host's node and heard it has none.
fn objects(host: &str, iso: &str) -> Vec<(&'static str, Value, &'static str)> {
    vec![
        ("HostFirmwareSettings", json!({"settings": {"ProcTurboMode": "Disabled"}}), "cannot read the BIOS settings"),
        ("HostFirmwareComponents", json!({"updates": []}), "cannot read the firmware components"),
        ("DataImage", json!({"url": iso}), "the host's node is gone"),
        (
            "BMCEventSubscription",
            json!({"hostName": host, "destination": "https://events.example/"}),
            "the BMC's subscription could not be made",
        ),
    ]
}

/// The lines of Ironic's API log naming `node` in a request's path.
fn requests_naming(t: &HostEnv, node: &str) -> anyhow::Result<Vec<String>> {
    let log = std::fs::read_to_string(t.ironic.dir().join("ironic.log"))?;
    Ok(log.lines().filter(|l| l.contains(&format!("/v1/nodes/{node}"))).map(str::to_string).collect())
}

#[tokio::test]
async fn a_forged_node_id_in_a_hosts_status_annotation_leads_no_controller_to_that_node() -> anyhow::Result<()> {
    let t = HostEnv::with_operator("host-forged", Options::default()).await?;
    // Another tenant's node, which nothing in this namespace may read or change.
    let create = NodeCreate::new("fake-hardware").name("elsewhere~victim");
    let victim = t.ironic_client().await?.create_node(&create).await?.uuid;

    let status = json!({"provisioning": {"state": "provisioned", "ID": victim}, "poweredOn": true,
        "operationalStatus": "OK"});
    t.create_host("forger", json!({"online": true}), json!({STATUS: status.to_string()})).await?;
    t.wait_for("forger", "restored with the other node's ID", secs(30), |h| {
        h.status.as_ref().is_some_and(|s| s.provisioning.id == victim)
    })
    .await?;
    let iso = t.ironic.image_server().write_live_iso("data.iso")?;
    for (kind, spec, _) in objects("forger", &iso) {
        let api: Api<DynamicObject> = Api::namespaced_with(t.env.client(), t.ns(), &resource(kind));
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "metal3.io/v1alpha1", "kind": kind, "metadata": {"name": "forger"}, "spec": spec,
        }))?;
        api.create(&PostParams::default(), &object).await?;
    }

    // Each controller asked Ironic for the host's own node, by the name the operator gives it,
    // and reports that it has none.
    for (kind, _, said) in objects("forger", &iso) {
        let api: Api<DynamicObject> = Api::namespaced_with(t.env.client(), t.ns(), &resource(kind));
        wait::until_ok(&format!("{kind} forger saying {said:?}"), secs(90), Duration::from_millis(200), || async {
            Ok(api.get_opt("forger").await?.filter(|o| o.data["status"].to_string().contains(said)))
        })
        .await?;
    }
    assert!(!requests_naming(&t, &t.node_name("forger"))?.is_empty(), "the controllers asked for the host's own node");
    assert_eq!(requests_naming(&t, &victim)?, Vec::<String>::new(), "no request named the other tenant's node");
    assert_eq!(requests_naming(&t, "elsewhere~victim")?, Vec::<String>::new());
    Ok(())
}

fn resource(kind: &str) -> ApiResource {
    ferrometal_tests::api_resource("metal3.io", "v1alpha1", kind)
}
