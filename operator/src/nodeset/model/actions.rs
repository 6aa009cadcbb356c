//! What users and the world do, as a proptest `Strategy`. Every kind has a weight, so a kind
//! that a defect makes fail can be left out while it is open (`Weights`).

use proptest::prelude::*;

/// A value for a host's `reprovisionToken`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Token {
    /// A value never used for any host.
    Fresh,
    /// One of the values this host had before (a revert, A→B→A), by index.
    Reuse(u8),
    /// No token.
    Clear,
}

/// A ferrometal annotation of a BareMetalHost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Annotation {
    ProvisionedHash,
    ServicesCompleted,
    ReprovisionToken,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Policy {
    Retain,
    Detach,
    Deprovision,
}

/// One step of a run. Host indexes are into `fixtures::HOSTNAMES`, machine indexes into the
/// BareMetalHosts, Job indexes into the running Jobs (modulo their numbers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Action {
    /// The template's ctlplane MTU: 1500 or 9000.
    EditMtu(bool),
    /// A storage network in the template, or not.
    EditNetworks(bool),
    /// The template's (None) or a host's variables, to one of a few values.
    EditVariables(Option<usize>, u8),
    /// The content of the Secret the template's variablesFrom and two services read, to a
    /// version: a user's edit of what the NodeSet reads, applied in place like a spec edit.
    EditSource(u8),
    EditImage(u8),
    AddHost(usize),
    RemoveHost(usize),
    SetToken(usize, Token),
    /// `spec.services`, one of `fixtures::SERVICE_LISTS`.
    EditServices(usize),
    /// A NodeSetService's spec, to a version.
    EditServiceSpec(usize, u8),
    SetManual(bool),
    SetRolloutToken(u8),
    /// `maxUnavailable`: 1, 2 or "50%".
    SetMaxUnavailable(u8),
    SetDeletionPolicy(Policy),
    DeleteAndRecreate,
    StripAnnotation(usize, Annotation),
    StripLabels(usize),
    LoseStatus,
    /// The operator reconciles and dies before its status write: the BareMetalHosts, the
    /// records and the Jobs were written, the NodeSet's status is the one before. The next
    /// action meets that status, and its reconcile is the restarted operator's.
    CrashBeforeStatus,
    /// The operator restarts: nothing but the world is carried over (the model keeps nothing
    /// else anyway), and it reconciles.
    Restart,
    FinishJob(usize, bool),
    BmoStep,
    /// Reconciles, lets baremetal-operator move and every Job succeed, until nothing moves.
    Settle,
}

/// How often each kind is drawn; 0 leaves it out.
#[derive(Clone, Debug)]
pub(super) struct Weights {
    pub config: u32,
    pub image: u32,
    pub hosts: u32,
    pub token: u32,
    /// Reverting a host's token to an older value.
    pub token_reuse: u32,
    pub services: u32,
    pub service_spec: u32,
    pub rollout: u32,
    pub deletion_policy: u32,
    pub recreate: u32,
    pub strip_provisioned_hash: u32,
    pub strip_completions: u32,
    pub strip_token_annotation: u32,
    pub strip_labels: u32,
    pub lose_status: u32,
    pub crash_before_status: u32,
    pub restart: u32,
    pub jobs: u32,
    pub bmo: u32,
    pub settle: u32,
    /// Editing a service's spec on a Manual NodeSet (skipped at run time when false).
    pub service_spec_when_manual: bool,
    /// Deleting and recreating, or losing the status of, a preProvisioned NodeSet (skipped at
    /// run time when false).
    pub recreate_when_pre_provisioned: bool,
    /// Deleting and recreating the NodeSet, losing its status, or adding a host while a
    /// configured host is not at its desired configuration (skipped at run time when false).
    pub fresh_status_mid_rollout: bool,
}

impl Weights {
    /// Every kind of action.
    pub(super) fn all() -> Self {
        Weights {
            config: 4,
            image: 1,
            hosts: 2,
            token: 2,
            token_reuse: 1,
            services: 2,
            service_spec: 2,
            rollout: 3,
            deletion_policy: 2,
            recreate: 1,
            strip_provisioned_hash: 1,
            strip_completions: 1,
            strip_token_annotation: 1,
            strip_labels: 1,
            lose_status: 1,
            crash_before_status: 2,
            restart: 1,
            jobs: 8,
            bmo: 6,
            settle: 3,
            service_spec_when_manual: true,
            recreate_when_pre_provisioned: true,
            fresh_status_mid_rollout: true,
        }
    }
}

fn token() -> impl Strategy<Value = Token> {
    prop_oneof![Just(Token::Fresh), Just(Token::Clear)]
}

fn policy() -> impl Strategy<Value = Policy> {
    prop_oneof![Just(Policy::Retain), Just(Policy::Detach), Just(Policy::Deprovision)]
}

/// One action, drawn by `weights` (kinds of weight 0 are left out).
pub(super) fn action(w: &Weights) -> impl Strategy<Value = Action> + use<> {
    let host = 0..super::fixtures::HOSTNAMES.len();
    let machine = 0..super::fixtures::MACHINES;
    let kinds: Vec<(u32, BoxedStrategy<Action>)> = vec![
        (
            w.config,
            prop_oneof![
                any::<bool>().prop_map(Action::EditMtu),
                any::<bool>().prop_map(Action::EditNetworks),
                (proptest::option::of(host.clone()), 0..3u8).prop_map(|(h, v)| Action::EditVariables(h, v)),
                (0..3u8).prop_map(Action::EditSource),
            ]
            .boxed(),
        ),
        (w.image, (0..3u8).prop_map(Action::EditImage).boxed()),
        (
            w.hosts,
            prop_oneof![host.clone().prop_map(Action::AddHost), host.clone().prop_map(Action::RemoveHost)].boxed(),
        ),
        (w.token, (host.clone(), token()).prop_map(|(h, t)| Action::SetToken(h, t)).boxed()),
        (w.token_reuse, (host.clone(), 0..3u8).prop_map(|(h, i)| Action::SetToken(h, Token::Reuse(i))).boxed()),
        (w.services, (0..super::fixtures::SERVICE_LISTS.len()).prop_map(Action::EditServices).boxed()),
        (
            w.service_spec,
            (0..super::fixtures::SERVICES.len(), 1..4u8).prop_map(|(s, v)| Action::EditServiceSpec(s, v)).boxed(),
        ),
        (
            w.rollout,
            prop_oneof![
                any::<bool>().prop_map(Action::SetManual),
                (0..3u8).prop_map(Action::SetRolloutToken),
                (0..3u8).prop_map(Action::SetMaxUnavailable),
            ]
            .boxed(),
        ),
        (w.deletion_policy, policy().prop_map(Action::SetDeletionPolicy).boxed()),
        (w.recreate, Just(Action::DeleteAndRecreate).boxed()),
        (
            w.strip_provisioned_hash,
            machine.clone().prop_map(|m| Action::StripAnnotation(m, Annotation::ProvisionedHash)).boxed(),
        ),
        (
            w.strip_completions,
            machine.clone().prop_map(|m| Action::StripAnnotation(m, Annotation::ServicesCompleted)).boxed(),
        ),
        (
            w.strip_token_annotation,
            machine.clone().prop_map(|m| Action::StripAnnotation(m, Annotation::ReprovisionToken)).boxed(),
        ),
        (w.strip_labels, machine.prop_map(Action::StripLabels).boxed()),
        (w.lose_status, Just(Action::LoseStatus).boxed()),
        (w.crash_before_status, Just(Action::CrashBeforeStatus).boxed()),
        (w.restart, Just(Action::Restart).boxed()),
        (w.jobs, (0..4usize, prop::bool::weighted(0.8)).prop_map(|(j, ok)| Action::FinishJob(j, ok)).boxed()),
        (w.bmo, Just(Action::BmoStep).boxed()),
        (w.settle, Just(Action::Settle).boxed()),
    ];
    proptest::strategy::Union::new_weighted(kinds.into_iter().filter(|(weight, _)| *weight > 0).collect())
}

/// A run: a preProvisioned NodeSet or not, how many hosts it starts with, and the actions.
pub(super) fn run(w: &Weights, steps: usize) -> impl Strategy<Value = (bool, usize, Vec<Action>)> + use<> {
    (prop::bool::weighted(0.25), 1..=3usize, prop::collection::vec(action(w), 1..=steps))
}
