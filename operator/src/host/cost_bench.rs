//! What the host controller's per-reconcile bookkeeping costs with N hosts cached (issue 27,
//! item 3): a benchmark, run under callgrind by `make bench` (`scripts/host-costs.sh`), which
//! counts the instructions of [`one_round`] only. Ignored in `make test`: no figure is asserted.
//!
//! A round is what reconciles and watch events do that once scanned every cached host: a
//! Secret event finding the hosts that name it, a host asking for a provisioning slot while
//! half the hosts wait for one (refused, then no longer waiting), a busy host leaving its slot
//! (waking the next) and taking it again, and a host's edit (its credentials Secret renamed)
//! taken into the index.
//! [`one_scan`] is the pass over every cached host the slot limiter made on each ask before
//! the index (a Secret event made another), measured beside it for reference.

use super::capacity::Capacity;
use super::index::HostIndex;
use super::machine::is_busy;
use super::wake::{HostKey, Wakeups};
use crds::baremetalhost::{BareMetalHost, BareMetalHostSpec, BareMetalHostStatus, BmcDetails, ProvisioningState};
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::Event;
use std::collections::HashSet;
use std::sync::Arc;

const NAMESPACE: &str = "metal3";
/// Rounds measured: the figure printed is the total over them.
pub(super) const ROUNDS: usize = 100;
/// Hosts busy (holding a slot each): baremetal-operator's default provisioning limit.
const LIMIT: usize = 20;

/// Host `i`: the first `LIMIT` provisioning, the others available.
fn host(i: usize) -> BareMetalHost {
    let state = if i < LIMIT { ProvisioningState::Provisioning } else { ProvisioningState::Available };
    let spec = BareMetalHostSpec {
        bmc: Some(BmcDetails {
            address: format!("redfish://192.0.2.1/redfish/v1/Systems/{i}"),
            credentials_name: format!("bmc-{i}"),
            ..Default::default()
        }),
        preprovisioning_network_data_name: Some("ramdisk-network".into()),
        ..Default::default()
    };
    let mut host = BareMetalHost::new(&format!("host-{i}"), spec);
    host.metadata.namespace = Some(NAMESPACE.into());
    let mut status = BareMetalHostStatus::default();
    status.provisioning.state = state;
    host.status = Some(status);
    host
}

fn key(i: usize) -> HostKey {
    HostKey::new(NAMESPACE, format!("host-{i}"))
}

/// The world of a round: `hosts` cached, `LIMIT` of them busy, half the others waiting.
struct World {
    hosts: usize,
    store: Store<BareMetalHost>,
    index: Arc<HostIndex>,
    capacity: Capacity,
}

fn world(hosts: usize) -> World {
    let (store, mut writer) = reflector::store::<BareMetalHost>();
    let index = Arc::new(HostIndex::default());
    for i in 0..hosts {
        let event = Event::Apply(host(i));
        writer.apply_watcher_event(&event);
        index.apply(&event);
    }
    let capacity = Capacity::new(LIMIT, Arc::new(Wakeups::default()));
    capacity.add_scope(store.clone(), index.clone());
    for i in 0..LIMIT {
        capacity.try_acquire(&key(i));
    }
    for i in (LIMIT..hosts).step_by(2) {
        capacity.try_acquire(&key(i));
    }
    World { hosts, store, index, capacity }
}

/// One round of the bookkeeping (see the module's comment).
#[inline(never)]
fn one_round(world: &World, round: usize, event: &Event<BareMetalHost>) -> usize {
    // A host's own credentials Secret changed (a Secret every host names wakes every host: a
    // cost of what it finds, left out here).
    let mut found = world.index.using(NAMESPACE, &format!("bmc-{}", round % world.hosts)).len();
    let asking = key(LIMIT + 1 + 2 * (round % (world.hosts / 2 - LIMIT)));
    found += usize::from(world.capacity.try_acquire(&asking));
    world.capacity.stop_waiting(&asking);
    let busy = key(round % LIMIT);
    world.capacity.release(&busy);
    found += usize::from(world.capacity.try_acquire(&busy));
    // A host's edit comes back as a watch event.
    world.index.apply(event);
    found
}

/// The pass over every cached host that each ask for a slot made before the index: the sets
/// of busy and idle hosts, rebuilt from the cache (the limiter's `cached` as it was).
#[inline(never)]
fn one_scan(store: &Store<BareMetalHost>) -> usize {
    let mut busy = HashSet::new();
    let mut idle = HashSet::new();
    for host in store.state() {
        let key = HostKey::of(&host);
        if host.status.as_ref().is_some_and(|s| is_busy(s.provisioning.state)) {
            busy.insert(key);
        } else {
            idle.insert(key);
        }
    }
    busy.len() + idle.len().min(1)
}

#[test]
#[ignore = "a benchmark: make bench runs it under callgrind"]
fn bookkeeping_rounds_at_the_cached_host_count_of_ferrometal_cost_hosts() {
    let hosts = std::env::var("FERROMETAL_COST_HOSTS").ok().and_then(|n| n.parse().ok()).unwrap_or(1000usize);
    let world = world(hosts.max(4 * LIMIT));
    let mut found = 0;
    for round in 0..ROUNDS {
        // The host's credentials Secret renamed: an entry the index must change.
        let mut changed = host(round % world.hosts);
        if let Some(bmc) = changed.spec.bmc.as_mut() {
            bmc.credentials_name.push_str("-rotated");
        }
        let event = Event::Apply(changed);
        found += one_round(&world, round, &event);
    }
    let mut busy = 0;
    for _ in 0..ROUNDS {
        busy += one_scan(&world.store);
    }
    println!("hosts {hosts}: {ROUNDS} rounds (found {found}), {ROUNDS} scans (busy {busy})");
}
