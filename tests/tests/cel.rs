//! The CRDs' CEL rules (`x-kubernetes-validations`), proven by Kubernetes itself: the CRDs
//! install with server-side apply (the apiserver compiles every rule and estimates its cost
//! against its budget), and with no webhook installed the apiserver refuses one object per rule
//! with the rule's message. Runs against the newest Kubernetes and, with
//! `FERROMETAL_KUBERNETES=oldest`, the oldest ferrometal supports (`make test`).

mod common;

use common::Env;
use crds::baremetalhost::BareMetalHost;
use crds::ironic::Ironic;
use crds::nodeset::NodeSet;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// One rule's case: an object the apiserver accepts, what turns it into one the rule refuses
/// (a second create, or a change of the first), and the rule's message.
struct Case {
    message: &'static str,
    kind: Kind,
    accepted: Option<Value>,
    /// A status the accepted object gets before the change (the NodeSet locks read it).
    status: Option<Value>,
    refused: Change,
}

#[derive(Clone, Copy)]
enum Kind {
    Ironic,
    Host,
    NodeSet,
}

enum Change {
    Create(Value),
    Merge(Value),
}

fn ironic(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic", "metadata": {"name": name}, "spec": spec})
}

fn host(name: &str, spec: Value) -> Value {
    let mut base = json!({"bmc": {"address": "redfish://192.0.2.1/redfish/v1/Systems/1", "credentialsName": "bmc"},
        "bootMACAddress": "52:54:00:12:34:56", "online": true});
    merge(&mut base, spec);
    json!({"apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost", "metadata": {"name": name}, "spec": base})
}

fn nodeset(name: &str, spec: Value) -> Value {
    let mut base = json!({"baremetalSetTemplate": {"image": {"url": "http://images/os.qcow2",
        "checksum": "a".repeat(64), "checksumType": "sha256"}, "bmhLabelSelector": {"matchLabels": {"pool": "a"}}},
        "nodes": {"compute-0": {"bmhLabelSelector": {"matchLabels": {"rack": "1"}}}}});
    merge(&mut base, spec);
    json!({"apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSet", "metadata": {"name": name}, "spec": base})
}

/// JSON merge patch semantics: `null` removes.
fn merge(base: &mut Value, patch: Value) {
    match (base, patch) {
        (Value::Object(base), Value::Object(patch)) => {
            for (k, v) in patch {
                if v.is_null() {
                    base.remove(&k);
                } else {
                    merge(base.entry(k).or_insert(Value::Null), v);
                }
            }
        }
        (base, patch) => *base = patch,
    }
}

fn claimed() -> Value {
    json!({"claimedHosts": 1, "hosts": {"compute-0": {"bmhRef": {"name": "server-0", "namespace": "x", "uid": "u"}}}})
}

fn cases() -> Vec<Case> {
    let managed = |spec: Value| json!({"database": {"managed": spec}});
    let case =
        |message, kind, accepted: Option<Value>, refused| Case { message, kind, accepted, status: None, refused };
    vec![
        case(
            "cannot change to a new database or remove it",
            Kind::Ironic,
            Some(ironic("db-removed", managed(json!({})))),
            Change::Merge(json!({"spec": {"database": null}})),
        ),
        case(
            "highAvailability requires a database",
            Kind::Ironic,
            None,
            Change::Create(ironic("ha", json!({"highAvailability": true}))),
        ),
        case(
            "set either credentialsName, host and name (an external database) or managed, not both",
            Kind::Ironic,
            None,
            Change::Create(ironic(
                "both",
                json!({"database": {"managed": {}, "host": "db", "credentialsName": "c",
                "name": "ironic"}}),
            )),
        ),
        case(
            "storageClassName is immutable",
            Kind::Ironic,
            Some(ironic("data-class", managed(json!({"storage": {"storageClassName": "fast"}})))),
            Change::Merge(json!({"spec": {"database": {"managed": {"storage": {"storageClassName": "slow"}}}}})),
        ),
        case(
            "storageClassName is immutable",
            Kind::Ironic,
            Some(ironic(
                "backup-class",
                managed(json!({"backup": {"enabled": true,
                "storage": {"storageClassName": "fast"}}})),
            )),
            Change::Merge(
                json!({"spec": {"database": {"managed": {"backup": {"storage": {"storageClassName": "slow"}}}}}}),
            ),
        ),
        case(
            "certificateName is set but tls.enabled is false: a certificate is only served with TLS on",
            Kind::Ironic,
            None,
            Change::Create(ironic("tls-off", managed(json!({"tls": {"enabled": false, "certificateName": "db-tls"}})))),
        ),
        case(
            "signerName cannot be a kubernetes.io signer",
            Kind::Ironic,
            None,
            Change::Create(ironic(
                "signer",
                json!({"tls": {"certificateSigningRequest":
                {"signerName": "kubernetes.io/legacy-unknown"}}}),
            )),
        ),
        case(
            "signerName cannot be a kubernetes.io signer",
            Kind::Ironic,
            None,
            Change::Create(ironic(
                "signer-sub",
                json!({"tls": {"certificateSigningRequest":
                {"signerName": "beta.kubernetes.io/serving"}}}),
            )),
        ),
        case(
            "bootMACAddress can not be changed once it is set",
            Kind::Host,
            Some(host("mac", json!({}))),
            Change::Merge(json!({"spec": {"bootMACAddress": "52:54:00:65:43:21"}})),
        ),
        case(
            "online cannot be false when disablePowerOff is true",
            Kind::Host,
            None,
            Change::Create(host("power", json!({"disablePowerOff": true, "online": false}))),
        ),
        Case {
            message: "spec.baremetalSetTemplate: bmhNamespace, bmhLabelSelector and hardwareReqs cannot change once hosts are claimed",
            kind: Kind::NodeSet,
            accepted: Some(nodeset("template-lock", json!({}))),
            status: Some(claimed()),
            refused: Change::Merge(
                json!({"spec": {"baremetalSetTemplate": {"bmhLabelSelector": {"matchLabels": {"pool": "b"}}}}}),
            ),
        },
        Case {
            message: "spec.nodes[*].bmhLabelSelector cannot change once this host is claimed",
            kind: Kind::NodeSet,
            accepted: Some(nodeset("node-lock", json!({}))),
            status: Some(claimed()),
            refused: Change::Merge(
                json!({"spec": {"nodes": {"compute-0": {"bmhLabelSelector": {"matchLabels": {"rack": "2"}}}}}}),
            ),
        },
        case(
            "preProvisioned is immutable; create a new NodeSet instead",
            Kind::NodeSet,
            Some(nodeset("pre", json!({"preProvisioned": true, "baremetalSetTemplate": null}))),
            Change::Merge(json!({"spec": {"preProvisioned": false}})),
        ),
        case(
            "baremetalSetTemplate is required unless preProvisioned is true, and forbidden when it is",
            Kind::NodeSet,
            None,
            Change::Create(nodeset("no-template", json!({"baremetalSetTemplate": null}))),
        ),
    ]
}

/// Every rule message of the generated CRDs.
fn rule_messages() -> BTreeSet<String> {
    fn walk(node: &Value, found: &mut BTreeSet<String>) {
        match node {
            Value::Object(map) => {
                for rule in map.get("x-kubernetes-validations").and_then(Value::as_array).into_iter().flatten() {
                    found.insert(rule["message"].as_str().unwrap_or_default().trim().to_string());
                }
                map.values().for_each(|v| walk(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
            _ => {}
        }
    }
    let mut found = BTreeSet::new();
    for crd in crds::all_crds() {
        walk(&serde_json::to_value(&crd).unwrap_or_default(), &mut found);
    }
    found
}

#[test]
fn every_rule_of_the_crds_has_a_case() {
    let messages = rule_messages();
    let cases = cases();
    for message in &messages {
        assert!(cases.iter().any(|c| message.starts_with(c.message)), "no case for the rule {message:?}");
    }
    // 13 rules; the two storage classes share a message.
    assert_eq!(messages.len(), 12, "the CRDs' rules: {messages:#?}");
}

/// What the apiserver said to `change`: its refusal's message, or why it was not one.
async fn try_change<K>(api: &Api<K>, name: &str, change: &Change) -> Result<String, String>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let result = match change {
        Change::Create(object) => {
            let object: K = serde_json::from_value(object.clone()).map_err(|e| e.to_string())?;
            api.create(&PostParams::default(), &object).await.map(|_| ())
        }
        Change::Merge(patch) => api.patch(name, &PatchParams::default(), &Patch::Merge(patch)).await.map(|_| ()),
    };
    match result {
        Err(kube::Error::Api(status)) if status.code == 422 => Ok(status.message),
        other => Err(format!("{other:?}")),
    }
}

async fn run<K>(api: Api<K>, case: &Case) -> anyhow::Result<String>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let mut name = String::new();
    if let Some(accepted) = &case.accepted {
        name = accepted["metadata"]["name"].as_str().unwrap_or_default().to_string();
        api.create(&PostParams::default(), &serde_json::from_value(accepted.clone())?).await?;
        if let Some(status) = &case.status {
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(json!({"status": status}))).await?;
        }
    }
    try_change(&api, &name, &case.refused).await.map_err(|other| anyhow::anyhow!("{other}"))
}

#[tokio::test]
async fn the_apiserver_itself_refuses_what_each_rule_forbids_without_any_webhook() -> anyhow::Result<()> {
    let env = Env::start_api_only("cel").await?;
    let client = env.client();
    for case in cases() {
        let refused = match case.kind {
            Kind::Ironic => run(Api::<Ironic>::namespaced(client.clone(), &env.ns), &case).await,
            Kind::Host => run(Api::<BareMetalHost>::namespaced(client.clone(), &env.ns), &case).await,
            Kind::NodeSet => run(Api::<NodeSet>::namespaced(client.clone(), &env.ns), &case).await,
        };
        let message = refused.map_err(|e| anyhow::anyhow!("{:?}: not refused: {e}", case.message))?;
        assert!(message.contains(case.message), "{:?}: refused for another reason: {message}", case.message);
    }
    Ok(())
}
