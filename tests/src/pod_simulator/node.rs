//! The one simulated Node every pod is bound to.

use super::NODE_NAME;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Client;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::json;

/// Registers the Node (once) and reports it Ready and untainted.
pub(super) async fn register_node(client: &Client) -> crate::Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    let node = Node {
        metadata: ObjectMeta {
            name: Some(NODE_NAME.to_string()),
            labels: Some(
                [
                    ("kubernetes.io/hostname", NODE_NAME),
                    ("kubernetes.io/os", "linux"),
                    ("kubernetes.io/arch", "amd64"),
                    ("ferrometal.io/simulated", "true"),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ),
            ..Default::default()
        },
        ..Default::default()
    };
    if nodes.get_opt(NODE_NAME).await?.is_none() {
        nodes.create(&PostParams::default(), &node).await?;
    }
    let now = Time(jiff::Timestamp::now());
    let status = json!({"status": {
        "capacity": {"cpu": "64", "memory": "256Gi", "pods": "250", "ephemeral-storage": "1Ti"},
        "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "250", "ephemeral-storage": "1Ti"},
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": NODE_NAME}],
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
            "message": "simulated by ferrometal-tests", "lastHeartbeatTime": now, "lastTransitionTime": now}],
        "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux", "kubeletVersion": "v1.20.2",
            "kubeProxyVersion": "v1.20.2", "containerRuntimeVersion": "simulated://1", "osImage": "simulated",
            "kernelVersion": "simulated", "machineID": "", "systemUUID": "", "bootID": ""}
    }});
    nodes.patch_status(NODE_NAME, &PatchParams::default(), &Patch::Merge(&status)).await?;
    // The apiserver taints new nodes not-ready; the node lifecycle
    // controller, which we do not run, would lift the taint once the kubelet
    // reports Ready. DaemonSet pods do not tolerate it.
    nodes.patch(NODE_NAME, &PatchParams::default(), &Patch::Merge(json!({"spec": {"taints": null}}))).await?;
    Ok(())
}
