//! The webhook unreachable while its `failurePolicy` is `Fail`: writes are refused with a
//! message naming the webhook, and the controllers (a replica that does not serve the webhook
//! URL) still report an invalid host, written while the webhook configuration was absent,
//! through its status.

use crate::cluster::Cluster;
use crate::install_common::apply;
use ferrometal_tests::faults::{self, Figures, Replicas};
use ferrometal_tests::ironic::IronicConfig;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::api::{Api, DeleteParams};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::time::Instant;

fn invalid_host(name: &str) -> Value {
    json!({"apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost", "metadata": {"name": name},
        "spec": {"online": true, "bootMACAddress": "52:54:00:00:00:09",
            "bmc": {"address": "nonsense://10.0.0.1/redfish/v1/Systems/1", "credentialsName": "bmc"}}})
}

// This scenario found a defect (design/reliability.md, "Defects found"): the host controller's
// first write was its finalizer, a patch of the object that the unreachable webhook refuses, so
// the invalid host's status was never written. Steps that call no Ironic now run without it.
#[tokio::test]
async fn with_the_webhook_unreachable_writes_are_refused_clearly_and_invalid_hosts_still_get_an_error_status()
-> anyhow::Result<()> {
    ferrometal_tests::init();
    let scenario = "webhook unreachable (failurePolicy Fail)";
    let cluster = Cluster::start("faults-webhook", IronicConfig::default()).await?;
    let recorder = cluster.recorder()?;
    let client = cluster.cp.client();

    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bmc"},
        "stringData": {"username": "admin", "password": "webhook-test-pw"}});
    crate::install_common::workloads::apply(&client, &cluster.ns, secret).await?;
    // Written while no webhook configuration existed.
    let name = cluster.webhook_configuration["metadata"]["name"].as_str().unwrap_or_default().to_string();
    let configurations: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    configurations.delete(&name, &DeleteParams::default()).await?;
    crate::install_common::workloads::apply(&client, &cluster.ns, invalid_host("invalid-0")).await?;
    apply(&cluster.cp, std::slice::from_ref(&cluster.webhook_configuration))?;

    // No replica serves the webhook's URL: every write of a host is refused, and says why.
    let refused = crate::install_common::workloads::apply(&client, &cluster.ns, invalid_host("invalid-1")).await;
    let message = format!("{:#}", refused.as_ref().err().ok_or_else(|| anyhow::anyhow!("a write got through"))?);
    println!("refused: {message}");
    assert!(message.contains("failed calling webhook"), "the refusal names the webhook call: {message}");
    assert!(message.contains(".ferrometal.io") || message.contains(".metal3.io"), "and the webhook: {message}");

    // The controllers run (replica 1 does not serve the webhook URL) and report the host.
    let mut replicas = Replicas::start(vec![cluster.launch(1, None, None)?])?;
    replicas.wait_leader(Duration::from_secs(120)).await?;
    let since = Instant::now();
    let convergence = faults::converge(&client, &cluster.ns, 1, since, Duration::from_secs(90), |h| {
        h["status"]["errorType"] == "registration error"
            && h["status"]["errorMessage"].as_str().is_some_and(|m| m.contains("unknown BMC scheme"))
    })
    .await;
    println!("the invalid host was reported after {:?}", convergence.time);
    let still = crate::install_common::workloads::apply(&client, &cluster.ns, invalid_host("invalid-2")).await;
    assert!(still.is_err(), "writes are still refused while the webhook is unreachable");
    replicas.ensure_running()?;
    let mut figures = Figures::compute(scenario, 1, &recorder.stop(), convergence);
    figures.panics = replicas.panics();
    faults::report(&figures);
    Ok(())
}
