//! Status (pure): from the plan and what applying it did, the NodeSet's status, its five
//! conditions, and an Event for every transition.

use super::apply::Applied;
use super::host_status::{host_notices, host_status};
use super::machine::Phase;
use super::plan::{HostPhase, Plan};
use super::validate::Findings;
use crate::kit::Notices;
use crate::kit::condition::{AS_EXPECTED, COMPLETE, Conditions, NOTHING_WRONG, bounded_message, set_all};
use crds::condition::{Condition, DEGRADED, PROGRESSING, READY};
use crds::nodeset::status::conditions::{CONFIGURED, OUTDATED, PROVISIONED, ROLLOUT_PENDING};
use crds::nodeset::{HostStatus, NodeSet, NodeSetStatus, RolloutPhase, RolloutStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::collections::BTreeMap;

/// Ready's reasons.
pub(super) const REASON_READY: &str = "Ready";
pub(super) const REASON_PROVISIONING: &str = "Provisioning";
pub(super) const REASON_ROLLING_OUT: &str = "RollingOut";
pub(super) const REASON_FAILED: &str = "Failed";
/// Degraded's reason while more hosts than maxUnavailable wait to be deprovisioned.
pub(super) const DEPROVISION_UNCONFIRMED: &str = "DeprovisionUnconfirmed";

/// The status to write and the Events to publish after it.
pub(super) fn compute(
    nodeset: &NodeSet,
    plan: &Plan,
    applied: &Applied,
    findings: &Findings,
    now: &Time,
) -> (NodeSetStatus, Notices) {
    let previous = nodeset.status.clone().unwrap_or_default();
    if let Some(found) = findings.problem().filter(|_| findings.blocks()) {
        return (blocked(nodeset, previous, found, now), Notices::default());
    }
    let mut notices = Notices::default();
    let hosts = hosts(nodeset, plan, applied, &previous, &mut notices);
    applied_notices(&mut notices, plan, applied);
    let counts = Counts::of(plan);
    let phase = rollout_phase(plan, &counts);
    let rollout = rollout_status(plan, &previous, phase, now);
    let previous_phase = previous.rollout.as_ref().and_then(|r| r.phase);
    rollout_notices(&mut notices, &previous, &rollout, plan, previous_phase, phase);
    let problem = problem(plan, findings, applied, &hosts);
    problem_notice(&mut notices, &previous, problem.as_ref());
    let outdated: Vec<&str> =
        hosts.iter().filter(|(_, h)| h.provisioning_outdated == Some(true)).map(|(n, _)| n.as_str()).collect();
    // Transition times stay while a condition's status does.
    let mut conditions = previous.conditions.clone().unwrap_or_default();
    set_all(&mut conditions, make_conditions(nodeset, plan, phase, problem.as_ref(), &counts, now));
    set_all(&mut conditions, vec![outdated_condition(nodeset, &outdated, now)]);
    let claimed = hosts.values().filter(|h| h.bmh_ref.is_some()).count();
    let status = NodeSetStatus {
        observed_generation: nodeset.metadata.generation,
        conditions: Some(conditions),
        config_hash: Some(plan.config_hash.clone()),
        deletion_policy: Some(nodeset.spec.deletion_policy()),
        pre_provisioned: Some(nodeset.spec.pre_provisioned()),
        outdated_hosts: Some(i32::try_from(outdated.len()).unwrap_or(i32::MAX)),
        claimed_hosts: Some(i32::try_from(claimed).unwrap_or(i32::MAX)),
        provisioned_hosts: Some(format!("{}/{}", counts.provisioned, counts.total)),
        configured_hosts: Some(format!("{}/{}", counts.configured, counts.total)),
        pending_hosts: Some(i32::try_from(counts.pending.len()).unwrap_or(i32::MAX)),
        hosts: Some(hosts),
        rollout: Some(rollout),
        spent_deprovision_confirmations: super::guard::spent_after(
            previous.spent_deprovision_confirmations.as_ref(),
            plan.spent_confirmation(&applied.released),
        ),
    };
    (status, notices)
}

/// Each host's status, with the Events of its transitions. A failed Job or a refused write on
/// a host is its message; a host released by a failed write stays until the write succeeds.
fn hosts(
    nodeset: &NodeSet,
    plan: &Plan,
    applied: &Applied,
    previous: &NodeSetStatus,
    notices: &mut Notices,
) -> BTreeMap<String, HostStatus> {
    let before = previous.hosts.clone().unwrap_or_default();
    let failures_by_host: BTreeMap<&str, String> = plan
        .rollout
        .failures
        .iter()
        .flat_map(|f| {
            f.hosts
                .iter()
                .map(move |h| (h.as_str(), format!("service {} failed in Job {}: {}", f.service, f.job, f.message)))
        })
        .collect();
    let mut hosts = BTreeMap::new();
    for (name, host) in &plan.hosts {
        let prev = before.get(name);
        let mut status = host_status(nodeset, name, host, prev, applied);
        if let Some(failure) = failures_by_host.get(name.as_str()) {
            status.message = Some(bounded_message(failure.clone()));
        }
        if let Some(refused) = applied.refused.get(name) {
            status.message = Some(bounded_message(refused.clone()));
        }
        host_notices(notices, name, host, prev, &status, applied);
        hosts.insert(name.clone(), status);
    }
    for (name, prev) in &before {
        if !hosts.contains_key(name)
            && plan.releases.iter().any(|r| &r.hostname == name && !applied.released.contains(name))
        {
            hosts.insert(name.clone(), prev.clone());
        }
    }
    hosts
}

/// The Events of what was applied besides the hosts: releases, and Jobs created.
fn applied_notices(notices: &mut Notices, plan: &Plan, applied: &Applied) {
    for released in &plan.releases {
        if applied.released.contains(&released.hostname) {
            notices.normal("HostReleased", released.note());
        }
    }
    for name in &applied.jobs_created {
        notices.normal("JobCreated", format!("created Job {name}"));
    }
}

/// Where the rollout stands: a failure first, then a wait for a token, then whether every host
/// is configured, some are being, or none may be yet.
fn rollout_phase(plan: &Plan, counts: &Counts) -> RolloutPhase {
    if !plan.rollout.failures.is_empty() || !plan.firmware.failed().is_empty() {
        RolloutPhase::Failed
    } else if !counts.pending.is_empty() {
        RolloutPhase::Pending
    } else if plan.hosts.values().all(|h| h.configured) {
        RolloutPhase::Complete
    } else if plan.hosts.values().any(|h| h.runs_services() && !h.configured) {
        RolloutPhase::RollingOut
    } else {
        RolloutPhase::Waiting
    }
}

/// The rollout's record in `phase`. A rollout completes once: the time it completed stays
/// while the configuration it rolled out does.
fn rollout_status(plan: &Plan, previous: &NodeSetStatus, phase: RolloutPhase, now: &Time) -> RolloutStatus {
    let mut rollout = plan.rollout_status.clone();
    rollout.phase = Some(phase);
    if phase == RolloutPhase::Complete && rollout.completed_at.is_none() {
        let same = previous.rollout.as_ref().filter(|r| r.config_hash == rollout.config_hash);
        rollout.completed_at = same.and_then(|r| r.completed_at.clone()).or_else(|| Some(now.clone()));
    }
    rollout
}

/// A warning when hosts start waiting for a confirmation to be deprovisioned: once, not at
/// every reconcile while they wait.
fn problem_notice(notices: &mut Notices, previous: &NodeSetStatus, problem: Option<&(&'static str, String)>) {
    let degraded_before = previous.conditions.iter().flatten().find(|c| c.type_ == DEGRADED).map(|c| c.reason.as_str());
    if let Some((DEPROVISION_UNCONFIRMED, message)) = problem
        && degraded_before != Some(DEPROVISION_UNCONFIRMED)
    {
        notices.warning(DEPROVISION_UNCONFIRMED, message.clone());
    }
}

/// The host counts status reports.
struct Counts {
    total: usize,
    /// Hosts whose machine runs.
    provisioned: usize,
    /// Hosts at the configuration approved for them: a Manual edit waiting for its token leaves
    /// hosts where they were, which is not a fall of what runs.
    configured: usize,
    /// Hosts whose desired configuration waits for a token.
    pending: Vec<String>,
}

impl Counts {
    fn of(plan: &Plan) -> Self {
        Counts {
            total: plan.hosts.len(),
            provisioned: plan.hosts.values().filter(|h| h.runs_services()).count(),
            configured: plan.hosts.values().filter(|h| h.at_approved).count(),
            pending: plan.hosts.iter().filter(|(_, h)| h.pending).map(|(n, _)| n.clone()).collect(),
        }
    }

    /// What Configured says.
    fn configured_message(&self) -> String {
        let (configured, total) = (self.configured, self.total);
        if self.pending.is_empty() {
            return format!("{configured} of {total} hosts run their desired configuration");
        }
        // The hosts last: a long list is what a bounded message cuts.
        format!(
            "{configured} of {total} hosts run the configuration approved for them; {} wait for a new \
             spec.rollout.token to get the new one: {}",
            self.pending.len(),
            self.pending.join(", ")
        )
    }
}

/// The status of a NodeSet nothing may be done for: what was known stays (claims, hashes,
/// completions, counts), so the locks keep holding and, once unblocked, no host counts as new
/// (which would lift `maxUnavailable` and the Manual gate); only the conditions say why.
fn blocked(
    nodeset: &NodeSet,
    previous: NodeSetStatus,
    (reason, message): (&'static str, String),
    now: &Time,
) -> NodeSetStatus {
    let make = Conditions::new(nodeset.metadata.generation, now.clone());
    let mut conditions = previous.conditions.clone().unwrap_or_default();
    set_all(
        &mut conditions,
        vec![
            make.make(READY, false, REASON_FAILED, message.clone()),
            make.make(PROGRESSING, false, "Stopped", "stopped until the problem is fixed"),
            make.make(DEGRADED, true, reason, message),
        ],
    );
    NodeSetStatus { observed_generation: nodeset.metadata.generation, conditions: Some(conditions), ..previous }
}

/// `Outdated`: hosts that run provisioning inputs changed since (an image edit), which no write
/// of the NodeSet's ever changes on its own; each is reprovisioned only for its own new token.
fn outdated_condition(nodeset: &NodeSet, outdated: &[&str], now: &Time) -> Condition {
    let make = Conditions::new(nodeset.metadata.generation, now.clone());
    if outdated.is_empty() {
        return make.make(OUTDATED, false, "UpToDate", "every machine runs the current provisioning inputs");
    }
    let message = format!(
        "{} run what they were provisioned with before the provisioning inputs changed; set a new \
         nodes.<host>.reprovisionToken to reprovision one",
        outdated.join(", ")
    );
    make.make(OUTDATED, true, "ProvisioningInputsChanged", bounded_message(message))
}

fn rollout_notices(
    notices: &mut Notices,
    previous: &NodeSetStatus,
    rollout: &crds::nodeset::RolloutStatus,
    plan: &Plan,
    before: Option<RolloutPhase>,
    phase: RolloutPhase,
) {
    let started_before = previous.rollout.as_ref().and_then(|r| r.started_at.clone());
    if rollout.started_at != started_before && phase != RolloutPhase::Complete {
        notices.normal("RolloutStarted", format!("rolling out configuration {}", short(&plan.config_hash)));
    }
    if before == Some(phase) {
        return;
    }
    match phase {
        RolloutPhase::Complete if before.is_some() => {
            notices.normal("RolloutCompleted", format!("every host runs configuration {}", short(&plan.config_hash)))
        }
        RolloutPhase::Failed => {
            let quoted: Vec<String> = plan
                .rollout
                .failures
                .iter()
                .map(|f| format!("Job {} ({} on {}): {}", f.job, f.service, f.hosts.join(", "), f.message))
                .chain(
                    plan.firmware
                        .failed()
                        .iter()
                        .map(|(h, why)| format!("servicing {h} with its BIOS settings: {why}")),
                )
                .collect();
            notices.warning("RolloutFailed", quoted.join("; "));
        }
        RolloutPhase::Pending => notices.normal(
            "RolloutPending",
            format!("configuration {} waits for a new spec.rollout.token", short(&plan.config_hash)),
        ),
        _ => {}
    }
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// Degraded's reason and message: the first problem, naming the hosts.
fn problem(
    plan: &Plan,
    findings: &Findings,
    applied: &Applied,
    hosts: &BTreeMap<String, HostStatus>,
) -> Option<(&'static str, String)> {
    let held = plan.held();
    if !held.is_empty() {
        return Some((DEPROVISION_UNCONFIRMED, super::guard::message(&held)));
    }
    if !plan.rollout.failures.is_empty() {
        let quoted: Vec<String> = plan
            .rollout
            .failures
            .iter()
            .map(|f| format!("Job {} of service {} failed on {}: {}", f.job, f.service, f.hosts.join(", "), f.message))
            .collect();
        // The retry: a fix (of the service or the configuration) runs anew by itself; the same
        // run again once the failed Job is deleted.
        let retry = "fix the service or the configuration, or delete the failed Job to run it again";
        return Some(("JobFailed", format!("{}; {retry}", quoted.join("; "))));
    }
    let failed = plan.firmware.failed();
    if !failed.is_empty() {
        let list: Vec<String> = failed.iter().map(|(h, why)| format!("{h}: {why}")).collect();
        // The retry: the host controller tries the servicing again after its error backoff;
        // settings that fix it are tried with it.
        let retry = "the servicing is tried again; fix the BIOS settings if they are what failed";
        return Some((
            "FirmwareFailed",
            format!("servicing with BIOS settings failed on {}; {retry}", list.join("; ")),
        ));
    }
    let blocked = plan.firmware.blocked();
    if !blocked.is_empty() {
        let list: Vec<String> = blocked.iter().map(|(h, why)| format!("{h}: {why}")).collect();
        return Some(("FirmwareBlocked", format!("BIOS settings wait on {}", list.join("; "))));
    }
    if !applied.refused.is_empty() {
        let list: Vec<String> = applied.refused.iter().map(|(h, m)| format!("{h}: {m}")).collect();
        return Some(("WriteRefused", list.join("; ")));
    }
    if !applied.jobs_refused.is_empty() {
        let list: Vec<String> = applied.jobs_refused.iter().map(|(j, m)| format!("Job {j}: {m}")).collect();
        return Some(("JobRefused", list.join("; ")));
    }
    let unmatched: Vec<String> = plan
        .hosts
        .iter()
        .filter_map(|(name, h)| match &h.phase {
            HostPhase::Unclaimed(why) if !why.is_empty() => Some(format!("{name}: {why}")),
            _ => None,
        })
        .collect();
    if !unmatched.is_empty() {
        return Some(("NoMatchingHost", unmatched.join("; ")));
    }
    let lost: Vec<String> = plan
        .hosts
        .iter()
        .filter_map(|(name, h)| match &h.phase {
            HostPhase::Lost(why) => Some(format!("{name}: {why}")),
            _ => None,
        })
        .collect();
    if !lost.is_empty() {
        return Some(("MachineLost", lost.join("; ")));
    }
    if let Some(found) = findings.problem() {
        return Some(found);
    }
    let stranded: Vec<String> = plan
        .hosts
        .iter()
        .filter(|(_, h)| matches!(&h.phase, HostPhase::Machine(d) if d.phase == Phase::Stranded))
        .map(|(name, _)| format!("{name}: {}", hosts.get(name).and_then(|h| h.message.clone()).unwrap_or_default()))
        .collect();
    (!stranded.is_empty()).then(|| ("ImageRemoved", stranded.join("; ")))
}

/// The five conditions but Outdated: Ready, Progressing, Degraded, Provisioned (not for a
/// preProvisioned NodeSet) and Configured.
fn make_conditions(
    nodeset: &NodeSet,
    plan: &Plan,
    phase: RolloutPhase,
    problem: Option<&(&'static str, String)>,
    counts: &Counts,
    now: &Time,
) -> Vec<Condition> {
    let make = Conditions::new(nodeset.metadata.generation, now.clone());
    let messages = Messages {
        provisioned: provisioned_message(plan, counts),
        configured: bounded_message(counts.configured_message()),
    };
    let mut list = vec![
        ready_condition(&make, phase, problem, counts, &messages),
        progressing_condition(&make, plan, phase, problem, &messages),
        match problem {
            Some((reason, message)) => make.make(DEGRADED, true, reason, message.clone()),
            None => make.make(DEGRADED, false, AS_EXPECTED, NOTHING_WRONG),
        },
    ];
    if !nodeset.spec.pre_provisioned() {
        list.push(if counts.provisioned == counts.total {
            make.make(PROVISIONED, true, "Provisioned", messages.provisioned.clone())
        } else {
            make.make(PROVISIONED, false, REASON_PROVISIONING, messages.provisioned.clone())
        });
    }
    let configured_reason = match phase {
        RolloutPhase::Complete => "Configured",
        RolloutPhase::Failed => REASON_FAILED,
        RolloutPhase::Pending => ROLLOUT_PENDING,
        RolloutPhase::RollingOut => REASON_ROLLING_OUT,
        RolloutPhase::Waiting => REASON_PROVISIONING,
    };
    list.push(make.make(CONFIGURED, counts.configured == counts.total, configured_reason, messages.configured));
    list
}

/// What Provisioned and Configured say, which Ready and Progressing say too.
struct Messages {
    provisioned: String,
    configured: String,
}

/// What Provisioned says: the hosts not provisioned yet, and what each waits for.
fn provisioned_message(plan: &Plan, counts: &Counts) -> String {
    let waiting: Vec<String> = plan
        .hosts
        .iter()
        .filter(|(_, h)| !h.runs_services())
        .map(|(name, h)| match &h.phase {
            HostPhase::Machine(d) => match &d.phase {
                Phase::Waiting(why) => format!("{name} ({why})"),
                Phase::Provisioning => format!("{name} (provisioning)"),
                _ => name.clone(),
            },
            HostPhase::Claiming => format!("{name} (claiming)"),
            HostPhase::Lost(_) => format!("{name} (its machine dropped out of view)"),
            _ => format!("{name} (unclaimed)"),
        })
        .collect();
    if waiting.is_empty() {
        "every host's machine is provisioned".to_string()
    } else {
        format!("{} of {} hosts provisioned; waiting for {}", counts.provisioned, counts.total, waiting.join(", "))
    }
}

/// Ready: the problem first, then provisioning, a wait for a token, the rollout.
fn ready_condition(
    make: &Conditions,
    phase: RolloutPhase,
    problem: Option<&(&'static str, String)>,
    counts: &Counts,
    messages: &Messages,
) -> Condition {
    let (ready, reason, message) = if let Some((_, message)) = problem {
        (false, REASON_FAILED, message.clone())
    } else if counts.provisioned < counts.total {
        (false, REASON_PROVISIONING, messages.provisioned.clone())
    } else if phase == RolloutPhase::Pending {
        // Not ready for what the spec asks, yet nothing is broken: the hosts run what was
        // approved for them, and the message says so.
        (false, ROLLOUT_PENDING, messages.configured.clone())
    } else if counts.configured < counts.total {
        (false, REASON_ROLLING_OUT, messages.configured.clone())
    } else {
        (true, REASON_READY, format!("{} hosts provisioned and configured", counts.total))
    };
    make.make(READY, ready, reason, message)
}

/// Progressing: machines being claimed or provisioned, else Jobs running, else why nothing is.
fn progressing_condition(
    make: &Conditions,
    plan: &Plan,
    phase: RolloutPhase,
    problem: Option<&(&'static str, String)>,
    messages: &Messages,
) -> Condition {
    let moving = plan.hosts.values().any(|h| match &h.phase {
        HostPhase::Claiming => true,
        HostPhase::Machine(d) => matches!(d.phase, Phase::Waiting(_) | Phase::Provisioning),
        _ => false,
    });
    let running = !plan.rollout.running.is_empty() || !plan.jobs.is_empty() || plan.firmware.moving();
    if moving {
        make.make(PROGRESSING, true, REASON_PROVISIONING, messages.provisioned.clone())
    } else if running {
        make.make(PROGRESSING, true, REASON_ROLLING_OUT, messages.configured.clone())
    } else if phase == RolloutPhase::Pending {
        make.make(PROGRESSING, false, ROLLOUT_PENDING, "waiting for a new spec.rollout.token")
    } else if problem.is_some() {
        make.make(PROGRESSING, false, "Stopped", "stopped until the problem is fixed")
    } else {
        make.make(PROGRESSING, false, COMPLETE, "nothing is in progress")
    }
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
