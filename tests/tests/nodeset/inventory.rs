//! A service that really runs: the pod simulator runs the Job pods of the local-exec image as
//! local processes (`ferrometal_tests::pod_simulator::LOCAL_EXEC_IMAGE`), with their Secret
//! volumes written to a scratch directory and the mount paths in their environment mapped to
//! it. The test service (`nodeset-test-service`) reads the inventory it is given and writes a
//! result per host; every host's result is checked against its effective configuration, before
//! and after an edit. So the inventory contract is proven by a program that consumes it.
//!
//! Built with the `local-exec` feature of ferrometal-tests (on by default, so `make test` runs
//! it), which the pod simulator's local execution brings.

use crate::host_common::secs;
use crate::nodeset_common::{NodeSetEnv, Setup, names, processed};
use crds::nodeset::{NodeSet, effective_host_config, host_config_hash};
use ferrometal_tests::pod_simulator::LOCAL_EXEC_IMAGE;
use serde_json::{Value, json};

/// Every host's result, checked against what its effective configuration is.
fn check_results(dir: &std::path::Path, nodeset: &NodeSet, service: &str) -> anyhow::Result<()> {
    let spec = &nodeset.spec;
    for (host, section) in spec.nodes.iter().flatten() {
        let file = dir.join(format!("{service}-{host}.json"));
        let result: Value = serde_json::from_slice(&std::fs::read(&file)?)?;
        let config = effective_host_config(host, spec.node_template.as_ref(), Some(section));
        assert_eq!(result["configHash"], host_config_hash(host, spec.node_template.as_ref(), Some(section)), "{host}");
        assert_eq!(result["managementAddress"], config.management_address().unwrap_or_default(), "{host}");
        assert_eq!(result["variables"], json!(config.variables), "{host}");
        assert_eq!(result["dns"], json!(config.dns), "{host}");
        let networks: Vec<Value> = config
            .networks
            .iter()
            .map(|n| json!({"name": n.name, "interface": n.interface, "mtu": n.mtu, "addresses": n.addresses}))
            .collect();
        assert_eq!(result["networks"], json!(networks), "{host}");
        let bmh = NodeSetEnv::bmh_names(nodeset).get(host).cloned();
        assert_eq!(result["bmh"]["name"].as_str(), bmh.as_deref(), "{host}");
        assert_eq!(result["nodeSetConfigHash"], json!(nodeset.status.as_ref().and_then(|s| s.config_hash.clone())));
    }
    Ok(())
}

#[tokio::test]
async fn a_service_that_really_runs_configures_each_host_from_its_inventory() -> anyhow::Result<()> {
    let env = NodeSetEnv::start("nset-inventory", Setup::default()).await?;
    env.t.env.sim.run_local_exec(true);
    let results = tempfile::tempdir()?;
    env.free_hosts(&names("server", 2), json!({})).await?;
    env.service_with(
        "apply-config",
        false,
        json!({
            "image": LOCAL_EXEC_IMAGE,
            "command": [env!("CARGO_BIN_EXE_nodeset-test-service")],
            "env": [{"name": "FERROMETAL_RESULTS", "value": results.path()}],
            "backoffLimit": 0,
        }),
    )
    .await?;
    let mut spec = env.spec(&["compute-0", "compute-1"], &["apply-config"]);
    spec["nodes"]["compute-1"]["variables"] = json!({"role": "storage", "disks": ["/dev/sdb", "/dev/sdc"]});
    env.create_nodeset("computes", spec).await?;
    let ready = env.wait_ready("computes", secs(300)).await?;
    check_results(results.path(), &ready, "apply-config")?;

    let edit = json!({"nodeTemplate": {"networks": [
        {"name": "ctlplane", "interface": "eno1", "mtu": 9000, "gateway": "192.0.2.1"},
        {"name": "storage", "interface": "eno2", "vlan": 30, "mtu": 9000}]}});
    let edited = env.patch_spec("computes", edit).await?;
    let rolled = env
        .wait_nodeset("computes", "the edit rolled out", secs(180), |n| {
            processed(n)
                && n.metadata.generation == edited.metadata.generation
                && crate::nodeset_common::condition_is(n, "Ready", "True")
        })
        .await?;
    check_results(results.path(), &rolled, "apply-config")?;
    let result: Value = serde_json::from_slice(&std::fs::read(results.path().join("apply-config-compute-0.json"))?)?;
    assert_eq!(result["networks"][0]["mtu"], 9000, "the program saw the new MTU");
    Ok(())
}
