//! Looking only at the nodes that changed (`node_status_changes`), on a real
//! Ironic with fake hardware: what a delta shows, what only a full list shows,
//! and what a look costs.

mod common;

use std::time::Duration;

use ferrometal_tests::ironic::IronicConfig;
use futures::{StreamExt, TryStreamExt};
use ironic_client::{ChangeCursor, IronicClient, NodeCreate, Operation, PowerTarget, ProvisionState, StatusList};

fn names(list: &StatusList) -> Vec<String> {
    let mut names: Vec<String> = list.nodes().iter().filter_map(|n| n.name.clone()).collect();
    names.sort();
    names
}

async fn create_managed(client: &IronicClient, count: usize) -> anyhow::Result<Vec<String>> {
    futures::stream::iter(0..count)
        .map(|i| async move {
            let node = client.create_node(&NodeCreate::new("fake-hardware").name(format!("chg-{i:02}"))).await?;
            client.manage(&node.uuid).await?;
            client.wait_for_provision_state(&node.uuid, ProvisionState::Manageable, common::fast()).await?;
            Ok::<_, anyhow::Error>(node.uuid)
        })
        .buffered(8)
        .try_collect()
        .await
}

/// Lets the clock pass the last write, so that the next writes are newer than
/// where a look with no margin starts.
async fn tick() {
    tokio::time::sleep(Duration::from_millis(1100)).await;
}

#[tokio::test]
async fn a_delta_shows_every_node_written_since_the_last_look_and_a_full_list_shows_the_rest() -> anyhow::Result<()> {
    let (_ironic, client) = common::start(IronicConfig::default()).await?;
    let uuids = create_managed(&client, 30).await?;
    let mut cursor = ChangeCursor::new(Duration::from_secs(3600)).with_margin(Duration::ZERO);

    let first = client.node_status_changes(&mut cursor, false).await?;
    assert!(first.is_full(), "the first look lists every node");
    assert_eq!(first.nodes().len(), 30);

    // Maintenance, power and a provision state change each write the node.
    tick().await;
    client.set_maintenance(&uuids[3], Some("testing")).await?;
    client.set_power_state(&uuids[7], PowerTarget::On, None).await?;
    client.provide(&uuids[11]).await?;
    client.wait_for_provision_state(&uuids[11], ProvisionState::Available, common::fast()).await?;
    let before = client.metrics().snapshot();
    let delta = client.node_status_changes(&mut cursor, false).await?;
    assert!(!delta.is_full());
    let changed = names(&delta);
    for name in ["chg-03", "chg-07", "chg-11"] {
        assert!(changed.contains(&name.to_string()), "{name} missing from {changed:?}");
    }
    assert!(changed.len() <= 20, "one first page at most, not every node: {changed:?}");
    let requests =
        |op| client.metrics().requests(op) - before.iter().find(|s| s.operation == op).map_or(0, |s| s.requests);
    assert_eq!(requests(Operation::NodeChanges), 3, "the newest node, one slim page and its last node, read whole");

    // More changes than a first page (20 for a new cursor): the look follows the pages
    // until it is past them.
    let mut fresh = ChangeCursor::new(Duration::from_secs(3600)).with_margin(Duration::ZERO);
    client.node_status_changes(&mut fresh, false).await?;
    tick().await;
    for uuid in &uuids[..25] {
        client.set_maintenance(uuid, Some("many")).await?;
    }
    let pages = client.metrics().requests(Operation::NodeChanges);
    let many = client.node_status_changes(&mut fresh, false).await?;
    assert!(
        client.metrics().requests(Operation::NodeChanges) - pages >= 4,
        "the newest node, the first page and its last node, and a second page"
    );
    let changed = names(&many);
    for i in 0..25 {
        assert!(changed.contains(&format!("chg-{i:02}")), "chg-{i:02} missing from {changed:?}");
    }

    // Deleting the node written last moves Ironic's newest write back in time: the next look
    // lists every node, and the deleted one is gone from it.
    client.delete_node(&uuids[24]).await?;
    let after = client.node_status_changes(&mut fresh, false).await?;
    assert!(after.is_full(), "a newest write older than one seen before means a node is gone");
    assert!(!names(&after).contains(&"chg-24".to_string()));

    // A delta cannot show a deleted node, nor surely one never written since its
    // creation (it sorts last): a full list shows both.
    tick().await;
    client.create_node(&NodeCreate::new("fake-hardware").name("chg-new")).await?;
    client.delete_node(&uuids[29]).await?;
    let full = client.node_status_changes(&mut cursor, true).await?;
    let all = names(&full);
    assert!(full.is_full() && all.contains(&"chg-new".to_string()) && !all.contains(&"chg-29".to_string()));
    Ok(())
}

#[tokio::test]
async fn a_cursor_of_some_shards_sees_only_their_nodes_in_full_lists_and_deltas() -> anyhow::Result<()> {
    let (_ironic, client) = common::start(IronicConfig::default()).await?;
    let mut uuids = Vec::new();
    for (i, shard) in ["east", "west", "north", "east"].into_iter().enumerate() {
        let node = NodeCreate { shard: Some(shard.into()), ..NodeCreate::new("fake-hardware").name(format!("sh-{i}")) };
        uuids.push(client.create_node(&node).await?.uuid);
    }
    let unsharded = client.create_node(&NodeCreate::new("fake-hardware").name("sh-none")).await?;
    assert_eq!(client.get_node(&uuids[1]).await?.shard.as_deref(), Some("west"), "the shard is kept and read back");
    let shards = vec!["east".to_string(), "north".to_string()];
    let mut cursor = ChangeCursor::new(Duration::from_secs(3600)).with_margin(Duration::ZERO).with_shards(shards);

    let first = client.node_status_changes(&mut cursor, false).await?;
    assert!(first.is_full());
    assert_eq!(names(&first), ["sh-0", "sh-2", "sh-3"], "only east and north");

    // Writes to every node: the delta shows those of the cursor's shards alone.
    tick().await;
    for uuid in uuids.iter().chain([&unsharded.uuid]) {
        client.set_maintenance(uuid, Some("sharded")).await?;
    }
    let delta = client.node_status_changes(&mut cursor, false).await?;
    assert!(!delta.is_full());
    assert_eq!(names(&delta), ["sh-0", "sh-2", "sh-3"]);

    // A node moved into a shard of the cursor (a PATCH of `/shard` writes it) shows in the next delta.
    tick().await;
    client.update_node(&unsharded.uuid, &[ironic_client::PatchOperation::add("/shard", "north")]).await?;
    let moved = client.node_status_changes(&mut cursor, false).await?;
    assert!(names(&moved).contains(&"sh-none".to_string()), "{:?}", names(&moved));
    Ok(())
}

/// Gives every node the same `updated_at`, straight in Ironic's SQLite database: what a
/// database keeping whole seconds, or one statement writing many nodes, leaves behind.
fn write_all_at_once(ironic: &ferrometal_tests::ironic::IronicServer, at: &str) -> anyhow::Result<()> {
    let database = ironic.dir().join("state").join("ironic.sqlite");
    let script = "import sqlite3, sys\n\
                  db = sqlite3.connect(sys.argv[1])\n\
                  db.execute('update nodes set updated_at = ?', (sys.argv[2],))\n\
                  db.commit()\n";
    let output = std::process::Command::new(ferrometal_tests::env::python()?)
        .args(["-c", script])
        .arg(&database)
        .arg(at)
        .output()?;
    anyhow::ensure!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    Ok(())
}

#[tokio::test]
async fn nodes_sharing_the_newest_write_are_not_read_again_once_a_look_showed_them_and_a_look_at_rest_is_one_request()
-> anyhow::Result<()> {
    let (ironic, client) = common::start(IronicConfig::default()).await?;
    for i in 0..60 {
        common::fake_node(&client, &format!("tie-{i:02}")).await?;
    }
    write_all_at_once(&ironic, "2026-01-01 00:00:00.000000")?;
    // A margin of a second, the databases' resolution: the shortest that lets a look start
    // after the newest write.
    let mut cursor = ChangeCursor::new(Duration::from_secs(3600)).with_margin(Duration::from_secs(1));
    let full = client.node_status_changes(&mut cursor, false).await?;
    assert!(full.is_full() && full.nodes().len() == 60, "a full list first");

    // The looks with the margin show the whole fleet, all of it written at the newest time;
    // the second comes a margin after that time was first seen.
    assert_eq!(client.node_status_changes(&mut cursor, false).await?.nodes().len(), 60);
    tick().await;
    assert_eq!(client.node_status_changes(&mut cursor, false).await?.nodes().len(), 60);

    // At rest, looks start after that time, and with no node written later each ends at the
    // newest node's read: no page, not the fleet sharing a time.
    let mut read = Vec::new();
    let mut requests = Vec::new();
    for _ in 0..3 {
        let before = client.metrics().requests(Operation::NodeChanges);
        read.push(client.node_status_changes(&mut cursor, false).await?.nodes().len());
        requests.push(client.metrics().requests(Operation::NodeChanges) - before);
    }
    assert_eq!(read, [0, 0, 0], "nothing changed since the looks that showed the fleet");
    assert_eq!(requests, [1, 1, 1], "the newest node's read alone");
    assert!(cursor.at_rest(), "settled, its next first page the least");

    // A node written later still shows.
    let tie = full.nodes().iter().find(|n| n.name.as_deref() == Some("tie-42")).map(|n| n.uuid.clone());
    client.set_maintenance(&tie.ok_or_else(|| anyhow::anyhow!("tie-42 listed"))?, Some("later")).await?;
    let before = client.metrics().requests(Operation::NodeChanges);
    let delta = client.node_status_changes(&mut cursor, false).await?;
    assert!(!delta.is_full() && names(&delta).contains(&"tie-42".to_string()), "{:?}", names(&delta));
    assert!(names(&delta).len() <= 20, "one least page: {:?}", names(&delta));
    let requests = client.metrics().requests(Operation::NodeChanges) - before;
    assert_eq!(requests, 3, "the newest node, one slim page and its last node, read whole");
    Ok(())
}
