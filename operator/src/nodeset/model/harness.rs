//! A run of the model: each action, then a reconcile, then the invariants.

use super::actions::{Action, Weights};
use super::edits;
use super::fixtures::{self, HOSTNAMES};
use super::invariants;
use super::oracle::Oracle;
use super::reconcile::{self, Reconciled};
use super::world::World;
use crds::nodeset::RolloutStrategy;

/// Rounds of a Settle at most.
const SETTLE_ROUNDS: usize = 40;

pub(super) struct Model {
    pub world: World,
    pub oracle: Oracle,
    pub weights: Weights,
}

impl Model {
    pub(super) fn new(pre_provisioned: bool, hosts: usize, weights: Weights) -> Self {
        let world = World::new(pre_provisioned, hosts);
        let mut oracle = Oracle { pre_provisioned, ..Oracle::default() };
        // Never reconciled: its first reconcile is a first sight.
        oracle.first_sight(&world);
        Model { world, oracle, weights }
    }

    /// Runs `actions`; the first broken invariant, with the step it broke at.
    pub(super) fn run(
        pre_provisioned: bool,
        hosts: usize,
        actions: &[Action],
        weights: Weights,
    ) -> Result<Model, String> {
        let mut model = Model::new(pre_provisioned, hosts, weights);
        for (i, action) in actions.iter().enumerate() {
            model.step(action).map_err(|e| format!("step {i} ({action:?}): {e}"))?;
        }
        Ok(model)
    }

    fn manual(&self) -> bool {
        let rollout = self.world.nodeset.spec.rollout.as_ref();
        rollout.and_then(|r| r.strategy).unwrap_or_default() == RolloutStrategy::Manual
    }

    /// True when the weights leave `action` out in the world's state.
    fn skipped(&self, action: &Action) -> bool {
        let pre_provisioned = self.world.nodeset.spec.pre_provisioned();
        match action {
            Action::EditServiceSpec(..) => self.manual() && !self.weights.service_spec_when_manual,
            Action::DeleteAndRecreate | Action::LoseStatus => {
                (pre_provisioned && !self.weights.recreate_when_pre_provisioned)
                    || (self.oracle.behind && !self.weights.fresh_status_mid_rollout)
            }
            Action::AddHost(_) => self.oracle.behind && !self.weights.fresh_status_mid_rollout,
            _ => false,
        }
    }

    pub(super) fn step(&mut self, action: &Action) -> Result<(), String> {
        self.world.clock += 1;
        if self.skipped(action) {
            return self.reconcile();
        }
        let token = match action {
            Action::SetToken(h, t) => self.oracle.resolve(HOSTNAMES[*h], *t),
            _ => None,
        };
        let (was_manual, rollout_token) = (self.manual(), self.rollout_token());
        // A NodeSet without a status is seen for the first time by the next reconcile.
        let seen = self.world.nodeset.status.is_some();
        self.oracle.asked(&self.world, action, token.as_ref());
        match action {
            Action::Settle => return self.settle(),
            Action::DeleteAndRecreate => self.recreate()?,
            Action::SetToken(h, _) => edits::set_token(&mut self.world, HOSTNAMES[*h], token),
            Action::FinishJob(i, ok) => self.finish(*i, *ok),
            Action::BmoStep => {
                self.world.bmo_step();
            }
            // The next action meets the status from before the crash (a user's edit while the
            // operator is down), then the reconcile after the restart.
            Action::CrashBeforeStatus => {
                let crashed = reconcile::reconcile_crashing_before_status(&mut self.world);
                return self.judge(&crashed);
            }
            _ => edits::perform(&mut self.world, action),
        }
        // A new rollout token or a switch to Manual approves what is; a first sight
        // acknowledges it, and approves nothing.
        if !seen || matches!(action, Action::LoseStatus | Action::DeleteAndRecreate) {
            self.oracle.first_sight(&self.world);
        } else if self.manual() && (!was_manual || rollout_token != self.rollout_token()) {
            self.oracle.acknowledge(&self.world);
        }
        self.oracle.forget_removed(&self.world);
        self.oracle.events(&mut self.world)?;
        self.reconcile()
    }

    fn rollout_token(&self) -> Option<String> {
        self.world.nodeset.spec.rollout.as_ref().and_then(|r| r.token.clone())
    }

    fn reconcile(&mut self) -> Result<(), String> {
        let reconciled = reconcile::reconcile(&mut self.world);
        self.judge(&reconciled)
    }

    fn judge(&mut self, reconciled: &Reconciled) -> Result<(), String> {
        self.oracle.events(&mut self.world)?;
        invariants::check(&self.world, &mut self.oracle, reconciled)
    }

    fn finish(&mut self, index: usize, succeed: bool) {
        let running = self.world.running();
        if running.is_empty() {
            return;
        }
        let name = &running[index % running.len()];
        self.world.finish(name, succeed);
        self.oracle.finished(&self.world.jobs[name].job, succeed);
    }

    /// The NodeSet deleted (its deletion policy applied) and created again, same spec.
    fn recreate(&mut self) -> Result<(), String> {
        let deleted = reconcile::delete(&mut self.world);
        self.oracle.events(&mut self.world)?;
        drop(deleted);
        self.world.incarnation += 1;
        let spec = serde_json::to_value(&self.world.nodeset.spec).expect("spec");
        self.world.nodeset = fixtures::nodeset(&spec, self.world.incarnation);
        Ok(())
    }

    /// Reconciles, lets baremetal-operator move and every running Job succeed, until nothing
    /// moves.
    fn settle(&mut self) -> Result<(), String> {
        for _ in 0..SETTLE_ROUNDS {
            self.world.clock += 1;
            let reconciled = reconcile::reconcile(&mut self.world);
            self.judge(&reconciled)?;
            let moved = self.world.bmo_step();
            self.oracle.events(&mut self.world)?;
            let running = self.world.running();
            for _ in &running {
                self.finish(0, true);
            }
            let quiet = reconciled.plan.writes.is_empty() && reconciled.applied.jobs_created.is_empty();
            if quiet && !moved && running.is_empty() {
                return Ok(());
            }
        }
        Ok(())
    }
}
