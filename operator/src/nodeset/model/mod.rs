//! A model-based (stateful property) test of the NodeSet planner's promise: no machine is
//! ever deprovisioned unless a user explicitly asks for that machine.
//!
//! Random sequences of user and world actions (`actions`) run against a simulated world
//! (`world`: BareMetalHosts under server-side apply, baremetal-operator, Jobs, the NodeSet's
//! status) through the real pure steps of a reconcile (`reconcile`), and the invariants
//! (`invariants`, and `oracle` for what users asked for) are checked after every step.
//!
//! `make test` runs a few cases; a longer run: `PROPTEST_CASES=100000 cargo test -p operator
//! --lib nodeset::model`. Kinds of action a known open defect makes fail are left out by
//! [`actions::Weights::without_open_defects`]; `regressions` holds one test per defect.

mod actions;
mod edits;
mod fixtures;
mod harness;
mod invariants;
mod oracle;
mod reconcile;
mod regressions;
mod ssa;
mod world;

use actions::Weights;
use harness::Model;
use proptest::prelude::*;

/// Actions per run at most.
const STEPS: usize = 30;

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, max_shrink_iters: 4096, ..ProptestConfig::default() })]

    #[test]
    fn no_machine_is_deprovisioned_unless_a_user_asks_for_it(
        (pre_provisioned, hosts, actions) in actions::run(&Weights::without_open_defects(), STEPS)
    ) {
        if let Err(broken) = Model::run(pre_provisioned, hosts, &actions, Weights::without_open_defects()) {
            prop_assert!(false, "{broken}\npreProvisioned {pre_provisioned}, {hosts} hosts, actions {actions:#?}");
        }
    }
}
