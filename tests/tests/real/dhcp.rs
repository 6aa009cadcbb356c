//! DHCP on a provisioning network, on the real node (`scripts/node.sh`): the operator's Ironic
//! with host networking, its dnsmasq serving the range of `spec.networking.dhcp` on the
//! interface the `Ironic` names. That interface is one end of a veth pair made for the test;
//! the other end is a machine's NIC, inside a network namespace, where busybox's `udhcpc`
//! plays the machine's firmware. Nothing else is simulated: the pod's dnsmasq answers, the
//! machine fetches iPXE over the pod's TFTP and Ironic's iPXE script from the pod's httpd.
//! Wrong ranges are refused before any dnsmasq starts: by the operator's validation when the
//! spec says enough (no workload at all), by the image's entry point when only the node knows
//! (the interface's real network).
//!
//! The network is 172.22.0.0/24 (metal3's default provisioning network), unused on the machines
//! the tests run on; the host end holds 172.22.0.1, the Ironic's `networking.ipAddress`.

use crate::real_ironic::{POLL, RealIronic};
use anyhow::Context;
use crds::ironic::Ironic;
use ferrometal_tests::netns::{Client, Lease, ProvisioningLink};
use ferrometal_tests::wait;
use ferrometal_tests::workdir::WorkDir;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ContainerStateTerminated, ContainerStatus, Pod};
use kube::api::{ListParams, LogParams, PostParams};
use serde_json::{Value, json};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

const NAME: &str = "ironic";
/// The provisioning interface on this machine, and the machine's NIC in its namespace.
const HOST_INTERFACE: &str = "fmprov0";
const NAMESPACE: &str = "fm-machine0";
const MACHINE_INTERFACE: &str = "fmnic0";
const PROVISIONING_IP: Ipv4Addr = Ipv4Addr::new(172, 22, 0, 1);
const NETWORK: &str = "172.22.0.0/24";
const RANGE: (Ipv4Addr, Ipv4Addr) = (Ipv4Addr::new(172, 22, 0, 100), Ipv4Addr::new(172, 22, 0, 149));
/// httpd's port (the operator's default `imageServerPort`).
const HTTP_PORT: u16 = 6180;
/// Discovers a client sends, a second apart, before it gives up.
const DISCOVERS: u32 = 10;
/// How long a refused Ironic is watched for any pod after its refusal: several of the
/// operator's retries (its retry interval is a second here).
const WATCH_AFTER_REFUSAL: Duration = Duration::from_secs(15);

/// An `Ironic` on host networking whose provisioning network is `HOST_INTERFACE`, with `dhcp`,
/// without the ramdisk downloader (its image cannot be pulled here).
fn ironic(ns: &str, dhcp: Value) -> Value {
    json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic",
        "metadata": {"name": NAME, "namespace": ns},
        "spec": {"networking": {"interface": HOST_INTERFACE, "ipAddress": PROVISIONING_IP.to_string(), "dhcp": dhcp},
                 "deployRamdisk": {"disableDownloader": true}}})
}

/// The link of the test: this machine's end holds the provisioning address.
async fn provisioning_link() -> anyhow::Result<ProvisioningLink> {
    ProvisioningLink::create(HOST_INTERFACE, PROVISIONING_IP, 24, NAMESPACE, MACHINE_INTERFACE).await
}

/// The Ironic pod's container `name`'s id (`containerd://…`).
async fn container_id(env: &RealIronic, name: &str) -> anyhow::Result<String> {
    let pods = env.api::<Pod>().list(&ListParams::default()).await?;
    pods.items
        .iter()
        .filter_map(|p| p.status.as_ref()?.container_statuses.as_ref())
        .flatten()
        .find(|s| s.name == name)
        .and_then(|s| s.container_id.clone())
        .with_context(|| format!("the {name} container's id\n{}", pods_summary(&pods.items)))
}

/// Runs `command` in the running container `id` through the node's containerd (`ctr tasks
/// exec`): what is inside the pod, read without the pod's help.
fn exec_in(env: &RealIronic, id: &str, command: &[&str]) -> anyhow::Result<String> {
    let id = id.strip_prefix("containerd://").unwrap_or(id);
    // containerd wants a fresh id for each process it is asked to add.
    static EXECS: AtomicU32 = AtomicU32::new(0);
    let exec_id = format!("dhcp-real-{}", EXECS.fetch_add(1, Ordering::Relaxed));
    let mut args = vec!["tasks", "exec", "--exec-id", &exec_id, id];
    args.extend_from_slice(command);
    env.node()?.ctr(&args)
}

fn pods_summary(pods: &[Pod]) -> String {
    pods.iter().map(|p| format!("{:?}\n", p.metadata.name)).collect()
}

fn in_range(address: Ipv4Addr) -> bool {
    (RANGE.0..=RANGE.1).contains(&address)
}

#[tokio::test]
async fn a_machine_on_the_provisioning_network_gets_a_lease_from_the_dhcp_range_then_ipxe_over_tftp_and_ironics_script_over_http()
-> anyhow::Result<()> {
    let started = Instant::now();
    // The interface exists before the pod starts: the entry points look for it.
    let link = provisioning_link().await?;
    let env = RealIronic::start("dhcp-real").await?;
    let dhcp = json!({"networkCIDR": NETWORK, "rangeBegin": RANGE.0.to_string(), "rangeEnd": RANGE.1.to_string()});
    env.create_ready(ironic(&env.ns, dhcp)).await?;
    eprintln!("Ironic Ready {:?} after the start", started.elapsed());
    let scratch = WorkDir::new("dhcp-real")?;

    // The firmware's request: an address from the range, from the Ironic's address, and iPXE
    // to fetch over TFTP from there.
    let firmware = link.dhcp(Client::BiosPxe, DISCOVERS, scratch.path()).await?;
    let firmware = match firmware {
        Some(lease) => lease,
        None => anyhow::bail!("no DHCP answer to the firmware\n{}", env.pod_report().await),
    };
    assert!(in_range(firmware.address), "{firmware:?}");
    assert_eq!((firmware.prefix, firmware.server, firmware.next_server), (24, PROVISIONING_IP, PROVISIONING_IP));
    assert_eq!(firmware.boot_file, "undionly.kpxe", "{firmware:?}");
    link.configure(&firmware).await?;
    let fetched = scratch.path().join("undionly.kpxe");
    let fetched_path = fetched.to_string_lossy().into_owned();
    let server = firmware.next_server.to_string();
    link.exec(&["busybox", "tftp", "-g", "-r", &firmware.boot_file, "-l", &fetched_path, &server]).await?;
    let fetched_sum = sha256(&fetched)?;

    // It is the image's iPXE, served by the pod's dnsmasq, which leased that address to this
    // machine's MAC.
    let dnsmasq = container_id(&env, "dnsmasq").await?;
    let served = exec_in(&env, &dnsmasq, &["sha256sum", "/usr/lib/ipxe/undionly.kpxe"])?;
    assert_eq!(served.split_whitespace().next(), Some(fetched_sum.as_str()), "{served}");
    // dnsmasq writes its lease file from its main loop, after the reply (and after its lease
    // script, when one runs): the file may trail the lease the machine already uses.
    let mac = link.machine_mac().await?;
    let address = firmware.address.to_string();
    let (env_ref, dnsmasq_ref, mac_ref, address_ref) = (&env, &dnsmasq, &mac, &address);
    let leased = wait::until_ok("the lease in dnsmasq's lease file", Duration::from_secs(30), POLL, || async move {
        let leases = exec_in(env_ref, dnsmasq_ref, &["cat", "/conf/dnsmasq.leases"])?;
        Ok(leases.lines().any(|l| l.contains(mac_ref.as_str()) && l.contains(address_ref.as_str())).then_some(()))
    })
    .await;
    if let Err(err) = leased {
        let leases = exec_in(&env, &dnsmasq, &["cat", "/conf/dnsmasq.leases"])?;
        panic!("{mac} {address} in dnsmasq's leases: {err}\n{leases}");
    }

    // iPXE asks again, and is sent to Ironic's iPXE script on the pod's httpd.
    let ipxe: Lease = link.dhcp(Client::Ipxe, DISCOVERS, scratch.path()).await?.context("no answer to iPXE")?;
    assert!(in_range(ipxe.address), "{ipxe:?}");
    assert_eq!(ipxe.server, PROVISIONING_IP, "{ipxe:?}");
    assert_eq!(ipxe.boot_file, format!("http://{PROVISIONING_IP}:{HTTP_PORT}/boot.ipxe"));
    link.configure(&ipxe).await?;
    let script = link.exec(&["curl", "-sSf", "--max-time", "20", &ipxe.boot_file]).await?;
    let script = String::from_utf8(script.stdout).context("the iPXE script is text")?;
    assert!(script.starts_with("#!ipxe"), "{script}");
    // The very file Ironic's conductor wrote into the pod's shared volume.
    let ironic = container_id(&env, "ironic").await?;
    let written = exec_in(&env, &ironic, &["cat", "/shared/html/boot.ipxe"])?;
    assert_eq!(script, written);
    eprintln!("done {:?} after the start", started.elapsed());
    Ok(())
}

#[tokio::test]
async fn an_ironic_whose_dhcp_range_lies_outside_its_network_is_refused_and_no_dnsmasq_ever_starts()
-> anyhow::Result<()> {
    let _link = provisioning_link().await?;
    let env = RealIronic::start("dhcp-real-refused").await?;
    // The range is on the next /24: outside networkCIDR, where no machine of the provisioning
    // network could be given an address.
    let dhcp = json!({"networkCIDR": NETWORK, "rangeBegin": "172.22.1.100", "rangeEnd": "172.22.1.149"});
    // No admission webhook runs here (the operator is in-process): the object is stored, and the
    // operator's own validation, the webhook's rules run again, is what refuses it.
    let ironics = env.api::<Ironic>();
    ironics.create(&PostParams::default(), &serde_json::from_value(ironic(&env.ns, dhcp))?).await?;

    let pods = env.api::<Pod>();
    let degraded = wait::until("the Ironic refused", Duration::from_secs(60), POLL, || {
        let (ironics, pods) = (ironics.clone(), pods.clone());
        async move {
            // Checked on every poll: no pod is made before the refusal either.
            let listed = pods.list(&ListParams::default()).await.ok()?;
            assert!(listed.items.is_empty(), "pods of a refused Ironic: {}", pods_summary(&listed.items));
            let ironic = ironics.get(NAME).await.ok()?;
            let conditions = ironic.status?.conditions?;
            conditions.into_iter().find(|c| c.type_ == "Degraded" && c.status == "True")
        }
    })
    .await?;
    assert_eq!(degraded.reason, "InvalidSpec", "{degraded:?}");
    assert!(degraded.message.contains("spec.networking.dhcp.rangeBegin"), "{degraded:?}");
    assert!(degraded.message.contains("is not inside 172.22.0.0/24"), "{degraded:?}");
    let ironic = ironics.get(NAME).await?;
    let ready = ironic.status.and_then(|s| s.conditions).into_iter().flatten().find(|c| c.type_ == "Ready");
    assert!(ready.is_some_and(|c| c.status == "False"), "Ready stays False");

    // The refusal holds: through the operator's retries, no Deployment, no pod, and no container
    // of the Ironic image on the node (dnsmasq would be one).
    let until = Instant::now() + WATCH_AFTER_REFUSAL;
    while Instant::now() < until {
        let listed = pods.list(&ListParams::default()).await?;
        assert!(listed.items.is_empty(), "pods of a refused Ironic: {}", pods_summary(&listed.items));
        tokio::time::sleep(POLL).await;
    }
    let deployment = env.api::<Deployment>().get_opt(&format!("{NAME}-service")).await?;
    assert!(deployment.is_none(), "a Deployment for a refused Ironic");
    let containers = env.node()?.ctr(&["containers", "ls"])?;
    let image = ferrometal_tests::node::ironic_image()?;
    assert!(!containers.contains(&image), "containers of the Ironic image on the node:\n{containers}");
    Ok(())
}

/// A file's SHA-256, by `sha256sum` (as the container computes it).
fn sha256(path: &std::path::Path) -> anyhow::Result<String> {
    let output = std::process::Command::new("sha256sum").arg(path).output()?;
    anyhow::ensure!(output.status.success(), "sha256sum {}: {:?}", path.display(), output);
    let text = String::from_utf8_lossy(&output.stdout);
    text.split_whitespace().next().map(str::to_string).context("sha256sum's output")
}

#[tokio::test]
async fn an_ironic_whose_dhcp_network_is_not_its_interfaces_gets_no_dnsmasq_the_image_refuses_it_first()
-> anyhow::Result<()> {
    let link = provisioning_link().await?;
    let env = RealIronic::start("dhcp-real-elsewhere").await?;
    // Valid as a spec: with only the interface named, nothing says which network it is on.
    // Its address is 172.22.0.1/24; the pool is on another network, where dnsmasq would start
    // and never answer.
    let dhcp = json!({"networkCIDR": "172.30.0.0/24", "rangeBegin": "172.30.0.100", "rangeEnd": "172.30.0.149"});
    let mut spec = ironic(&env.ns, dhcp);
    spec["spec"]["networking"].as_object_mut().context("networking")?.remove("ipAddress");
    env.api::<Ironic>().create(&PostParams::default(), &serde_json::from_value(spec)?).await?;

    // The dnsmasq container ends before dnsmasq runs, saying why in its output.
    let pods = env.api::<Pod>();
    let refusal = wait::until("dnsmasq's container refusing", crate::real_ironic::READY_TIMEOUT, POLL, || {
        ended_dnsmasq(pods.clone())
    })
    .await;
    let (dnsmasq, ended, said) = match refusal {
        Ok(found) => found,
        Err(err) => return Err(err.context(env.pod_report().await)),
    };
    assert_eq!(ended.exit_code, 1, "{ended:?}");
    assert!(said.contains("DHCP range 172.30.0.100,172.30.0.149,24 is not on the provisioning network"), "{said}");
    assert!(said.contains("172.22.0.1/24"), "it names the interface's address: {said}");
    assert!(said.contains("not starting dnsmasq"), "{said}");
    assert!(!said.contains("starting dnsmasq on"), "{said}");
    assert!(!dnsmasq.ready, "{dnsmasq:?}");

    // Nothing answers on the provisioning network.
    let scratch = WorkDir::new("dhcp-real-elsewhere")?;
    assert_eq!(link.dhcp(Client::BiosPxe, 3, scratch.path()).await?, None, "a DHCP answer");
    let ironic = env.api::<Ironic>().get(NAME).await?;
    let ready = ironic.status.and_then(|s| s.conditions).into_iter().flatten().find(|c| c.type_ == "Ready");
    assert!(ready.as_ref().is_some_and(|c| c.status == "False"), "{ready:?}");
    Ok(())
}

/// The dnsmasq container that has ended (now, or before the restart waiting in its back-off),
/// with what it said. None until its output can be read: the kubelet may restart it between
/// the status read and the log read, and the new run's log is empty until it ends again.
async fn ended_dnsmasq(pods: kube::Api<Pod>) -> Option<(ContainerStatus, ContainerStateTerminated, String)> {
    let listed = pods.list(&ListParams::default()).await.ok()?;
    for pod in listed.items {
        let Some(name) = pod.metadata.name.clone() else { continue };
        let statuses = pod.status.and_then(|s| s.container_statuses).unwrap_or_default();
        let Some(dnsmasq) = statuses.into_iter().find(|s| s.name == "dnsmasq") else { continue };
        let now = dnsmasq.state.as_ref().and_then(|s| s.terminated.clone());
        let before = || dnsmasq.last_state.as_ref().and_then(|s| s.terminated.clone());
        let Some((ended, previous)) = now.map(|e| (e, false)).or_else(|| before().map(|e| (e, true))) else {
            continue;
        };
        let params = LogParams { container: Some("dnsmasq".into()), previous, ..LogParams::default() };
        let said = pods.logs(&name, &params).await.ok()?;
        if !said.trim().is_empty() {
            return Some((dnsmasq, ended, said));
        }
    }
    None
}
