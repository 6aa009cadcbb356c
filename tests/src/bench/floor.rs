//! The floor: the least a client of Ironic must do to take N fake-hardware nodes through the
//! states the operator takes its hosts through (enroll, manageable, available, active, and
//! powered on: the hosts ask to be `online`, and fake hardware's deploy leaves a node off),
//! with the operator's image and deploy settings and its concurrency limits. It shares the
//! operator's way of watching nodes (one look per poll interval at the nodes changed since the
//! last, `ironic_client::ChangeCursor`, with the operator's full list every
//! `ironic_client::DEFAULT_FULL_EVERY`, the interval timed from each poll's start, as the
//! operator's poller times it), so the ratio of the two is what the operator's own work costs,
//! not a different polling strategy. Its requests run beside
//! the next polls, at most `concurrency` at once: the floor never leaves Ironic waiting on a
//! sleep or a round of its own.

use super::Limits;
use futures::{StreamExt, TryStreamExt};
use ironic_client::{
    ChangeCursor, DEFAULT_FULL_EVERY, IronicClient, NodeCreate, NodeStatusSummary, PatchOperation, PowerState,
    PowerTarget, ProvisionState, StatusList,
};
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// What the floor measured.
#[derive(Clone, Debug)]
pub struct FloorRun {
    pub hosts: usize,
    pub elapsed: Duration,
    pub ironic_requests: u64,
    pub polls: u64,
}

/// What the floor does next with one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Manage,
    Provide,
    Deploy,
    PowerOn,
}

/// The step a node in this status needs, if it rests in a state that is not the goal.
fn step_for(node: &NodeStatusSummary) -> Option<Step> {
    if node.target_provision_state.is_some() || node.reservation.is_some() {
        return None;
    }
    match node.provision_state.as_ref()? {
        ProvisionState::Enroll => Some(Step::Manage),
        ProvisionState::Manageable => Some(Step::Provide),
        ProvisionState::Available => Some(Step::Deploy),
        ProvisionState::Active if node.target_power_state.is_none() && !is_on(node) => Some(Step::PowerOn),
        _ => None,
    }
}

fn is_on(node: &NodeStatusSummary) -> bool {
    node.power_state == Some(PowerState::On)
}

/// Where the operator's hosts end: provisioned and powered on.
fn done(node: &NodeStatusSummary) -> bool {
    node.provision_state == Some(ProvisionState::Active) && is_on(node)
}

/// Takes `count` nodes named `{prefix}-NNNN` from nothing to `active` and on, deploying the live ISO
/// `iso`, at most `limits.provisioning` deploying at once and `limits.concurrency` requests in
/// flight, polling every `limits.fast_poll`.
pub async fn run(endpoint: &str, prefix: &str, count: usize, iso: &str, limits: &Limits) -> crate::Result<FloorRun> {
    let client = IronicClient::builder(endpoint).max_in_flight(limits.concurrency.max(1)).build().await?;
    let base = client.metrics().total_requests();
    let started = Instant::now();
    let names: Vec<String> = (0..count).map(|i| format!("{prefix}-{i:04}")).collect();
    // Registering: create and manage at once, as the operator does in one reconcile.
    futures::stream::iter(names.iter())
        .map(|name| {
            let client = client.clone();
            async move {
                let node = client.create_node(&node_create(name)).await?;
                client.manage(&node.uuid).await?;
                Ok::<_, anyhow::Error>(())
            }
        })
        .buffer_unordered(limits.concurrency.max(1))
        .try_collect::<Vec<()>>()
        .await?;

    let ours: HashSet<&str> = names.iter().map(String::as_str).collect();
    let mut polls = 0u64;
    let deadline = started + limits.timeout;
    let requests = Requests::default();
    let permits = Arc::new(Semaphore::new(limits.concurrency.max(1)));
    // Dropped on an early return: what is still in flight is aborted, never left to run into
    // the operator's half.
    let mut tasks = tokio::task::JoinSet::new();
    let mut next_poll = Instant::now() + limits.fast_poll;
    let mut cursor = ChangeCursor::new(DEFAULT_FULL_EVERY);
    let mut seen: HashMap<String, NodeStatusSummary> = HashMap::new();
    loop {
        tokio::time::sleep_until(next_poll.into()).await;
        let poll_started = Instant::now();
        next_poll = poll_started + limits.fast_poll;
        remember(&mut seen, client.node_status_changes(&mut cursor, false).await?, &ours);
        polls += 1;
        while tasks.try_join_next().is_some() {}
        let nodes: HashMap<&str, &NodeStatusSummary> = seen.iter().map(|(n, s)| (n.as_str(), s)).collect();
        if let Some((name, node)) =
            nodes.iter().find(|(_, n)| n.provision_state.as_ref().is_some_and(|s| s.is_failure()))
        {
            anyhow::bail!("floor: node {name} failed: {:?}", node.last_error);
        }
        let finished = nodes.values().filter(|n| done(n)).count();
        if finished == count {
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "floor: {finished} of {count} nodes active and on after {:?}",
            limits.timeout
        );
        // The requests run beside the next polls, as the operator's reconciles run beside its
        // poller: a node is asked again only once a poll that started after its last request
        // ended shows it (a request a conductor's lock failed is sent again from such a poll).
        let settled = |node: &NodeStatusSummary| !requests.busy(&node.uuid, poll_started);
        // A node holds its provisioning slot from its deploy request until it is on, as a host
        // stays `provisioning` until the operator has powered it on.
        let holding = nodes.values().filter(|n| holds_slot(n) || (!settled(n) && step_for(n) == Some(Step::Deploy)));
        let mut slots = limits.provisioning.saturating_sub(holding.count());
        let mut work = Vec::new();
        for node in nodes.values().filter(|n| settled(n)) {
            match step_for(node) {
                Some(Step::Deploy) if slots == 0 => {}
                Some(Step::Deploy) => {
                    slots -= 1;
                    work.push((node.uuid.clone(), Step::Deploy));
                }
                Some(step) => work.push((node.uuid.clone(), step)),
                None => {}
            }
        }
        for (uuid, step) in work {
            requests.start(&uuid);
            let (client, iso, requests, permits) = (client.clone(), iso.to_string(), requests.clone(), permits.clone());
            tasks.spawn(async move {
                let _permit = permits.acquire_owned().await;
                if let Err(err) = act(&client, &uuid, step, &iso).await {
                    tracing::debug!("floor: {step:?} {uuid}: {err:#}");
                }
                requests.end(&uuid);
            });
        }
    }
    // Every node is on: what is left in flight is counted before the figures are read.
    while tasks.join_next().await.is_some() {}
    Ok(FloorRun {
        hosts: count,
        elapsed: started.elapsed(),
        ironic_requests: client.metrics().total_requests() - base,
        polls,
    })
}

/// Keeps what a look showed of the floor's own nodes, by name: a full list replaces, a delta
/// changes what it shows.
fn remember(seen: &mut HashMap<String, NodeStatusSummary>, list: StatusList, ours: &HashSet<&str>) {
    if list.is_full() {
        seen.clear();
    }
    for node in list.into_nodes() {
        if let Some(name) = node.name.clone().filter(|n| ours.contains(n.as_str())) {
            seen.insert(name, node);
        }
    }
}

/// The floor's requests per node: under way, or when the last one ended.
#[derive(Clone, Default)]
struct Requests(Arc<Mutex<HashMap<String, Option<Instant>>>>);

impl Requests {
    /// Whether a request for `uuid` is under way, or the last ended after the poll that
    /// started at `poll_started` (which may show the node as it was before it).
    fn busy(&self, uuid: &str, poll_started: Instant) -> bool {
        match self.0.lock().unwrap_or_else(|e| e.into_inner()).get(uuid) {
            Some(None) => true,
            Some(Some(ended)) => *ended >= poll_started,
            None => false,
        }
    }

    fn start(&self, uuid: &str) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).insert(uuid.to_string(), None);
    }

    fn end(&self, uuid: &str) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).insert(uuid.to_string(), Some(Instant::now()));
    }
}

/// Whether the node holds a provisioning slot: deploying, or deployed and not yet on.
fn holds_slot(node: &NodeStatusSummary) -> bool {
    let deploying = matches!(
        node.provision_state,
        Some(ProvisionState::Deploying | ProvisionState::DeployWait | ProvisionState::Active)
    ) || node.target_provision_state == Some(ProvisionState::Active);
    deploying && !done(node)
}

/// A fake-hardware node with the interfaces and boot-mode capability the operator registers
/// a `fake://` host with; automated cleaning off, as the benchmark's hosts ask.
fn node_create(name: &str) -> NodeCreate {
    let mut create = NodeCreate::new("fake-hardware").name(name.to_string());
    for interface in [
        &mut create.interfaces.boot_interface,
        &mut create.interfaces.deploy_interface,
        &mut create.interfaces.inspect_interface,
        &mut create.interfaces.management_interface,
        &mut create.interfaces.power_interface,
    ] {
        *interface = Some("fake".to_string());
    }
    create.properties.insert("capabilities".into(), json!("boot_mode:uefi"));
    create.automated_clean = Some(false);
    create
}

async fn act(client: &IronicClient, uuid: &str, step: Step, iso: &str) -> crate::Result<()> {
    match step {
        Step::Manage => client.manage(uuid).await?,
        Step::Provide => client.provide(uuid).await?,
        Step::Deploy => {
            // The settings the operator sends for a live ISO, in one patch.
            let ops = [
                PatchOperation::add("/instance_info/boot_iso", iso),
                PatchOperation::add("/instance_info/capabilities", json!({})),
                PatchOperation::add("/driver_info/force_persistent_boot_device", "Default"),
            ];
            client.update_node(uuid, &ops).await?;
            client.deploy(uuid, ironic_client::DeployRequest::default()).await?;
        }
        Step::PowerOn => client.set_power_state(uuid, PowerTarget::On, None).await?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(state: ProvisionState, power: Option<PowerState>, target_power: Option<PowerState>) -> NodeStatusSummary {
        NodeStatusSummary {
            provision_state: Some(state),
            power_state: power,
            target_power_state: target_power,
            ..NodeStatusSummary::default()
        }
    }

    #[test]
    fn each_resting_state_gets_the_step_the_operator_takes_next() {
        assert_eq!(step_for(&node(ProvisionState::Enroll, None, None)), Some(Step::Manage));
        assert_eq!(step_for(&node(ProvisionState::Manageable, None, None)), Some(Step::Provide));
        assert_eq!(step_for(&node(ProvisionState::Available, None, None)), Some(Step::Deploy));
    }

    #[test]
    fn an_active_node_left_off_is_powered_on_once_and_is_done_only_when_on() {
        let off = node(ProvisionState::Active, Some(PowerState::Off), None);
        assert_eq!(step_for(&off), Some(Step::PowerOn));
        assert!(!done(&off));
        let turning_on = node(ProvisionState::Active, Some(PowerState::Off), Some(PowerState::On));
        assert_eq!(step_for(&turning_on), None, "a power change under way is not asked for again");
        let on = node(ProvisionState::Active, Some(PowerState::On), None);
        assert_eq!(step_for(&on), None);
        assert!(done(&on));
    }

    #[test]
    fn a_node_holds_its_slot_from_its_deploy_until_it_is_on_and_never_while_it_waits_to_deploy() {
        let mut asked = node(ProvisionState::Available, None, None);
        assert!(!holds_slot(&asked), "not yet deployed: a failed or refused request frees the slot");
        asked.target_provision_state = Some(ProvisionState::Active);
        assert!(holds_slot(&asked));
        assert!(holds_slot(&node(ProvisionState::Deploying, None, None)));
        assert!(holds_slot(&node(ProvisionState::DeployWait, None, None)));
        assert!(holds_slot(&node(ProvisionState::Active, Some(PowerState::Off), None)));
        assert!(!holds_slot(&node(ProvisionState::Active, Some(PowerState::On), None)), "on: done");
    }

    #[test]
    fn a_node_is_asked_again_only_after_a_poll_that_started_once_its_request_ended() {
        let requests = Requests::default();
        let before = Instant::now();
        assert!(!requests.busy("n", before));
        requests.start("n");
        assert!(requests.busy("n", Instant::now()), "under way");
        requests.end("n");
        assert!(requests.busy("n", before), "a poll that started before the end may show the old state");
        assert!(!requests.busy("n", Instant::now() + Duration::from_millis(1)));
    }
}
