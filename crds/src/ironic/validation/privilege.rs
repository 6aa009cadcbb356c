//! What `spec.overrides` may add to the Ironic pods without the `PrivilegedOverrides` gate.
//!
//! Ironic's pods run on the host network, and overrides add containers and volumes to them:
//! a privileged container, added capabilities or a host path there would make "may create an
//! Ironic" mean "root on a node". Those need an operator admin's consent (the gate, off by
//! default); anything else overrides may still do.

use crate::ironic::Overrides;
use crate::validation::Errors;
use k8s_openapi::api::core::v1::{Container, SecurityContext};

const GATE: &str = "needs feature gate PrivilegedOverrides, which an operator admin turns on";

/// Every privileged thing `overrides` asks for, unless `allowed`.
pub(super) fn validate_privilege(errors: &mut Errors, overrides: &Overrides, allowed: bool) {
    if allowed {
        return;
    }
    for (i, volume) in overrides.volumes.iter().flatten().enumerate() {
        if volume.host_path.is_some() {
            errors.push(format!("spec.overrides.volumes[{i}].hostPath"), format!("a host path {GATE}"));
        }
    }
    let lists = [("containers", &overrides.containers), ("initContainers", &overrides.init_containers)];
    for (list, containers) in lists {
        for (i, container) in containers.iter().flatten().enumerate() {
            container_privilege(errors, &format!("spec.overrides.{list}[{i}]"), container);
        }
    }
}

fn container_privilege(errors: &mut Errors, path: &str, container: &Container) {
    let Some(security) = &container.security_context else { return };
    for (field, what) in privileges(security) {
        errors.push(format!("{path}.securityContext.{field}"), format!("{what} {GATE}"));
    }
}

/// The fields of `security` that grant more than a container gets by default.
fn privileges(security: &SecurityContext) -> Vec<(&'static str, &'static str)> {
    let mut found = Vec::new();
    if security.privileged == Some(true) {
        found.push(("privileged", "a privileged container"));
    }
    if security.capabilities.as_ref().and_then(|c| c.add.as_ref()).is_some_and(|a| !a.is_empty()) {
        found.push(("capabilities.add", "an added capability"));
    }
    if security.allow_privilege_escalation == Some(true) {
        found.push(("allowPrivilegeEscalation", "privilege escalation"));
    }
    if security.proc_mount.as_deref() == Some("Unmasked") {
        found.push(("procMount", "an unmasked /proc"));
    }
    if security.seccomp_profile.as_ref().is_some_and(|p| p.type_ == "Unconfined") {
        found.push(("seccompProfile.type", "an unconfined seccomp profile"));
    }
    if security.app_armor_profile.as_ref().is_some_and(|p| p.type_ == "Unconfined") {
        found.push(("appArmorProfile.type", "an unconfined AppArmor profile"));
    }
    if security.windows_options.as_ref().and_then(|w| w.host_process) == Some(true) {
        found.push(("windowsOptions.hostProcess", "a host process"));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn overrides(value: serde_json::Value) -> Overrides {
        serde_json::from_value(value).expect("overrides")
    }

    fn refused(value: serde_json::Value) -> Vec<String> {
        let mut errors = Errors::default();
        validate_privilege(&mut errors, &overrides(value), false);
        errors.into_vec().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn privileged_containers_added_capabilities_and_host_paths_need_the_gate() {
        let errors = refused(json!({
            "containers": [{"name": "sidecar", "securityContext": {"privileged": true,
                "capabilities": {"add": ["SYS_ADMIN"]}, "allowPrivilegeEscalation": true}}],
            "initContainers": [{"name": "prep", "securityContext": {"seccompProfile": {"type": "Unconfined"}}}],
            "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
        }));
        for field in [
            "spec.overrides.containers[0].securityContext.privileged",
            "spec.overrides.containers[0].securityContext.capabilities.add",
            "spec.overrides.containers[0].securityContext.allowPrivilegeEscalation",
            "spec.overrides.initContainers[0].securityContext.seccompProfile.type",
            "spec.overrides.volumes[0].hostPath",
        ] {
            assert!(
                errors.iter().any(|e| e.contains(field) && e.contains("PrivilegedOverrides")),
                "{field}: {errors:?}"
            );
        }
    }

    #[test]
    fn unprivileged_overrides_need_no_gate() {
        let errors = refused(json!({
            "containers": [{"name": "sidecar", "image": "x",
                "securityContext": {"privileged": false, "capabilities": {"drop": ["ALL"]}}}],
            "volumes": [{"name": "cfg", "configMap": {"name": "extra"}}, {"name": "tmp", "emptyDir": {}}],
            "labels": {"a": "b"},
        }));
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn with_the_gate_anything_goes() {
        let mut errors = Errors::default();
        let privileged = overrides(json!({"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}));
        validate_privilege(&mut errors, &privileged, true);
        assert!(errors.into_vec().is_empty());
    }
}
