//! When a NodeSet has converged: every host of `spec.nodes` runs (its BareMetalHost
//! provisioned, unless the NodeSet is preProvisioned) at its desired configuration
//! (`deployedConfigHash == desiredConfigHash`), and the NodeSet is Ready at its generation.

use super::Convergence;
use kube::api::{Api, DynamicObject};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::Value;
use std::time::Duration;
use tokio::time::Instant;

/// The NodeSet resource, read untyped: a status that does not parse is not converged.
pub fn resource() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("ferrometal.io", "v1alpha1", "NodeSet"))
}

/// True when the host `name` of `nodeset` runs at its desired configuration.
pub fn host_converged(nodeset: &Value, name: &str) -> bool {
    let host = &nodeset["status"]["hosts"][name];
    let desired = host["desiredConfigHash"].as_str().filter(|h| !h.is_empty());
    let provisioned =
        nodeset["spec"]["preProvisioned"] == Value::Bool(true) || host["provisioningState"] == "provisioned";
    provisioned && desired.is_some() && host["deployedConfigHash"].as_str() == desired
}

/// True when the NodeSet's status is of its generation and says Ready.
pub fn ready(nodeset: &Value) -> bool {
    let status = &nodeset["status"];
    let ready =
        status["conditions"].as_array().into_iter().flatten().any(|c| c["type"] == "Ready" && c["status"] == "True");
    ready
        && !status["observedGeneration"].is_null()
        && status["observedGeneration"] == nodeset["metadata"]["generation"]
}

/// Its hosts that have not converged; at least one while the NodeSet is not Ready at its
/// generation (every host may be configured while a rollout's record is not written yet).
pub fn unconverged(nodeset: &Value) -> usize {
    let hosts = nodeset["spec"]["nodes"].as_object().map(|n| n.keys().collect::<Vec<_>>()).unwrap_or_default();
    let behind = hosts.iter().filter(|h| !host_converged(nodeset, h)).count();
    if ready(nodeset) { behind } else { behind.max(1) }
}

/// Waits until the NodeSet `name` of `namespace` has converged, for at most `timeout` from
/// `since` (the end of the last fault); `hosts` is how many it has.
pub async fn converge(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    hosts: usize,
    since: Instant,
    timeout: Duration,
) -> Convergence {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource());
    super::wait_converged(since, timeout, hosts, async || {
        let nodeset = api.get_opt(name).await.ok()?;
        Some(nodeset.map(|n| unconverged(&serde_json::to_value(n).unwrap_or_default())).unwrap_or(hosts.max(1)))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nodeset(generation: u64, observed: u64, ready: &str, hosts: Value) -> Value {
        json!({"metadata": {"generation": generation},
            "spec": {"nodes": {"c-0": {}, "c-1": {}}},
            "status": {"observedGeneration": observed, "hosts": hosts,
                "conditions": [{"type": "Ready", "status": ready}]}})
    }

    fn host(state: &str, desired: &str, deployed: Option<&str>) -> Value {
        json!({"provisioningState": state, "desiredConfigHash": desired, "deployedConfigHash": deployed})
    }

    #[test]
    fn a_nodeset_converges_when_every_host_runs_its_desired_configuration_and_it_is_ready() {
        let done = json!({"c-0": host("provisioned", "A", Some("A")), "c-1": host("provisioned", "B", Some("B"))});
        assert_eq!(unconverged(&nodeset(3, 3, "True", done.clone())), 0);
        assert_eq!(unconverged(&nodeset(4, 3, "True", done.clone())), 1, "an edit not processed yet");
        assert_eq!(unconverged(&nodeset(3, 3, "False", done)), 1, "not Ready");
        let behind = json!({"c-0": host("provisioned", "B", Some("A")), "c-1": host("provisioning", "B", None)});
        assert_eq!(unconverged(&nodeset(3, 3, "False", behind)), 2);
        let missing = json!({"c-0": host("provisioned", "A", Some("A"))});
        assert_eq!(unconverged(&nodeset(3, 3, "True", missing)), 1, "c-1 has no status");
        assert_eq!(unconverged(&json!({})), 1, "no status at all");
    }

    #[test]
    fn a_pre_provisioned_host_needs_no_provisioned_machine() {
        let mut set = nodeset(1, 1, "True", json!({"c-0": host("", "A", Some("A")), "c-1": host("", "A", Some("A"))}));
        assert_eq!(unconverged(&set), 2);
        set["spec"]["preProvisioned"] = json!(true);
        assert_eq!(unconverged(&set), 0);
    }
}
