//! Effective host configuration and the hashes that tell desired from deployed.
//!
//! Hashes are SHA-256 over a canonical JSON form (object keys sorted at every level), so they
//! depend only on content: never on map ordering, the order networks are listed in, or which
//! serde_json features the build enabled.

use super::NodeSetSpec;
use super::config::{Dns, NetworkConfig, NodeSection, NodeTemplate, Variables};
use super::sources::{self, Sources};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// A host's day-2 configuration: the template merged with the host's overrides. This is what
/// services receive in their inventory and what the config hash covers (with its variables
/// from Secrets and ConfigMaps by digest only, see [`host_config_hash_with`]). Its `Debug`
/// prints variable names, never values: they may come from Secrets.
#[derive(Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EffectiveHostConfig {
    /// The host name (key of spec.nodes).
    pub hostname: String,
    /// Resolver settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dns: Option<Dns>,
    /// Name of the network whose first address reaches the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub management_network: Option<String>,
    /// Networks merged by name, sorted by name.
    pub networks: Vec<NetworkConfig>,
    /// Variables, the host's winning over the template's.
    pub variables: Variables,
}

impl std::fmt::Debug for EffectiveHostConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EffectiveHostConfig")
            .field("hostname", &self.hostname)
            .field("dns", &self.dns)
            .field("management_network", &self.management_network)
            .field("networks", &self.networks)
            .field("variables", &self.variables.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl EffectiveHostConfig {
    /// The first address (without prefix) of the management network, if any.
    pub fn management_address(&self) -> Option<&str> {
        let name = self.management_network.as_deref()?;
        let network = self.networks.iter().find(|n| n.name == name)?;
        let first = network.addresses.as_ref()?.first()?;
        Some(first.split('/').next().unwrap_or(first))
    }
}

/// Merges `template` and `host` into a host's effective configuration, without the variables
/// of `variablesFrom` (see [`effective_host_config_with`]).
pub fn effective_host_config(
    hostname: &str,
    template: Option<&NodeTemplate>,
    host: Option<&NodeSection>,
) -> EffectiveHostConfig {
    effective_host_config_with(hostname, template, host, &Sources::default())
}

/// Merges `template` and `host` into a host's effective configuration, with the variables of
/// `sources` (what their `variablesFrom` name, as read). Variables, lowest first: the
/// template's variablesFrom in list order, its variables, the host's variablesFrom, its
/// variables.
pub fn effective_host_config_with(
    hostname: &str,
    template: Option<&NodeTemplate>,
    host: Option<&NodeSection>,
    from: &Sources,
) -> EffectiveHostConfig {
    let mut networks: BTreeMap<String, NetworkConfig> = BTreeMap::new();
    for network in template.and_then(|t| t.networks.as_ref()).into_iter().flatten() {
        networks.insert(network.name.clone(), network.clone());
    }
    for network in host.and_then(|h| h.networks.as_ref()).into_iter().flatten() {
        let merged = match networks.remove(&network.name) {
            Some(base) => merge_network(base, network),
            None => network.clone(),
        };
        networks.insert(merged.name.clone(), merged);
    }
    let mut variables = Variables::new();
    sources::merge_from(&mut variables, template.and_then(|t| t.variables_from.as_ref()), from);
    variables.extend(template.and_then(|t| t.variables.clone()).unwrap_or_default());
    sources::merge_from(&mut variables, host.and_then(|h| h.variables_from.as_ref()), from);
    variables.extend(host.and_then(|h| h.variables.clone()).unwrap_or_default());
    EffectiveHostConfig {
        hostname: hostname.to_string(),
        dns: template.and_then(|t| t.dns.clone()),
        management_network: template.and_then(|t| t.management_network.clone()),
        networks: networks.into_values().collect(),
        variables,
    }
}

/// Field by field: the host's value where it sets one, the template's otherwise.
fn merge_network(base: NetworkConfig, host: &NetworkConfig) -> NetworkConfig {
    let host = host.clone();
    NetworkConfig {
        addresses: host.addresses.or(base.addresses),
        dns: host.dns.or(base.dns),
        gateway: host.gateway.or(base.gateway),
        interface: host.interface.or(base.interface),
        mtu: host.mtu.or(base.mtu),
        name: base.name,
        routes: host.routes.or(base.routes),
        vlan: host.vlan.or(base.vlan),
    }
}

/// Hash of a host's effective day-2 configuration, without `variablesFrom` content.
pub fn host_config_hash(hostname: &str, template: Option<&NodeTemplate>, host: Option<&NodeSection>) -> String {
    host_config_hash_with(hostname, template, host, &Sources::default())
}

/// Hash of a host's effective day-2 configuration. The variables of `variablesFrom` count by
/// source: kind, name and a digest of its content (or that it is absent), in precedence
/// order, never by value: status carries the hash, and the values may be secrets. Without any `variablesFrom` it is the hash of the configuration as before the field
/// existed, so an upgrade reruns nothing.
pub fn host_config_hash_with(
    hostname: &str,
    template: Option<&NodeTemplate>,
    host: Option<&NodeSection>,
    from: &Sources,
) -> String {
    let config = effective_host_config(hostname, template, host);
    let (template_from, host_from) =
        (template.and_then(|t| t.variables_from.as_ref()), host.and_then(|h| h.variables_from.as_ref()));
    if sources::listed(template_from).chain(sources::listed(host_from)).next().is_none() {
        return hash_of(&config);
    }
    hash_of(&serde_json::json!({
        "config": config,
        "variablesFrom": {
            "template": sources::digests(template_from, from),
            "host": sources::digests(host_from, from),
        },
    }))
}

/// Hash of a NodeSet's desired configuration: every host's config hash and the services list,
/// without `variablesFrom` content.
pub fn nodeset_config_hash(spec: &NodeSetSpec) -> String {
    nodeset_config_hash_with(spec, &Sources::default())
}

/// Hash of a NodeSet's desired configuration: every host's config hash (with `from`, see
/// [`host_config_hash_with`]) and the services list.
pub fn nodeset_config_hash_with(spec: &NodeSetSpec, from: &Sources) -> String {
    let template = spec.node_template.as_ref();
    let hosts: BTreeMap<&str, String> = spec
        .nodes
        .iter()
        .flatten()
        .map(|(name, section)| (name.as_str(), host_config_hash_with(name, template, Some(section), from)))
        .collect();
    hash_of(&serde_json::json!({"hosts": hosts, "services": spec.services}))
}

/// Hash of the inputs a host is provisioned with (class (b) fields): image, boot mode, root
/// device hints, user and network data Secrets and the ramdisk network data. `None` for a
/// preProvisioned NodeSet. Network data generated from the day-2 networks is not included:
/// those networks are applied in place, so editing them must not mark hosts outdated.
pub fn provisioning_hash(hostname: &str, spec: &NodeSetSpec) -> Option<String> {
    let template = spec.baremetal_set_template.as_ref()?;
    let host = spec.nodes.as_ref().and_then(|n| n.get(hostname));
    let user_data = host.and_then(|h| h.user_data.as_ref()).or(template.user_data.as_ref());
    let network_data = host.and_then(|h| h.network_data.as_ref()).or(template.network_data.as_ref());
    Some(hash_of(&serde_json::json!({
        "image": template.image,
        "bootMode": template.boot_mode,
        "rootDeviceHints": template.root_device_hints,
        "userData": user_data,
        "networkData": network_data,
        "provisioningNetwork": template.provisioning_network,
    })))
}

/// SHA-256 of the canonical JSON of `value`, in lowercase hex.
pub(crate) fn hash_of<T: Serialize>(value: &T) -> String {
    // Serializing our own types into a Value cannot fail (no non-string map keys, no
    // failing Serialize impls); a Null fallback still yields a stable hash.
    let value = serde_json::to_value(value).unwrap_or(Value::Null);
    let mut canonical = String::new();
    write_canonical(&value, &mut canonical);
    hex::encode(Sha256::digest(canonical.as_bytes()))
}

/// Writes JSON with object keys sorted, whatever map type serde_json was built with.
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodeset::sources::{SourceData, SourceRef, VariablesFromSource};
    use serde_json::json;

    fn template() -> NodeTemplate {
        serde_json::from_value(json!({
            "networks": [
                {"name": "ctlplane", "interface": "eno1", "mtu": 1500, "gateway": "192.0.2.1"},
                {"name": "storage", "interface": "eno2", "vlan": 30, "mtu": 9000}
            ],
            "dns": {"nameservers": ["192.0.2.53"]},
            "managementNetwork": "ctlplane",
            "variables": {"ntp": ["ntp1"], "timezone": "UTC"}
        }))
        .expect("template")
    }

    fn host() -> NodeSection {
        serde_json::from_value(json!({
            "networks": [
                {"name": "ctlplane", "addresses": ["192.0.2.10/24"]},
                {"name": "tenant", "interface": "eno3"}
            ],
            "variables": {"timezone": "Europe/Paris", "role": "hci"}
        }))
        .expect("host")
    }

    #[test]
    fn effective_config_merges_networks_by_name_and_variables_by_key() {
        let config = effective_host_config("compute-0", Some(&template()), Some(&host()));
        let names: Vec<_> = config.networks.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["ctlplane", "storage", "tenant"]);
        let ctlplane = &config.networks[0];
        assert_eq!(ctlplane.mtu, Some(1500), "template field kept");
        assert_eq!(ctlplane.interface.as_deref(), Some("eno1"));
        assert_eq!(ctlplane.addresses, Some(vec!["192.0.2.10/24".to_string()]));
        assert_eq!(config.variables["timezone"], json!("Europe/Paris"), "host wins");
        assert_eq!(config.variables["ntp"], json!(["ntp1"]), "template kept");
        assert_eq!(config.variables["role"], json!("hci"));
        assert_eq!(config.management_address(), Some("192.0.2.10"));
    }

    #[test]
    fn hash_is_stable_across_map_and_network_ordering() {
        let a = host_config_hash("compute-0", Some(&template()), Some(&host()));
        let mut reordered = template();
        if let Some(networks) = reordered.networks.as_mut() {
            networks.reverse();
        }
        let variables: Variables = serde_json::from_str(r#"{"timezone":"UTC","ntp":["ntp1"]}"#).expect("variables");
        reordered.variables = Some(variables);
        let b = host_config_hash("compute-0", Some(&reordered), Some(&host()));
        assert_eq!(a, b);
        assert_eq!(a.len(), 64);
    }

    #[test]
    fn hash_changes_with_day2_content_and_hostname() {
        let base = host_config_hash("compute-0", Some(&template()), Some(&host()));
        let mut mtu = template();
        if let Some(n) = mtu.networks.as_mut() {
            n[0].mtu = Some(9000);
        }
        assert_ne!(base, host_config_hash("compute-0", Some(&mtu), Some(&host())));
        assert_ne!(base, host_config_hash("compute-1", Some(&template()), Some(&host())));
    }

    #[test]
    fn nested_variable_key_order_does_not_matter() {
        let one: Variables = serde_json::from_str(r#"{"x":{"a":1,"b":[{"c":1,"d":2}]}}"#).expect("v");
        let two: Variables = serde_json::from_str(r#"{"x":{"b":[{"d":2,"c":1}],"a":1}}"#).expect("v");
        let t1 = NodeTemplate { variables: Some(one), ..Default::default() };
        let t2 = NodeTemplate { variables: Some(two), ..Default::default() };
        assert_eq!(host_config_hash("h", Some(&t1), None), host_config_hash("h", Some(&t2), None));
    }

    #[test]
    fn nodeset_hash_covers_services_and_provisioning_hash_ignores_day2() {
        let mut spec: NodeSetSpec = serde_json::from_value(json!({
            "baremetalSetTemplate": {"image": {"url": "https://x/os.qcow2", "checksum": "https://x/os.sha256", "checksumType": "sha256"}},
            "nodeTemplate": {"networks": [{"name": "ctlplane", "mtu": 1500}]},
            "nodes": {"compute-0": {}},
            "services": ["a", "b"]
        }))
        .expect("spec");
        let config = nodeset_config_hash(&spec);
        let provisioning = provisioning_hash("compute-0", &spec);
        spec.services = Some(vec!["b".into(), "a".into()]);
        assert_ne!(config, nodeset_config_hash(&spec), "service order matters");
        if let Some(t) = spec.node_template.as_mut().and_then(|t| t.networks.as_mut()) {
            t[0].mtu = Some(9000);
        }
        assert_eq!(provisioning, provisioning_hash("compute-0", &spec));
        if let Some(image) = spec.baremetal_set_template.as_mut().and_then(|t| t.image.as_mut()) {
            image.url = "https://x/os2.qcow2".into();
        }
        assert_ne!(provisioning, provisioning_hash("compute-0", &spec));
        spec.baremetal_set_template = None;
        assert_eq!(provisioning_hash("compute-0", &spec), None);
    }

    fn sources(entries: &[(SourceRef, &[(&str, &str)])]) -> Sources {
        Sources(
            entries
                .iter()
                .map(|(r, kv)| {
                    let data = kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
                    (r.clone(), SourceData { data, binary: Vec::new() })
                })
                .collect(),
        )
    }

    fn from(list: serde_json::Value) -> Option<Vec<VariablesFromSource>> {
        Some(serde_json::from_value(list).expect("variablesFrom"))
    }

    #[test]
    fn variables_from_merge_lowest_first_template_sources_template_host_sources_host() {
        let mut t = template();
        t.variables = Some(serde_json::from_value(json!({"b": "template", "d": "template"})).expect("v"));
        t.variables_from = from(json!([{"secretRef": {"name": "s1"}}, {"configMapRef": {"name": "c1"}}]));
        let mut h = host();
        h.variables = Some(serde_json::from_value(json!({"d": "host"})).expect("v"));
        h.variables_from =
            from(json!([{"secretRef": {"name": "s2"}}, {"secretRef": {"name": "gone"}, "optional": true}]));
        let read = sources(&[
            (SourceRef::secret("s1"), &[("a", "val-s1"), ("b", "val-s1"), ("c", "val-s1")]),
            (SourceRef::config_map("c1"), &[("a", "val-c1")]),
            (SourceRef::secret("s2"), &[("c", "val-s2"), ("d", "val-s2"), ("bad-key", "val-x")]),
        ]);
        let config = effective_host_config_with("compute-0", Some(&t), Some(&h), &read);
        let v = |k: &str| config.variables.get(k).cloned();
        assert_eq!(v("a"), Some(json!("val-c1")), "a later source of the list wins");
        assert_eq!(v("b"), Some(json!("template")), "template variables win over template sources");
        assert_eq!(v("c"), Some(json!("val-s2")), "host sources win over the template's");
        assert_eq!(v("d"), Some(json!("host")), "host variables win over everything");
        assert_eq!(v("bad-key"), None, "not a variable name: left out (validation blocks on it)");
        let debug = format!("{config:?} {read:?}");
        assert!(!debug.contains("val-") && !debug.contains("\"host\""), "values never in Debug: {debug}");
    }

    #[test]
    fn the_hash_covers_source_content_by_digest_and_is_unchanged_without_variables_from() {
        let plain = host_config_hash("compute-0", Some(&template()), Some(&host()));
        assert_eq!(plain, host_config_hash_with("compute-0", Some(&template()), Some(&host()), &Sources::default()));
        let mut h = host();
        h.variables_from = from(json!([{"secretRef": {"name": "db"}, "optional": true}]));
        let absent = host_config_hash_with("compute-0", Some(&template()), Some(&h), &Sources::default());
        assert_ne!(plain, absent, "naming a source is an edit");
        let one = sources(&[(SourceRef::secret("db"), &[("password", "hunter2")])]);
        let two = sources(&[(SourceRef::secret("db"), &[("password", "hunter3")])]);
        let a = host_config_hash_with("compute-0", Some(&template()), Some(&h), &one);
        assert_ne!(a, absent, "the source appearing moves the hash");
        assert_ne!(a, host_config_hash_with("compute-0", Some(&template()), Some(&h), &two), "content moves it");
        assert_eq!(a, host_config_hash_with("compute-0", Some(&template()), Some(&h), &one.clone()));
        let mut spec = NodeSetSpec { node_template: Some(template()), ..Default::default() };
        spec.nodes = Some(BTreeMap::from([("compute-0".to_string(), h)]));
        assert_ne!(nodeset_config_hash_with(&spec, &one), nodeset_config_hash_with(&spec, &two));
    }

    #[test]
    fn a_missing_source_or_a_bad_key_is_named_without_its_values() {
        let list = from(json!([{"secretRef": {"name": "db"}}, {"configMapRef": {"name": "opt"}, "optional": true},
                               {"secretRef": {"name": "keys"}}]));
        let mut read = sources(&[(SourceRef::secret("keys"), &[("ok", "v"), ("not-ok", "sentinel-value")])]);
        if let Some(d) = read.0.get_mut(&SourceRef::secret("keys")) {
            d.binary.push("blob".into());
        }
        let errors = crate::nodeset::sources::check_sources("spec.nodeTemplate.variablesFrom", list.as_ref(), &read);
        let text = crate::validation::summarize(&errors);
        assert!(text.contains("spec.nodeTemplate.variablesFrom[0]: Secret db does not exist"), "{text}");
        assert!(!text.contains("ConfigMap opt"), "an optional source may be missing: {text}");
        assert!(
            text.contains("variablesFrom[2]: Secret keys has keys that are not variable names")
                && text.contains("not-ok")
        );
        assert!(text.contains("blob") && !text.contains("sentinel-value"), "{text}");
    }
}
