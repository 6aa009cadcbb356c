//! The operator's own Ironic, really running: the `Ironic` the operator renders, with its pods
//! on a real node (containerd, kubelet, kube-proxy; `scripts/node.sh`) from the image
//! `scripts/node/ironic-image.sh` builds (Debian's packages and Ironic from PyPI, honouring
//! metal3 ironic-image's contract). Nothing is simulated: the Deployment becomes available
//! through its own exec probes, and the API answers through the Service over the TLS the
//! operator set up, with the credentials it generated. A BareMetalHost on sushy-tools' emulated
//! Redfish BMC is then registered, inspected, provisioned and deprovisioned through that Ironic
//! by the host controller, while the exporter beside that Ironic serves metrics; and on its
//! managed MariaDB (`database`) its upgrade Jobs run as pods through version and series changes.
//! One test runs the three scenarios at once, each in its namespace of one control plane, node
//! and operator.
//!
//! The test points the operator at the local image (its `--ironic-image` default) and changes
//! nothing else of the rendering. The Ironic opts out of two things this machine cannot give it:
//! the host network (the pods would listen on this machine's own interfaces) and the ramdisk
//! downloader (its image cannot be pulled here).

mod database;

use crate::real_ironic::{API_VERSION, POLL, RealIronic, all_pass, client, get_json, scenario};
use anyhow::Context;
use crds::baremetalhost::BareMetalHost;
use ferrometal_tests::http_server::HttpServer;
use ferrometal_tests::sushy::{Sushy, SushyConfig};
use ferrometal_tests::wait;
use ferrometal_tests::workdir::WorkDir;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use operator::testing::host::{self, IronicSource};
use operator::{Operator, OperatorConfig};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The Ironic's name; its Service and certificate take it too.
const NAME: &str = "ironic";
/// Registration, out-of-band inspection and a virtual-media deploy through the pod's Ironic,
/// each Redfish call costing Ironic half a second of CPU (its PBKDF2 session cache).
const HOST_TIMEOUT: Duration = Duration::from_secs(300);

/// A Ready `Ironic` (with the exporter or not) in `env`'s namespace.
async fn ready_ironic(env: &RealIronic, exporter: bool) -> anyhow::Result<()> {
    let started = Instant::now();
    env.create_ready(ironic(&env.ns, exporter)).await?;
    eprintln!("Ironic Ready {:?} after its creation in {}", started.elapsed(), env.ns);
    Ok(())
}

/// The Ironic of the test: everything the operator defaults (TLS mode Auto, generated
/// credentials, SQLite), on the pod network, without the downloader; with `exporter`, sensor
/// data and the ironic-prometheus-exporter container too (no ServiceMonitor: its CRD is not
/// installed here).
fn ironic(ns: &str, exporter: bool) -> Value {
    let mut ironic = json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic",
        "metadata": {"name": NAME, "namespace": ns},
        "spec": {"networking": {"disableHostNetwork": true},
                 "deployRamdisk": {"disableDownloader": true}}});
    if exporter {
        ironic["spec"]["prometheusExporter"] = json!({"enabled": true, "disableServiceMonitor": true});
    }
    ironic
}

async fn the_operators_ironic_runs_on_a_real_node_and_serves_its_api_over_tls_with_its_credentials(
    env: RealIronic,
) -> anyhow::Result<()> {
    let started = Instant::now();
    // Ready only once the Deployment is available, which only the real probes (curl in the
    // containers against Ironic behind httpd, and httpd) make it.
    ready_ironic(&env, false).await?;
    let deployment = env.api::<Deployment>().get(&format!("{NAME}-service")).await?;
    let status = deployment.status.context("the Deployment's status")?;
    assert_eq!(status.ready_replicas, Some(1), "{status:?}");
    let pods =
        env.api::<Pod>().list(&ListParams::default().labels(&format!("ironic.metal3.io/app={NAME}-service"))).await?;
    let pod = pods.items.first().context("the Ironic pod")?;
    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.clone()).unwrap_or_default();
    for container in ["ironic", "httpd", "ramdisk-logs"] {
        let status = statuses.iter().find(|s| s.name == container).context(container.to_string())?;
        assert!(status.ready, "{container} ready: {status:?}");
        assert!(
            status.container_id.as_deref().is_some_and(|id| id.starts_with("containerd://")),
            "{container} is a real container: {status:?}"
        );
        assert_eq!(status.image, ferrometal_tests::node::ironic_image()?, "{container} runs the local image");
    }

    // What the operator published: the CA (a ConfigMap) and the credentials (a Secret).
    let ca = env.published_ca(NAME).await?;
    let (username, password) = env.credentials(NAME).await?;

    // Through the Service's ClusterIP (kube-proxy), by the Service's name the certificate
    // carries, trusting only the published CA.
    let host = format!("{NAME}.{}.svc", env.ns);
    let address = env.service_address(NAME).await?;
    let http = client(&ca, &host, address)?;
    let base = format!("https://{host}");

    // The API's root is open (the probes use it), everything else needs the credentials. The
    // Deployment is available once the pod is ready, but kube-proxy programs the Service's
    // endpoints a moment later (an EndpointSlice update, then its own sync): until then the
    // ClusterIP refuses connections, so only a refused connection is tried again.
    let root =
        wait::until_ok("the Service's endpoints programmed by kube-proxy", Duration::from_secs(30), POLL, || async {
            match http.get(format!("{base}/v1")).header(API_VERSION.0, API_VERSION.1).send().await {
                Ok(response) => Ok(Some(response)),
                Err(err) if err.is_connect() => Ok(None),
                Err(err) => Err(err.into()),
            }
        })
        .await?;
    assert_eq!(root.status(), StatusCode::OK);
    let root: Value = root.json().await?;
    assert!(root["version"]["version"].is_string(), "{root}");

    let nodes = format!("{base}/v1/nodes");
    let anonymous = http.get(&nodes).header(API_VERSION.0, API_VERSION.1).send().await?;
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let wrong = http
        .get(&nodes)
        .header(API_VERSION.0, API_VERSION.1)
        .basic_auth(&username, Some("not-the-password"))
        .send()
        .await?;
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    let listed =
        http.get(&nodes).header(API_VERSION.0, API_VERSION.1).basic_auth(&username, Some(&password)).send().await?;
    assert_eq!(listed.status(), StatusCode::OK);
    let listed: Value = listed.json().await?;
    assert_eq!(listed["nodes"], json!([]), "{listed}");

    // A write goes through to Ironic's conductor and database, and reads back.
    let created = http
        .post(&nodes)
        .header(API_VERSION.0, API_VERSION.1)
        .basic_auth(&username, Some(&password))
        .json(&json!({"name": "real-node-check", "driver": "fake-hardware"}))
        .send()
        .await?;
    assert_eq!(created.status(), StatusCode::CREATED, "{:?}", created.text().await);
    let node = get_json(&http, &format!("{nodes}/real-node-check"), (&username, &password)).await?;
    assert_eq!(node["provision_state"], "enroll", "{node}");

    // A client that does not trust the operator's CA gets no answer at all.
    let untrusting = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(env.cp.ca_pem().as_bytes())?])
        .resolve(&host, address)
        .build()?;
    let refused = untrusting.get(format!("{base}/v1")).send().await;
    assert!(refused.is_err(), "a certificate not from the published CA: {refused:?}");
    eprintln!("done {:?} after the start", started.elapsed());
    Ok(())
}

/// BMC credentials of the emulated machine.
const BMC_USER: &str = "admin";
const BMC_PASSWORD: &str = "redfish-pw";

async fn a_baremetalhost_on_sushy_tools_is_provisioned_and_deprovisioned_through_the_operators_ironic_and_its_exporter_serves(
    env: RealIronic,
) -> anyhow::Result<()> {
    let started = Instant::now();
    ready_ironic(&env, true).await?;

    // The BMC and the image server listen where the Ironic pod reaches this machine: the
    // node's address on the pod bridge. The pod's httpd, where Ironic publishes the virtual
    // media, is reached by the emulator at the pod's address.
    let gateway = env.node_address()?;
    let sushy = Sushy::start(SushyConfig {
        listen: gateway,
        auth: Some((BMC_USER.into(), BMC_PASSWORD.into())),
        ..SushyConfig::default()
    })
    .await?;
    let work = WorkDir::new("ironic-real-images")?;
    let images = HttpServer::start_on(&work.path().join("images"), &work, gateway).await?;
    let iso = images.write_live_iso("live.iso")?;

    // The host controller finds the Ironic through the resource (its Service, the Secret and CA
    // the Ironic controller made) and connects to the Service's ClusterIP: the Service's DNS
    // name resolves only inside the cluster. A second operator, since the address is known
    // only once the Service exists.
    let mut config = OperatorConfig::minimal(format!("test-{}-hosts", env.ns));
    config.namespaces = vec![env.ns.clone()];
    config.host = Some(host::Config {
        ironic: IronicSource::Resource {
            namespace: env.ns.clone(),
            name: NAME.to_string(),
            connect_to: Some(env.service_address(NAME).await?),
        },
        fast_poll_interval: Duration::from_millis(500),
        slow_poll_interval: Duration::from_secs(2),
        error_backoff_base: Duration::from_secs(2),
        error_backoff_max: Duration::from_secs(15),
        ..host::Config::default()
    });
    let _hosts = Operator::start(env.cp.client(), config).await?;

    let secrets = env.api::<Secret>();
    let bmc = Secret {
        metadata: kube::api::ObjectMeta { name: Some("bmc".into()), ..Default::default() },
        string_data: Some(
            [("username".to_string(), BMC_USER.to_string()), ("password".to_string(), BMC_PASSWORD.to_string())].into(),
        ),
        ..Default::default()
    };
    secrets.create(&PostParams::default(), &bmc).await?;
    let system = sushy.systems().first().context("an emulated system")?.clone();
    let host: BareMetalHost = serde_json::from_value(json!({
        "apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost", "metadata": {"name": "machine-0"},
        "spec": {
            "bmc": {"address": sushy.bmc_address("redfish-virtualmedia", &system), "credentialsName": "bmc"},
            "bootMACAddress": system.mac,
            "online": true,
            // Out-of-band inspection and no cleaning: no ramdisk can boot here.
            "inspectionMode": "fast",
            "automatedCleaningMode": "disabled",
            "image": {"url": iso, "format": "live-iso"},
        }
    }))?;
    let hosts = env.api::<BareMetalHost>();
    hosts.create(&PostParams::default(), &host).await?;

    let provisioned = wait::until("the host provisioned and powered on", HOST_TIMEOUT, POLL, || {
        let hosts = hosts.clone();
        async move {
            let host = hosts.get("machine-0").await.ok()?;
            let status = host.status.as_ref()?;
            (status.provisioning.state.as_str() == "provisioned" && status.powered_on).then_some(host)
        }
    })
    .await;
    let provisioned = match provisioned {
        Ok(host) => host,
        Err(err) => {
            let last = hosts.get("machine-0").await.ok().and_then(|h| h.status);
            return Err(err.context(format!("last status: {last:?}\n{}", env.pod_report().await)));
        }
    };
    eprintln!("host provisioned {:?} after the start", started.elapsed());
    let status = provisioned.status.context("the host's status")?;
    assert_eq!(status.provisioning.image.as_ref().map(|i| i.url.as_str()), Some(iso.as_str()));

    // Ironic (the pod's, asked through the Service) has the node active on redfish, and the
    // emulated machine is really powered on.
    let (username, password) = env.credentials(NAME).await?;
    let ca = env.published_ca(NAME).await?;
    let host_name = format!("{NAME}.{}.svc", env.ns);
    let http = client(&ca, &host_name, env.service_address(NAME).await?)?;
    let url = format!("https://{host_name}/v1/nodes?fields=name,driver,provision_state,power_state,instance_info");
    let nodes = get_json(&http, &url, (&username, &password)).await?;
    let node = nodes["nodes"].as_array().and_then(|n| n.first()).context("an Ironic node")?.clone();
    assert_eq!(node["driver"], "redfish", "{node}");
    assert_eq!(node["provision_state"], "active", "{node}");
    assert_eq!(node["power_state"], "power on", "{node}");
    assert_eq!(node["instance_info"]["boot_iso"], iso.as_str(), "{node}");
    assert_eq!(sushy.power_state(&system).await?, "On");

    // The exporter (sensor data on) runs beside that Ironic and serves through the Service's
    // metrics port.
    let pods =
        env.api::<Pod>().list(&ListParams::default().labels(&format!("ironic.metal3.io/app={NAME}-service"))).await?;
    let statuses = pods.items.first().and_then(|p| p.status.as_ref()?.container_statuses.clone()).unwrap_or_default();
    let exporter =
        statuses.iter().find(|s| s.name == "ironic-prometheus-exporter").context("the exporter container")?;
    assert!(exporter.ready && exporter.restart_count == 0, "{exporter:?}");
    let metrics = format!("http://{}:9608/metrics", env.service_address(NAME).await?.ip());
    let response = reqwest::Client::new().get(&metrics).timeout(Duration::from_secs(20)).send().await?;
    assert_eq!(response.status(), StatusCode::OK, "{metrics}");

    // Deprovisioned through the same Ironic: the image removed, the host is available again
    // (cleaning is off), and so is Ironic's node, without the instance's ISO.
    let unset = json!({"spec": {"image": null}});
    hosts.patch("machine-0", &PatchParams::default(), &Patch::Merge(&unset)).await?;
    let available = wait::until("the host deprovisioned", HOST_TIMEOUT, POLL, || {
        let hosts = hosts.clone();
        async move {
            let host = hosts.get("machine-0").await.ok()?;
            (host.status.as_ref()?.provisioning.state.as_str() == "available").then_some(())
        }
    })
    .await;
    if let Err(err) = available {
        let last = hosts.get("machine-0").await.ok().and_then(|h| h.status);
        return Err(err.context(format!("last status: {last:?}")));
    }
    let nodes = get_json(&http, &url, (&username, &password)).await?;
    let node = nodes["nodes"].as_array().and_then(|n| n.first()).context("the Ironic node")?.clone();
    assert_eq!(node["provision_state"], "available", "{node}");
    assert!(node["instance_info"].get("boot_iso").is_none(), "{node}");
    eprintln!("host deprovisioned {:?} after the start", started.elapsed());
    Ok(())
}

/// The three scenarios at once on one node, each in its own namespace of one control plane and
/// operator: each spends most of its time waiting for pods (probes, a provisioning, upgrade
/// Jobs), and one after the other they held the machine's one node for about seven minutes.
/// Every failing scenario is reported, by its name.
#[tokio::test]
async fn the_operators_ironic_serves_provisions_and_upgrades_on_the_real_node() -> anyhow::Result<()> {
    let (forward, database) = database::forward_and_settings().await?;
    let prefixes = ["ironic-real", "ironic-real-host", "ironic-real-db"];
    let envs = RealIronic::start_many(&prefixes, database).await?;
    let [api, host, db]: [RealIronic; 3] = envs.try_into().map_err(|_| anyhow::anyhow!("three namespaces"))?;
    all_pass([
        scenario(
            "the_operators_ironic_runs_on_a_real_node_and_serves_its_api_over_tls_with_its_credentials",
            the_operators_ironic_runs_on_a_real_node_and_serves_its_api_over_tls_with_its_credentials(api),
        ),
        scenario(
            "a_baremetalhost_on_sushy_tools_is_provisioned_and_deprovisioned_through_the_operators_ironic_and_its_exporter_serves",
            a_baremetalhost_on_sushy_tools_is_provisioned_and_deprovisioned_through_the_operators_ironic_and_its_exporter_serves(host),
        ),
        scenario(
            "on_its_managed_mariadb_the_upgrade_jobs_run_as_pods_and_ironic_keeps_its_nodes_through_version_and_series_changes",
            database::on_its_managed_mariadb_the_upgrade_jobs_run_as_pods_and_ironic_keeps_its_nodes_through_version_and_series_changes(db, forward),
        ),
    ])
    .await
}
