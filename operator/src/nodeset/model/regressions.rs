//! One deterministic run per defect the model found, the shortest sequence that shows it.
//! Each failed before its fix.

use super::actions::{Action, Annotation, Token, Weights};
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
