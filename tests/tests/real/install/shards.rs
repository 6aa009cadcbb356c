//! `config/shards` as users apply it, on the real node: the main Deployment runs the Ironic and
//! NodeSet controllers and the webhooks, and the two replicas of `ferrometal-hosts` run the
//! host controller, each holding shard Leases under the shipped RBAC (the Role naming each
//! shard's Lease). The replicas divide the four shards two and two, hosts reach their steady
//! state, and when one replica's pod is deleted its shards pass to the other replicas (the
//! survivor and the pod the Deployment makes anew) without a host provisioned twice. No
//! replica's watch of the shard Leases is refused under that Role, and access reviews show the
//! replicas' identity may use the four shard Leases as the elector does, and may not read,
//! write or delete another Lease by name but the leader's.

use super::{OnTheNode, OperatorPods, ironic_nodes, overlay_of, until_available, until_named_available};
use crate::install_common::workloads;
use crate::install_common::{Ask, ask, assert_access, kubectl};
use ferrometal_tests::operator_process::operator_image;
use ferrometal_tests::wait;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use operator::testing::install::{DEFAULT_NAMESPACE, NAME};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The sharded host controller's Deployment and its pods.
pub(super) const HOSTS: &str = "ferrometal-hosts";
pub(super) const HOSTS_SELECTOR: &str = "app.kubernetes.io/name=ferrometal,app.kubernetes.io/component=hosts";
/// The shards of the checked-in `config/shards`.
const SHARDS: [&str; 4] = ["0", "1", "2", "3"];

/// The shipped Roles give the replicas' ServiceAccount every verb the elector uses on the
/// shard Leases it is configured with (create, which cannot be limited by name, comes with the
/// leader's Lease), and no other write or read by name on any other Lease but the leader's.
async fn shard_lease_access(cp: &ferrometal_tests::control_plane::ControlPlane, ns: &str) -> anyhow::Result<()> {
    let kubeconfig = cp.service_account_kubeconfig(DEFAULT_NAMESPACE, NAME).await?;
    let identity = ferrometal_tests::control_plane::client_from_kubeconfig(&kubeconfig).await?;
    let names: Vec<String> = SHARDS.iter().map(|s| format!("ferrometal-leader-shard-{s}")).collect();
    let lease =
        |verb, name, namespace| Ask { name: Some(name), ..ask(verb, "coordination.k8s.io", "leases", Some(namespace)) };
    let allowed: Vec<Ask> = names
        .iter()
        .flat_map(|name| {
            ["get", "list", "watch", "update", "patch"].map(|verb| lease(verb, name.as_str(), DEFAULT_NAMESPACE))
        })
        .chain([
            ask("create", "coordination.k8s.io", "leases", Some(DEFAULT_NAMESPACE)),
            lease("patch", "ferrometal-leader", DEFAULT_NAMESPACE),
        ])
        .collect();
    let denied = [
        lease("patch", "ferrometal-leader-shard-4", DEFAULT_NAMESPACE),
        lease("update", "another-lease", DEFAULT_NAMESPACE),
        lease("get", "another-lease", DEFAULT_NAMESPACE),
        lease("delete", names[0].as_str(), DEFAULT_NAMESPACE),
        lease("patch", names[0].as_str(), ns),
        ask("list", "coordination.k8s.io", "leases", None),
    ];
    assert_access(&identity, &allowed, &denied).await
}

/// Who holds each shard's Lease (empty: nobody).
async fn holders(leases: &Api<Lease>) -> anyhow::Result<BTreeMap<String, String>> {
    let mut holders = BTreeMap::new();
    for shard in SHARDS {
        let lease = leases.get_opt(&format!("ferrometal-leader-shard-{shard}")).await?;
        holders.insert(shard.to_string(), lease.and_then(|l| l.spec?.holder_identity).unwrap_or_default());
    }
    Ok(holders)
}

/// The names of the host controller's running pods.
async fn host_pods(pods: &Api<Pod>) -> anyhow::Result<Vec<String>> {
    let listed = pods.list(&ListParams::default().labels(HOSTS_SELECTOR)).await?.items;
    Ok(listed.into_iter().filter(|p| p.metadata.deletion_timestamp.is_none()).filter_map(|p| p.metadata.name).collect())
}

/// Waits until every shard is held by one of the running host pods, two each.
pub(super) async fn until_divided(leases: &Api<Lease>, pods: &Api<Pod>) -> anyhow::Result<BTreeMap<String, String>> {
    wait::until_ok(
        "the shards held two and two by the running pods",
        Duration::from_secs(120),
        Duration::from_millis(250),
        || async {
            let (held, running) = (holders(leases).await?, host_pods(pods).await?);
            let count = |pod: &String| held.values().filter(|h| *h == pod).count();
            Ok((running.len() == 2 && running.iter().all(|p| count(p) == 2)).then_some(held))
        },
    )
    .await
}

#[tokio::test]
async fn installed_with_shards_the_host_replicas_divide_the_shard_leases_and_take_over_a_deleted_pods()
-> anyhow::Result<()> {
    let archive = tokio::task::spawn_blocking(operator_image).await??;
    let OnTheNode { cp, ironic, ns, ironic_for_pods } = OnTheNode::start(&archive, "install-shards").await?;
    let (admin, kubeconfig) = (cp.client(), cp.kubeconfig());

    let tree = tempfile::tempdir()?;
    overlay_of(tree.path(), "shards", &format!("http://{}", ironic_for_pods.addr()), &[NAME, HOSTS])?;
    kubectl(kubeconfig, &["apply", "--server-side", "-k", &tree.path().display().to_string()], None)?;
    let deployments: Api<Deployment> = Api::namespaced(admin.clone(), DEFAULT_NAMESPACE);
    until_available(&deployments, kubeconfig).await?;
    until_named_available(&deployments, kubeconfig, DEFAULT_NAMESPACE, HOSTS, HOSTS_SELECTOR).await?;

    let leases: Api<Lease> = Api::namespaced(admin.clone(), DEFAULT_NAMESPACE);
    let pods: Api<Pod> = Api::namespaced(admin.clone(), DEFAULT_NAMESPACE);
    let divided = until_divided(&leases, &pods).await?;
    eprintln!("---- real::install::shards: shards held {divided:?}");
    shard_lease_access(&cp, &ns).await?;

    let mut host_pods_running = OperatorPods::selected(kubeconfig, DEFAULT_NAMESPACE, HOSTS_SELECTOR);
    workloads::hosts_steady(&admin, &mut host_pods_running, &ns, &ironic).await?;
    let before = ironic_nodes(&ironic).await?;

    // One replica's pod deleted: its shards pass to the pods running after it.
    let victim = divided.values().next().cloned().unwrap_or_default();
    let deleted = Instant::now();
    kubectl(kubeconfig, &["delete", "pod", "-n", DEFAULT_NAMESPACE, &victim, "--wait=false"], None)?;
    let after = wait::until_ok(
        "the deleted pod's shards held by others",
        Duration::from_secs(120),
        Duration::from_millis(100),
        || async {
            let held = holders(&leases).await?;
            Ok(held.values().all(|h| !h.is_empty() && *h != victim).then_some(held))
        },
    )
    .await?;
    eprintln!("---- real::install::shards: {victim}'s shards taken over in {:.1?}: {after:?}", deleted.elapsed());
    until_divided(&leases, &pods).await?;
    // The shipped Role lets each replica watch the shard Leases by name, as it does to see a
    // renewal when it is written (a refused watch is only a warning: the reads go on).
    let logs = kubectl(kubeconfig, &["logs", "-n", DEFAULT_NAMESPACE, "-l", HOSTS_SELECTOR, "--tail=-1"], None)?;
    assert!(!logs.contains("cannot watch a shard lease"), "a shard Lease watch was refused:\n{logs}");

    // A new host is served, and nothing was provisioned again.
    let iso = ironic.image_server().write_live_iso(&format!("{ns}/late.iso"))?;
    let host = workloads::fake_host("late-0", true, Some(&iso), json!({}));
    workloads::host_reaches(&admin, &mut host_pods_running, &ns, host, "provisioned").await?;
    let now = ironic_nodes(&ironic).await?;
    assert_eq!(now.len(), before.len() + 1, "one node more, for late-0: {now:?}");
    for node in &before {
        assert!(now.contains(node), "{node:?} where it was: {now:?}");
    }
    Ok(())
}
