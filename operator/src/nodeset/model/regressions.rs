//! One deterministic run per defect the model found, the shortest sequence that shows it.
//! Each failed before its fix; an ignored one is open.

use super::actions::{Action, Annotation, Policy, Token, Weights};
use super::harness::Model;

fn holds(pre_provisioned: bool, hosts: usize, actions: &[Action]) {
    if let Err(broken) = Model::run(pre_provisioned, hosts, actions, Weights::all()) {
        panic!("{broken}");
    }
}

#[test]
fn stripping_the_provisioned_hash_deprovisions_nothing() {
    holds(
        false,
        1,
        &[
            Action::Settle,
            Action::StripAnnotation(0, Annotation::ProvisionedHash),
            Action::EditMtu(true),
            Action::Settle,
        ],
    );
}

#[test]
fn reverting_a_reprovision_token_reprovisions_nothing() {
    holds(
        false,
        1,
        &[
            Action::Settle,
            Action::SetToken(0, Token::Fresh),
            Action::Settle,
            Action::SetToken(0, Token::Fresh),
            Action::Settle,
            Action::SetToken(0, Token::Reuse(0)),
        ],
    );
}

#[test]
fn a_manual_nodeset_waits_for_a_token_after_a_service_edit() {
    holds(false, 1, &[Action::SetManual(true), Action::Settle, Action::EditServiceSpec(1, 2)]);
}

#[test]
fn a_recreated_pre_provisioned_nodeset_reruns_no_run_once_service() {
    holds(true, 1, &[Action::Settle, Action::DeleteAndRecreate]);
}

#[test]
fn a_nodeset_recreated_mid_rollout_keeps_to_max_unavailable() {
    holds(false, 2, &[Action::Settle, Action::EditMtu(true), Action::DeleteAndRecreate, Action::BmoStep]);
}

#[test]
fn stripping_the_completions_reruns_no_run_once_service() {
    // The recreated NodeSet's Jobs went with the old one: the machine's annotation is all there is.
    holds(
        false,
        1,
        &[Action::Settle, Action::DeleteAndRecreate, Action::StripAnnotation(0, Annotation::ServicesCompleted)],
    );
}

/// Runs `actions`, every invariant holding, and returns the NodeSet's status after them.
fn status_after(pre_provisioned: bool, hosts: usize, actions: &[Action]) -> crds::nodeset::NodeSetStatus {
    match Model::run(pre_provisioned, hosts, actions, Weights::all()) {
        Ok(model) => model.world.nodeset.status.unwrap_or_default(),
        Err(broken) => panic!("{broken}"),
    }
}

fn configured_and_phase(status: &crds::nodeset::NodeSetStatus) -> (Option<&str>, Option<crds::nodeset::RolloutPhase>) {
    (status.configured_hosts.as_deref(), status.rollout.as_ref().and_then(|r| r.phase))
}

// Issue 23: the token approved one hash of the whole NodeSet, host set included, so a host
// added or removed stalled the approved rollout of the others (invariant (7) now says so).
/// The status after a Manual NodeSet of `hosts` hosts is edited, its token given, and
/// `change` made to its host set mid-rollout.
fn approved_rollout_with(hosts: usize, change: Action) -> crds::nodeset::NodeSetStatus {
    status_after(
        false,
        hosts,
        &[
            Action::SetManual(true),
            Action::Settle,
            Action::EditMtu(true),
            Action::SetRolloutToken(1),
            change,
            Action::Settle,
        ],
    )
}

#[test]
fn a_host_added_during_an_approved_manual_rollout_does_not_stall_it() {
    // The token starts compute-0; compute-1 waits for its turn when compute-2 joins.
    let status = approved_rollout_with(2, Action::AddHost(2));
    assert_eq!(configured_and_phase(&status), (Some("3/3"), Some(crds::nodeset::RolloutPhase::Complete)));
}

#[test]
fn a_host_removed_during_an_approved_manual_rollout_does_not_stall_it() {
    let status = approved_rollout_with(3, Action::RemoveHost(2));
    assert_eq!(configured_and_phase(&status), (Some("2/2"), Some(crds::nodeset::RolloutPhase::Complete)));
}

// Issue 23: Configured counted hosts at the desired configuration, 0/N while a token was missing.
#[test]
fn hosts_waiting_for_a_manual_token_count_as_configured_at_what_was_approved() {
    let status = status_after(false, 2, &[Action::SetManual(true), Action::Settle, Action::EditMtu(true)]);
    assert_eq!(configured_and_phase(&status), (Some("2/2"), Some(crds::nodeset::RolloutPhase::Pending)));
}

// (g), the oracle's defect: it took compute-1 for the machine it was, serving, and its bring-up
// for a rollout past maxUnavailable; the planner (the record went with the host) brings it up.
#[test]
fn a_pre_provisioned_host_removed_under_deprovision_and_added_back_is_another_machine() {
    holds(
        true,
        2,
        &[
            Action::Settle,
            Action::EditServices(1),
            Action::SetDeletionPolicy(Policy::Deprovision),
            Action::RemoveHost(1),
            Action::AddHost(1),
        ],
    );
}

// (h), found by 10,000 runs: a reprovisionToken set before the machine's first provisioning was
// recorded in status, not on the machine, so status's token was not the machine's epoch; with
// the completions annotation stripped, status no longer stood in for it and the configured host
// was taken for one being brought up. The first provisioning now writes that token on the
// machine.
#[test]
fn a_token_set_before_the_first_provisioning_keeps_status_standing_in_for_the_machine() {
    holds(
        false,
        1,
        &[
            Action::AddHost(1),
            Action::SetToken(1, Token::Fresh),
            Action::Settle,
            Action::EditMtu(true),
            Action::StripAnnotation(1, Annotation::ServicesCompleted),
        ],
    );
}

// The same defect (h): after a recreate, a runOnce service ran a second time.
#[test]
fn a_token_set_before_the_first_provisioning_reruns_no_run_once_service_after_a_recreate() {
    holds(
        false,
        2,
        &[
            Action::SetToken(1, Token::Fresh),
            Action::Settle,
            Action::DeleteAndRecreate,
            Action::StripAnnotation(1, Annotation::ServicesCompleted),
        ],
    );
}

// (h) again, as 3,000 runs found it: a token set before the first provisioning, status lost
// while BMO provisions, the token annotation stripped: runOnce ran twice.
#[test]
fn a_token_set_before_the_first_provisioning_then_stripped_with_status_lost_reruns_nothing() {
    holds(
        false,
        1,
        &[
            Action::SetToken(0, Token::Fresh),
            Action::LoseStatus,
            Action::BmoStep,
            Action::BmoStep,
            Action::StripAnnotation(0, Annotation::ReprovisionToken),
            Action::Settle,
        ],
    );
}

// Found by 5,000 runs (on main too): a reprovision asked for with a token, then the token
// stripped from the machine while its runOnce Job ran: the machine's epoch changed with the
// annotation, the Job's completion stopped counting, and the service ran twice on the same
// installation. Status's epoch now stands in for a stripped token.
#[test]
fn a_reprovision_token_stripped_while_a_run_once_job_runs_reruns_nothing() {
    holds(
        false,
        2,
        &[
            Action::EditMtu(false),
            Action::EditMtu(false),
            Action::EditMtu(false),
            Action::SetToken(1, Token::Fresh),
            Action::EditMtu(false),
            Action::EditServiceSpec(0, 1),
            Action::BmoStep,
            Action::BmoStep,
            Action::StripAnnotation(1, Annotation::ReprovisionToken),
            Action::StripAnnotation(0, Annotation::ProvisionedHash),
            Action::FinishJob(0, true),
        ],
    );
}

// Found by 6,000 runs (on main too): a reprovision asked for while the host's rollout Job ran;
// the new installation counted as being brought up, so its old Job took no slot and another
// configured host started one: two past maxUnavailable 1.
#[test]
fn a_job_of_an_installation_being_reprovisioned_still_takes_its_slot() {
    holds(
        false,
        2,
        &[
            Action::Settle,
            Action::EditServices(1),
            Action::EditServices(3),
            Action::SetToken(0, Token::Fresh),
            Action::EditNetworks(true),
        ],
    );
}

// Issue 23, item 13: the content of a Secret the NodeSet's variablesFrom and its services read
// counts in what decides a host's configuration. Before, a content change reran nothing: the
// hosts kept the old values, the desired hash did not move.
#[test]
fn a_content_change_of_a_read_secret_reruns_in_place_and_never_a_run_once_service() {
    let before = status_after(false, 2, &[Action::Settle]);
    let after = status_after(false, 2, &[Action::Settle, Action::EditSource(1), Action::Settle]);
    let desired = |s: &crds::nodeset::NodeSetStatus| {
        s.hosts.iter().flatten().map(|(h, s)| (h.clone(), s.desired_config_hash.clone())).collect::<Vec<_>>()
    };
    assert_ne!(desired(&before), desired(&after), "the content change is a new configuration");
    assert_eq!(after.configured_hosts.as_deref(), Some("2/2"), "rolled out, in place, on both hosts");
    for (host, entry) in after.hosts.iter().flatten() {
        assert_eq!(entry.deployed_config_hash, entry.desired_config_hash, "{host}");
    }
    // Invariant (2) of every step: bootstrap, which reads the Secret too, ran once per machine.
}

#[test]
fn a_manual_nodeset_waits_for_a_token_after_a_content_change() {
    let pending =
        status_after(false, 1, &[Action::SetManual(true), Action::Settle, Action::EditSource(2), Action::Settle]);
    assert_eq!(pending.pending_hosts, Some(1), "the new content waits for a token");
    let rolled = status_after(
        false,
        1,
        &[Action::SetManual(true), Action::Settle, Action::EditSource(2), Action::SetRolloutToken(1), Action::Settle],
    );
    assert_eq!((rolled.pending_hosts, rolled.configured_hosts.as_deref()), (Some(0), Some("1/1")));
}

// (k), found by 3,000 runs: a host removed under Retain, the services-completed record
// stripped from its machine while it is out of the NodeSet, then the host added back. Its status
// entry went with the removal and the machine's record was gone, so nothing said the machine
// ran a configuration: it was brought up again beside a running update, past maxUnavailable,
// and its runOnce services ran again. The NodeSet's record keeps a retained machine's entry.
#[test]
fn a_host_added_back_after_its_released_machines_record_was_stripped_is_not_brought_up_again() {
    holds(
        false,
        2,
        &[
            Action::Settle,
            Action::RemoveHost(1),
            Action::StripAnnotation(1, Annotation::ServicesCompleted),
            Action::EditMtu(true),
            Action::AddHost(1),
        ],
    );
}

// The first seed proptest kept (`operator/proptest-regressions/nodeset/model/mod.txt`; the
// other two are the runs above), spelled out: a new kind of action changes what a seed draws.
#[test]
fn a_pre_provisioned_nodeset_recreated_after_a_detach_policy_holds() {
    holds(true, 1, &[Action::SetDeletionPolicy(Policy::Detach), Action::FinishJob(0, true), Action::DeleteAndRecreate]);
}

// A crash after a provisioning's writes and before its status write: the next reconcile reads
// the status from before, and the machine's own records, and provisions nothing again.
#[test]
fn a_crash_before_the_status_write_provisions_and_reprovisions_nothing_twice() {
    holds(false, 2, &[Action::CrashBeforeStatus, Action::EditMtu(true), Action::Settle]);
    holds(
        false,
        1,
        &[
            Action::Settle,
            Action::SetToken(0, Token::Fresh),
            Action::CrashBeforeStatus,
            Action::BmoStep,
            Action::CrashBeforeStatus,
            Action::Settle,
        ],
    );
}
