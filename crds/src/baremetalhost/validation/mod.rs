//! Validation of `BareMetalHost`: the BMC address, MACs, images, root device hints, RAID, and
//! the baremetal-operator webhook rules that need no other object.

mod annotations;
mod image;
mod spec;

pub(crate) use image::{validate_image, validate_root_device_hints};

use super::BareMetalHost;
use super::annotations::DETACHED;
use super::rules::boot_mac_requirement;
use super::spec::{BOOT_MAC_IMMUTABLE_MESSAGE, BareMetalHostSpec};
use super::status::{OperationalStatus, ProvisioningState};
use crate::validation::{Errors, FieldError, is_set, is_uuid};

/// Validates a host on create (`old` is `None`) or update. Returns every violation.
///
/// Rules that need another object are the controller's: the content of the BMC credentials
/// Secret is checked by [`crate::baremetalhost::validate_bmc_credentials`].
pub fn validate_baremetalhost(host: &BareMetalHost, old: Option<&BareMetalHost>) -> Vec<FieldError> {
    let mut errors = Errors::default();
    validate_name(&mut errors, host.metadata.name.as_deref());
    if let (Some(namespace), Some(name)) = (host.metadata.namespace.as_deref(), host.metadata.name.as_deref())
        && let Some(problem) = node_name_problem(namespace, name)
    {
        errors.push("metadata.name", problem);
    }
    spec::validate_spec(&mut errors, &host.spec, host.metadata.namespace.as_deref());
    if let Some(requirement) = boot_mac_requirement(host)
        && !is_set(&host.spec.boot_mac_address)
    {
        errors.push("spec.bootMACAddress", requirement.to_string());
    }
    annotations::validate_annotations(&mut errors, host.metadata.annotations.as_ref(), &host.spec);
    if let Some(old) = old {
        validate_update(&mut errors, host, old);
    }
    errors.into_vec()
}

/// Ironic's limit for a node name.
pub const MAX_NODE_NAME: usize = 255;

/// Why `<namespace>~<name>`, the host's Ironic node name, cannot be used: Ironic refuses
/// names over 255 characters, and a namespace (63) and a name (253) can make 317. Shared by
/// the webhook and the host controller, which refuses such a host without calling Ironic.
pub fn node_name_problem(namespace: &str, name: &str) -> Option<String> {
    let length = namespace.len().saturating_add(name.len()).saturating_add(1);
    (length > MAX_NODE_NAME).then(|| {
        format!(
            "the Ironic node name <namespace>~<name> would be {length} characters, over Ironic's {MAX_NODE_NAME}: use a shorter name"
        )
    })
}

fn validate_name(errors: &mut Errors, name: Option<&str>) {
    let Some(name) = name else {
        return;
    };
    if is_uuid(name) {
        errors.push("metadata.name", "cannot be a UUID: Ironic would confuse it with a node UUID");
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) {
        errors.push("metadata.name", "may contain only letters, digits, '.', '_' and '-'");
    }
}

fn validate_update(errors: &mut Errors, new: &BareMetalHost, old: &BareMetalHost) {
    let old_mac = old.spec.boot_mac_address.as_deref().unwrap_or_default();
    // The same MAC in another case is the same NIC (as the CEL twin compares it).
    if !old_mac.is_empty() && !new.spec.boot_mac_address.as_deref().is_some_and(|m| m.eq_ignore_ascii_case(old_mac)) {
        errors.push("spec.bootMACAddress", BOOT_MAC_IMMUTABLE_MESSAGE);
    }
    let externally_provisioned = |h: &BareMetalHost| h.spec.externally_provisioned.unwrap_or(false);
    let state = old.status.as_ref().map_or(ProvisioningState::None, |s| s.provisioning.state);
    if externally_provisioned(new) && !externally_provisioned(old) && state != ProvisioningState::Available {
        // As in baremetal-operator: only an available host can be handed over (after
        // inspection, before anything is provisioned). The state is the stored one: a status
        // sent with a spec update is ignored by the apiserver.
        errors.push(
            "spec.externallyProvisioned",
            format!(
                "can only be turned on when the host is created or while it is available; it is {}",
                if state == ProvisioningState::None { "not registered yet" } else { state.as_str() }
            ),
        );
    }
    if bmc_address(&new.spec) != bmc_address(&old.spec) && !bmc_address_may_change(old) {
        errors.push("spec.bmc.address", "can only be changed while the host is registering or detached");
    }
}

fn bmc_address(spec: &BareMetalHostSpec) -> &str {
    spec.bmc.as_ref().map_or("", |b| b.address.as_str())
}

/// The BMC may be re-pointed before Ironic knows the host, while registration is failing, or
/// once the host is detached from Ironic.
fn bmc_address_may_change(old: &BareMetalHost) -> bool {
    let detached_annotation = old.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(DETACHED));
    let Some(status) = &old.status else {
        return true;
    };
    detached_annotation
        || status.operational_status == OperationalStatus::Detached
        || matches!(
            status.provisioning.state,
            ProvisioningState::None | ProvisioningState::Unmanaged | ProvisioningState::Registering
        )
}

#[cfg(test)]
mod node_name_tests {
    use super::*;

    #[test]
    fn node_names_over_255_characters_are_refused() {
        assert_eq!(node_name_problem(&"n".repeat(63), &"h".repeat(191)), None, "exactly 255");
        assert!(node_name_problem(&"n".repeat(63), &"h".repeat(192)).is_some_and(|p| p.contains("256")));
        let host: BareMetalHost = serde_json::from_value(serde_json::json!({
            "apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
            "metadata": {"name": "h".repeat(253), "namespace": "n".repeat(63)},
            "spec": {"online": false}}))
        .expect("host");
        let errors = validate_baremetalhost(&host, None);
        assert!(errors.iter().any(|e| e.path == "metadata.name" && e.message.contains("317")), "{errors:?}");
    }
}
