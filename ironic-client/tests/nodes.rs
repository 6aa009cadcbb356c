//! Node, port, maintenance, validation and boot-device calls, list paging,
//! bulk status and the typed errors, on a real Ironic with fake hardware.

mod common;

use ferrometal_tests::ironic::IronicConfig;
use ironic_client::{
    BootDevice, DriverInfo, Error, NodeCreate, NodeListQuery, Operation, PatchOperation, PortCreate, ProvisionState,
};
use serde_json::json;

#[tokio::test]
async fn node_calls_round_trip_through_a_real_ironic() -> anyhow::Result<()> {
    let (_ironic, client) = common::start(IronicConfig::default()).await?;

    // Create with everything the operator sets.
    let mut create = NodeCreate::new("fake-hardware")
        .name("nodes-0")
        .resource_class("baremetal")
        .driver_info(DriverInfo::new().with("fake_username", "admin").with("fake_password", "pw"));
    create.properties.insert("cpu_arch".into(), json!("x86_64"));
    create.extra.insert("owner".into(), json!("ferrometal"));
    create.interfaces.rescue_interface = Some("fake".into());
    create.automated_clean = Some(false);
    let node = client.create_node(&create).await?;
    assert_eq!(node.provision_state, Some(ProvisionState::Enroll));
    assert_eq!(node.resource_class.as_deref(), Some("baremetal"));
    assert_eq!(node.extra["owner"], "ferrometal");
    assert!(node.driver_info.secret("fake_password").is_some());

    // Get by name, with and without fields.
    let by_name = client.get_node("nodes-0").await?;
    assert_eq!(by_name.uuid, node.uuid);
    let slim = client.get_node_fields("nodes-0", &["provision_state"]).await?;
    assert_eq!(slim.uuid, node.uuid, "uuid is always requested");
    assert_eq!(slim.provision_state, Some(ProvisionState::Enroll));
    assert_eq!(slim.name, None, "fields not asked for are absent");

    // A duplicate name is a conflict, not retried.
    let dup = client.create_node(&NodeCreate::new("fake-hardware").name("nodes-0")).await;
    assert!(matches!(dup, Err(Error::Conflict(_))), "{dup:?}");

    // JSON Patch.
    let patched = client
        .update_node(
            &node.uuid,
            &[
                PatchOperation::add("/instance_info/image_source", "http://images/os.qcow2"),
                PatchOperation::replace("/extra/owner", "someone"),
                PatchOperation::add("/driver_info/fake_password", "new-pw"),
            ],
        )
        .await?;
    assert_eq!(patched.instance_info["image_source"], "http://images/os.qcow2");
    assert_eq!(patched.extra["owner"], "someone");

    // Maintenance on and off.
    client.set_maintenance(&node.uuid, Some("testing")).await?;
    let m = client.get_node_fields(&node.uuid, &["maintenance", "maintenance_reason"]).await?;
    assert_eq!((m.maintenance, m.maintenance_reason.as_deref()), (Some(true), Some("testing")));
    client.clear_maintenance(&node.uuid).await?;
    let m = client.get_node_fields(&node.uuid, &["maintenance"]).await?;
    assert_eq!(m.maintenance, Some(false));

    // Validation and boot devices (the fake management interface).
    let validation = client.validate_node(&node.uuid).await?;
    assert!(validation.all_valid(&["power", "management", "deploy", "boot"]), "{validation:?}");
    let supported = client.supported_boot_devices(&node.uuid).await?;
    assert!(supported.contains(&BootDevice::Pxe), "{supported:?}");
    client.set_boot_device(&node.uuid, BootDevice::Pxe, false).await?;
    let boot = client.get_boot_device(&node.uuid).await?;
    assert_eq!((boot.boot_device, boot.persistent), (Some(BootDevice::Pxe), Some(false)));

    // Ports: create, list by node (by name too), find by MAC, duplicate, delete.
    let mut port = PortCreate::new(&node.uuid, "52:54:00:00:00:01");
    port.pxe_enabled = Some(true);
    let created = client.create_port(&port).await?;
    assert_eq!(created.node_uuid.as_deref(), Some(node.uuid.as_str()));
    let listed = client.list_ports("nodes-0").await?;
    assert_eq!(listed.iter().map(|p| p.uuid.as_str()).collect::<Vec<_>>(), [created.uuid.as_str()]);
    let found = client.find_port_by_address("52:54:00:00:00:01").await?;
    assert_eq!(found.map(|p| p.uuid), Some(created.uuid.clone()));
    assert!(client.find_port_by_address("52:54:00:00:00:99").await?.is_none());
    let dup = client.create_port(&port).await;
    assert!(matches!(dup, Err(Error::Conflict(_))), "{dup:?}");
    client.delete_port(&created.uuid).await?;
    assert!(client.list_ports(&node.uuid).await?.is_empty());

    // The inventory of a never-inspected node is a typed 404.
    let inventory = client.get_inventory(&node.uuid).await;
    assert!(matches!(inventory, Err(Error::NotFound(_))), "{inventory:?}");

    // Delete and the typed errors around it.
    client.delete_node("nodes-0").await?;
    let gone = client.get_node("nodes-0").await;
    let Err(Error::NotFound(api)) = gone else { panic!("expected NotFound, got {gone:?}") };
    assert_eq!(api.status, 404);
    assert!(api.request_id.is_some(), "Ironic's request id is kept");
    assert!(client.find_node("nodes-0").await?.is_none());
    Ok(())
}

#[tokio::test]
async fn listing_pages_through_every_node_and_bulk_status_costs_one_request_per_page() -> anyhow::Result<()> {
    let (_ironic, client) = common::start(IronicConfig::default()).await?;
    for i in 0..5 {
        common::fake_node(&client, &format!("page-{i}")).await?;
    }
    common::manageable_node(&client, "page-5").await?;

    // Explicit paging: pages of two, markers chained by the client.
    let query = NodeListQuery::new().fields(&["name", "provision_state"]).limit(2);
    let page = client.list_nodes(&query).await?;
    assert_eq!(page.nodes.len(), 2);
    let marker = page.next_marker.clone().expect("more pages");
    let next = client.list_nodes(&query.clone().marker(marker)).await?;
    assert_eq!(next.nodes.len(), 2);
    assert!(next.nodes.iter().all(|n| !page.nodes.iter().any(|p| p.uuid == n.uuid)));

    let before = client.metrics().requests(Operation::ListNodes);
    let all = client.list_all_nodes(&query).await?;
    assert_eq!(all.len(), 6);
    // 6 nodes in pages of 2: three full pages, then an empty one that
    // confirms the end (Ironic links a next page whenever a page is full).
    assert_eq!(client.metrics().requests(Operation::ListNodes) - before, 4);

    // Filters.
    let manageable = client.list_all_nodes(&NodeListQuery::new().provision_state(ProvisionState::Manageable)).await?;
    assert_eq!(manageable.iter().map(|n| n.name.as_deref()).collect::<Vec<_>>(), [Some("page-5")]);
    assert_eq!(manageable[0].driver.as_deref(), Some("fake-hardware"), "no fields: full nodes");

    // Bulk status: every node in one request.
    let before = client.metrics().requests(Operation::NodeStatus);
    let statuses = client.node_statuses().await?;
    assert_eq!(client.metrics().requests(Operation::NodeStatus) - before, 1);
    assert_eq!(statuses.len(), 6);
    let five = statuses.iter().find(|s| s.name.as_deref() == Some("page-5")).expect("page-5");
    assert_eq!(five.provision_state, Some(ProvisionState::Manageable));
    assert!(!five.is_busy() && !five.has_failed() && !five.maintenance);
    let enrolled = client.node_statuses_matching(&NodeListQuery::new().provision_state(ProvisionState::Enroll)).await?;
    assert_eq!(enrolled.len(), 5);
    Ok(())
}
