//! NodeSet create rules, the transition rules enforcing the field classification
//! (design/nodeset.md), their CEL twins, and NodeSetService rules.

mod common;

use common::{
    Case, assert_accepted, assert_cases, assert_cel_accepts, assert_cel_rejects, assert_rejects, assert_update_cases,
    patched, typed, validate_as, yaml,
};
use crds::nodeset::validate_nodeset;
use crds::nodesetservice::{NodeSetService, service_hash, validate_nodeset_service};
use serde_json::{Value, json};

fn full() -> Value {
    yaml(include_str!("../samples/nodeset-full.yaml"))
}

fn preprovisioned() -> Value {
    yaml(include_str!("../samples/nodeset-preprovisioned.yaml"))
}

fn errors(value: &Value, old: Option<&Value>) -> Vec<crds::FieldError> {
    validate_as(value, old, validate_nodeset)
}

/// The full sample with compute-0 claimed, as the controller reports it.
fn claimed() -> Value {
    patched(
        &full(),
        &json!({"status": {"claimedHosts": 1, "hosts": {"compute-0": {"bmhRef": {"name": "server-2", "namespace": "metal3"}}, "compute-1": {}}}}),
    )
}

fn rejected_cases() -> Vec<Case> {
    vec![
        (
            "template required",
            full,
            json!({"spec": {"baremetalSetTemplate": null}}),
            "spec.baremetalSetTemplate",
            "is required unless preProvisioned",
        ),
        (
            "no template when preProvisioned",
            preprovisioned,
            json!({"spec": {"baremetalSetTemplate": {"image": {"url": "https://x/os.img", "checksum": "https://x/sum"}}}}),
            "spec.baremetalSetTemplate",
            "forbidden when it is",
        ),
        (
            "image required",
            full,
            json!({"spec": {"baremetalSetTemplate": {"image": null}}}),
            "spec.baremetalSetTemplate.image",
            "is required to provision hosts",
        ),
        (
            "image checked like a BareMetalHost's",
            full,
            json!({"spec": {"baremetalSetTemplate": {"image": {"checksum": null}}}}),
            "spec.baremetalSetTemplate.image.checksum",
            "is required unless format is live-iso",
        ),
        (
            "root device hints checked",
            full,
            json!({"spec": {"baremetalSetTemplate": {"rootDeviceHints": {"deviceName": "sda"}}}}),
            "spec.baremetalSetTemplate.rootDeviceHints.deviceName",
            "starting with /dev/",
        ),
        (
            "bmhNamespace is a namespace",
            full,
            json!({"spec": {"baremetalSetTemplate": {"bmhNamespace": "Metal_3"}}}),
            "spec.baremetalSetTemplate.bmhNamespace",
            "is not a valid namespace name",
        ),
        (
            "hardware minimums positive",
            full,
            json!({"spec": {"baremetalSetTemplate": {"hardwareReqs": {"minCpuCount": 0}}}}),
            "spec.baremetalSetTemplate.hardwareReqs.minCpuCount",
            "must be at least 1",
        ),
        (
            "secrets in the BareMetalHosts' namespace",
            full,
            json!({"spec": {"baremetalSetTemplate": {"userData": {"namespace": "other"}}}}),
            "spec.baremetalSetTemplate.userData.namespace",
            "must be the BareMetalHosts' namespace",
        ),
        (
            "secret references need a name",
            full,
            json!({"spec": {"baremetalSetTemplate": {"networkData": {"name": null}}}}),
            "spec.baremetalSetTemplate.networkData.name",
            "is required",
        ),
        (
            "host secrets in the BareMetalHosts' namespace",
            full,
            json!({"spec": {"nodes": {"compute-0": {"networkData": {"namespace": "other"}}}}}),
            "spec.nodes[compute-0].networkData.namespace",
            "must be the BareMetalHosts' namespace",
        ),
        (
            "host names are DNS names",
            full,
            json!({"spec": {"nodes": {"Compute_0": {}}}}),
            "spec.nodes[Compute_0]",
            "must be a lowercase DNS name",
        ),
        (
            "preProvisioned hosts have no selector",
            preprovisioned,
            json!({"spec": {"nodes": {"legacy-0": {"bmhLabelSelector": {"matchLabels": {"a": "b"}}}}}}),
            "spec.nodes[legacy-0].bmhLabelSelector",
            "cannot be used when preProvisioned is true",
        ),
        (
            "preProvisioned hosts cannot be reprovisioned",
            preprovisioned,
            json!({"spec": {"nodes": {"legacy-0": {"reprovisionToken": "1"}}}}),
            "spec.nodes[legacy-0].reprovisionToken",
            "cannot be used when preProvisioned is true",
        ),
        (
            "network names unique",
            full,
            json!({"spec": {"nodeTemplate": {"networks": [{"name": "ctlplane"}, {"name": "ctlplane"}]}}}),
            "spec.nodeTemplate.networks[1].name",
            "is listed twice",
        ),
        (
            "MTU range",
            full,
            json!({"spec": {"nodes": {"compute-1": {"networks": [{"name": "ctlplane", "mtu": 10000}]}}}}),
            "spec.nodes[compute-1].networks[0].mtu",
            "outside 576-9216",
        ),
        (
            "VLAN range",
            full,
            json!({"spec": {"nodeTemplate": {"networks": [{"name": "ctlplane", "vlan": 0}]}}}),
            "spec.nodeTemplate.networks[0].vlan",
            "is not a valid VLAN ID",
        ),
        (
            "addresses in CIDR notation",
            full,
            json!({"spec": {"nodes": {"compute-1": {"networks": [{"name": "ctlplane", "addresses": ["192.0.2.11"]}]}}}}),
            "spec.nodes[compute-1].networks[0].addresses[0]",
            "must be an address in CIDR notation",
        ),
        (
            "gateway is an IP",
            full,
            json!({"spec": {"nodeTemplate": {"networks": [{"name": "ctlplane", "gateway": "router"}]}}}),
            "spec.nodeTemplate.networks[0].gateway",
            "is not a valid IP address",
        ),
        (
            "route destinations",
            full,
            json!({"spec": {"nodeTemplate": {"networks": [{"name": "ctlplane", "routes": [{"to": "everywhere", "via": "192.0.2.1"}]}]}}}),
            "spec.nodeTemplate.networks[0].routes[0].to",
            "must be a CIDR or \"default\"",
        ),
        (
            "route next hops",
            full,
            json!({"spec": {"nodeTemplate": {"networks": [{"name": "ctlplane", "routes": [{"to": "default", "via": "gw"}]}]}}}),
            "spec.nodeTemplate.networks[0].routes[0].via",
            "is not a valid IP address",
        ),
        (
            "route metrics",
            full,
            json!({"spec": {"nodeTemplate": {"networks": [{"name": "ctlplane", "routes": [{"to": "default", "via": "192.0.2.1", "metric": -1}]}]}}}),
            "spec.nodeTemplate.networks[0].routes[0].metric",
            "must not be negative",
        ),
        (
            "name servers are IPs",
            full,
            json!({"spec": {"nodeTemplate": {"dns": {"nameservers": ["dns.example.com"]}}}}),
            "spec.nodeTemplate.dns.nameservers[0]",
            "is not a valid IP address",
        ),
        (
            "search domains are domains",
            full,
            json!({"spec": {"nodeTemplate": {"dns": {"search": ["bad domain"]}}}}),
            "spec.nodeTemplate.dns.search[0]",
            "is not a valid domain",
        ),
        (
            "variable names",
            full,
            json!({"spec": {"nodes": {"compute-0": {"variables": {"1st": true}}}}}),
            "spec.nodes[compute-0].variables[1st]",
            "variable names must start with a letter",
        ),
        (
            "management network exists on every host",
            full,
            json!({"spec": {"nodeTemplate": {"managementNetwork": "tenant"}}}),
            "spec.nodeTemplate.managementNetwork",
            "is not a network of host compute-0",
        ),
        (
            "the management network is a template network when there are no hosts yet",
            full,
            json!({"spec": {"nodes": null, "nodeTemplate": {"managementNetwork": "tenant"}}}),
            "spec.nodeTemplate.managementNetwork",
            "is not one of nodeTemplate.networks",
        ),
        (
            "services are names",
            full,
            json!({"spec": {"services": ["Bad Name"]}}),
            "spec.services[0]",
            "is not a valid NodeSetService name",
        ),
        ("services are unique", full, json!({"spec": {"services": ["a", "a"]}}), "spec.services[1]", "is listed twice"),
        (
            "maxUnavailable count",
            full,
            json!({"spec": {"rollout": {"maxUnavailable": 0}}}),
            "spec.rollout.maxUnavailable",
            "must be at least 1",
        ),
        (
            "maxUnavailable percentage",
            full,
            json!({"spec": {"rollout": {"maxUnavailable": "150%"}}}),
            "spec.rollout.maxUnavailable",
            "between 1% and 100%",
        ),
    ]
}

#[test]
fn each_create_rule_rejects_bad_input_with_its_path_and_message() {
    assert_cases(rejected_cases(), |v| errors(v, None));
}

#[test]
fn good_input_for_each_create_rule_is_accepted() {
    let good = [
        ("full", full()),
        ("minimal", yaml(include_str!("../samples/nodeset-minimal.yaml"))),
        ("preprovisioned", preprovisioned()),
        (
            "default route and percentage",
            patched(
                &full(),
                &json!({"spec": {"rollout": {"maxUnavailable": "100%"}, "nodeTemplate": {"networks": [{"name": "ctlplane", "routes": [{"to": "default", "via": "192.0.2.1"}]}]}}}),
            ),
        ),
        (
            "secret in bmhNamespace",
            patched(&full(), &json!({"spec": {"baremetalSetTemplate": {"userData": {"namespace": "metal3"}}}})),
        ),
        (
            "fqdn host names",
            patched(
                &full(),
                &json!({"spec": {"nodes": {"compute-2.example.com": {"networks": [{"name": "ctlplane", "addresses": ["192.0.2.12/24"]}]}}}}),
            ),
        ),
    ];
    assert_accepted(good.map(|(case, value)| (case, value, None)), errors);
}

#[test]
fn class_c_fields_lock_once_a_host_is_claimed() {
    let old = claimed();
    let cases = [
        (
            json!({"spec": {"baremetalSetTemplate": {"bmhNamespace": "other"}}}),
            "spec.baremetalSetTemplate.bmhNamespace",
        ),
        (
            json!({"spec": {"baremetalSetTemplate": {"bmhLabelSelector": {"matchLabels": {"rack": "r2"}}}}}),
            "spec.baremetalSetTemplate.bmhLabelSelector",
        ),
        (
            json!({"spec": {"baremetalSetTemplate": {"hardwareReqs": {"minMemoryGiB": 128}}}}),
            "spec.baremetalSetTemplate.hardwareReqs",
        ),
    ];
    assert_update_cases(&old, cases.map(|(patch, path)| (patch, path, "cannot change once hosts are claimed")), errors);
    let selector = patched(
        &old,
        &json!({"spec": {"nodes": {"compute-0": {"bmhLabelSelector": {"matchLabels": {"serial": "XYZ"}}}}}}),
    );
    assert_rejects(
        &errors(&selector, Some(&old)),
        "spec.nodes[compute-0].bmhLabelSelector",
        "cannot change once this host is claimed",
        "host selector",
    );
    let removed = patched(&old, &json!({"spec": {"baremetalSetTemplate": null, "preProvisioned": true}}));
    assert_rejects(
        &errors(&removed, Some(&old)),
        "spec.baremetalSetTemplate",
        "cannot be removed once hosts are claimed",
        "template removal",
    );
    assert_rejects(
        &errors(&removed, Some(&old)),
        "spec.preProvisioned",
        "preProvisioned is immutable",
        "preProvisioned",
    );
}

#[test]
fn class_a_and_b_fields_stay_editable_on_claimed_nodesets() {
    let old = claimed();
    let edits = [
        (
            "image (b)",
            json!({"spec": {"baremetalSetTemplate": {"image": {"url": "https://images.example.com/os-2.qcow2"}}}}),
        ),
        (
            "boot mode and hints (b)",
            json!({"spec": {"baremetalSetTemplate": {"bootMode": "legacy", "rootDeviceHints": {"minSizeGigabytes": 300}}}}),
        ),
        ("cleaning mode (a)", json!({"spec": {"baremetalSetTemplate": {"automatedCleaningMode": "disabled"}}})),
        (
            "networks, MTU, DNS, variables (a)",
            json!({"spec": {"nodeTemplate": {"networks": [{"name": "ctlplane", "mtu": 9000}], "managementNetwork": null, "dns": {"nameservers": ["192.0.2.99"]}, "variables": {"timezone": "UTC"}}}}),
        ),
        (
            "services and rollout (a)",
            json!({"spec": {"services": ["configure-os"], "rollout": {"strategy": "Automatic", "token": "2"}, "deletionPolicy": "Deprovision"}}),
        ),
        (
            "unclaimed host selector",
            json!({"spec": {"nodes": {"compute-1": {"bmhLabelSelector": {"matchLabels": {"serial": "NEW"}}}}}}),
        ),
        (
            "adding and removing hosts",
            json!({"spec": {"nodes": {"compute-1": null, "compute-2": {"networks": [{"name": "ctlplane", "addresses": ["192.0.2.12/24"]}]}}}}),
        ),
        ("reprovision request", json!({"spec": {"nodes": {"compute-0": {"reprovisionToken": "2026-09-01"}}}})),
    ];
    assert_accepted(edits.map(|(case, patch)| (case, patched(&old, &patch), Some(old.clone()))), errors);
    let unclaimed = full();
    let selector = patched(
        &unclaimed,
        &json!({"spec": {"baremetalSetTemplate": {"bmhLabelSelector": {"matchLabels": {"rack": "r9"}}}}}),
    );
    assert_accepted([("nothing claimed yet", selector, Some(unclaimed))], errors);
}

mod cel {
    use super::*;

    const KIND: &str = "NodeSet";

    #[test]
    fn selection_locks_in_cel_follow_the_claims_in_status() {
        let old = claimed();
        let changed =
            patched(&old, &json!({"spec": {"baremetalSetTemplate": {"hardwareReqs": {"minMemoryGiB": 128}}}}));
        assert_cel_rejects(KIND, &changed, Some(&old), "cannot change once hosts are claimed", "locked");
        assert_cel_accepts(
            KIND,
            &patched(&full(), &json!({"spec": {"baremetalSetTemplate": {"hardwareReqs": {"minMemoryGiB": 128}}}})),
            Some(&full()),
            "unclaimed set may change",
        );
        let host = patched(
            &old,
            &json!({"spec": {"nodes": {"compute-0": {"bmhLabelSelector": {"matchLabels": {"serial": "XYZ"}}}}}}),
        );
        assert_cel_rejects(KIND, &host, Some(&old), "cannot change once this host is claimed", "host locked");
        assert_cel_accepts(
            KIND,
            &patched(
                &old,
                &json!({"spec": {"nodes": {"compute-1": {"bmhLabelSelector": {"matchLabels": {"serial": "NEW"}}}}}}),
            ),
            Some(&old),
            "unclaimed host may change",
        );
        assert_cel_accepts(
            KIND,
            &patched(&old, &json!({"spec": {"nodeTemplate": {"networks": [{"name": "ctlplane", "mtu": 9000}]}}})),
            Some(&old),
            "day-2 edits pass",
        );
    }

    #[test]
    fn pre_provisioned_and_template_rules_in_cel() {
        let old = full();
        let flipped = patched(&old, &json!({"spec": {"preProvisioned": true}}));
        assert_cel_rejects(KIND, &flipped, Some(&old), "preProvisioned is immutable", "immutable");
        let untemplated = patched(&old, &json!({"spec": {"baremetalSetTemplate": null}}));
        assert_cel_rejects(
            KIND,
            &untemplated,
            None,
            "baremetalSetTemplate is required unless preProvisioned",
            "template",
        );
        assert_cel_accepts(KIND, &preprovisioned(), None, "preprovisioned sample");
    }
}

fn service(value: Value) -> NodeSetService {
    typed(&value)
}

fn full_service() -> Value {
    yaml(include_str!("../samples/nodesetservice-full.yaml"))
}

#[test]
fn nodeset_service_rules() {
    let cases = [
        (json!({"spec": {"job": {"image": " "}}}), "spec.job.image", "is required"),
        (json!({"spec": {"job": {"backoffLimit": -1}}}), "spec.job.backoffLimit", "must not be negative"),
        (
            json!({"spec": {"job": {"activeDeadlineSeconds": 0}}}),
            "spec.job.activeDeadlineSeconds",
            "must be at least 1",
        ),
        (
            json!({"spec": {"job": {"serviceAccountName": "Bad_Account"}}}),
            "spec.job.serviceAccountName",
            "is not a valid ServiceAccount name",
        ),
        (json!({"spec": {"job": {"env": [{"name": "A=B"}]}}}), "spec.job.env[0].name", "must not contain '='"),
        (
            json!({"spec": {"job": {"env": [{"name": "FERROMETAL_INVENTORY", "value": "/x"}]}}}),
            "spec.job.env[0].name",
            "FERROMETAL_INVENTORY is set by the operator",
        ),
        (
            json!({"spec": {"job": {"env": [{"name": "FERROMETAL_NODESET", "value": "x"}]}}}),
            "spec.job.env[0].name",
            "FERROMETAL_NODESET is set by the operator",
        ),
        (
            json!({"spec": {"job": {"env": [{"name": "FERROMETAL_SERVICE", "value": "x"}]}}}),
            "spec.job.env[0].name",
            "FERROMETAL_SERVICE is set by the operator",
        ),
    ];
    for (patch, path, fragment) in cases {
        let svc = service(patched(&full_service(), &patch));
        assert_rejects(&validate_nodeset_service(&svc.spec), path, fragment, path);
    }
    assert!(validate_nodeset_service(&service(full_service()).spec).is_empty());
    let minimal = service(yaml(include_str!("../samples/nodesetservice-minimal.yaml")));
    assert!(validate_nodeset_service(&minimal.spec).is_empty());
}

#[test]
fn service_hash_changes_with_the_job_only() {
    let a = service(full_service());
    let mut b = a.clone();
    b.metadata.labels = Some([("x".to_string(), "y".to_string())].into());
    assert_eq!(service_hash(&a.spec), service_hash(&b.spec));
    b.spec.job.image = "registry.example.com/netconf:1.5".into();
    assert_ne!(service_hash(&a.spec), service_hash(&b.spec));
}
