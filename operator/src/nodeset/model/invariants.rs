//! The invariants, checked after every reconcile (the image-loss invariant (1) is judged as
//! the world reports each loss, in `oracle.rs`):
//! (2) no runOnce service runs twice on a machine (one provisioning of one BareMetalHost);
//! (3) never two Jobs running at once for one host and service;
//! (4) never more hosts in running Jobs than maxUnavailable, hosts being brought up (never
//!     fully configured since provisioned) exempt;
//! (5) no two NodeSet hosts hold the same BareMetalHost;
//! (6) on a Manual NodeSet, nothing starts on a configured host for a configuration no
//!     rollout token acknowledged for it (with the services as they are);
//! (7) on a Manual NodeSet, no host waits for a token when one approved its configuration and
//!     the services as they are: hosts added or removed since hold no approved rollout back.

use super::oracle::{Oracle, job_hosts, service_of};
use super::reconcile::Reconciled;
use super::world::World;
use crate::nodeset::plan::HostPhase;
use crds::nodeset::RolloutStrategy;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::{BTreeMap, BTreeSet};

/// A Job created by the last reconcile: name, service, and its (host, machine) pairs.
struct Created {
    service: String,
    machines: Vec<(String, String)>,
}

pub(super) fn check(world: &World, oracle: &mut Oracle, reconciled: &Reconciled) -> Result<(), String> {
    let mut created = Vec::new();
    for name in &reconciled.applied.jobs_created {
        let job = &world.jobs[name].job;
        let machines: Vec<(String, String)> =
            job_hosts(job).into_keys().filter_map(|h| oracle.machine(&reconciled.plan, &h).map(|m| (h, m))).collect();
        oracle.job_machines.insert(name.clone(), machines.clone());
        created.push(Created { service: service_of(job).map(|s| s.0).unwrap_or_default(), machines });
    }
    run_once(world, oracle, &created)?;
    one_job_per_host_and_service(world)?;
    max_unavailable(world, oracle, reconciled, &created)?;
    one_host_per_machine(world, reconciled)?;
    manual_waits_for_a_token(world, oracle, &created)?;
    approved_rollouts_do_not_wait(world, oracle, reconciled)?;
    oracle.update_serving(world, &reconciled.plan);
    Ok(())
}

fn run_once(world: &World, oracle: &Oracle, created: &[Created]) -> Result<(), String> {
    for job in created {
        if !world.services.get(&job.service).is_some_and(|s| s.spec.run_once.unwrap_or(false)) {
            continue;
        }
        for (hostname, machine) in &job.machines {
            if oracle.succeeded.iter().any(|(m, s, _, _)| m == machine && *s == job.service) {
                return Err(format!(
                    "(2) runOnce service {} runs a second time on {hostname} ({machine})",
                    job.service
                ));
            }
        }
    }
    Ok(())
}

fn one_job_per_host_and_service(world: &World) -> Result<(), String> {
    let mut running: BTreeMap<(String, String), Vec<&String>> = BTreeMap::new();
    for name in world.running().iter() {
        let job = &world.jobs[name].job;
        let service = service_of(job).map(|s| s.0).unwrap_or_default();
        for hostname in job_hosts(job).into_keys() {
            running.entry((hostname, service.clone())).or_default().push(job.metadata.name.as_ref().expect("name"));
        }
    }
    match running.iter().find(|(_, jobs)| jobs.len() > 1) {
        Some(((hostname, service), jobs)) => Err(format!("(3) {service} runs twice at once on {hostname}: {jobs:?}")),
        None => Ok(()),
    }
}

/// `maxUnavailable` in hosts.
fn allowed(world: &World) -> usize {
    let hosts = world.nodeset.spec.nodes.as_ref().map_or(0, |n| n.len());
    let n = match world.nodeset.spec.rollout.as_ref().and_then(|r| r.max_unavailable.as_ref()) {
        None => 1,
        Some(IntOrString::Int(n)) => usize::try_from(*n).unwrap_or(1),
        Some(IntOrString::String(p)) => hosts * p.trim_end_matches('%').parse::<usize>().unwrap_or(0) / 100,
    };
    n.max(1)
}

fn max_unavailable(world: &World, oracle: &Oracle, reconciled: &Reconciled, created: &[Created]) -> Result<(), String> {
    let serving = |m: &String| oracle.serving.contains(m);
    // A Job on a machine its host no longer has (labels stripped, removed) is not the host's.
    let current = |h: &String, m: &String| {
        world.nodeset.spec.nodes.as_ref().is_some_and(|n| n.contains_key(h))
            && oracle.machine(&reconciled.plan, h).as_ref() == Some(m)
    };
    if !created.iter().flat_map(|c| &c.machines).any(|(_, m)| serving(m)) {
        return Ok(());
    }
    let busy: BTreeSet<&String> = world
        .running()
        .iter()
        .filter_map(|name| oracle.job_machines.get(name))
        .flatten()
        .filter(|(h, m)| serving(m) && current(h, m))
        .map(|(h, _)| h)
        .collect();
    if busy.len() > allowed(world) {
        return Err(format!(
            "(4) {} configured hosts in running Jobs ({busy:?}), maxUnavailable {}",
            busy.len(),
            allowed(world)
        ));
    }
    Ok(())
}

fn one_host_per_machine(world: &World, reconciled: &Reconciled) -> Result<(), String> {
    let mut holders: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (hostname, host) in &reconciled.plan.hosts {
        if matches!(host.phase, HostPhase::Claiming | HostPhase::Machine(_))
            && let Some(name) = host.bmh.as_ref().and_then(|b| b.metadata.name.clone())
        {
            holders.entry(name).or_default().insert(hostname.clone());
        }
    }
    let status = world.nodeset.status.as_ref().and_then(|s| s.hosts.as_ref());
    for (hostname, host) in status.into_iter().flatten() {
        if let Some(r) = &host.bmh_ref {
            holders.entry(r.name.clone()).or_default().insert(hostname.clone());
        }
    }
    match holders.iter().find(|(_, hosts)| hosts.len() > 1) {
        Some((bmh, hosts)) => Err(format!("(5) BareMetalHost {bmh} is held by {hosts:?}")),
        None => Ok(()),
    }
}

fn manual(world: &World) -> bool {
    world.nodeset.spec.rollout.as_ref().and_then(|r| r.strategy).unwrap_or_default() == RolloutStrategy::Manual
}

fn manual_waits_for_a_token(world: &World, oracle: &Oracle, created: &[Created]) -> Result<(), String> {
    if !manual(world) {
        return Ok(());
    }
    for job in created {
        let unacked = |(h, m): &&(String, String)| oracle.serving.contains(m) && !oracle.acked.covers(world, h);
        if let Some((hostname, _)) = job.machines.iter().find(unacked) {
            return Err(format!(
                "(6) Manual NodeSet started {} on configured host {hostname} for a configuration no rollout token acknowledged",
                job.service
            ));
        }
    }
    Ok(())
}

fn approved_rollouts_do_not_wait(world: &World, oracle: &Oracle, reconciled: &Reconciled) -> Result<(), String> {
    if !manual(world) {
        return Ok(());
    }
    match reconciled.plan.rollout.pending.iter().find(|h| oracle.approved.covers(world, h)) {
        Some(hostname) => Err(format!(
            "(7) {hostname} waits for a rollout token although one approved its configuration and the services as they are"
        )),
        None => Ok(()),
    }
}
