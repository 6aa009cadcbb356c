//! Valid `Ironic` specs and valid updates of them, written as the JSON users write.

use super::{maybe, name};
use crate::checks::schema::{one_in, pick};
use crate::checks::validation::typed;
use arbitrary::{Result, Unstructured};
use crds::ironic::IronicSpec;
use serde_json::{Map, Value, json};

/// Sets `key` to `value` when it is `Some`.
fn set(object: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        object.insert(key.to_string(), value);
    }
}

/// A valid spec and a valid update of it.
pub fn update(u: &mut Unstructured) -> Result<(IronicSpec, IronicSpec)> {
    let old = spec(u)?;
    let mut new = if one_in(u, 4)? { spec(u)? } else { old.clone() };
    // The database may not be replaced or removed; its credentials and CA may rotate, a
    // managed one may grow and move to a newer MariaDB.
    match (&old["database"], u.int_in_range(0..=2)?) {
        (Value::Null, _) => {}
        (database, 0) => new["database"] = database.clone(),
        (database, _) => new["database"] = rotated(u, database)?,
    }
    Ok((typed(&old, "valid Ironic spec"), typed(&new, "valid Ironic spec")))
}

/// A valid spec.
pub fn spec(u: &mut Unstructured) -> Result<Value> {
    let mut spec = Map::new();
    let ha = one_in(u, 4)?;
    let version = pick(u, &[None, Some("latest"), Some("38.0"), Some("37.0"), Some("35.0")])?;
    set(&mut spec, "version", version.map(Value::from));
    set(&mut spec, "apiCredentialsName", maybe(u, name)?.map(Value::from));
    let database = match u.int_in_range(0..=2)? {
        0 if !ha => None,
        1 => Some(external(u)?),
        _ => Some(managed(u)?),
    };
    set(&mut spec, "database", database);
    set(&mut spec, "highAvailability", if ha { Some(json!(true)) } else { maybe(u, |_| Ok(json!(false)))? });
    let extra_ranges = version != Some("35.0");
    set(&mut spec, "networking", maybe(u, |u| networking(u, ha, extra_ranges))?);
    set(&mut spec, "tls", maybe(u, |u| tls(u, ha))?);
    set(&mut spec, "prometheusExporter", maybe(u, |u| exporter(u, ha))?);
    set(&mut spec, "extraConfig", maybe(u, extra_config)?);
    set(&mut spec, "networkingService", maybe(u, networking_service)?);
    set(&mut spec, "overrides", maybe(u, overrides)?);
    set(&mut spec, "deployRamdisk", maybe(u, |u| Ok(json!({"disableDownloader": u.arbitrary::<bool>()?})))?);
    set(&mut spec, "nodeSelector", maybe(u, |_| Ok(json!({"node-role.kubernetes.io/control-plane": ""})))?);
    Ok(Value::Object(spec))
}

/// The external form: host, name and credentials, maybe a CA.
fn external(u: &mut Unstructured) -> Result<Value> {
    let mut db = json!({"credentialsName": name(u)?, "host": pick(u, &["mariadb", "192.0.2.5", "db.example.com"])?, "name": pick(u, &["ironic", "ironic_db"])?});
    set(db.as_object_mut().expect("object"), "tlsCertificateName", maybe(u, name)?.map(Value::from));
    Ok(db)
}

/// A storage request: a positive size, maybe a class.
fn storage(u: &mut Unstructured) -> Result<Value> {
    let mut storage = Map::new();
    set(&mut storage, "size", maybe(u, |u| Ok(Value::from(pick(u, &["1", "500M", "1Gi", "10Gi", "1.5Ti", "1e10"])?)))?);
    set(&mut storage, "storageClassName", maybe(u, |u| Ok(Value::from(pick(u, &["standard", "fast"])?)))?);
    Ok(Value::Object(storage))
}

/// The managed form.
fn managed(u: &mut Unstructured) -> Result<Value> {
    let mut managed = Map::new();
    set(&mut managed, "version", maybe(u, |u| Ok(Value::from(pick(u, &["10.6", "10.11", "11.4", "11.4.2"])?)))?);
    set(&mut managed, "image", maybe(u, |_| Ok(json!("docker.io/library/mariadb:11.4")))?);
    set(&mut managed, "storage", maybe(u, storage)?);
    set(
        &mut managed,
        "backup",
        maybe(u, |u| {
            let mut backup = Map::new();
            set(&mut backup, "enabled", maybe(u, |u| Ok(Value::Bool(u.arbitrary()?)))?);
            set(&mut backup, "keep", maybe(u, |u| Ok(Value::from(u.int_in_range(1..=30)?)))?);
            set(&mut backup, "storage", maybe(u, storage)?);
            Ok(Value::Object(backup))
        })?,
    );
    set(&mut managed, "terminationGracePeriodSeconds", maybe(u, |u| Ok(Value::from(u.int_in_range(30..=3600)?)))?);
    set(
        &mut managed,
        "tls",
        maybe(u, |u| {
            Ok(match u.int_in_range(0..=2)? {
                0 => json!({"enabled": false}),
                1 => json!({"enabled": true}),
                _ => json!({"enabled": true, "certificateName": name(u)?}),
            })
        })?,
    );
    Ok(json!({"managed": managed}))
}

/// The same database: new credentials or CA for an external one; a managed one on a newer
/// MariaDB and with larger volumes of the same classes.
fn rotated(u: &mut Unstructured, database: &Value) -> Result<Value> {
    let mut database = database.clone();
    if database.get("managed").is_none() {
        database["credentialsName"] = Value::from(name(u)?);
        if u.arbitrary()? {
            database["tlsCertificateName"] = Value::from(name(u)?);
        }
        return Ok(database);
    }
    let managed = &mut database["managed"];
    let version = managed.get("version").and_then(Value::as_str).unwrap_or("11.4").to_string();
    if u.arbitrary()? {
        let newer =
            ["10.6", "10.11", "11.4", "11.4.2", "11.8"].into_iter().skip_while(|v| *v != version).collect::<Vec<_>>();
        if let Some(newer) = (!newer.is_empty()).then(|| pick(u, &newer)).transpose()? {
            managed["version"] = Value::from(newer);
        }
    }
    for pointer in ["/storage", "/backup/storage"] {
        if let Some(Value::Object(storage)) = managed.pointer_mut(pointer)
            && u.arbitrary()?
        {
            let grown = match storage.get("size").and_then(Value::as_str) {
                Some("1") => "500M",
                Some("500M") => "1Gi",
                Some("1Gi" | "1e10") => "10Gi",
                Some(_) => "2Ti",
                None => "10Gi",
            };
            storage.insert("size".into(), Value::from(grown));
        }
    }
    if u.arbitrary()? {
        managed["terminationGracePeriodSeconds"] = Value::from(u.int_in_range(30..=600)?);
    }
    Ok(database)
}

/// `192.0.2.x` style pools, one network each, so no two overlap.
fn pool(u: &mut Unstructured, network: &str) -> Result<Value> {
    let begin = u.int_in_range(1..=250u8)?;
    let end = u.int_in_range(begin..=254)?;
    Ok(
        json!({"networkCIDR": format!("{network}.0/24"), "rangeBegin": format!("{network}.{begin}"), "rangeEnd": format!("{network}.{end}")}),
    )
}

fn networking(u: &mut Unstructured, ha: bool, extra_ranges: bool) -> Result<Value> {
    let mut net = Map::new();
    for port in ["apiPort", "imageServerPort", "imageServerTLSPort", "prometheusExporterPort", "rpcPort"] {
        set(&mut net, port, maybe(u, |u| Ok(Value::from(pick(u, &[1, 80, 6385, 8089, 65535])?)))?);
    }
    match u.int_in_range(0..=3)? {
        0 => set(&mut net, "externalIP", Some(json!("203.0.113.7"))),
        1 => {
            net.insert("ingress".into(), json!({"host": "ironic.example.com"}));
            if u.arbitrary()? {
                net.insert("externalCallbackURL".into(), json!("https://ironic.example.com:6385"));
            }
        }
        2 => {
            net.insert("externalCallbackURL".into(), json!("https://ironic.example.com:6385"));
            net.insert("imageServerExternalURL".into(), json!("http://images.example.com"));
        }
        _ => {}
    }
    if !ha && one_in(u, 5)? {
        net.insert("disableHostNetwork".into(), json!(true));
        return Ok(Value::Object(net));
    }
    set(&mut net, "bindInterface", maybe(u, |u| Ok(Value::Bool(u.arbitrary()?)))?);
    let ip = (!ha && u.arbitrary()?).then(|| json!("192.0.2.2"));
    let interface = maybe(u, |_| Ok(json!("eno1")))?;
    let macs = maybe(u, |_| Ok(json!(["52:54:00:12:34:56", "52:54:00:AB:CD:EF"])))?;
    let reachable = ip.is_some() || interface.is_some() || macs.is_some();
    if !ha && ip.is_some() && interface.is_some() && u.arbitrary()? {
        if u.arbitrary()? {
            let vip = json!({"ipAddress": "192.0.2.3", "interface": "eno1", "prefix": u.int_in_range(0..=32)?});
            net.insert("keepalived".into(), json!({"enabled": true, "additionalVIPs": [vip]}));
        } else {
            net.insert("ipAddressManager".into(), json!("keepalived"));
        }
    }
    if !ha && reachable && u.arbitrary()? {
        net.insert("dhcp".into(), dhcp(u, ip.is_none(), extra_ranges)?);
    }
    set(&mut net, "ipAddress", ip);
    set(&mut net, "interface", interface);
    set(&mut net, "macAddresses", macs);
    Ok(Value::Object(net))
}

/// DHCP with a main pool (around the provisioning IP 192.0.2.2 when `anywhere` is false)
/// and extra ranges in other networks.
fn dhcp(u: &mut Unstructured, anywhere: bool, extra_ranges: bool) -> Result<Value> {
    let mut dhcp = Map::new();
    let main = !extra_ranges || u.arbitrary()?;
    if main {
        let network = if anywhere { pick(u, &["192.0.2", "10.1.2"])? } else { "192.0.2" };
        let Value::Object(pool) = pool(u, network)? else { unreachable!() };
        dhcp.extend(pool);
    }
    if extra_ranges && (!main || u.arbitrary()?) {
        let mut ranges = vec![];
        for network in ["198.51.100", "203.0.113"] {
            if ranges.is_empty() || u.arbitrary()? {
                let mut range = pool(u, network)?;
                if u.arbitrary()? {
                    range["gatewayAddress"] = Value::from(format!("{network}.254"));
                }
                ranges.push(range);
            }
        }
        if u.arbitrary()? {
            ranges.push(json!({"networkCIDR": "fd00:1::/64", "rangeBegin": "fd00:1::10", "rangeEnd": "fd00:1::ff"}));
        }
        dhcp.insert("extraRanges".into(), Value::Array(ranges));
    }
    match u.int_in_range(0..=2)? {
        0 => set(&mut dhcp, "dnsAddress", Some(json!("192.0.2.53"))),
        1 => set(&mut dhcp, "serveDNS", Some(json!(true))),
        _ => {}
    }
    set(&mut dhcp, "gatewayAddress", maybe(u, |_| Ok(json!("192.0.2.1")))?);
    set(&mut dhcp, "hosts", maybe(u, |_| Ok(json!(["52:54:00:12:34:56,192.0.2.20"])))?);
    Ok(Value::Object(dhcp))
}

fn tls(u: &mut Unstructured, ha: bool) -> Result<Value> {
    let mut tls = Map::new();
    match u.int_in_range(0..=4)? {
        0 => {}
        1 => set(&mut tls, "certificateName", Some(Value::from(name(u)?))),
        2 => {
            tls.insert("mode".into(), json!("Secret"));
            tls.insert("certificateName".into(), Value::from(name(u)?));
        }
        3 => {
            tls.insert("mode".into(), json!("Auto"));
            if u.arbitrary()? {
                let ca = u.int_in_range(1..=3650)?;
                let certificate = u.int_in_range(1..=ca)?;
                tls.insert("auto".into(), json!({"caValidityDays": ca, "certificateValidityDays": certificate}));
            }
        }
        _ => {
            if u.arbitrary()? {
                tls.insert("mode".into(), json!("CertManager"));
            }
            let mut issuer = json!({"name": name(u)?});
            set(
                issuer.as_object_mut().expect("object"),
                "kind",
                maybe(u, |u| Ok(Value::from(pick(u, &["Issuer", "ClusterIssuer"])?)))?,
            );
            let mut cm = json!({"issuerRef": issuer});
            let (duration, renew) = pick(
                u,
                &[
                    (None, None),
                    (Some("1h"), Some("5m")),
                    (Some("2160h"), Some("360h")),
                    (Some("1h0m1s"), None),
                    (None, Some("59m")),
                ],
            )?;
            set(cm.as_object_mut().expect("object"), "duration", duration.map(Value::from));
            set(cm.as_object_mut().expect("object"), "renewBefore", renew.map(Value::from));
            tls.insert("certManager".into(), cm);
        }
    }
    if u.arbitrary()? {
        let bmc_ca = name(u)?;
        let kind = pick(u, &[None, Some("Secret"), Some("ConfigMap")])?;
        let mut reference = json!({"name": bmc_ca});
        set(reference.as_object_mut().expect("object"), "kind", kind.map(Value::from));
        tls.insert("bmcCA".into(), reference);
        if kind == Some("Secret") && u.arbitrary()? {
            tls.insert("bmcCAName".into(), Value::from(bmc_ca));
        }
    }
    if u.arbitrary()? {
        let trusted = name(u)?;
        let kind = pick(u, &[None, Some("ConfigMap"), Some("Secret")])?;
        let mut reference = json!({"name": trusted, "key": "ca.crt"});
        set(reference.as_object_mut().expect("object"), "kind", kind.map(Value::from));
        tls.insert("trustedCA".into(), reference);
        if kind != Some("Secret") && u.arbitrary()? {
            tls.insert("trustedCAName".into(), Value::from(trusted));
        }
    }
    set(&mut tls, "disableVirtualMediaTLS", maybe(u, |u| Ok(Value::Bool(u.arbitrary()?)))?);
    if ha {
        set(&mut tls, "insecureRPC", maybe(u, |u| Ok(Value::Bool(u.arbitrary()?)))?);
    }
    Ok(Value::Object(tls))
}

fn exporter(u: &mut Unstructured, ha: bool) -> Result<Value> {
    let enabled: bool = u.arbitrary()?;
    let mut exporter = json!({"enabled": enabled});
    let object = exporter.as_object_mut().expect("object");
    let disable_monitor = if ha && enabled { Some(true) } else { maybe(u, |u| u.arbitrary())? };
    set(object, "disableServiceMonitor", disable_monitor.map(Value::Bool));
    let loopback_ok = !enabled || disable_monitor == Some(true);
    let addresses: &[&str] = if loopback_ok { &["0.0.0.0", "::", "127.0.0.1", "::1"] } else { &["0.0.0.0", "::"] };
    set(object, "bindAddress", maybe(u, |u| Ok(Value::from(pick(u, addresses)?)))?);
    set(object, "sensorCollectionInterval", maybe(u, |u| Ok(Value::from(u.int_in_range(60..=86400)?)))?);
    Ok(exporter)
}

fn extra_config(u: &mut Unstructured) -> Result<Value> {
    let mut items = vec![];
    for _ in 0..u.int_in_range(0..=3)? {
        let mut item = json!({"name": pick(u, &["debug", "max_workers", "Opt_1"])?, "value": "1"});
        set(
            item.as_object_mut().expect("object"),
            "group",
            maybe(u, |u| Ok(Value::from(pick(u, &["", "DEFAULT", "conductor"])?)))?,
        );
        items.push(item);
    }
    Ok(Value::Array(items))
}

fn networking_service(u: &mut Unstructured) -> Result<Value> {
    let mut networks = vec![];
    for type_ in ["idle", "inspection", "cleaning", "rescuing", "servicing", "provisioning"] {
        if !u.arbitrary()? {
            continue;
        }
        let mode = pick(u, &[None, Some("access"), Some("trunk"), Some("hybrid")])?;
        let mut network = json!({"type": type_});
        let object = network.as_object_mut().expect("object");
        set(object, "mode", mode.map(Value::from));
        if matches!(mode, Some("trunk" | "hybrid")) {
            object.insert("allowedVLANs".into(), json!(pick(u, &[&["100"][..], &["1-4094"], &["100-200", "300"]])?));
        }
        set(object, "nativeVLAN", maybe(u, |u| Ok(Value::from(u.int_in_range(1..=4094)?)))?);
        set(object, "mtu", maybe(u, |u| Ok(Value::from(u.int_in_range(1280..=9216)?)))?);
        networks.push(network);
    }
    Ok(json!({"enabled": true, "providerNetworks": networks}))
}

fn overrides(u: &mut Unstructured) -> Result<Value> {
    let mut overrides = Map::new();
    if u.arbitrary()? {
        let mut images = vec![];
        for architecture in [None, Some("x86_64"), Some("aarch64")] {
            if u.arbitrary()? {
                let base =
                    pick(u, &["file:///shared/ipa", "https://images.example.com/ipa", "oci://quay.io/metal3/ipa"])?;
                let mut entry = json!({"kernel": format!("{base}.kernel"), "initramfs": format!("{base}.initramfs")});
                set(entry.as_object_mut().expect("object"), "architecture", architecture.map(Value::from));
                images.push(entry);
            }
        }
        overrides.insert("agentImages".into(), Value::Array(images));
    }
    if u.arbitrary()? {
        let toleration = match u.int_in_range(0..=2)? {
            0 => json!({"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}),
            1 => json!({"key": "dedicated", "operator": "Equal", "value": "metal3", "effect": "NoExecute"}),
            _ => json!({"operator": "Exists"}),
        };
        overrides.insert("tolerations".into(), json!([toleration]));
    }
    set(&mut overrides, "labels", maybe(u, |_| Ok(json!({"team": "metal"})))?);
    Ok(Value::Object(overrides))
}
