//! Validation of `NodeSet`: create rules, and the transition rules that enforce the field
//! classification of design/nodeset.md.

use super::cel::{
    HOST_SELECTOR_LOCKED_MESSAGE, PRE_PROVISIONED_IMMUTABLE_MESSAGE, SELECTION_LOCKED_MESSAGE,
    TEMPLATE_PRESENCE_MESSAGE,
};
use super::config::{Dns, NetworkConfig, Variables};
use super::hash::effective_host_config;
use super::sources::{MAX_VARIABLES_FROM, VariablesFromSource};
use super::{HostPools, NodeSet, NodeSetSpec};
use crate::baremetalhost::{validate_image, validate_root_device_hints};
use crate::validation::{Errors, FieldError, is_dns1123_label, is_dns1123_subdomain, parse_ip, parse_ip_net};
use k8s_openapi::api::core::v1::SecretReference;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeSet;

/// Validates a NodeSet on create (`old` is `None`) or update. On update the old object's
/// status says which hosts are claimed, which is what the locks depend on.
pub fn validate_nodeset(nodeset: &NodeSet, old: Option<&NodeSet>) -> Vec<FieldError> {
    let mut errors = Errors::default();
    let spec = &nodeset.spec;
    let namespace = nodeset.metadata.namespace.as_deref();
    validate_template(&mut errors, spec, namespace);
    validate_nodes(&mut errors, spec, namespace);
    if let Some(template) = &spec.node_template {
        validate_networks(&mut errors, "spec.nodeTemplate.networks", template.networks.as_deref());
        if let Some(dns) = &template.dns {
            validate_dns(&mut errors, "spec.nodeTemplate.dns", dns);
        }
        validate_variables(&mut errors, "spec.nodeTemplate.variables", template.variables.as_ref());
        validate_variables_from(&mut errors, "spec.nodeTemplate.variablesFrom", template.variables_from.as_ref());
        validate_management_network(&mut errors, spec);
    }
    validate_services_and_rollout(&mut errors, spec);
    if let Some(old) = old {
        validate_transition(&mut errors, nodeset, old);
    }
    errors.into_vec()
}

/// The refusal of a NodeSet's `bmhNamespace` when it is another namespace that `pools` does not
/// open to the NodeSet's own (see [`HostPools`]).
pub fn validate_host_pool(nodeset: &NodeSet, pools: &HostPools) -> Option<FieldError> {
    if nodeset.spec.pre_provisioned() {
        return None;
    }
    pools.check(nodeset.metadata.namespace.as_deref().unwrap_or_default(), &nodeset.bmh_namespace())
}

fn validate_template(errors: &mut Errors, spec: &NodeSetSpec, namespace: Option<&str>) {
    let path = "spec.baremetalSetTemplate";
    let Some(template) = &spec.baremetal_set_template else {
        if !spec.pre_provisioned() {
            errors.push(path, TEMPLATE_PRESENCE_MESSAGE);
        }
        return;
    };
    if spec.pre_provisioned() {
        errors.push(path, TEMPLATE_PRESENCE_MESSAGE);
        return;
    }
    if let Some(ns) = template.bmh_namespace.as_deref()
        && !is_dns1123_label(ns)
    {
        errors.push(format!("{path}.bmhNamespace"), format!("{ns:?} is not a valid namespace name"));
    }
    match &template.image {
        Some(image) => validate_image(errors, &format!("{path}.image"), image),
        None => errors.push(format!("{path}.image"), "is required to provision hosts"),
    }
    if let Some(hints) = &template.root_device_hints {
        validate_root_device_hints(errors, &format!("{path}.rootDeviceHints"), hints);
    }
    if let Some(reqs) = &template.hardware_reqs {
        for (field, value) in [
            ("minCpuCount", reqs.min_cpu_count),
            ("minCpuMhz", reqs.min_cpu_mhz),
            ("minDiskGiB", reqs.min_disk_gib),
            ("minMemoryGiB", reqs.min_memory_gib),
        ] {
            if value.is_some_and(|v| v < 1) {
                errors.push(format!("{path}.hardwareReqs.{field}"), "must be at least 1");
            }
        }
    }
    check_firmware(errors, path, template.firmware_settings.as_ref(), template.firmware_updates.as_ref());
    let bmh_namespace = template.bmh_namespace.as_deref().or(namespace);
    for (field, reference) in [("userData", &template.user_data), ("networkData", &template.network_data)] {
        check_secret_namespace(errors, &format!("{path}.{field}"), reference.as_ref(), bmh_namespace);
    }
}

/// The BIOS settings and firmware updates of the template or of a host, at `path`.
fn check_firmware(
    errors: &mut Errors,
    path: &str,
    settings: Option<&super::firmware::FirmwareSettings>,
    updates: Option<&Vec<crate::firmware::FirmwareUpdate>>,
) {
    let settings = super::firmware::check_firmware_settings(&format!("{path}.firmwareSettings"), settings);
    let updates = super::firmware::check_firmware_updates(&format!("{path}.firmwareUpdates"), updates);
    for error in settings.into_iter().chain(updates) {
        errors.push(error.path, error.message);
    }
}

/// BareMetalHosts may only reference Secrets in their own namespace.
fn check_secret_namespace(
    errors: &mut Errors,
    path: &str,
    reference: Option<&SecretReference>,
    bmh_namespace: Option<&str>,
) {
    let Some(reference) = reference else {
        return;
    };
    if reference.name.as_deref().unwrap_or_default().is_empty() {
        errors.push(format!("{path}.name"), "is required");
    }
    if let (Some(ns), Some(bmh_ns)) = (reference.namespace.as_deref(), bmh_namespace)
        && !ns.is_empty()
        && ns != bmh_ns
    {
        errors.push(format!("{path}.namespace"), format!("must be the BareMetalHosts' namespace {bmh_ns:?}"));
    }
}

fn validate_nodes(errors: &mut Errors, spec: &NodeSetSpec, namespace: Option<&str>) {
    let bmh_namespace = spec.baremetal_set_template.as_ref().and_then(|t| t.bmh_namespace.as_deref()).or(namespace);
    for (hostname, section) in spec.nodes.iter().flatten() {
        let path = format!("spec.nodes[{hostname}]");
        if hostname.len() > 63 || !is_dns1123_subdomain(hostname) {
            errors.push(path.clone(), "the host name must be a lowercase DNS name of at most 63 characters");
        }
        if spec.pre_provisioned() {
            for (field, set) in [
                ("bmhLabelSelector", section.bmh_label_selector.is_some()),
                ("userData", section.user_data.is_some()),
                ("networkData", section.network_data.is_some()),
                ("reprovisionToken", section.reprovision_token.is_some()),
                ("firmwareSettings", section.firmware_settings.is_some()),
                ("firmwareUpdates", section.firmware_updates.is_some()),
            ] {
                if set {
                    errors.push(format!("{path}.{field}"), "cannot be used when preProvisioned is true");
                }
            }
        } else {
            check_secret_namespace(errors, &format!("{path}.userData"), section.user_data.as_ref(), bmh_namespace);
            check_secret_namespace(
                errors,
                &format!("{path}.networkData"),
                section.network_data.as_ref(),
                bmh_namespace,
            );
        }
        check_firmware(errors, &path, section.firmware_settings.as_ref(), section.firmware_updates.as_ref());
        validate_networks(errors, &format!("{path}.networks"), section.networks.as_deref());
        validate_variables(errors, &format!("{path}.variables"), section.variables.as_ref());
        validate_variables_from(errors, &format!("{path}.variablesFrom"), section.variables_from.as_ref());
    }
}

fn validate_networks(errors: &mut Errors, path: &str, networks: Option<&[NetworkConfig]>) {
    let mut names = BTreeSet::new();
    for (i, network) in networks.unwrap_or_default().iter().enumerate() {
        let npath = format!("{path}[{i}]");
        if network.name.trim().is_empty() {
            errors.push(format!("{npath}.name"), "is required");
        } else if !names.insert(network.name.as_str()) {
            errors.push(format!("{npath}.name"), format!("network {:?} is listed twice", network.name));
        }
        if let Some(mtu) = network.mtu
            && !(576..=9216).contains(&mtu)
        {
            errors.push(format!("{npath}.mtu"), format!("{mtu} is outside 576-9216"));
        }
        if let Some(vlan) = network.vlan
            && !(1..=4094).contains(&vlan)
        {
            errors.push(format!("{npath}.vlan"), format!("{vlan} is not a valid VLAN ID (1-4094)"));
        }
        for (j, address) in network.addresses.iter().flatten().enumerate() {
            if parse_ip_net(address).is_none() {
                errors.push(
                    format!("{npath}.addresses[{j}]"),
                    format!("{address:?} must be an address in CIDR notation, e.g. 192.0.2.10/24"),
                );
            }
        }
        if let Some(gateway) = network.gateway.as_deref()
            && parse_ip(gateway).is_none()
        {
            errors.push(format!("{npath}.gateway"), format!("{gateway:?} is not a valid IP address"));
        }
        for (j, route) in network.routes.iter().flatten().enumerate() {
            let rpath = format!("{npath}.routes[{j}]");
            if route.to != "default" && parse_ip_net(&route.to).is_none() {
                errors.push(format!("{rpath}.to"), format!("{:?} must be a CIDR or \"default\"", route.to));
            }
            if parse_ip(&route.via).is_none() {
                errors.push(format!("{rpath}.via"), format!("{:?} is not a valid IP address", route.via));
            }
            if route.metric.is_some_and(|m| m < 0) {
                errors.push(format!("{rpath}.metric"), "must not be negative");
            }
        }
        if let Some(dns) = &network.dns {
            validate_dns(errors, &format!("{npath}.dns"), dns);
        }
    }
}

fn validate_dns(errors: &mut Errors, path: &str, dns: &Dns) {
    for (i, server) in dns.nameservers.iter().flatten().enumerate() {
        if parse_ip(server).is_none() {
            errors.push(format!("{path}.nameservers[{i}]"), format!("{server:?} is not a valid IP address"));
        }
    }
    for (i, domain) in dns.search.iter().flatten().enumerate() {
        if !is_dns1123_subdomain(&domain.to_ascii_lowercase()) {
            errors.push(format!("{path}.search[{i}]"), format!("{domain:?} is not a valid domain"));
        }
    }
}

fn validate_variables(errors: &mut Errors, path: &str, variables: Option<&Variables>) {
    for name in variables.into_iter().flat_map(|v| v.keys()) {
        let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            errors.push(
                format!("{path}[{name}]"),
                "variable names must start with a letter or '_' and contain only letters, digits and '_'",
            );
        }
    }
}

/// The shape of a `variablesFrom` list: what the webhook can check. Whether each source exists
/// and what keys it has only the controller sees (`sources::check_sources`).
fn validate_variables_from(errors: &mut Errors, path: &str, list: Option<&Vec<VariablesFromSource>>) {
    let list = list.map(Vec::as_slice).unwrap_or_default();
    if list.len() > MAX_VARIABLES_FROM {
        errors.push(path, format!("lists {} sources, at most {MAX_VARIABLES_FROM}", list.len()));
    }
    for (i, entry) in list.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let names = [("secretRef", &entry.secret_ref), ("configMapRef", &entry.config_map_ref)];
        let set: Vec<_> = names.iter().filter_map(|(field, r)| r.as_ref().map(|r| (field, r))).collect();
        if set.len() != 1 {
            errors.push(at.clone(), "must set exactly one of secretRef and configMapRef");
        }
        for (field, reference) in set {
            if !is_dns1123_subdomain(&reference.name) {
                errors.push(format!("{at}.{field}.name"), format!("{:?} is not a valid object name", reference.name));
            }
        }
    }
}

fn validate_management_network(errors: &mut Errors, spec: &NodeSetSpec) {
    let Some(name) = spec.node_template.as_ref().and_then(|t| t.management_network.as_deref()) else {
        return;
    };
    let hosts: Vec<(&String, _)> = spec.nodes.iter().flatten().collect();
    let missing = hosts.iter().find(|(hostname, section)| {
        !effective_host_config(hostname, spec.node_template.as_ref(), Some(section))
            .networks
            .iter()
            .any(|n| n.name == name)
    });
    let in_template =
        spec.node_template.as_ref().and_then(|t| t.networks.as_ref()).is_some_and(|n| n.iter().any(|n| n.name == name));
    if let Some((hostname, _)) = missing {
        errors.push("spec.nodeTemplate.managementNetwork", format!("{name:?} is not a network of host {hostname}"));
    } else if hosts.is_empty() && !in_template {
        errors.push("spec.nodeTemplate.managementNetwork", format!("{name:?} is not one of nodeTemplate.networks"));
    }
}

fn validate_services_and_rollout(errors: &mut Errors, spec: &NodeSetSpec) {
    let mut seen = BTreeSet::new();
    for (i, service) in spec.services.iter().flatten().enumerate() {
        let path = format!("spec.services[{i}]");
        if !is_dns1123_subdomain(service) {
            errors.push(path, format!("{service:?} is not a valid NodeSetService name"));
        } else if !seen.insert(service.as_str()) {
            errors.push(path, format!("service {service:?} is listed twice"));
        }
    }
    let max_unavailable = spec.rollout.as_ref().and_then(|r| r.max_unavailable.as_ref());
    match max_unavailable {
        Some(IntOrString::Int(n)) if *n < 1 => {
            errors.push("spec.rollout.maxUnavailable", "must be at least 1");
        }
        Some(IntOrString::String(s)) => {
            let percent = s.strip_suffix('%').and_then(|p| p.parse::<u32>().ok());
            if !percent.is_some_and(|p| (1..=100).contains(&p)) {
                errors.push(
                    "spec.rollout.maxUnavailable",
                    format!("{s:?} must be a count or a percentage between 1% and 100%"),
                );
            }
        }
        _ => {}
    }
}

/// Claimed: any host of the old object has a BareMetalHost.
fn claimed(old: &NodeSet) -> bool {
    old.status
        .as_ref()
        .is_some_and(|s| s.claimed_hosts.unwrap_or(0) > 0 || s.hosts.iter().flatten().any(|(_, h)| h.bmh_ref.is_some()))
}

fn validate_transition(errors: &mut Errors, new: &NodeSet, old: &NodeSet) {
    if new.spec.pre_provisioned() != old.spec.pre_provisioned() {
        errors.push("spec.preProvisioned", PRE_PROVISIONED_IMMUTABLE_MESSAGE);
    }
    if claimed(old)
        && let Some(old_template) = &old.spec.baremetal_set_template
    {
        match &new.spec.baremetal_set_template {
            None => errors.push("spec.baremetalSetTemplate", "cannot be removed once hosts are claimed"),
            Some(template) => {
                let changed = [
                    ("bmhNamespace", template.bmh_namespace != old_template.bmh_namespace),
                    ("bmhLabelSelector", template.bmh_label_selector != old_template.bmh_label_selector),
                    ("hardwareReqs", template.hardware_reqs != old_template.hardware_reqs),
                ];
                for (field, changed) in changed {
                    if changed {
                        errors.push(format!("spec.baremetalSetTemplate.{field}"), SELECTION_LOCKED_MESSAGE);
                    }
                }
            }
        }
    }
    let old_hosts = old.status.as_ref().and_then(|s| s.hosts.as_ref());
    for (hostname, section) in new.spec.nodes.iter().flatten() {
        let host_claimed = old_hosts.and_then(|h| h.get(hostname)).is_some_and(|h| h.bmh_ref.is_some());
        let old_section = old.spec.nodes.as_ref().and_then(|n| n.get(hostname));
        if let Some(old_section) = old_section
            && host_claimed
            && section.bmh_label_selector != old_section.bmh_label_selector
        {
            errors.push(format!("spec.nodes[{hostname}].bmhLabelSelector"), HOST_SELECTOR_LOCKED_MESSAGE);
        }
    }
}

#[cfg(test)]
mod variables_from_tests {
    use super::*;
    use serde_json::json;

    fn nodeset(template_from: serde_json::Value) -> NodeSet {
        serde_json::from_value(json!({"apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSet",
            "metadata": {"name": "n", "namespace": "metal3"},
            "spec": {"preProvisioned": true, "nodeTemplate": {"variablesFrom": template_from},
                     "nodes": {"c-0": {"variablesFrom": [{"configMapRef": {"name": "Not_A_Name"}}]}}}}))
        .expect("nodeset")
    }

    #[test]
    fn the_webhook_checks_the_shape_of_variables_from() {
        let errors = validate_nodeset(&nodeset(json!([{"secretRef": {"name": "db"}}])), None);
        let text = crate::validation::summarize(&errors);
        assert!(text.contains("spec.nodes[c-0].variablesFrom[0].configMapRef.name"), "{text}");
        assert_eq!(errors.len(), 1, "{text}");
        let both = json!([{"secretRef": {"name": "a"}, "configMapRef": {"name": "b"}}, {"optional": true}]);
        let text = crate::validation::summarize(&validate_nodeset(&nodeset(both), None));
        assert!(
            text.contains("variablesFrom[0]: must set exactly one")
                && text.contains("variablesFrom[1]: must set exactly one"),
            "{text}"
        );
        let many: Vec<_> = (0..17).map(|i| json!({"secretRef": {"name": format!("s{i}")}})).collect();
        let text = crate::validation::summarize(&validate_nodeset(&nodeset(json!(many)), None));
        assert!(text.contains("spec.nodeTemplate.variablesFrom: lists 17 sources, at most 16"), "{text}");
    }
}
