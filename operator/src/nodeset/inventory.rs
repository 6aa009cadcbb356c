//! The inventory a service Job receives (pure): its NodeSet, its service, and for each host of
//! its batch the effective configuration (template merged with the host's overrides), the
//! address services reach it at, and its BareMetalHost. Mounted from a Secret at
//! `/var/run/ferrometal/inventory.json`: variables may be secrets.

use crds::nodeset::EffectiveHostConfig;
use serde_json::{Map, Value, json};

/// One host of the inventory.
pub(super) struct InventoryHost<'a> {
    pub config: &'a EffectiveHostConfig,
    pub config_hash: &'a str,
    /// The claimed BareMetalHost (name, namespace); none for preProvisioned NodeSets.
    pub bmh: Option<(&'a str, &'a str)>,
}

/// The inventory JSON.
pub(super) fn inventory(
    nodeset: &str,
    namespace: &str,
    service: &str,
    config_hash: &str,
    hosts: &[InventoryHost<'_>],
) -> Value {
    let mut out = Map::new();
    for host in hosts {
        let config = host.config;
        let mut entry = json!({
            "configHash": host.config_hash,
            "networks": config.networks,
            "variables": config.variables,
        });
        if let Some(address) = config.management_address() {
            entry["managementAddress"] = json!(address);
        }
        if let Some(dns) = &config.dns {
            entry["dns"] = json!(dns);
        }
        if let Some((name, namespace)) = host.bmh {
            entry["bmh"] = json!({"name": name, "namespace": namespace});
        }
        out.insert(config.hostname.clone(), entry);
    }
    json!({
        "nodeSet": nodeset,
        "namespace": namespace,
        "service": service,
        "configHash": config_hash,
        "hosts": out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::nodeset::{NodeSection, NodeTemplate, effective_host_config};

    #[test]
    fn the_inventory_carries_each_hosts_effective_configuration() {
        let template: NodeTemplate = serde_json::from_value(json!({
            "networks": [{"name": "ctlplane", "interface": "eno1", "mtu": 1500}],
            "dns": {"nameservers": ["192.0.2.53"]},
            "managementNetwork": "ctlplane",
            "variables": {"timezone": "UTC", "ntp": ["ntp1"]}
        }))
        .expect("template");
        let host: NodeSection = serde_json::from_value(json!({
            "networks": [{"name": "ctlplane", "addresses": ["192.0.2.10/24"]}],
            "variables": {"timezone": "Europe/Paris"}
        }))
        .expect("host");
        let config = effective_host_config("compute-0", Some(&template), Some(&host));
        let value = inventory(
            "computes",
            "metal3",
            "configure-network",
            "3f1c",
            &[InventoryHost { config: &config, config_hash: "77de", bmh: Some(("server-17", "metal3")) }],
        );
        assert_eq!(value["nodeSet"], "computes");
        assert_eq!(value["service"], "configure-network");
        let h = &value["hosts"]["compute-0"];
        assert_eq!(h["managementAddress"], "192.0.2.10");
        assert_eq!(h["configHash"], "77de");
        assert_eq!(h["bmh"], json!({"name": "server-17", "namespace": "metal3"}));
        assert_eq!(h["networks"][0]["mtu"], 1500);
        assert_eq!(h["networks"][0]["addresses"], json!(["192.0.2.10/24"]));
        assert_eq!(h["dns"]["nameservers"], json!(["192.0.2.53"]));
        assert_eq!(h["variables"], json!({"timezone": "Europe/Paris", "ntp": ["ntp1"]}));
    }
}
