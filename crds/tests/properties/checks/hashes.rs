//! Properties of the NodeSet hashes that tell desired from deployed configuration
//! (design/nodeset.md):
//!
//! - the order of map keys, and of networks named once, never changes a hash;
//! - any change of a class-(a) configuration field changes the config hash of exactly the
//!   hosts whose effective configuration it changes, and the NodeSet's hash; so do the
//!   services list and the set of hosts;
//! - the provisioning hash moves with the class-(b) fields of exactly the hosts they apply to,
//!   and never with day-2 configuration (networks, variables, DNS, services).

use super::schema::{self, one_in, pick};
use super::valid::nodeset::network;
use super::validation::typed;
use arbitrary::{Result, Unstructured};
use crds::nodeset::{
    Dns, EffectiveHostConfig, NetworkConfig, NodeSection, NodeSetSpec, Route, effective_host_config, host_config_hash,
    nodeset_config_hash, provisioning_hash,
};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// A spec the schema admits, with every networks list naming each network once (as
/// validation requires; with duplicates, the order decides which entry wins).
fn spec(u: &mut Unstructured) -> Result<NodeSetSpec> {
    let value = schema::value(u, schema::schema_of("NodeSet", "/properties/spec"), 1)?;
    let mut spec: NodeSetSpec = typed(&value, "NodeSet spec");
    let unique = |networks: &mut Option<Vec<NetworkConfig>>| {
        let mut seen = BTreeSet::new();
        if let Some(list) = networks {
            list.retain(|n| seen.insert(n.name.clone()));
        }
    };
    unique(&mut spec.node_template.get_or_insert_with(Default::default).networks);
    for section in spec.nodes.iter_mut().flat_map(|n| n.values_mut()) {
        unique(&mut section.networks);
    }
    Ok(spec)
}

/// Every hash of a spec, and the effective configurations behind the host hashes.
#[derive(Debug, PartialEq)]
struct Hashes {
    nodeset: String,
    hosts: BTreeMap<String, (EffectiveHostConfig, String, Option<String>)>,
}

fn hashes(spec: &NodeSetSpec) -> Hashes {
    let hosts = spec
        .nodes
        .iter()
        .flatten()
        .map(|(name, section)| {
            let config = effective_host_config(name, spec.node_template.as_ref(), Some(section));
            let hash = host_config_hash(name, spec.node_template.as_ref(), Some(section));
            (name.clone(), (config, hash, provisioning_hash(name, spec)))
        })
        .collect();
    Hashes { nodeset: nodeset_config_hash(spec), hosts }
}

/// `value` as JSON text with the keys of every object in a random order.
fn shuffled_json(u: &mut Unstructured, value: &Value) -> Result<String> {
    Ok(match value {
        Value::Object(fields) => {
            let mut entries: Vec<(&String, &Value)> = fields.iter().collect();
            shuffle(u, &mut entries)?;
            let parts = entries
                .into_iter()
                .map(|(k, v)| Ok(format!("{}:{}", Value::from(k.as_str()), shuffled_json(u, v)?)))
                .collect::<Result<Vec<_>>>()?;
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => {
            format!("[{}]", items.iter().map(|i| shuffled_json(u, i)).collect::<Result<Vec<_>>>()?.join(","))
        }
        scalar => scalar.to_string(),
    })
}

fn shuffle<T>(u: &mut Unstructured, items: &mut [T]) -> Result<()> {
    for i in (1..items.len()).rev() {
        let j = u.int_in_range(0..=i)?;
        items.swap(i, j);
    }
    Ok(())
}

/// Reordering map keys (in the JSON the apiserver stores) and networks changes no hash.
pub fn order(u: &mut Unstructured) -> Result<()> {
    let spec = spec(u)?;
    let text = shuffled_json(u, &serde_json::to_value(&spec).expect("serializes"))?;
    let mut reread: NodeSetSpec = serde_json::from_str(&text).expect("reordered JSON reads");
    for networks in reread
        .node_template
        .iter_mut()
        .filter_map(|t| t.networks.as_mut())
        .chain(reread.nodes.iter_mut().flat_map(|n| n.values_mut()).filter_map(|s| s.networks.as_mut()))
    {
        shuffle(u, networks)?;
    }
    assert_eq!(hashes(&reread), hashes(&spec), "reordered:\n{text}");
    Ok(())
}

/// The host a per-host edit applies to, added when the spec has none.
fn some_host(u: &mut Unstructured, spec: &mut NodeSetSpec) -> Result<String> {
    let nodes = spec.nodes.get_or_insert_with(Default::default);
    if nodes.is_empty() {
        nodes.insert("compute-0".into(), NodeSection::default());
    }
    let names: Vec<String> = nodes.keys().cloned().collect();
    Ok(u.choose(&names)?.clone())
}

/// `current` with `field` set to a value it does not have.
fn network_field(field: &str, current: &NetworkConfig) -> NetworkConfig {
    let mut changed = current.clone();
    let more = |list: &Option<Vec<String>>, item: &str| {
        Some([list.clone().unwrap_or_default(), vec![item.to_string()]].concat())
    };
    match field {
        "mtu" => changed.mtu = Some(if current.mtu == Some(1500) { 9000 } else { 1500 }),
        "vlan" => changed.vlan = Some(current.vlan.map_or(1, |v| v.wrapping_add(1))),
        "gateway" => changed.gateway = Some(format!("{}0", current.gateway.as_deref().unwrap_or("192.0.2.1"))),
        "interface" => changed.interface = Some(format!("{}x", current.interface.as_deref().unwrap_or("eno"))),
        "addresses" => changed.addresses = more(&current.addresses, "192.0.2.99/24"),
        "routes" => {
            let route = Route { to: "default".into(), via: "192.0.2.254".into(), metric: None };
            changed.routes =
                Some(if current.routes.as_ref().is_some_and(Vec::is_empty) { vec![route] } else { vec![] });
        }
        _ => {
            let dns = current.dns.clone().unwrap_or_default();
            changed.dns = Some(Dns { search: more(&dns.search, "added.example.com"), ..dns });
        }
    }
    changed
}

const NETWORK_FIELDS: &[&str] = &["mtu", "vlan", "gateway", "interface", "addresses", "routes", "dns"];

/// One class-(a) edit; returns the hosts whose effective configuration it must change, or
/// `None` for an edit of the services or the set of hosts (which moves only the NodeSet hash).
fn day2_edit(u: &mut Unstructured, spec: &mut NodeSetSpec) -> Result<Option<BTreeSet<String>>> {
    let host = some_host(u, spec)?;
    let all: BTreeSet<String> = spec.nodes.iter().flatten().map(|(k, _)| k.clone()).collect();
    let only = |h: &str| BTreeSet::from([h.to_string()]);
    let template = spec.node_template.get_or_insert_with(Default::default);
    let nodes = spec.nodes.get_or_insert_with(Default::default);
    let effective = effective_host_config(&host, Some(template), nodes.get(&host));
    Ok(Some(match u.int_in_range(0..=8)? {
        0 => {
            let key = pick(u, &["ntp_servers", "role", "timezone"])?;
            let mut value = schema::any_json(u, 2)?;
            if effective.variables.get(key) == Some(&value) {
                value = json!([value]);
            }
            nodes
                .entry(host.clone())
                .or_default()
                .variables
                .get_or_insert_with(Default::default)
                .insert(key.into(), value);
            only(&host)
        }
        1 => {
            let name = pick(u, &["ctlplane", "storage", "new-net"])?;
            let field = pick(u, NETWORK_FIELDS)?;
            let blank = NetworkConfig { name: name.into(), ..Default::default() };
            let current = effective.networks.iter().find(|n| n.name == name).unwrap_or(&blank);
            let edited = network_field(field, current);
            let list = nodes.entry(host.clone()).or_default().networks.get_or_insert_with(Default::default);
            match list.iter_mut().find(|n| n.name == name) {
                Some(entry) => *entry = entry.clone().merge_field(field, &edited),
                // A new entry setting only this field: the template's entry supplies the rest.
                None => list.push(blank.merge_field(field, &edited)),
            }
            only(&host)
        }
        2 => {
            let mut dns = template.dns.clone().unwrap_or_default();
            dns.nameservers = Some([dns.nameservers.unwrap_or_default(), vec!["192.0.2.54".into()]].concat());
            template.dns = Some(dns);
            all
        }
        3 => {
            template.management_network =
                Some(format!("{}-mgmt", template.management_network.as_deref().unwrap_or("")));
            all
        }
        4 => {
            let key = pick(u, &["ntp_servers", "role", "timezone"])?;
            let variables = template.variables.get_or_insert_with(Default::default);
            let value = json!({"changed": variables.get(key).cloned()});
            variables.insert(key.into(), value);
            all.into_iter()
                .filter(|h| !nodes.get(h).and_then(|s| s.variables.as_ref()).is_some_and(|v| v.contains_key(key)))
                .collect()
        }
        5 => {
            let networks = template.networks.get_or_insert_with(Default::default);
            if networks.is_empty() || u.arbitrary()? {
                // A network no host names yet reaches every host.
                networks.push(typed(&network(u, "zz-added", 0)?, "network"));
                all
            } else {
                let i = u.int_in_range(0..=networks.len() - 1)?;
                let field = pick(u, NETWORK_FIELDS)?;
                let name = networks[i].name.clone();
                let edited = network_field(field, &networks[i]);
                networks[i] = networks[i].clone().merge_field(field, &edited);
                // Hosts whose own entry sets the field keep their value.
                all.into_iter()
                    .filter(|h| {
                        let own = nodes
                            .get(h)
                            .and_then(|s| s.networks.as_ref())
                            .and_then(|l| l.iter().find(|n| n.name == name));
                        !own.is_some_and(|n| n.sets(field))
                    })
                    .collect()
            }
        }
        6 => {
            let services = spec.services.get_or_insert_with(Default::default);
            match u.int_in_range(0..=2)? {
                0 if !services.is_empty() => {
                    let i = u.int_in_range(0..=services.len() - 1)?;
                    services.remove(i);
                }
                1 if services.len() > 1 && services[0] != services[1] => services.swap(0, 1),
                _ => services.push(format!("added-{}", services.len())),
            }
            return Ok(None);
        }
        7 => {
            nodes.insert(format!("added-{}", nodes.len()), NodeSection::default());
            return Ok(None);
        }
        _ => {
            nodes.remove(&host);
            return Ok(None);
        }
    }))
}

/// Helpers to edit one field of a network entry.
trait NetworkFieldExt {
    fn merge_field(self, field: &str, from: &NetworkConfig) -> NetworkConfig;
    fn sets(&self, field: &str) -> bool;
}

impl NetworkFieldExt for NetworkConfig {
    /// `self` with `field` taken from `from`.
    fn merge_field(mut self, field: &str, from: &NetworkConfig) -> NetworkConfig {
        match field {
            "mtu" => self.mtu = from.mtu,
            "vlan" => self.vlan = from.vlan,
            "gateway" => self.gateway = from.gateway.clone(),
            "interface" => self.interface = from.interface.clone(),
            "addresses" => self.addresses = from.addresses.clone(),
            "routes" => self.routes = from.routes.clone(),
            _ => self.dns = from.dns.clone(),
        }
        self
    }

    /// True when this entry sets `field` (and so wins over the template's).
    fn sets(&self, field: &str) -> bool {
        match field {
            "mtu" => self.mtu.is_some(),
            "vlan" => self.vlan.is_some(),
            "gateway" => self.gateway.is_some(),
            "interface" => self.interface.is_some(),
            "addresses" => self.addresses.is_some(),
            "routes" => self.routes.is_some(),
            _ => self.dns.is_some(),
        }
    }
}

/// A class-(a) edit moves the config hash of exactly the hosts it reaches and the NodeSet's
/// hash, and no provisioning hash.
pub fn day2_change(u: &mut Unstructured) -> Result<()> {
    let mut spec = spec(u)?;
    some_host(u, &mut spec)?;
    let before = hashes(&spec);
    let services_before = spec.services.clone().unwrap_or_default();
    let template_before = spec.node_template.clone().unwrap_or_default();
    let reached = day2_edit(u, &mut spec)?;
    let after = hashes(&spec);
    for (host, (config, hash, provisioning)) in &after.hosts {
        let Some((old_config, old_hash, old_provisioning)) = before.hosts.get(host) else {
            continue;
        };
        let expected = reached.as_ref().is_some_and(|r| r.contains(host));
        assert_eq!(
            config != old_config,
            expected,
            "{host}: effective configuration changed?\n{old_config:#?}\n{config:#?}"
        );
        assert_eq!(hash != old_hash, expected, "{host}: config hash changed?\n{old_config:#?}\n{config:#?}");
        assert_eq!(provisioning, old_provisioning, "{host}: a day-2 edit moved the provisioning hash");
    }
    let hosts_changed = before.hosts.keys().ne(after.hosts.keys());
    let services_changed = spec.services.clone().unwrap_or_default() != services_before;
    // A template edit that every host overrides reaches no host, but is still an edit.
    let template_changed = spec.node_template.clone().unwrap_or_default() != template_before;
    let hosts_reached = reached.is_some_and(|r| !r.is_empty());
    assert!(hosts_reached || hosts_changed || services_changed || template_changed, "the edit changed nothing");
    // The NodeSet's hash is what there is to roll out: it moves exactly when a host's
    // configuration, the set of hosts or the services move. A template edit that every host
    // overrides reaches nothing, so it does not (found by `make fuzz`, 2026-12-02).
    let rolls_out = hosts_reached || hosts_changed || services_changed;
    assert_eq!(after.nodeset != before.nodeset, rolls_out, "the NodeSet hash moved (or not) wrongly");
    Ok(())
}

/// A class-(b) edit moves the provisioning hash of exactly the hosts it applies to, and no
/// config hash.
pub fn provisioning_change(u: &mut Unstructured) -> Result<()> {
    let mut spec = spec(u)?;
    let host = some_host(u, &mut spec)?;
    spec.pre_provisioned = None;
    let before = hashes(&spec);
    let template = spec.baremetal_set_template.get_or_insert_with(Default::default);
    let nodes = spec.nodes.get_or_insert_with(Default::default);
    let all: BTreeSet<String> = nodes.keys().cloned().collect();
    let secret =
        |current: Option<&k8s_openapi::api::core::v1::SecretReference>| k8s_openapi::api::core::v1::SecretReference {
            name: Some(format!("{}-2", current.and_then(|r| r.name.as_deref()).unwrap_or("data"))),
            namespace: None,
        };
    let expected: BTreeSet<String> = match u.int_in_range(0..=6)? {
        0 => {
            let image = template.image.get_or_insert_with(Default::default);
            image.url = format!("{}/v2", image.url);
            all
        }
        1 => {
            let modes = [None, Some(crds::baremetalhost::BootMode::Uefi), Some(crds::baremetalhost::BootMode::Legacy)];
            template.boot_mode = modes.into_iter().find(|m| *m != template.boot_mode).flatten();
            all
        }
        2 => {
            let hints = template.root_device_hints.get_or_insert_with(Default::default);
            hints.min_size_gigabytes = Some(hints.min_size_gigabytes.map_or(0, |s| s.wrapping_add(1)));
            all
        }
        3 => {
            template.user_data = Some(secret(template.user_data.as_ref()));
            all.into_iter().filter(|h| nodes.get(h).is_none_or(|s| s.user_data.is_none())).collect()
        }
        4 => {
            template.network_data = Some(secret(template.network_data.as_ref()));
            all.into_iter().filter(|h| nodes.get(h).is_none_or(|s| s.network_data.is_none())).collect()
        }
        5 => {
            let network = template.provisioning_network.get_or_insert_with(Default::default);
            network.preprovisioning_network_data_name =
                Some(format!("{}-2", network.preprovisioning_network_data_name.as_deref().unwrap_or("net")));
            all
        }
        _ => {
            let section = nodes.entry(host.clone()).or_default();
            if one_in(u, 2)? {
                section.user_data = Some(secret(section.user_data.as_ref()));
            } else {
                section.network_data = Some(secret(section.network_data.as_ref()));
            }
            BTreeSet::from([host])
        }
    };
    // A template appearing where there was none moves every host from None to a hash.
    let after = hashes(&spec);
    for (host, (_, hash, provisioning)) in &after.hosts {
        let (_, old_hash, old_provisioning) = &before.hosts[host];
        let moved = provisioning != old_provisioning;
        assert!(provisioning.is_some(), "{host}: no provisioning hash with a template");
        if old_provisioning.is_some() {
            assert_eq!(moved, expected.contains(host), "{host}: provisioning hash moved?");
        }
        assert_eq!(hash, old_hash, "{host}: a provisioning edit moved the config hash");
    }
    assert_eq!(after.nodeset, before.nodeset, "a provisioning edit moved the NodeSet hash");
    Ok(())
}
