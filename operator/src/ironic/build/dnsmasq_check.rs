//! The DHCP settings of the `dnsmasq` container, run through a real dnsmasq. The container's
//! environment becomes configuration the way ironic-image's `rundnsmasq` template writes it
//! (one `dhcp-range=` per `DHCP_RANGE` entry, one `dhcp-option=` per `DHCP_OPTIONS` entry,
//! split on `;`), and `dnsmasq --test` must accept it. dnsmasq comes from
//! `scripts/install-packages.sh` (Debian's dnsmasq-base). The image's entry point refuses
//! pools off the provisioning network before it starts dnsmasq; that check (a Python script of
//! `images/ironic`) runs here on the same rendered environment.

use super::{Workload, build};
use crate::ironic::fixtures;
use std::collections::BTreeMap;
use std::process::Command;

const EXTRA_RANGES: &str = r#"
apiVersion: ironic.metal3.io/v1alpha1
kind: Ironic
metadata:
  name: ironic
  namespace: metal3
spec:
  networking:
    interface: eno1
    ipAddress: 192.0.2.2
    dhcp:
      networkCIDR: 192.0.2.0/24
      rangeBegin: 192.0.2.100
      rangeEnd: 192.0.2.200
      gatewayAddress: 192.0.2.1
      extraRanges:
      - networkCIDR: 198.51.100.0/24
        rangeBegin: 198.51.100.10
        rangeEnd: 198.51.100.90
        gatewayAddress: 198.51.100.1
      - networkCIDR: 203.0.113.0/25
        rangeBegin: 203.0.113.10
        rangeEnd: 203.0.113.20
"#;

/// The `dnsmasq` container's environment.
fn dnsmasq_env(yaml: &str) -> BTreeMap<String, String> {
    let desired = build(&fixtures::resolved(&fixtures::ironic(yaml), None));
    let template = match &desired.workload {
        Workload::Deployment(d) => d.spec.as_ref().map(|s| s.template.clone()),
        Workload::DaemonSet(d) => d.spec.as_ref().map(|s| s.template.clone()),
    };
    let pod = template.and_then(|t| t.spec).expect("a pod spec");
    let container = pod.containers.into_iter().find(|c| c.name == "dnsmasq").expect("a dnsmasq container");
    container.env.into_iter().flatten().filter_map(|e| Some((e.name, e.value?))).collect()
}

/// Configuration as ironic-image's template renders it from that environment.
fn configuration(env: &BTreeMap<String, String>) -> String {
    let mut conf = String::from("port=0\nbind-interfaces\ninterface=lo\n");
    let entries = |name: &str| {
        env.get(name)
            .map(|v| v.split(';').filter(|e| !e.is_empty()).map(str::to_string).collect::<Vec<_>>())
            .unwrap_or_default()
    };
    for range in entries("DHCP_RANGE") {
        conf.push_str(&format!("dhcp-range={range}\n"));
    }
    for option in entries("DHCP_OPTIONS") {
        conf.push_str(&format!("dhcp-option={option}\n"));
    }
    if let Some(gateway) = env.get("GATEWAY_IP") {
        conf.push_str(&format!("dhcp-option=option:router,{gateway}\n"));
    }
    conf
}

#[test]
fn the_rendered_dhcp_ranges_and_options_pass_dnsmasq_test() {
    let env = dnsmasq_env(EXTRA_RANGES);
    let ranges = env.get("DHCP_RANGE").cloned().unwrap_or_default();
    assert_eq!(ranges.split(';').count(), 3, "the main pool and both extra ranges: {ranges}");
    let conf = configuration(&env);
    let dir = tempfile::tempdir().expect("a scratch directory");
    let path = dir.path().join("dnsmasq.conf");
    std::fs::write(&path, &conf).expect("write the configuration");
    let output = Command::new("dnsmasq")
        .arg("--test")
        .arg(format!("--conf-file={}", path.display()))
        .output()
        .expect("dnsmasq runs (install it with scripts/install-packages.sh)");
    let said = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "dnsmasq refused\n{conf}\n{said}");
    assert!(said.contains("syntax check OK"), "{said}");
}

/// The image's pool check (`rundnsmasq` runs it before dnsmasq) on `ranges` and `addresses`:
/// whether it accepts them, and what it said.
fn pool_check(ranges: &str, addresses: &[&str]) -> (bool, String) {
    let script =
        crate::source_tree::manifest_dir().join("../images/ironic/rootfs/usr/lib/ferrometal-ironic/dhcp_pools.py");
    let output = Command::new("python3").arg(&script).arg(ranges).args(addresses).output().expect("python3 runs");
    assert!(matches!(output.status.code(), Some(0 | 1)), "{:?}", output);
    (output.status.success(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn the_image_accepts_the_rendered_pools_on_the_provisioning_network_and_leaves_relayed_ranges_alone() {
    let env = dnsmasq_env(EXTRA_RANGES);
    let ranges = env.get("DHCP_RANGE").cloned().unwrap_or_default();
    // The main pool is on eno1's network; the extra ranges are elsewhere, behind relays.
    let (accepted, said) = pool_check(&ranges, &["192.0.2.2", "192.0.2.2/24"]);
    assert!(accepted, "{ranges}: {said}");
}

#[test]
fn the_image_refuses_a_main_pool_on_no_network_of_the_provisioning_interface() {
    let env = dnsmasq_env(EXTRA_RANGES);
    let ranges = env.get("DHCP_RANGE").cloned().unwrap_or_default();
    // The interface holds an address of another network than networkCIDR's.
    let (accepted, said) = pool_check(&ranges, &["172.22.0.1", "172.22.0.1/24"]);
    assert!(!accepted, "{ranges}");
    assert!(said.contains("DHCP range 192.0.2.100,192.0.2.200,24 is not on the provisioning network"), "{said}");
    assert!(!said.contains("198.51.100"), "relayed ranges are not the interface's business: {said}");
}

#[test]
fn the_image_reads_netmasks_lease_times_and_ipv6_prefixes_as_dnsmasq_does() {
    let on = ["172.22.0.1", "172.22.0.1/24"];
    assert!(pool_check("172.22.0.10,172.22.0.20,255.255.255.0", &on).0);
    // Without a prefix of its own, the pool takes the interface's network.
    assert!(pool_check("172.22.0.10,172.22.0.20,12h", &on).0);
    assert!(!pool_check("172.23.0.10,172.23.0.20,12h", &on).0);
    assert!(!pool_check("172.23.0.10,172.23.0.20,255.255.255.0", &on).0);
    // An address without its prefix (keepalived's, not held yet) vouches only for pools with one.
    assert!(pool_check("172.22.0.10,172.22.0.20,24", &["172.22.0.1"]).0);
    assert!(pool_check("172.23.0.10,172.23.0.20", &["172.22.0.1"]).0, "nothing to judge it by");
    assert!(pool_check("fd00:1::10,fd00:1::20,64", &["fd00:1::1/64"]).0);
    assert!(!pool_check("fd00:2::10,fd00:2::20,64", &["fd00:1::1/64"]).0);
}
