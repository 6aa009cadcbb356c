//! One reconcile against the simulated world: the real pure steps (validate::run,
//! plan::plan or plan::plan_deletion, status::compute), with apply simulated from the plan's
//! writes and Jobs the way `apply.rs` does it.

use super::world::{World, WriteError};
use crate::nodeset::apply::Applied;
use crate::nodeset::consumer::{Body, Purpose};
use crate::nodeset::plan::{self, DEFAULT_JOB_HISTORY, Plan};
use crate::nodeset::{status, validate};
use crds::nodeset::DeletionPolicy;
use std::collections::{BTreeMap, BTreeSet};

/// What one reconcile did.
pub(super) struct Reconciled {
    pub plan: Plan,
    pub applied: Applied,
}

/// Reconciles the NodeSet once; its status is replaced by what status::compute returns.
pub(super) fn reconcile(world: &mut World) -> Reconciled {
    run(world, true)
}

/// Reconciles the NodeSet once and dies before the status write: everything else was written.
pub(super) fn reconcile_crashing_before_status(world: &mut World) -> Reconciled {
    run(world, false)
}

fn run(world: &mut World, status_written: bool) -> Reconciled {
    let nodeset = world.nodeset.clone();
    let facts = world.facts();
    let existing: BTreeMap<String, Vec<crds::FieldError>> =
        world.services.keys().map(|name| (name.clone(), Vec::new())).collect();
    let mut findings = validate::run(&nodeset, &existing, &validate::Reach::default());
    findings.sources(&nodeset, &facts.sources, &facts.services);
    assert!(findings.invalid.is_empty(), "the model wrote an invalid NodeSet: {:?}", findings.invalid);
    let now = world.now();
    let plan = plan::plan(&nodeset, &facts, &findings, DEFAULT_JOB_HISTORY, &now);
    let mut applied = Applied::default();
    host_writes(world, &plan, &mut applied);
    for record in &plan.records {
        let name = record.metadata.name.clone().unwrap_or_default();
        world.records.insert(name, crate::nodeset::record::read(record));
    }
    jobs(world, &plan, &mut applied);
    if status_written {
        let (status, _) = status::compute(&nodeset, &plan, &applied, &findings, &now);
        world.nodeset.status = Some(status);
    }
    Reconciled { plan, applied }
}

/// The deletion behind the finalizer: plan::plan_deletion, its writes, then the NodeSet and
/// its Jobs are gone (the garbage collector); the BareMetalHosts stay.
pub(super) fn delete(world: &mut World) -> Reconciled {
    let nodeset = world.nodeset.clone();
    let mut facts = world.facts();
    facts.jobs.clear();
    let plan = plan::plan_deletion(&nodeset, &facts);
    let mut applied = Applied::default();
    host_writes(world, &plan, &mut applied);
    // The NodeSet's record goes with it unless its hosts are retained.
    if plan::release_policy(&nodeset) != DeletionPolicy::Retain {
        world.records.clear();
    }
    world.jobs.clear();
    Reconciled { plan, applied }
}

/// `apply::apply_host_writes`, against the world.
fn host_writes(world: &mut World, plan: &Plan, applied: &mut Applied) {
    for write in &plan.writes {
        if applied.refused.contains_key(&write.hostname) {
            continue;
        }
        if write.forbidden(plan.hosts.get(&write.hostname).and_then(|h| h.bmh.as_deref())) {
            continue;
        }
        let (apply, body) = match &write.body {
            Body::Apply(body) => (true, body),
            Body::Merge(body) => (false, body),
        };
        match world.write(&write.host, &write.hostname, write.purpose, apply, body) {
            Ok(stored) => {
                let set = match write.purpose {
                    Purpose::Claim => Some(&mut applied.claims_won),
                    Purpose::Provision => Some(&mut applied.provisioned),
                    Purpose::Reprovision => Some(&mut applied.reprovisioned),
                    Purpose::Detach | Purpose::Deprovision => Some(&mut applied.released),
                    Purpose::FirmwareReboot => Some(&mut applied.rebooted),
                    Purpose::Update => None,
                };
                if let Some(set) = set {
                    set.insert(write.hostname.clone());
                }
                applied.written.insert(write.hostname.clone(), stored);
            }
            Err(WriteError::Conflict) => applied.conflicts = true,
            Err(WriteError::NotFound) => {
                applied.refused.insert(write.hostname.clone(), format!("BareMetalHost {} not found", write.host));
            }
        }
    }
    for release in &plan.releases {
        let written = plan.writes.iter().any(|w| w.hostname == release.hostname);
        if release.policy == DeletionPolicy::Retain || (release.policy == DeletionPolicy::Detach && !written) {
            applied.released.insert(release.hostname.clone());
        }
    }
}

/// The ledger's part: each Job created once, and old finished Jobs pruned.
fn jobs(world: &mut World, plan: &Plan, applied: &mut Applied) {
    for run in &plan.jobs {
        if world.create_job(run.job.clone()) {
            applied.jobs_created.push(run.job.metadata.name.clone().unwrap_or_default());
        }
    }
    let written: BTreeSet<String> = plan.jobs.iter().filter_map(|r| r.job.metadata.name.clone()).collect();
    for name in plan.prune.iter().filter(|n| !written.contains(*n)) {
        world.jobs.remove(name);
    }
}
