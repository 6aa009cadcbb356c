//! Load: the provisioning limit across many hosts, and the cost of
//! watching hosts in steady state (one bulk poll per interval, whatever the
//! number of hosts). fake-hardware hosts, since redfish is not the point.

use crate::host_common::{HostEnv, Options, Recorder, assert_in_order, secs, state_of};
use ferrometal_tests::wait;
use futures::future::try_join_all;
use kube::api::ListParams;
use serde_json::json;
use std::time::Duration;

const LIMIT: usize = 5;

#[tokio::test]
async fn fifty_hosts_provision_concurrently_within_the_provisioning_limit() -> anyhow::Result<()> {
    let mut t = HostEnv::start("host-limit", Options::default()).await?;
    let mut config = t.host_config();
    config.provisioning_limit = LIMIT;
    t.start_operator(config).await?;
    let recorder = t.record().await?;
    let names: Vec<String> = (0..50).map(|i| format!("host-{i:02}")).collect();
    create_hosts_to_provision(&t, &names).await?;

    wait::until_ok("all 50 hosts provisioned", secs(240), Duration::from_millis(500), || async {
        let hosts = t.hosts.list(&ListParams::default()).await?;
        Ok((hosts.items.len() == 50 && hosts.items.iter().all(|h| state_of(h) == "provisioned")).then_some(()))
    })
    .await?;
    let max = recorder.max_busy();
    println!("most hosts seen provisioning at once: {max} (limit {LIMIT})");
    let metrics = t.operator()?.metrics();
    let calls: Vec<String> = ironic_client::Operation::ALL
        .iter()
        .map(|op| (op.as_str(), metrics.ironic_request_count(op.as_str())))
        .filter(|(_, n)| *n > 0)
        .map(|(op, n)| format!("{op}={n}"))
        .collect();
    println!("Ironic requests for 50 hosts: {} ({})", t.ironic_requests()?, calls.join(", "));
    println!("status writes: {}", metrics.status_write_count("host"));
    let delayed = recorder.delayed();
    println!("hosts that waited for a slot: {}", delayed.len());
    assert!(max <= LIMIT, "{max} hosts were busy at once, over the limit of {LIMIT}");
    assert!(max >= 2, "hosts were provisioned concurrently (at most {max} at once)");
    // The limit bit: with ten times more hosts than slots, some hosts had to wait in
    // `delayed` (how many depends on how registrations interleave).
    assert!(!delayed.is_empty(), "no host ever waited for a slot: the limit was never reached");
    for name in &names {
        let states = recorder.states(name);
        assert!(states.iter().any(|s| s == "provisioning"), "{name}: {states:?}");
    }
    Ok(())
}

/// Creates hosts as the benchmark does: fake hardware booting a live ISO, online, neither
/// inspected nor cleaned (both would take slots too; provisioning is the point).
pub(super) async fn create_hosts_to_provision(t: &HostEnv, names: &[String]) -> anyhow::Result<()> {
    let iso = t.ironic.image_server().write_live_iso("live.iso")?;
    try_join_all(names.iter().map(|name| {
        let mut spec = t.fake_spec(name);
        spec["image"] = json!({"url": iso, "format": "live-iso"});
        spec["inspectionMode"] = json!("disabled");
        spec["automatedCleaningMode"] = json!("disabled");
        t.create_host(name, spec, json!({}))
    }))
    .await?;
    Ok(())
}

/// The host controller's Ironic requests: all but the reads of the firmware objects'
/// controllers (each object is read once its host is managed, then on its own clock: a cost
/// per object, not the poll's).
fn host_requests(t: &HostEnv) -> anyhow::Result<u64> {
    let own = ["list_bios_settings", "list_firmware_components"];
    let others: u64 = own.iter().map(|op| t.ironic_request_count(op)).sum::<anyhow::Result<u64>>()?;
    Ok(t.ironic_requests()? - others)
}

/// The requests of the shared polls: full lists and looks at what changed.
fn poll_requests(t: &HostEnv) -> anyhow::Result<u64> {
    Ok(t.ironic_request_count("node_status")? + t.ironic_request_count("node_changes")?)
}

/// Over a window of `polls` bulk polls: the polls' Ironic requests, the host controller's
/// other Ironic requests, its status writes, and the polls counted.
async fn window(t: &HostEnv, polls: u64) -> anyhow::Result<(u64, u64, u64, u64)> {
    let metrics = t.operator()?.metrics();
    let (polling, calls, writes, start) =
        (poll_requests(t)?, host_requests(t)?, metrics.status_write_count("host"), t.poll_count()?);
    wait::until("bulk polls", secs(60), Duration::from_millis(50), || async {
        (t.poll_count().ok()? >= start + polls).then_some(())
    })
    .await?;
    let done = t.poll_count()?;
    let polled = poll_requests(t)? - polling;
    let others = (host_requests(t)? - calls).saturating_sub(polled);
    Ok((polled, others, metrics.status_write_count("host") - writes, done - start))
}

/// Waits until a window of polls sees no other Ironic call and no status
/// write (every host settled), then measures one more: the polls' requests per poll, the
/// other calls and the status writes.
async fn steady_calls_per_poll(t: &HostEnv) -> anyhow::Result<(f64, u64, u64)> {
    wait::until_ok("steady state", secs(120), Duration::from_millis(10), || async {
        let (_, others, writes, _) = window(t, 2).await?;
        Ok((others == 0 && writes == 0).then_some(()))
    })
    .await?;
    // A look starts a margin before the newest write it saw, so nodes written within it are
    // looked at again: at rest means past it, and past the look that settles the start (the
    // first to start a margin after the newest write was seen), a slow poll or more later.
    tokio::time::sleep(ironic_client::CHANGE_MARGIN + Duration::from_secs(2)).await;
    let bios = t.ironic_request_count("list_bios_settings")?;
    let (polled, others, writes, polls) = window(t, 3).await?;
    // The firmware settings objects want nothing and their nodes rest: Ironic is not asked.
    let others = others + (t.ironic_request_count("list_bios_settings")? - bios);
    Ok((polled as f64 / polls as f64, others, writes))
}

async fn add_available_hosts(t: &HostEnv, range: std::ops::Range<usize>) -> anyhow::Result<()> {
    let names: Vec<String> = range.map(|i| format!("host-{i:02}")).collect();
    try_join_all(names.iter().map(|name| {
        let mut spec = t.fake_spec(name);
        spec["inspectionMode"] = json!("disabled");
        t.create_host(name, spec, json!({}))
    }))
    .await?;
    for name in &names {
        t.wait_for(name, "available and powered on", secs(180), |h| {
            h.status.as_ref().is_some_and(|s| s.provisioning.state.as_str() == "available" && s.powered_on)
        })
        .await?;
    }
    Ok(())
}

#[tokio::test]
async fn steady_state_ironic_calls_per_poll_do_not_grow_with_the_number_of_hosts() -> anyhow::Result<()> {
    let mut t = HostEnv::start("host-steady", Options::default()).await?;
    let mut config = t.host_config();
    config.slow_poll_interval = Duration::from_millis(500);
    config.fast_poll_interval = Duration::from_millis(200);
    t.start_operator(config).await?;

    add_available_hosts(&t, 0..5).await?;
    let (five, others_five, writes_five) = steady_calls_per_poll(&t).await?;
    add_available_hosts(&t, 5..50).await?;
    let (fifty, others_fifty, writes_fifty) = steady_calls_per_poll(&t).await?;

    println!("Ironic requests per poll in steady state: 5 hosts {five:.2}, 50 hosts {fifty:.2}");
    assert_eq!((others_five, others_fifty), (0, 0), "nothing but the polls asks Ironic, not even for the BIOS");
    // At rest a look at what changed is the newest node's read alone: nothing was written
    // after the time a look showed. A full list (every 5 minutes) is two requests, so three
    // polls cost at most four, whatever the number of hosts.
    let at_most = 4.0 / 3.0;
    assert!(five <= at_most && fifty <= at_most, "one read per poll, nothing else, at 5 and at 50 hosts");
    assert_eq!((writes_five, writes_fifty), (0, 0), "no status writes when nothing changes");
    Ok(())
}

#[tokio::test]
async fn a_host_is_registered_with_its_cleaning_mode_so_providing_it_sends_no_patch() -> anyhow::Result<()> {
    let t = HostEnv::with_operator("host-patches", Options::default()).await?;
    let mut spec = t.fake_spec("lean-0");
    spec["image"] = json!({"url": t.ironic.image_server().write_live_iso("live.iso")?, "format": "live-iso"});
    spec["inspectionMode"] = json!("disabled");
    spec["automatedCleaningMode"] = json!("disabled");
    t.create_host("lean-0", spec, json!({})).await?;
    t.wait_provisioned("lean-0", secs(120)).await?;
    let node = t.node("lean-0").await?.ok_or_else(|| anyhow::anyhow!("no Ironic node"))?;
    assert_eq!(node["automated_clean"], false, "automatedCleaningMode: disabled, from registration on");
    // Ironic's writes are what limits provisioning at scale (design/performance.md): the one
    // PATCH left is the deploy settings (image, boot mode).
    assert_eq!(t.ironic_request_count("update_node")?, 1, "one PATCH per provisioned host");
    Ok(())
}

/// Hosts in the batches below, and the provisioning limit they share: more hosts than slots,
/// so that some wait for one.
const BATCH: u64 = 8;
const BATCH_LIMIT: usize = 3;

/// Starts the operator with [`BATCH_LIMIT`] and records the hosts' states from the start.
async fn batch_env(prefix: &str) -> anyhow::Result<(HostEnv, Recorder)> {
    let mut t = HostEnv::start(prefix, Options::default()).await?;
    let mut config = t.host_config();
    config.provisioning_limit = BATCH_LIMIT;
    t.start_operator(config).await?;
    let recorder = t.record().await?;
    Ok((t, recorder))
}

/// Creates [`BATCH`] hosts as the benchmark does and waits until every one is provisioned
/// and powered on, then for two more bulk polls, so that nothing still under way goes
/// uncounted.
async fn provision_batch(t: &HostEnv) -> anyhow::Result<Vec<String>> {
    let names: Vec<String> = (0..BATCH).map(|i| format!("batch-{i}")).collect();
    create_hosts_to_provision(t, &names).await?;
    for name in &names {
        t.wait_provisioned(name, secs(180)).await?;
    }
    let polled = t.poll_count()?;
    wait::until("two more bulk polls", secs(30), Duration::from_millis(50), || async {
        (t.poll_count().ok()? >= polled + 2).then_some(())
    })
    .await?;
    Ok(names)
}

#[tokio::test]
async fn a_provisioned_host_costs_six_ironic_requests_besides_the_polls_and_no_node_read() -> anyhow::Result<()> {
    let (t, _recorder) = batch_env("host-requests").await?;
    provision_batch(&t).await?;
    let count = |op: &str| t.ironic_request_count(op);
    let calls: Vec<String> = ironic_client::Operation::ALL
        .iter()
        .map(|op| (op.as_str(), count(op.as_str()).unwrap_or_default()))
        .filter(|(_, n)| *n > 0)
        .map(|(op, n)| format!("{op}={n}"))
        .collect();
    println!("Ironic requests for {BATCH} provisioned hosts: {}", calls.join(", "));
    // What a step compares comes from the poll (automated_clean) or from the node Ironic
    // answers a write with (the deploy settings); the poll tells registration the node is new.
    assert_eq!(count("get_node")?, 0, "no node is read on the way to provisioned");
    assert_eq!(count("create_node")?, BATCH, "one create per host, without a look-up before it");
    assert_eq!(count("set_provision_state")?, 3 * BATCH, "manage, provide and deploy, once each");
    assert_eq!(count("update_node")?, BATCH, "one PATCH per host: the deploy settings");
    assert_eq!(count("set_power_state")?, BATCH, "one power on per host");
    // Besides the shared polls and the client's one version negotiation.
    let per_host = host_requests(&t)? - poll_requests(&t)? - count("discover")?;
    assert_eq!(per_host, 6 * BATCH, "six Ironic requests per host besides the shared polls");
    // The firmware settings object reads the BIOS once its host is written managed, and only
    // then: one read per host.
    wait::until("a BIOS read per host", secs(30), Duration::from_millis(50), || async {
        (count("list_bios_settings").ok()? >= BATCH).then_some(())
    })
    .await?;
    assert_eq!(count("list_bios_settings")?, BATCH, "one BIOS read per host on the way to provisioned");
    Ok(())
}

#[tokio::test]
async fn status_writes_per_provisioned_host_are_one_per_state_and_one_per_wait_for_a_slot() -> anyhow::Result<()> {
    let (t, recorder) = batch_env("host-writes").await?;
    let names = provision_batch(&t).await?;
    let writes = t.operator()?.metrics().status_write_count("host");
    let waits = recorder.waits();
    println!("status writes for {BATCH} provisioned hosts: {writes}; hosts that waited for a slot: {waits:?}");
    for name in &names {
        assert_eq!(
            recorder.provisioned_powered_on(name),
            Some(true),
            "{name} was powered on before it was written provisioned"
        );
        assert_in_order(
            &recorder.states(name),
            &["registering", "preparing", "available", "provisioning", "provisioned"],
        );
    }
    assert!(!waits.is_empty(), "with {BATCH} hosts and {BATCH_LIMIT} slots, some host waited");
    assert!(waits.values().all(|n| *n == 1), "each wait for a slot is written once: {waits:?}");
    // registering, preparing, available, provisioning, provisioned (powered on in the same
    // write), and `delayed` once for a host that waited: its end is the provisioning write.
    let waited = waits.len() as u64;
    assert_eq!(writes, 5 * BATCH + waited, "one status write per state a user sees, one per wait");
    assert!(writes <= 6 * BATCH, "at most six status writes per host: {writes}");
    Ok(())
}
