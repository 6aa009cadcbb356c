//! A model-based (stateful property) test of the NodeSet planner's promise: no machine is
//! ever deprovisioned unless a user explicitly asks for that machine.
//!
//! Random sequences of user and world actions (`actions`) run against a simulated world
//! (`world`: BareMetalHosts under server-side apply, baremetal-operator, Jobs, the NodeSet's
//! status) through the real pure steps of a reconcile (`reconcile`), and the invariants
//! (`invariants`, and `oracle` for what users asked for) are checked after every step.
//!
//! `make test` runs 64 cases; a longer run: `PROPTEST_CASES=100000 cargo test -p operator
//! --lib nodeset::model` (`make fuzz` runs it so). Every kind of action is drawn
//! ([`actions::Weights::all`]); `regressions` holds the shortest run of each defect the model
//! found, (a) to (h), each failing before its fix, and of the Manual rollout's defects of
//! issue 23 (an approved rollout stalled by a host added or removed; hosts waiting for a token
//! counted as unconfigured).

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

/// Runs: 64, or `PROPTEST_CASES` (an explicit count in the config would override it).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), max_shrink_iters: 4096, ..ProptestConfig::default() })]

    #[test]
    fn no_machine_is_deprovisioned_unless_a_user_asks_for_it(
        (pre_provisioned, hosts, actions) in actions::run(&Weights::all(), STEPS)
    ) {
        if let Err(broken) = Model::run(pre_provisioned, hosts, &actions, Weights::all()) {
            prop_assert!(false, "{broken}\npreProvisioned {pre_provisioned}, {hosts} hosts, actions {actions:#?}");
        }
    }
}
