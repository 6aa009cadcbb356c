//! What happens to one claimed machine (pure): provisioned once, reprovisioned only for a new
//! `reprovisionToken`, otherwise left alone, whatever else changed in the NodeSet.
//!
//! What a machine was provisioned with is recorded on the machine, by annotations written in
//! the same request as the image: the provisioning hash, and the last reprovision token acted
//! on. So a crash between a write and the status that reports it, a restore, or a recreated
//! NodeSet all read the truth from the BareMetalHost and never provision twice.

use crate::kit::digest;
use crds::baremetalhost::{BareMetalHost, ProvisioningState};
use crds::nodeset::{
    HostStatus, NodeSetSpec, PROVISIONED_HASH_ANNOTATION, PROVISIONED_TOKEN_ANNOTATION, REPROVISION_TOKEN_ANNOTATION,
    REPROVISION_TOKENS_USED_ANNOTATION, provisioning_hash,
};
use kube::ResourceExt;

/// Where a claimed machine stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// Claimed, waiting to be free of other work (registering, inspecting, deprovisioning).
    Waiting(String),
    /// Its image was written; baremetal-operator provisions it.
    Provisioning,
    /// Provisioned with what this NodeSet wrote: services may run.
    Provisioned,
    /// Provisioned, but not by this NodeSet (it had an image when it was adopted): services may
    /// run; it is reprovisioned only for a new reprovisionToken.
    Adopted,
    /// Its image was removed by someone else; nothing is done until a new reprovisionToken.
    Stranded,
}

impl Phase {
    /// True when services may run on the machine.
    pub(super) fn runs_services(&self) -> bool {
        matches!(self, Self::Provisioned | Self::Adopted)
    }
}

/// What to do with the machine in this reconcile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Action {
    /// Nothing beyond keeping the consumer fields current.
    Keep,
    /// Write the image and first-boot data: the machine is free and has none. The spec's
    /// reprovisionToken, if it sets one, is recorded on the machine as answered
    /// (`ferrometal.io/provisioned-token`): the new installation stands for it, so a status
    /// lost after this write (a crash, a failed write after it) cannot make that token look
    /// asked for again and reprovision the new machine.
    Provision { token: Option<String> },
    /// Clear the image, recording `token`: the user asked for this machine to be reprovisioned.
    /// `replaced`, the token the machine stood under (status's), is recorded as used too, so an
    /// undo to it (A → B → A, a GitOps self-heal) does nothing, even when A was only recorded
    /// on first sight.
    Reprovision { token: String, replaced: Option<String> },
}

/// The decision for one machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Decision {
    pub phase: Phase,
    pub action: Action,
    /// The reprovisionToken to record in status.
    pub token: String,
    /// The provisioning hash the machine runs (after this decision's write).
    pub provisioned_hash: Option<String>,
    /// The provisioning inputs changed since.
    pub outdated: Option<bool>,
    /// Identifies this provisioning of this machine: completions of another epoch (another
    /// machine, or before a reprovision) do not count.
    pub epoch: String,
    pub message: Option<String>,
}

fn annotation<'a>(host: &'a BareMetalHost, key: &str) -> Option<&'a str> {
    host.annotations().get(key).map(String::as_str).filter(|v| !v.is_empty())
}

/// True when the machine has an image: it runs, or is being provisioned.
pub(super) fn has_image(host: &BareMetalHost) -> bool {
    host.spec.image.as_ref().is_some_and(|i| !i.url.is_empty())
}

/// Reprovision tokens remembered per machine: enough for years of reprovisions, bounded so the
/// annotation stays small.
const USED_TOKENS_KEPT: usize = 32;

/// The digest a used token is remembered by.
fn token_digest(token: &str) -> String {
    digest::short(token.as_bytes(), 6)
}

/// True when `token` reprovisioned this machine before.
pub(super) fn token_used(host: &BareMetalHost, token: &str) -> bool {
    let digest = token_digest(token);
    annotation(host, REPROVISION_TOKENS_USED_ANNOTATION).is_some_and(|used| used.split(',').any(|d| d == digest))
        || annotation(host, REPROVISION_TOKEN_ANNOTATION) == Some(token)
}

/// The used-tokens annotation after acting on `tokens` (in order): the newest last, the oldest
/// dropped.
pub(super) fn tokens_used_after(host: &BareMetalHost, tokens: &[&str]) -> String {
    let digests: Vec<String> = tokens.iter().map(|t| token_digest(t)).collect();
    let added: Vec<&str> = digests.iter().map(String::as_str).collect();
    let used = annotation(host, REPROVISION_TOKENS_USED_ANNOTATION).into_iter().flat_map(|u| u.split(','));
    digest::remember(used, &added, USED_TOKENS_KEPT).join(",")
}

/// The previous status of this machine, where it can stand in for the records on the machine
/// (someone may remove annotations): the same machine (uid), still running an image, in the
/// same epoch (status's `machineEpoch` is the machine's epoch now). Outside that, status may
/// describe the machine before a reprovision, and is not used. A status without
/// `machineEpoch` (an older operator's) compares its recorded token with the one the machine
/// acted on, which a token recorded before the first provisioning never matches.
pub(super) fn same_epoch<'a>(host: &BareMetalHost, previous: Option<&'a HostStatus>) -> Option<&'a HostStatus> {
    let uid = host.uid()?;
    previous.filter(|p| {
        let same = match &p.machine_epoch {
            Some(recorded) => *recorded == epoch(host, Some(p)),
            None => {
                p.reprovision_token.as_deref().unwrap_or_default()
                    == annotation(host, REPROVISION_TOKEN_ANNOTATION).unwrap_or_default()
            }
        };
        has_image(host) && p.bmh_ref.as_ref().and_then(|r| r.uid.as_deref()) == Some(uid.as_str()) && same
    })
}

/// The epoch of a machine: its uid and the reprovision token last acted on. When someone
/// stripped that token from a machine still running an image, the epoch `previous` (its status)
/// recorded for the same machine stands in: the installation did not change, and its
/// completions and running Jobs must keep counting (a runOnce service never runs twice).
pub(super) fn epoch(host: &BareMetalHost, previous: Option<&HostStatus>) -> String {
    let uid = host.uid().unwrap_or_default();
    let short = uid.split('-').next().unwrap_or_default().to_string();
    if let Some(token) = annotation(host, REPROVISION_TOKEN_ANNOTATION) {
        return format!("{short}/{}", crate::kit::names::bounded(token, 24));
    }
    let recorded = previous
        .filter(|p| has_image(host) && p.bmh_ref.as_ref().and_then(|r| r.uid.as_deref()) == Some(uid.as_str()))
        .and_then(|p| p.machine_epoch.clone())
        .filter(|e| e.split('/').next() == Some(short.as_str()));
    recorded.unwrap_or(short)
}

/// The spec's reprovisionToken for `hostname`, if it sets one.
fn wanted_token(hostname: &str, spec: &NodeSetSpec) -> Option<String> {
    let section = spec.nodes.as_ref().and_then(|n| n.get(hostname));
    section.and_then(|s| s.reprovision_token.clone()).filter(|t| !t.is_empty())
}

/// Decides what happens to the machine `host`, claimed for `hostname`, given the host's
/// previous status (`None`: seen for the first time, or status was lost).
pub(super) fn decide(
    hostname: &str,
    host: &BareMetalHost,
    spec: &NodeSetSpec,
    previous: Option<&HostStatus>,
) -> Decision {
    let token = Token::of(hostname, host, spec, previous);
    let provisioned = annotation(host, PROVISIONED_HASH_ANNOTATION)
        .map(str::to_string)
        .or_else(|| same_epoch(host, previous).and_then(|p| p.provisioned_hash.clone()));
    if token.reprovisions(host, provisioned.is_some()) {
        return Decision {
            phase: Phase::Waiting("deprovisioning for a reprovision".into()),
            action: Action::Reprovision { token: token.token.clone(), replaced: token.recorded.clone() },
            token: token.token,
            provisioned_hash: None,
            outdated: None,
            epoch: String::new(),
            message: None,
        };
    }
    let base = Decision {
        phase: Phase::Provisioned,
        action: Action::Keep,
        message: token.reused_message(host),
        token: token.token,
        provisioned_hash: provisioned.clone(),
        outdated: None,
        epoch: epoch(host, previous),
    };
    standing(base, hostname, host, spec, provisioned.as_deref())
}

/// The reprovisionToken of a machine's host: the one the spec asks for, and the one status
/// recorded.
struct Token {
    /// The spec's token, if it sets one.
    wanted: Option<String>,
    /// The token status recorded, if not empty: the one the machine stands under.
    recorded: Option<String>,
    /// The token to record in status: the spec's, else the recorded one.
    token: String,
    /// The spec asks for a reprovision: a change is acted on once (the annotation written with
    /// the clear says it was); a token seen for the first time is only recorded; removing it
    /// does nothing.
    asked: bool,
    /// The spec's token reprovisioned this machine before (an undo, a GitOps self-heal): it is
    /// recorded and said, never acted on again.
    reused: bool,
    /// The machine acted on the spec's token already, or was provisioned for it (its
    /// annotations say so).
    acted: bool,
}

impl Token {
    /// The token of `hostname`, from the spec, status (`previous`) and the machine's record.
    fn of(hostname: &str, host: &BareMetalHost, spec: &NodeSetSpec, previous: Option<&HostStatus>) -> Self {
        let wanted = wanted_token(hostname, spec);
        let recorded = previous.and_then(|p| p.reprovision_token.clone());
        let acted_on = annotation(host, REPROVISION_TOKEN_ANNOTATION);
        let asked = match (&wanted, &recorded) {
            (Some(wanted), Some(recorded)) => previous.is_some() && wanted != recorded,
            (Some(_), None) => false,
            (None, _) => false,
        };
        Token {
            token: wanted.clone().or_else(|| recorded.clone()).unwrap_or_default(),
            recorded: recorded.filter(|t| !t.is_empty()),
            asked,
            reused: wanted.as_deref().is_some_and(|t| acted_on != Some(t) && token_used(host, t)),
            acted: acted_on == wanted.as_deref()
                || wanted.as_deref().is_some_and(|t| annotation(host, PROVISIONED_TOKEN_ANNOTATION) == Some(t)),
            wanted,
        }
    }

    /// True when the machine is to be reprovisioned now: asked for, neither acted on nor used
    /// before, and there is an installation to clear (an image, or a provisioning recorded).
    fn reprovisions(&self, host: &BareMetalHost, provisioned: bool) -> bool {
        self.asked && !self.reused && !self.acted && (has_image(host) || provisioned)
    }

    /// What status says of a reused token.
    fn reused_message(&self, host: &BareMetalHost) -> Option<String> {
        self.reused.then(|| {
            format!(
                "reprovisionToken {:?} was used on BareMetalHost {} before; a value reprovisions a machine \
                 once, ever: choose a new one to reprovision it again",
                self.wanted.as_deref().unwrap_or_default(),
                host.name_any()
            )
        })
    }
}

/// Where a machine not being reprovisioned stands, from what it was provisioned with
/// (`provisioned`, recorded on it or in status) and whether it has an image: it is provisioned
/// once, only when free and without either, and otherwise left alone.
fn standing(
    base: Decision,
    hostname: &str,
    host: &BareMetalHost,
    spec: &NodeSetSpec,
    provisioned: Option<&str>,
) -> Decision {
    let state = host.status.as_ref().map(|s| s.provisioning.state).unwrap_or_default();
    let current = provisioning_hash(hostname, spec);
    match (provisioned, has_image(host)) {
        (Some(hash), true) => {
            let outdated = current.as_ref().map(|c| c != hash);
            let phase = if state == ProvisioningState::Provisioned { Phase::Provisioned } else { Phase::Provisioning };
            Decision { phase, outdated, ..base }
        }
        (Some(_), false) => Decision {
            phase: Phase::Stranded,
            message: Some(format!(
                "the image of BareMetalHost {} was removed outside this NodeSet (it is {}); \
                 set a new reprovisionToken to provision it again",
                host.name_any(),
                state_text(state)
            )),
            ..base
        },
        (None, true) => Decision {
            phase: if state == ProvisioningState::Provisioned {
                Phase::Adopted
            } else {
                Phase::Waiting(state_text(state))
            },
            message: Some(format!(
                "BareMetalHost {} already had an image when it was claimed; it keeps it until its reprovisionToken changes",
                host.name_any()
            )),
            ..base
        },
        (None, false) if matches!(state, ProvisioningState::Available | ProvisioningState::Ready) => Decision {
            phase: Phase::Provisioning,
            action: Action::Provision { token: wanted_token(hostname, spec) },
            provisioned_hash: current,
            outdated: Some(false),
            ..base
        },
        (None, false) => Decision { phase: Phase::Waiting(state_text(state)), provisioned_hash: None, ..base },
    }
}

fn state_text(state: ProvisioningState) -> String {
    match state {
        ProvisioningState::None => "not registered yet".into(),
        other => other.as_str().into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::baremetalhost::{BareMetalHostStatus, Image, ProvisionStatus};
    use serde_json::json;

    fn spec(image: &str, token: Option<&str>) -> NodeSetSpec {
        serde_json::from_value(json!({
            "baremetalSetTemplate": {"image": {"url": image}},
            "nodes": {"compute-0": {"reprovisionToken": token}}
        }))
        .expect("spec")
    }

    fn host(state: ProvisioningState, image: Option<&str>, annotations: serde_json::Value) -> BareMetalHost {
        let mut host: BareMetalHost = serde_json::from_value(json!({
            "apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
            "metadata": {"name": "server-0", "namespace": "metal3", "uid": "1234-5678", "annotations": annotations},
            "spec": {"online": true}
        }))
        .expect("host");
        host.spec.image = image.map(|url| Image { url: url.into(), ..Default::default() });
        host.status = Some(BareMetalHostStatus {
            provisioning: ProvisionStatus { state, ..Default::default() },
            ..Default::default()
        });
        host
    }

    fn provisioned(hash: &str) -> BareMetalHost {
        host(ProvisioningState::Provisioned, Some("http://i/os.qcow2"), json!({PROVISIONED_HASH_ANNOTATION: hash}))
    }

    fn status(token: &str) -> HostStatus {
        HostStatus { reprovision_token: Some(token.into()), ..Default::default() }
    }

    #[test]
    fn a_free_claimed_machine_is_provisioned_with_the_current_inputs() {
        let spec = spec("http://i/os.qcow2", None);
        let d = decide("compute-0", &host(ProvisioningState::Available, None, json!({})), &spec, None);
        assert_eq!(d.action, Action::Provision { token: None });
        assert_eq!(d.provisioned_hash, provisioning_hash("compute-0", &spec));
        assert_eq!(d.token, "", "recorded as empty, so that a first token acts");
    }

    #[test]
    fn a_machine_still_inspecting_waits() {
        let d =
            decide("compute-0", &host(ProvisioningState::Inspecting, None, json!({})), &spec("http://i/a", None), None);
        assert_eq!((d.action, d.phase), (Action::Keep, Phase::Waiting("inspecting".into())));
    }

    #[test]
    fn a_new_image_marks_the_machine_outdated_and_changes_nothing() {
        let old = spec("http://i/os.qcow2", None);
        let hash = provisioning_hash("compute-0", &old).expect("hash");
        let d = decide("compute-0", &provisioned(&hash), &spec("http://i/os-2.qcow2", None), Some(&status("")));
        assert_eq!((d.action, d.phase, d.outdated), (Action::Keep, Phase::Provisioned, Some(true)));
        assert_eq!(d.provisioned_hash.as_deref(), Some(hash.as_str()), "still what it was provisioned with");
    }

    #[test]
    fn a_changed_reprovision_token_reprovisions_once() {
        let spec = spec("http://i/os.qcow2", Some("2026-09-01"));
        let hash = provisioning_hash("compute-0", &spec).expect("hash");
        let d = decide("compute-0", &provisioned(&hash), &spec, Some(&status("2026-08-01")));
        assert_eq!(d.action, Action::Reprovision { token: "2026-09-01".into(), replaced: Some("2026-08-01".into()) });
        // The clear wrote the token on the machine: acting again would be a second reprovision.
        let mut cleared =
            host(ProvisioningState::Deprovisioning, None, json!({REPROVISION_TOKEN_ANNOTATION: "2026-09-01"}));
        cleared.metadata.uid = Some("1234-5678".into());
        let d = decide("compute-0", &cleared, &spec, Some(&status("2026-08-01")));
        assert_eq!((d.action, d.token.as_str()), (Action::Keep, "2026-09-01"));
        // Once available again, it is provisioned with the current inputs, in a new epoch.
        let available = host(ProvisioningState::Available, None, json!({REPROVISION_TOKEN_ANNOTATION: "2026-09-01"}));
        let d = decide("compute-0", &available, &spec, Some(&status("2026-09-01")));
        assert_eq!(d.action, Action::Provision { token: Some("2026-09-01".into()) });
        assert_ne!(d.epoch, epoch(&provisioned(&hash), None), "completions before the reprovision no longer count");
    }

    #[test]
    fn a_token_seen_first_or_removed_does_nothing() {
        let spec_with = spec("http://i/os.qcow2", Some("t1"));
        let hash = provisioning_hash("compute-0", &spec_with).expect("hash");
        let first = decide("compute-0", &provisioned(&hash), &spec_with, None);
        assert_eq!((first.action, first.token.as_str()), (Action::Keep, "t1"), "restore or new host: recorded only");
        let removed = decide("compute-0", &provisioned(&hash), &spec("http://i/os.qcow2", None), Some(&status("t1")));
        assert_eq!((removed.action, removed.token.as_str()), (Action::Keep, "t1"));
        let same = decide("compute-0", &provisioned(&hash), &spec_with, Some(&status("t1")));
        assert_eq!(same.action, Action::Keep);
    }

    #[test]
    fn a_machine_with_an_image_of_its_own_is_adopted_as_it_is() {
        let d = decide(
            "compute-0",
            &host(ProvisioningState::Provisioned, Some("http://x"), json!({})),
            &spec("http://i/a", None),
            None,
        );
        assert!(d.phase.runs_services());
        assert_eq!((d.action, d.phase), (Action::Keep, Phase::Adopted));
    }

    #[test]
    fn a_machine_whose_image_someone_removed_is_not_provisioned_again_by_itself() {
        let d = decide(
            "compute-0",
            &host(ProvisioningState::Available, None, json!({PROVISIONED_HASH_ANNOTATION: "abc"})),
            &spec("http://i/a", None),
            Some(&status("")),
        );
        assert_eq!((d.action, d.phase), (Action::Keep, Phase::Stranded));
        assert!(d.message.as_deref().is_some_and(|m| m.contains("reprovisionToken")));
    }
}
