//! Least privilege, proven: the manifests of `config/` applied to a real apiserver (RBAC on) as
//! a user applies them, and `ferrometal run` as its own process with the ServiceAccount's
//! token (never the admin's identity) and the Deployment's own arguments and environment,
//! taking an Ironic, BareMetalHosts and (with the NodeSet controller) a NodeSet to their
//! steady state; access reviews show what the identity may not do. Both modes: cluster-wide
//! (`config/default`, ClusterRoles) and namespaced (`--watch-namespaces`, Roles only).
//!
//! What stands in for the cluster: the Deployment's pod is the process (no kubelet runs
//! here; the test resolves the downward API's fields); the webhooks are reached at a loopback
//! URL instead of their Service (no kube-proxy); in the namespaced mode the test does what
//! cert-manager would (the serving certificate in a file, the CA in the caBundle).

use crate::install_common::cluster::{Cluster, configuration};
use crate::install_common::workloads;
use crate::install_common::*;
use ferrometal_tests::operator_process::binary;
use ferrometal_tests::pki::{Authority, loopback};
use ferrometal_tests::ports;
use operator::testing::install::DEFAULT_NAMESPACE;
use std::time::Duration;

/// Accesses no install may grant: other API groups, RBAC, CRDs, namespaces, deleting hosts.
fn never<'a>(namespace: &'a str) -> Vec<Ask<'a>> {
    vec![
        ask("create", "rbac.authorization.k8s.io", "clusterroles", None),
        ask("create", "rbac.authorization.k8s.io", "rolebindings", Some(namespace)),
        ask("create", "apiextensions.k8s.io", "customresourcedefinitions", None),
        ask("delete", "", "namespaces", None),
        ask("create", "apps", "replicasets", Some(namespace)),
        ask("create", "", "pods", Some(namespace)),
        ask("create", "networking.k8s.io", "networkpolicies", Some(namespace)),
        ask("create", "policy", "poddisruptionbudgets", Some(namespace)),
        ask("impersonate", "", "serviceaccounts", Some(namespace)),
        // Hosts and machines are never the operator's to remove.
        ask("delete", "metal3.io", "baremetalhosts", Some(namespace)),
        ask("update", "metal3.io", "baremetalhosts", Some(namespace)),
        ask("delete", "ironic.metal3.io", "ironics", Some(namespace)),
        ask("create", "admissionregistration.k8s.io", "validatingwebhookconfigurations", None),
        ask("create", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", None),
        // Optional features' permissions are not granted by default.
        ask("list", "", "nodes", None),
        ask("create", "cert-manager.io", "certificates", Some(namespace)),
    ]
}

#[tokio::test]
async fn cluster_wide_config_default_is_all_the_operator_needs_and_no_more() -> anyhow::Result<()> {
    let mut cluster = Cluster::start().await?;
    let mut operator = cluster.install_cluster_wide(Vec::new(), &[]).await?;

    let admin = cluster.cp.client();
    let ns = cluster.cp.namespace("install-cluster").await?;
    let other = cluster.cp.namespace("install-other").await?;
    // An Ironic runs in the operator's own namespace by default, and nowhere else.
    workloads::ironic_ready(&admin, &mut operator, DEFAULT_NAMESPACE, &cluster.database).await?;
    let refused = workloads::apply(&admin, &ns, workloads::minimal_ironic()).await.expect_err("refused");
    assert!(format!("{refused:#}").contains("--ironic-namespaces"), "{refused:#}");
    workloads::hosts_steady(&admin, &mut operator, &other, &cluster.ironic).await?;
    workloads::nodeset_steady(&admin, &mut operator, &other, &cluster.ironic).await?;

    let identity = cluster.operator_client().await?;
    let mut denied = never(&ns);
    denied.extend([
        // Its own webhook configuration only.
        Ask {
            name: Some("someone-elses-webhooks"),
            ..ask("patch", "admissionregistration.k8s.io", "validatingwebhookconfigurations", None)
        },
        // Its Lease and certificate Secret names only, in its namespace.
        Ask { name: Some("another-lease"), ..ask("patch", "coordination.k8s.io", "leases", Some(DEFAULT_NAMESPACE)) },
        ask("get", "coordination.k8s.io", "leases", Some(&ns)),
        // Ironic's workload only where an Ironic may run.
        ask("create", "apps", "deployments", Some(&ns)),
        ask("create", "apps", "daemonsets", Some("kube-system")),
        ask("create", "", "persistentvolumeclaims", Some(&ns)),
    ]);
    let allowed = [
        ask("create", "apps", "deployments", Some(DEFAULT_NAMESPACE)),
        // The leader Lease: taken with a replace, renewed and released with patches.
        Ask {
            name: Some("ferrometal-leader"),
            ..ask("update", "coordination.k8s.io", "leases", Some(DEFAULT_NAMESPACE))
        },
        Ask {
            name: Some("ferrometal-leader"),
            ..ask("patch", "coordination.k8s.io", "leases", Some(DEFAULT_NAMESPACE))
        },
        ask("watch", "ironic.metal3.io", "ironics", None),
        ask("watch", "", "secrets", None),
        Ask {
            name: Some(operator::testing::webhook::CONFIGURATION_NAME),
            ..ask("patch", "admissionregistration.k8s.io", "validatingwebhookconfigurations", None)
        },
    ];
    assert_access(&identity, &allowed, &denied).await?;
    let log = operator.log();
    assert!(!log.to_lowercase().contains("forbidden"), "the operator was refused something:\n{log}");
    cluster.cp.ensure_running()?;
    operator.stop(Duration::from_secs(20)).await?;
    Ok(())
}

#[tokio::test]
async fn namespaced_with_roles_only_the_operator_works_in_its_namespaces_and_nowhere_else() -> anyhow::Result<()> {
    let mut cluster = Cluster::start().await?;
    let (first, second) = (cluster.cp.namespace("install-a").await?, cluster.cp.namespace("install-b").await?);
    let unwatched = cluster.cp.namespace("install-unwatched").await?;

    // The user's step: generate the manifests for these namespaces with the binary.
    let tree = tempfile::tempdir()?;
    let status = std::process::Command::new(binary()?)
        .args(["manifests", "--out", &tree.path().display().to_string()])
        .arg(format!("--watch-namespaces={first},{second}"))
        .arg(format!("--ironic-namespaces={first}"))
        .status()?;
    anyhow::ensure!(status.success(), "ferrometal manifests failed");
    let mut objects = render(tree.path(), "default")?;
    let cluster_wide: Vec<&str> =
        objects.iter().filter(|o| kind_of(o).starts_with("ClusterRole")).map(name_of).collect();
    assert!(cluster_wide.is_empty(), "Roles only: {cluster_wide:?}");

    // What cert-manager would do: issue the serving certificate, and its cainjector sets the
    // caBundle. The apiserver reaches the webhooks at a loopback address, which it covers.
    let ca = Authority::new("install-test-webhook-ca")?;
    let serving = ca.server(&["localhost"], &[loopback()])?;
    let certs = tempfile::tempdir()?;
    std::fs::write(certs.path().join("tls.crt"), &serving.cert_pem)?;
    std::fs::write(certs.path().join("tls.key"), &serving.key_pem)?;
    let webhook_port = ports::free_port()?;
    webhooks_at(configuration(&mut objects)?, &format!("https://127.0.0.1:{webhook_port}"), Some(ca.cert_pem()));
    objects.retain(|o| !o["apiVersion"].as_str().unwrap_or_default().starts_with("cert-manager.io/"));
    let deployment = cluster.install(objects).await?;
    let (mut args, env) = pod_command(&deployment, DEFAULT_NAMESPACE, "ferrometal-0", &[])?;
    // The kubelet would mount the Secret at the Deployment's path; here it is a directory.
    for arg in &mut args {
        *arg = arg.replace(operator::testing::install::MOUNTED_CERT_DIR, &certs.path().display().to_string());
    }
    set_flag(&mut args, "webhook-addr", &format!("127.0.0.1:{webhook_port}"));
    let watch = env.iter().find(|(k, _)| k == "WATCH_NAMESPACE").map(|(_, v)| v.clone());
    assert_eq!(watch, Some(format!("{first},{second}")));
    let ironic_namespaces = env.iter().find(|(k, _)| k == "IRONIC_NAMESPACES").map(|(_, v)| v.clone());
    assert_eq!(ironic_namespaces, Some(first.clone()));
    let mut operator = cluster.operator(args, env).await?;

    let admin = cluster.cp.client();
    workloads::ironic_ready(&admin, &mut operator, &first, &cluster.database).await?;
    workloads::hosts_steady(&admin, &mut operator, &second, &cluster.ironic).await?;
    workloads::nodeset_steady(&admin, &mut operator, &second, &cluster.ironic).await?;
    // A host outside the watched namespaces is not the operator's: no status, ever.
    workloads::apply(&admin, &unwatched, workloads::fake_host("elsewhere", false, None, serde_json::json!({}))).await?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let hosts: kube::Api<kube::api::DynamicObject> =
        kube::Api::namespaced_with(admin.clone(), &unwatched, &workloads::resource("metal3.io", "BareMetalHost"));
    let elsewhere = serde_json::to_value(hosts.get("elsewhere").await?)?;
    assert!(elsewhere["status"].is_null(), "not reconciled: {elsewhere}");

    let identity = cluster.operator_client().await?;
    let mut denied = never(&first);
    denied.extend([
        ask("get", "", "secrets", Some(&unwatched)),
        ask("list", "", "secrets", None),
        ask("list", "metal3.io", "baremetalhosts", None),
        ask("watch", "ironic.metal3.io", "ironics", Some(&unwatched)),
        ask("patch", "metal3.io", "baremetalhosts", Some(&unwatched)),
        Ask {
            name: Some(operator::testing::webhook::CONFIGURATION_NAME),
            ..ask("patch", "admissionregistration.k8s.io", "validatingwebhookconfigurations", None)
        },
        // cert-manager provides the certificate: no certificate Secret of its own.
        ask("create", "", "secrets", Some(DEFAULT_NAMESPACE)),
        ask("create", "apps", "deployments", Some(&second)),
    ]);
    let allowed = [
        ask("watch", "", "secrets", Some(&first)),
        ask("watch", "metal3.io", "baremetalhosts", Some(&second)),
        ask("create", "coordination.k8s.io", "leases", Some(DEFAULT_NAMESPACE)),
    ];
    assert_access(&identity, &allowed, &denied).await?;
    let log = operator.log();
    assert!(!log.to_lowercase().contains("forbidden"), "the operator was refused something:\n{log}");
    operator.stop(Duration::from_secs(20)).await?;
    Ok(())
}
