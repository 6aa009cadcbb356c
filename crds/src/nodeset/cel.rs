//! CEL `x-kubernetes-validations` twins of the NodeSet transition rules. The webhook enforces
//! the same rules (Kubernetes 1.20 ignores CEL); these serve clusters that evaluate them.

use kube::core::{Message, Rule};

/// Message of the selection lock, shared with the webhook.
pub const SELECTION_LOCKED_MESSAGE: &str =
    "cannot change once hosts are claimed: it decides which machines are claimed; create a new NodeSet instead";
/// Message of the per-host selector lock, shared with the webhook.
pub const HOST_SELECTOR_LOCKED_MESSAGE: &str = "cannot change once this host is claimed; remove the host and add it under a new name, or replace its BareMetalHost";
/// Message of the preProvisioned lock, shared with the webhook.
pub const PRE_PROVISIONED_IMMUTABLE_MESSAGE: &str = "preProvisioned is immutable; create a new NodeSet instead";
/// Message of the template presence rule, shared with the webhook.
pub const TEMPLATE_PRESENCE_MESSAGE: &str =
    "baremetalSetTemplate is required unless preProvisioned is true, and forbidden when it is";

/// `a.f` and `b.f` are both absent, or both present and equal.
fn same_optional(a: &str, b: &str, field: &str) -> String {
    format!("(has({a}.{field}) ? (has({b}.{field}) && {a}.{field} == {b}.{field}) : !has({b}.{field}))")
}

/// Once a host is claimed, the fields that choose hosts cannot change (root-level rule: it
/// reads the old object's status).
pub(crate) fn selection_lock() -> Rule {
    let (new, old) = ("self.spec.baremetalSetTemplate", "oldSelf.spec.baremetalSetTemplate");
    let same = ["bmhNamespace", "bmhLabelSelector", "hardwareReqs"].map(|f| same_optional(new, old, f)).join(" && ");
    Rule::new(format!(
        "!has(oldSelf.status) || !has(oldSelf.status.claimedHosts) || oldSelf.status.claimedHosts == 0 || !has({old}) || (has({new}) && {same})"
    ))
    .message(Message::Message(format!(
        "spec.baremetalSetTemplate: bmhNamespace, bmhLabelSelector and hardwareReqs {SELECTION_LOCKED_MESSAGE}"
    )))
}

/// The selector of a claimed host cannot change.
pub(crate) fn host_selector_lock() -> Rule {
    let same = same_optional("self.spec.nodes[h]", "oldSelf.spec.nodes[h]", "bmhLabelSelector");
    Rule::new(format!(
        "!has(oldSelf.status) || !has(oldSelf.status.hosts) || !has(self.spec.nodes) || !has(oldSelf.spec.nodes) || self.spec.nodes.all(h, !(h in oldSelf.status.hosts) || !has(oldSelf.status.hosts[h].bmhRef) || !(h in oldSelf.spec.nodes) || {same})"
    ))
    .message(Message::Message(format!(
        "spec.nodes[*].bmhLabelSelector {HOST_SELECTOR_LOCKED_MESSAGE}"
    )))
}

/// `preProvisioned` never changes (spec-level rule).
pub(crate) fn pre_provisioned_immutable() -> Rule {
    Rule::new(
        "(has(self.preProvisioned) && self.preProvisioned) == (has(oldSelf.preProvisioned) && oldSelf.preProvisioned)",
    )
    .message(PRE_PROVISIONED_IMMUTABLE_MESSAGE)
}

/// A template exactly when hosts are provisioned by us (spec-level rule).
pub(crate) fn template_presence() -> Rule {
    Rule::new("(has(self.preProvisioned) && self.preProvisioned) ? !has(self.baremetalSetTemplate) : has(self.baremetalSetTemplate)")
        .message(TEMPLATE_PRESENCE_MESSAGE)
}
