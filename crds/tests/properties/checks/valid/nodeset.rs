//! Valid `NodeSet`s and `NodeSetService`s, and valid updates of NodeSets: class (a) and (b)
//! fields edited freely, class (c) fields kept once a host is claimed.

use super::{maybe, name};
use crate::checks::schema::{self, one_in, pick};
use crate::checks::validation::typed;
use arbitrary::{Result, Unstructured};
use crds::nodeset::{NodeSet, NodeSetSpec, NodeSetStatus};
use crds::nodesetservice::NodeSetServiceSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Map, Value, json};

/// A named generator of one field's value.
type Field = (&'static str, fn(&mut Unstructured) -> Result<Value>);
/// A named generator of one field's value, given a size.
type SizedField = (&'static str, fn(&mut Unstructured, u8) -> Result<Value>);

const HOSTS: &[&str] = &["compute-0", "compute-1", "compute-2", "edge.example.com", "a"];
const NETWORKS: &[&str] = &["ctlplane", "storage", "tenant", "External_1"];

/// A network entry: every field optional but the name; `index` keeps addresses apart.
pub fn network(u: &mut Unstructured, name: &str, index: u8) -> Result<Value> {
    let mut network = json!({"name": name});
    let object = network.as_object_mut().expect("object");
    let fields: [SizedField; 7] = [
        ("interface", |u, _| Ok(Value::from(pick(u, &["eno1", "eno2", "bond0"])?))),
        ("mtu", |u, _| Ok(Value::from(u.int_in_range(576..=9216)?))),
        ("vlan", |u, _| Ok(Value::from(u.int_in_range(1..=4094)?))),
        ("gateway", |u, _| Ok(Value::from(pick(u, &["192.0.2.1", "fd00::1"])?))),
        ("addresses", |u, i| {
            Ok(json!([format!("192.0.2.{}/24", 10 + i), format!("fd00::{:x}/64", u.int_in_range(1..=255u8)?)]))
        }),
        ("routes", |u, _| {
            Ok(
                json!([{"to": pick(u, &["default", "198.51.100.0/24", "::/0"])?, "via": "192.0.2.254", "metric": u.int_in_range(0..=1000)?}]),
            )
        }),
        ("dns", |u, _| {
            Ok(
                json!({"nameservers": ["192.0.2.53", "fd00::53"], "search": [pick(u, &["example.com", "Lab.Example.COM"])?]}),
            )
        }),
    ];
    for (field, value) in fields {
        if u.arbitrary()? {
            object.insert(field.into(), value(u, index)?);
        }
    }
    Ok(network)
}

/// Variables with valid names and any JSON values.
pub fn variables(u: &mut Unstructured) -> Result<Value> {
    let mut variables = Map::new();
    for _ in 0..u.int_in_range(0..=3)? {
        let key = pick(u, &["ntp_servers", "timezone", "role", "_private", "X1"])?;
        variables.insert(key.into(), schema::any_json(u, 2)?);
    }
    Ok(Value::Object(variables))
}

fn selector(u: &mut Unstructured) -> Result<Value> {
    Ok(match u.int_in_range(0..=2)? {
        0 => json!({"matchLabels": {"rack": pick(u, &["r1", "r2"])?}}),
        1 => json!({"matchExpressions": [{"key": "serial", "operator": "In", "values": ["ABC123"]}]}),
        _ => json!({}),
    })
}

/// A valid spec: networks named once per list, management network on every host, services
/// named once, and every host name a short DNS name.
pub fn spec(u: &mut Unstructured) -> Result<Value> {
    let pre_provisioned = one_in(u, 4)?;
    let mut spec = Map::new();
    if pre_provisioned {
        spec.insert("preProvisioned".into(), json!(true));
    } else {
        if u.arbitrary()? {
            spec.insert("preProvisioned".into(), json!(false));
        }
        spec.insert("baremetalSetTemplate".into(), template(u)?);
    }
    let mut template_networks = vec![];
    let mut node_template = Map::new();
    for (i, name) in NETWORKS.iter().enumerate() {
        if u.arbitrary()? {
            template_networks.push(network(u, name, i as u8)?);
        }
    }
    let management = (!template_networks.is_empty() && u.arbitrary()?).then(|| template_networks[0]["name"].clone());
    node_template.insert("networks".into(), Value::Array(template_networks));
    if let Some(management) = management {
        node_template.insert("managementNetwork".into(), management);
    }
    if u.arbitrary()? {
        node_template.insert("dns".into(), json!({"nameservers": ["192.0.2.53"], "search": ["example.com"]}));
    }
    if u.arbitrary()? {
        node_template.insert("variables".into(), variables(u)?);
    }
    spec.insert("nodeTemplate".into(), Value::Object(node_template));
    let mut nodes = Map::new();
    for (i, host) in HOSTS.iter().enumerate() {
        if u.arbitrary()? {
            nodes.insert(host.to_string(), node(u, pre_provisioned, i as u8)?);
        }
    }
    spec.insert("nodes".into(), Value::Object(nodes));
    let mut services = vec![];
    for service in ["bootstrap", "configure-network", "configure-os", "run.example"] {
        if u.arbitrary()? {
            services.push(Value::from(service));
        }
    }
    spec.insert("services".into(), Value::Array(services));
    if u.arbitrary()? {
        let max = u.choose(&[json!(1), json!(3), json!("1%"), json!("25%"), json!("100%")])?.clone();
        let strategy = pick(u, &["Automatic", "Manual"])?;
        spec.insert("rollout".into(), json!({"maxUnavailable": max, "strategy": strategy, "token": name(u)?}));
    }
    if u.arbitrary()? {
        spec.insert("deletionPolicy".into(), Value::from(pick(u, &["Retain", "Detach", "Deprovision"])?));
    }
    Ok(Value::Object(spec))
}

fn template(u: &mut Unstructured) -> Result<Value> {
    let mut template = json!({"image": {"url": "https://images.example.com/os.qcow2", "checksum": "https://images.example.com/os.qcow2.sha256sum", "checksumType": "sha256"}});
    let object = template.as_object_mut().expect("object");
    let fields: [Field; 9] = [
        ("bmhNamespace", |u| Ok(Value::from(pick(u, &["metal3", "hosts"])?))),
        ("bmhLabelSelector", selector),
        ("hardwareReqs", |u| {
            Ok(
                json!({"cpuArch": "x86_64", "minCpuCount": u.int_in_range(1..=128)?, "minMemoryGiB": 1, "diskType": "SSD"}),
            )
        }),
        ("bootMode", |u| Ok(Value::from(pick(u, &["UEFI", "legacy", "UEFISecureBoot"])?))),
        ("rootDeviceHints", |u| Ok(json!({"deviceName": "/dev/sda", "minSizeGigabytes": u.int_in_range(0..=1000)?}))),
        ("userData", |u| Ok(json!({"name": name(u)?}))),
        ("networkData", |u| Ok(json!({"name": name(u)?}))),
        ("provisioningNetwork", |_| Ok(json!({"preprovisioningNetworkDataName": "ramdisk-net"}))),
        ("automatedCleaningMode", |u| Ok(Value::from(pick(u, &["metadata", "disabled"])?))),
    ];
    for (field, value) in fields {
        if u.arbitrary()? {
            object.insert(field.into(), value(u)?);
        }
    }
    if u.arbitrary()? {
        object["image"] = json!({"url": "https://images.example.com/live.iso", "format": "live-iso"});
    }
    Ok(template)
}

fn node(u: &mut Unstructured, pre_provisioned: bool, index: u8) -> Result<Value> {
    let mut node = Map::new();
    let mut networks = vec![];
    for name in NETWORKS {
        if u.arbitrary()? {
            networks.push(network(u, name, index)?);
        }
    }
    node.insert("networks".into(), Value::Array(networks));
    if u.arbitrary()? {
        node.insert("variables".into(), variables(u)?);
    }
    if !pre_provisioned {
        for field in ["userData", "networkData"] {
            if u.arbitrary()? {
                node.insert(field.into(), json!({"name": name(u)?}));
            }
        }
        if u.arbitrary()? {
            node.insert("bmhLabelSelector".into(), selector(u)?);
        }
        if u.arbitrary()? {
            node.insert("reprovisionToken".into(), Value::from(name(u)?));
        }
    }
    Ok(Value::Object(node))
}

/// A valid NodeSet (in its namespace).
fn nodeset(u: &mut Unstructured) -> Result<NodeSet> {
    let spec = spec(u)?;
    let metadata = ObjectMeta { name: Some("computes".into()), namespace: Some("metal3".into()), ..Default::default() };
    Ok(NodeSet { metadata, spec: typed::<NodeSetSpec>(&spec, "valid NodeSet spec"), status: None })
}

/// A valid NodeSet, maybe with claimed hosts, and a valid update: any other valid spec of
/// the same kind (preProvisioned kept), with the host selection kept where it is locked.
pub fn update(u: &mut Unstructured) -> Result<(NodeSet, NodeSet)> {
    let mut old = nodeset(u)?;
    let status = schema::value(u, schema::schema_of("NodeSet", "/properties/status"), 1)?;
    old.status = maybe(u, |_| Ok(typed::<NodeSetStatus>(&status, "NodeSet status")))?;
    let mut new = old.clone();
    if u.arbitrary()? {
        let fresh = nodeset(u)?;
        new.spec = NodeSetSpec { pre_provisioned: old.spec.pre_provisioned, ..fresh.spec };
        if old.spec.pre_provisioned() {
            new.spec.baremetal_set_template = None;
            for section in new.spec.nodes.iter_mut().flat_map(|n| n.values_mut()) {
                (section.bmh_label_selector, section.user_data, section.network_data, section.reprovision_token) =
                    (None, None, None, None);
            }
        } else if new.spec.baremetal_set_template.is_none() {
            new.spec.baremetal_set_template = old.spec.baremetal_set_template.clone();
        }
    }
    let claimed = old.status.as_ref().is_some_and(|s| {
        s.claimed_hosts.unwrap_or(0) > 0 || s.hosts.iter().flatten().any(|(_, h)| h.bmh_ref.is_some())
    });
    if let (true, Some(old_template), Some(template)) =
        (claimed, &old.spec.baremetal_set_template, new.spec.baremetal_set_template.as_mut())
    {
        template.bmh_namespace = old_template.bmh_namespace.clone();
        template.bmh_label_selector = old_template.bmh_label_selector.clone();
        template.hardware_reqs = old_template.hardware_reqs.clone();
    }
    let claimed_hosts = old.status.as_ref().and_then(|s| s.hosts.clone()).unwrap_or_default();
    for (hostname, section) in new.spec.nodes.iter_mut().flatten() {
        let old_section = old.spec.nodes.as_ref().and_then(|n| n.get(hostname));
        if let Some(old_section) = old_section
            && claimed_hosts.get(hostname).is_some_and(|h| h.bmh_ref.is_some())
        {
            section.bmh_label_selector = old_section.bmh_label_selector.clone();
        }
    }
    Ok((old, new))
}

/// A valid NodeSetService spec.
pub fn service(u: &mut Unstructured) -> Result<NodeSetServiceSpec> {
    let mut job = json!({"image": "registry.example.com/netconf:1.4"});
    let object = job.as_object_mut().expect("object");
    let fields: [Field; 6] = [
        ("command", |_| Ok(json!(["/usr/bin/apply-network"]))),
        ("args", |_| Ok(json!(["--inventory", "/var/run/ferrometal/inventory.json"]))),
        ("env", |u| Ok(json!([{"name": pick(u, &["LOG_LEVEL", "a", "FERROMETAL"])?, "value": "info"}]))),
        ("backoffLimit", |u| Ok(Value::from(u.int_in_range(0..=10)?))),
        ("activeDeadlineSeconds", |u| Ok(Value::from(u.int_in_range(1..=86400)?))),
        ("serviceAccountName", |u| Ok(Value::from(name(u)?))),
    ];
    for (field, value) in fields {
        if u.arbitrary()? {
            object.insert(field.into(), value(u)?);
        }
    }
    let spec = json!({"job": job, "runOnce": u.arbitrary::<bool>()?});
    Ok(typed(&spec, "valid NodeSetService spec"))
}
