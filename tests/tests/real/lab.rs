//! The lab as a user drives it: `make lab-up`, kubectl (the summary's MTU and BIOS edits of the
//! sample NodeSet, enrolling the spare BMC), curl (the summary's look at a host's Ironic node),
//! `make lab-down`. The lab runs on the real node: the hosts are served by the Ironic the
//! operator deployed there, and the NodeSet's services run as containers there.

use ferrometal_tests::operator_process::repo_root;
use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn make(target: &str, state: &Path) -> std::process::Output {
    let mut command = Command::new("make");
    // `make lab-up` runs `cargo build` as a user's shell would. The test runner gives this
    // process the variables cargo sets for a test (CARGO_MANIFEST_DIR, CARGO_PKG_*, …); build
    // scripts that watch them (ring's watches CARGO_MANIFEST_DIR) would see a change, and the
    // nested build would rebuild and relink the very test binaries the runner is executing.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("CARGO_") && !matches!(key.as_ref(), "CARGO_HOME" | "CARGO_TARGET_DIR") {
            command.env_remove(key.as_ref());
        }
    }
    command
        .arg(target)
        .current_dir(repo_root())
        .env("LAB_STATE_DIR", state)
        // If the test runner kills this test, the background lab stops by itself.
        .env("LAB_STOP_WITH_PID", std::process::id().to_string())
        .stdin(Stdio::null())
        .output()
        .expect("make runs")
}

fn kubectl(env: &HashMap<String, String>, args: &[&str], stdin: Option<&str>) -> String {
    use std::io::Write;
    let kubectl = ferrometal_tests::env::kube_bin("kubectl").expect("kubectl is installed");
    let mut child = Command::new(kubectl)
        .args(args)
        .env("KUBECONFIG", &env["KUBECONFIG"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl starts");
    if let Some(input) = stdin {
        child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("write stdin");
    }
    let out = child.wait_with_output().expect("kubectl runs");
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn host_states(env: &HashMap<String, String>) -> HashMap<String, String> {
    let json: serde_json::Value =
        serde_json::from_str(&kubectl(env, &["get", "baremetalhosts", "-n", "lab", "-o", "json"], None)).expect("json");
    json["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|h| {
            let name = h["metadata"]["name"].as_str().unwrap_or_default().to_string();
            (name, h["status"]["provisioning"]["state"].as_str().unwrap_or_default().to_string())
        })
        .collect()
}

fn nodeset_of(env: &HashMap<String, String>) -> serde_json::Value {
    let (namespace, name) = env["NODESET"].split_once('/').expect("namespace/name");
    serde_json::from_str(&kubectl(env, &["get", "nodeset", name, "-n", namespace, "-o", "json"], None)).expect("json")
}

/// What ran on each host, from the NodeSet's record ConfigMaps (status keeps no per-service
/// rows): hostname to its list of completions.
fn completions_of(env: &HashMap<String, String>) -> serde_json::Value {
    let (namespace, name) = env["NODESET"].split_once('/').expect("namespace/name");
    let selector = format!("app.kubernetes.io/component=nodeset-record,{}={name}", crds::nodeset::NODESET_LABEL);
    let list: serde_json::Value = serde_json::from_str(&kubectl(
        env,
        &["get", "configmaps", "-n", namespace, "-l", &selector, "-o", "json"],
        None,
    ))
    .expect("json");
    let mut hosts = serde_json::Map::new();
    for record in list["items"].as_array().into_iter().flatten() {
        let text = record["data"]["servicesCompleted"].as_str().unwrap_or("{}");
        let entries: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text).expect("a record");
        for (hostname, entry) in entries {
            hosts.insert(hostname, entry["completed"].clone());
        }
    }
    serde_json::Value::Object(hosts)
}

fn condition(object: &serde_json::Value, type_: &str) -> String {
    let conditions = object["status"]["conditions"].as_array().cloned().unwrap_or_default();
    conditions.iter().find(|c| c["type"] == type_).and_then(|c| c["status"].as_str()).unwrap_or_default().to_string()
}

/// What the MTU edit did to each host: the same machine, provisioned once; `configure-network`
/// ran again at the host's new configuration; `bootstrap` (runOnce) did not.
fn assert_in_place(
    before: &serde_json::Value,
    after: &serde_json::Value,
    ran: (&serde_json::Value, &serde_json::Value),
) {
    let hosts = after["status"]["hosts"].as_object().expect("status.hosts");
    assert_eq!(hosts.len(), 3, "{after}");
    let completed = |ran: &serde_json::Value, service: &str| {
        ran.as_array().and_then(|c| c.iter().find(|s| s["name"] == service).cloned())
    };
    for (name, now) in hosts {
        let then = &before["status"]["hosts"][name];
        assert_eq!(now["bmhRef"], then["bmhRef"], "{name} keeps its machine");
        assert_eq!(now["provisionedHash"], then["provisionedHash"], "{name} was not reprovisioned");
        assert_ne!(now["desiredConfigHash"], then["desiredConfigHash"], "the MTU is part of {name}'s configuration");
        assert_eq!(now["deployedConfigHash"], now["desiredConfigHash"], "{name}: {now}");
        let (ran_then, ran_now) = (&ran.0[name], &ran.1[name]);
        let bootstrap = completed(ran_now, "bootstrap").expect("bootstrap ran");
        assert_eq!(Some(bootstrap), completed(ran_then, "bootstrap"), "{name}: bootstrap runs once, ever");
        let network = completed(ran_now, "configure-network").expect("configure-network ran");
        assert_eq!(network["configHash"], now["desiredConfigHash"], "{name}: configure-network ran again: {now}");
    }
}

/// Runs the summary's look at a host's Ironic node as printed (`sh`, from the lab's `env`),
/// then the same request for every node: each sample host is an active Redfish node of the
/// Ironic the operator deployed, reached through its Service with its CA and credentials.
fn assert_the_operators_ironic_serves_the_hosts(summary: &str) {
    let lines: Vec<&str> = summary.lines().map(str::trim).collect();
    let start = lines.iter().position(|l| l.starts_with("set -a;")).expect("the summary sources the env");
    let script = lines[start..start + 3].join("\n");
    assert!(script.contains("curl -s --cacert"), "the summary's curl: {script}");
    let run = |script: &str| -> serde_json::Value {
        let out = Command::new("sh").arg("-c").arg(script).output().expect("sh runs");
        assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{script}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
    };
    let node = run(&script);
    assert_eq!(node["name"], "lab~host-0", "{node}");
    assert_eq!(node["provision_state"], "active", "{node}");
    let nodes = run(&script.replace("/v1/nodes/lab~host-0", "/v1/nodes?fields=name,driver,provision_state"));
    let nodes = nodes["nodes"].as_array().cloned().unwrap_or_default();
    for host in ["host-0", "host-1", "host-2"] {
        let node =
            nodes.iter().find(|n| n["name"] == format!("lab~{host}")).unwrap_or_else(|| panic!("{host}: {nodes:?}"));
        assert_eq!((&node["driver"], &node["provision_state"]), (&"redfish".into(), &"active".into()), "{node}");
    }
}

/// Every service Job's pod ran its container on the node (containerd) from the lab's service
/// image and succeeded; the last `configure-network` run logged, for every host, the MTU of
/// the edit, read from the inventory the operator mounted.
fn assert_the_services_ran_as_containers_at_the_new_mtu(env: &HashMap<String, String>) {
    let (namespace, name) = env["NODESET"].split_once('/').expect("namespace/name");
    let selector = format!("{}={name}", crds::nodeset::NODESET_LABEL);
    let pods: serde_json::Value =
        serde_json::from_str(&kubectl(env, &["get", "pods", "-n", namespace, "-l", &selector, "-o", "json"], None))
            .expect("json");
    let pods = pods["items"].as_array().cloned().unwrap_or_default();
    // Finished Jobs beyond the NodeSet's history (three per service) are pruned once their
    // outcome is in status, so how many pods remain depends on when the prune ran; what is
    // certain is that both services left pods.
    let services: std::collections::BTreeSet<&str> =
        pods.iter().filter_map(|p| p["metadata"]["labels"][crds::nodeset::SERVICE_LABEL].as_str()).collect();
    assert_eq!(services, ["bootstrap", "configure-network"].into(), "the services that ran: {pods:?}");
    for pod in &pods {
        let status = &pod["status"]["containerStatuses"][0];
        assert_eq!(pod["status"]["phase"], "Succeeded", "{pod}");
        assert!(status["containerID"].as_str().is_some_and(|id| id.starts_with("containerd://")), "{status}");
        assert_eq!(status["image"], ferrometal_tests::lab::samples::SERVICE_IMAGE, "{status}");
    }
    let selector = format!("{selector},{}=configure-network", crds::nodeset::SERVICE_LABEL);
    let logs = kubectl(env, &["logs", "-n", namespace, "-l", &selector, "--tail=-1"], None);
    for host in ["compute-0", "compute-1", "compute-2"] {
        let at_new_mtu = logs.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).any(|line| {
            line["host"] == host && line["networks"].as_array().is_some_and(|n| n.iter().any(|n| n["mtu"] == 9000))
        });
        assert!(at_new_mtu, "{host} configured at MTU 9000 by a container: {logs}");
    }
}

/// Runs the summary's `kubectl patch nodeset` command whose patch names `field`, as printed.
fn run_summary_command(env: &HashMap<String, String>, summary: &str, field: &str) {
    let command = summary
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("kubectl patch nodeset") && l.contains(field))
        .unwrap_or_else(|| panic!("the summary's command that edits {field}: {summary}"));
    let kubectl_bin = ferrometal_tests::env::kube_bin("kubectl").expect("kubectl is installed");
    let out = Command::new("sh")
        .arg("-c")
        .arg(command.replacen("kubectl", &kubectl_bin.display().to_string(), 1))
        .env("KUBECONFIG", &env["KUBECONFIG"])
        .output()
        .expect("sh runs");
    assert!(out.status.success(), "{command}: {}", String::from_utf8_lossy(&out.stderr));
}

/// The summary's BIOS edit: every host serviced in place (the same machine, never
/// reprovisioned, always `provisioned`) until its settings object reports the new value.
fn assert_the_bios_edit_is_serviced_in_place(env: &HashMap<String, String>, summary: &str) {
    let before = nodeset_of(env);
    run_summary_command(env, summary, "firmwareSettings");
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut most_out = 0;
    let after = loop {
        for (host, state) in host_states(env) {
            assert_eq!(state, "provisioned", "{host} left provisioned during its servicing");
        }
        most_out = most_out.max(out_of_service(env));
        let now = nodeset_of(env);
        let hosts = now["status"]["hosts"].as_object().cloned().unwrap_or_default();
        let applied = hosts.len() == 3
            && hosts
                .values()
                .all(|h| !h["desiredFirmwareHash"].is_null() && h["appliedFirmwareHash"] == h["desiredFirmwareHash"]);
        if applied
            && condition(&now, "Ready") == "True"
            && now["status"]["observedGeneration"] == now["metadata"]["generation"]
        {
            break now;
        }
        assert!(Instant::now() < deadline, "the BIOS edit was not applied: {now}");
        std::thread::sleep(Duration::from_secs(2));
    };
    for (name, now) in after["status"]["hosts"].as_object().expect("status.hosts") {
        let then = &before["status"]["hosts"][name];
        assert_eq!(now["bmhRef"], then["bmhRef"], "{name} keeps its machine");
        assert_eq!(now["provisionedHash"], then["provisionedHash"], "{name} was not reprovisioned");
        let machine = now["bmhRef"]["name"].as_str().expect("a machine");
        let settings: serde_json::Value = serde_json::from_str(&kubectl(
            env,
            &["get", "hostfirmwaresettings", machine, "-n", "lab", "-o", "json"],
            None,
        ))
        .expect("json");
        assert_eq!(settings["status"]["settings"]["ProcTurboMode"], "Disabled", "{name}: {settings}");
    }
    // Polled every 2 s, so a short overlap could slip by; the NodeSet tests watch every change.
    assert!(most_out <= 1, "{most_out} hosts were seen out of service at once (maxUnavailable 1)");
}

/// The sample hosts out of service now: being serviced, or off.
fn out_of_service(env: &HashMap<String, String>) -> usize {
    let json: serde_json::Value =
        serde_json::from_str(&kubectl(env, &["get", "baremetalhosts", "-n", "lab", "-o", "json"], None)).expect("json");
    let items = json["items"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .filter(|h| h["metadata"]["name"] != "spare")
        .filter(|h| h["status"]["operationalStatus"] == "servicing" || h["status"]["poweredOn"] == false)
        .count()
}

fn port_is_free(port: u16) -> bool {
    std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
}

fn process_is_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "))
}

#[test]
fn the_lab_provisions_through_a_nodeset_rolls_an_mtu_and_a_bios_edit_out_in_place_enrols_the_spare_and_leaves_nothing_behind()
 {
    ferrometal_tests::init();
    let state = tempfile::tempdir().expect("state dir");
    let up = make("lab-up", state.path());
    assert!(
        up.status.success(),
        "make lab-up failed:\n{}\n{}\nlab log:\n{}",
        String::from_utf8_lossy(&up.stdout),
        String::from_utf8_lossy(&up.stderr),
        std::fs::read_to_string(state.path().join("lab.log")).unwrap_or_default()
    );
    let result = std::panic::catch_unwind(|| exercise(state.path()));
    let lab_state: ferrometal_tests::lab::LabState =
        serde_json::from_slice(&std::fs::read(state.path().join("state.json")).expect("state.json")).expect("parses");

    let down = make("lab-down", state.path());
    assert!(down.status.success(), "make lab-down failed: {}", String::from_utf8_lossy(&down.stderr));
    if let Err(panic) = result {
        eprintln!("lab log:\n{}", std::fs::read_to_string(state.path().join("lab.log")).unwrap_or_default());
        std::panic::resume_unwind(panic);
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while lab_state.pids.iter().any(|p| process_is_alive(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    for pid in &lab_state.pids {
        assert!(!process_is_alive(*pid), "lab process {pid} is still running");
    }
    for port in &lab_state.ports {
        assert!(port_is_free(*port), "port {port} is still in use");
    }
}

fn exercise(state: &Path) {
    let env: HashMap<String, String> = std::fs::read_to_string(state.join("env"))
        .expect(".lab/env")
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect();
    for key in
        ["KUBECONFIG", "IRONIC_ENDPOINT", "IRONIC_CACERT", "SPARE_BMC_ADDRESS", "SPARE_BMC_CREDENTIALS", "NODESET"]
    {
        assert!(env.get(key).is_some_and(|v| !v.is_empty()), "{key} missing from env");
    }
    let states = host_states(&env);
    assert_eq!(states.len(), 3, "the default lab has 4 BMCs, one of them spare: {states:?}");
    assert!(states.values().all(|s| s == "provisioned"), "{states:?}");
    let nodeset = nodeset_of(&env);
    assert_eq!(nodeset["status"]["provisionedHosts"], "3/3", "the sample NodeSet provisioned them: {nodeset}");
    assert_eq!(condition(&nodeset, "Ready"), "True", "{nodeset}");
    let (namespace, name) = env["NODESET"].split_once('/').expect("namespace/name");
    let row = kubectl(&env, &["get", "nodeset", name, "-n", namespace, "--no-headers"], None);
    let columns: Vec<&str> = row.split_whitespace().collect();
    let wanted = [name, "True", "Ready", "3/3", "3/3", "Complete"];
    assert_eq!(columns.get(..6), Some(&wanted[..]), "the printer columns (Ready and its reason first): {row}");
    let summary = std::fs::read_to_string(state.join("summary.txt")).expect("summary.txt");
    assert_the_operators_ironic_serves_the_hosts(&summary);

    // The summary's one command edits the MTU; the rollout runs in place.
    let before = nodeset["status"]["configHash"].clone();
    let ran_before = completions_of(&env);
    run_summary_command(&env, &summary, "networks");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let now = nodeset_of(&env);
        let rolled = now["status"]["configHash"] != before
            && now["status"]["rollout"]["phase"] == "Complete"
            && now["status"]["rollout"]["configHash"] == now["status"]["configHash"]
            && now["status"]["observedGeneration"] == now["metadata"]["generation"];
        if rolled {
            assert_eq!(now["status"]["configuredHosts"], "3/3", "{now}");
            assert_in_place(&nodeset, &now, (&ran_before, &completions_of(&env)));
            break;
        }
        assert!(Instant::now() < deadline, "the MTU edit did not roll out: {now}");
        std::thread::sleep(Duration::from_secs(1));
    }
    let states = host_states(&env);
    assert!(states.values().all(|s| s == "provisioned"), "no machine was reprovisioned: {states:?}");
    assert_the_services_ran_as_containers_at_the_new_mtu(&env);
    assert_the_bios_edit_is_serviced_in_place(&env, &summary);

    // Enrol the spare BMC as a user would, with the values from .lab/env.
    let (namespace, secret) = env["SPARE_BMC_CREDENTIALS"].split_once('/').expect("namespace/name");
    let host = format!(
        "apiVersion: metal3.io/v1alpha1\nkind: BareMetalHost\nmetadata: {{name: spare, namespace: {namespace}}}\n\
         spec:\n  bmc: {{address: \"{}\", credentialsName: {secret}}}\n  bootMACAddress: \"{}\"\n  online: true\n  \
         image: {{url: \"{}\", format: live-iso}}\n  inspectionMode: fast\n  automatedCleaningMode: disabled\n",
        env["SPARE_BMC_ADDRESS"], env["SPARE_BMC_MAC"], env["LAB_IMAGE_URL"]
    );
    kubectl(&env, &["apply", "-f", "-"], Some(&host));
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let states = host_states(&env);
        if states.get("spare").is_some_and(|s| s == "provisioned") {
            break;
        }
        assert!(Instant::now() < deadline, "the spare was not provisioned: {states:?}");
        std::thread::sleep(Duration::from_secs(1));
    }
}
