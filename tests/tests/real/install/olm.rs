//! ferrometal installed through real OLM (`ferrometal_tests::olm`: OLM's operators as pods of
//! the real node, every image pulled from a registry on loopback): the bundle image as
//! `bundle.Dockerfile` describes it, a file-based catalog rendered by `opm` from it, a
//! `CatalogSource`, an `OperatorGroup` and a `Subscription`. OLM unpacks the bundle with its
//! Job, resolves, approves the InstallPlan, creates the CRDs, the RBAC from the CSV's
//! permissions, the webhooks with its own certificate and the operator's Deployment; every
//! `alm-examples` object then reaches its steady state. The next version (`olm.skipRange`)
//! published in the catalog upgrades the operator while every host stays provisioned and the
//! NodeSet Ready, each other install mode the CSV declares installs too, and last the sharded
//! package (`bundle-sharded/`) replaces the operator: its host controller's replicas divide the
//! shard Leases and serve the hosts, none of which changes state.
//!
//! What is still the test's: the Ironic the hosts use is the harness's (forwarded to the pods,
//! named by the Subscription's `config.env`, the way OLM users set an operator's environment),
//! and the operator image is imported into the node under the CSV's name (the CSV pulls
//! `IfNotPresent`).

use super::{OperatorPods, shards};
use crate::install_common::workloads::{self, Running as _, resource};
use crate::install_common::{kind_of, kubectl, name_of};
use anyhow::Context as _;
use ferrometal_tests::ironic::{IronicConfig, IronicServer};
use ferrometal_tests::olm::{self, Entry, OlmImages, Package, Registry};
use ferrometal_tests::operator_process::{operator_image, repo_root};
use ferrometal_tests::workdir::WorkDir;
use ferrometal_tests::{ControlPlane, ControlPlaneConfig, wait};
use kube::api::{Api, DeleteParams, DynamicObject};
use operator::testing::install::bundle::Variant;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

const OPERATOR_NAMESPACE: &str = "ferrometal-system";
const CATALOG: &str = "ferrometal-catalog";
const PACKAGE: &str = operator::testing::install::bundle::csv::PACKAGE;
const SHARDED_PACKAGE: &str = operator::testing::install::bundle::csv::SHARDED_PACKAGE;
const CHANNEL: &str = operator::testing::install::bundle::csv::CHANNEL;
/// The checked-in bundle's version, and the next one the upgrade publishes.
const FIRST: &str = "0.1.0";
const NEXT: &str = "0.1.1";

fn csv_name(version: &str) -> String {
    format!("{PACKAGE}.v{version}")
}

fn sharded_csv_name(version: &str) -> String {
    format!("{SHARDED_PACKAGE}.v{version}")
}

fn olm_resource(version: &str, kind: &str) -> kube::core::ApiResource {
    kube::core::ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk("operators.coreos.com", version, kind))
}

/// The CSV of `root`'s bundle of `variant` (`bundle/manifests` or `bundle-sharded/manifests`).
fn bundle_csv(root: &Path, variant: Variant) -> anyhow::Result<Value> {
    let path = root.join(format!("{}/manifests/{}.clusterserviceversion.yaml", variant.dir(), variant.package()));
    Ok(serde_saphyr::from_str(&std::fs::read_to_string(&path)?)?)
}

/// The channel entry of `root`'s bundle pushed as `image`, after `previous` in the channel: the
/// CSV's `olm.skipRange`, and the edge from the previous entry the catalog's author writes
/// (the CSV names none; a skipRange alone leaves the channel two heads, which opm refuses).
fn entry(root: &Path, variant: Variant, image: String, previous: Option<&Entry>) -> anyhow::Result<Entry> {
    let csv = bundle_csv(root, variant)?;
    let replaces = csv["spec"]["replaces"].as_str().map(str::to_string);
    Ok(Entry {
        bundle_image: image,
        csv: name_of(&csv).to_string(),
        replaces: replaces.or_else(|| previous.map(|p| p.csv.clone())),
        skip_range: csv["metadata"]["annotations"]["olm.skipRange"].as_str().map(str::to_string),
    })
}

/// `ferrometal bundle --version NEXT` (both variants), written under `dir`.
fn next_bundle(dir: &Path) -> anyhow::Result<()> {
    for file in operator::testing::install::bundle::files(NEXT)? {
        let path = dir.join(&file.path);
        std::fs::create_dir_all(path.parent().context("a parent")?)?;
        std::fs::write(path, file.content)?;
    }
    Ok(())
}

/// The CSV `name` in `namespace` once it reached `Succeeded`; on a timeout, what OLM says.
async fn until_succeeded(
    client: &kube::Client,
    kubeconfig: &Path,
    namespace: &str,
    name: &str,
) -> anyhow::Result<Value> {
    let csvs: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &olm_resource("v1alpha1", "ClusterServiceVersion"));
    wait::until(&format!("the CSV {name} Succeeded"), Duration::from_secs(300), Duration::from_secs(1), || {
        let csvs = csvs.clone();
        async move {
            let csv = serde_json::to_value(csvs.get_opt(name).await.ok()??).ok()?;
            (csv["status"]["phase"] == "Succeeded").then_some(csv)
        }
    })
    .await
    .with_context(|| {
        let get = |what: &str, ns: &str| {
            kubectl(kubeconfig, &["get", what, "-n", ns, "-o", "yaml"], None).unwrap_or_else(|e| e.to_string())
        };
        format!(
            "CSVs:\n{}\nSubscriptions:\n{}\nInstallPlans:\n{}\nPods of olm:\n{}\nJobs of olm:\n{}",
            get("csv", namespace),
            get("subscription", namespace),
            get("installplan", namespace),
            kubectl(kubeconfig, &["get", "pods", "-n", olm::NAMESPACE, "-o", "wide"], None).unwrap_or_default(),
            get("jobs", olm::NAMESPACE),
        )
    })
}

/// The catalog source, its registry pod serving (`READY`).
async fn catalog_ready(client: &kube::Client, image: &str) -> anyhow::Result<()> {
    let source = json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": CATALOG, "namespace": olm::NAMESPACE},
        "spec": {"sourceType": "grpc", "image": image, "displayName": "ferrometal (test)", "publisher": "ferrometal"}});
    olm::apply(client, &source).await?;
    let sources: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), olm::NAMESPACE, &olm_resource("v1alpha1", "CatalogSource"));
    wait::until("the catalog READY", Duration::from_secs(180), Duration::from_millis(500), || {
        let sources = sources.clone();
        let image = image.to_string();
        async move {
            let source = serde_json::to_value(sources.get_opt(CATALOG).await.ok()??).ok()?;
            (source["spec"]["image"] == image.as_str()
                && source["status"]["connectionState"]["lastObservedState"] == "READY"
                && source["status"]["registryService"]["serviceName"].is_string())
            .then_some(())
        }
    })
    .await
}

/// The OperatorGroup of the operator's namespace, targeting `targets` (none: all namespaces),
/// and the Subscription `name` to the channel with the harness's Ironic in the operator's
/// environment. Each install has a Subscription name of its own: OLM's catalog operator may
/// still write what it knew of a deleted Subscription onto a new one of the same name (an
/// InstallPlan reference the garbage collector removed), which then never installs.
async fn subscribe(client: &kube::Client, name: &str, targets: &[&str], ironic_endpoint: &str) -> anyhow::Result<()> {
    subscribe_to(client, PACKAGE, name, targets, ironic_endpoint).await
}

/// [`subscribe`] to `package`.
async fn subscribe_to(
    client: &kube::Client,
    package: &str,
    name: &str,
    targets: &[&str],
    ironic_endpoint: &str,
) -> anyhow::Result<()> {
    let mut group = json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
        "metadata": {"name": PACKAGE, "namespace": OPERATOR_NAMESPACE}, "spec": {}});
    if !targets.is_empty() {
        group["spec"]["targetNamespaces"] = json!(targets);
    }
    olm::apply(client, &group).await?;
    let env = json!([
        {"name": "IRONIC_ENDPOINT", "value": ironic_endpoint},
        {"name": "HOST_FAST_POLL_INTERVAL", "value": "300ms"},
        {"name": "HOST_SLOW_POLL_INTERVAL", "value": "2s"},
    ]);
    olm::apply(
        client,
        &json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE},
            "spec": {"channel": CHANNEL, "name": package, "source": CATALOG, "sourceNamespace": olm::NAMESPACE,
                "installPlanApproval": "Automatic", "config": {"env": env}}}),
    )
    .await?;
    Ok(())
}

/// OLM's uninstall: the Subscription `name`, then the CSV (its Deployment goes with it); done
/// once the Deployment and the Subscription's InstallPlans are gone.
async fn unsubscribe(client: &kube::Client, name: &str, csv: &str) -> anyhow::Result<()> {
    let subscriptions: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), OPERATOR_NAMESPACE, &olm_resource("v1alpha1", "Subscription"));
    subscriptions.delete(name, &DeleteParams::default()).await?;
    let csvs: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), OPERATOR_NAMESPACE, &olm_resource("v1alpha1", "ClusterServiceVersion"));
    csvs.delete(csv, &DeleteParams::default()).await?;
    wait::until("the operator's Deployment gone", Duration::from_secs(120), Duration::from_millis(500), || {
        let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
            Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
        async move { deployments.get_opt(operator::testing::install::NAME).await.ok().filter(Option::is_none).map(drop) }
    })
    .await?;
    let plans: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), OPERATOR_NAMESPACE, &olm_resource("v1alpha1", "InstallPlan"));
    wait::until("the InstallPlans collected", Duration::from_secs(120), Duration::from_millis(500), || {
        let plans = plans.clone();
        async move { plans.list(&Default::default()).await.ok().filter(|l| l.items.is_empty()).map(drop) }
    })
    .await
}

/// Waits until the operator's Deployment is available and its webhooks answer through their
/// Service (a dry run the webhook admits): OLM reports the CSV `Succeeded` as soon as the
/// Deployment is available, before kube-proxy routes the Service to its pods.
async fn until_serving(admin: &kube::Client, kubeconfig: &Path, namespace: &str) -> anyhow::Result<()> {
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(admin.clone(), OPERATOR_NAMESPACE);
    super::until_available_in(&deployments, kubeconfig, OPERATOR_NAMESPACE).await?;
    let ironics: Api<DynamicObject> =
        Api::namespaced_with(admin.clone(), namespace, &resource("ironic.metal3.io", "Ironic"));
    let probe: DynamicObject = serde_json::from_value(workloads::minimal_ironic())?;
    let dry_run = kube::api::PostParams { dry_run: true, ..Default::default() };
    wait::until("the operator's webhooks answering", Duration::from_secs(60), Duration::from_millis(500), || {
        let (ironics, probe, dry_run) = (ironics.clone(), probe.clone(), dry_run.clone());
        async move {
            match ironics.create(&dry_run, &probe).await {
                Err(e) if e.to_string().contains("failed calling webhook") => None,
                _ => Some(()),
            }
        }
    })
    .await
}

/// Every Ironic node: name, provision state and when that state last changed.
async fn ironic_nodes(ironic: &IronicServer) -> anyhow::Result<Vec<Value>> {
    let url = format!("{}/v1/nodes?fields=name,provision_state,provision_updated_at", ironic.endpoint());
    let body: Value = ironic.http_client()?.get(url).send().await?.error_for_status()?.json().await?;
    let mut nodes: Vec<Value> = body["nodes"].as_array().cloned().unwrap_or_default();
    nodes.sort_by_key(|n| n["name"].as_str().unwrap_or_default().to_string());
    Ok(nodes)
}

/// What an example becomes here: its BMC address and image URLs name no machine reachable
/// from here (and nothing may be sent to them), so the fake hardware and the harness's image
/// server stand in for them.
fn localized(example: &Value, image: &str) -> Value {
    let mut example = example.clone();
    match kind_of(&example) {
        "BareMetalHost" => example["spec"]["bmc"]["address"] = format!("fake://{}", name_of(&example)).into(),
        "NodeSet" => example["spec"]["baremetalSetTemplate"]["image"] = json!({"url": image, "format": "live-iso"}),
        _ => {}
    }
    example
}

/// What each example needs first: a BMC Secret for a host, available hosts for a NodeSet.
async fn prerequisites(
    admin: &kube::Client,
    pods: &mut OperatorPods<'_>,
    namespace: &str,
    example: &Value,
) -> anyhow::Result<()> {
    match kind_of(example) {
        "BareMetalHost" => {
            let credentials = example["spec"]["bmc"]["credentialsName"].as_str().unwrap_or_default();
            let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": credentials},
                "stringData": {"username": "admin", "password": "example"}});
            workloads::apply(admin, namespace, secret).await
        }
        "NodeSet" => {
            for (i, _) in example["spec"]["nodes"].as_object().into_iter().flatten().enumerate() {
                let host = workloads::fake_host(&format!("nodeset-pool-{i}"), false, None, json!({}));
                workloads::host_reaches(admin, pods, namespace, host, "available").await?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Every `alm-examples` object of `csv` applied in `namespace` and taken to its steady state:
/// hosts available, a NodeSet Ready with its hosts provisioned, an Ironic reconciled (its pods
/// need an Ironic image under the name the operator defaults to, which is not here), a
/// NodeSetService Ready (a valid definition), a HostFirmwareSettings and a
/// HostFirmwareComponents reconciled, a HostUpdatePolicy there.
async fn examples_steady(
    admin: &kube::Client,
    pods: &mut OperatorPods<'_>,
    namespace: &str,
    csv: &Value,
    image: &str,
) -> anyhow::Result<()> {
    let examples: Vec<Value> =
        serde_json::from_str(csv["metadata"]["annotations"]["alm-examples"].as_str().unwrap_or("[]"))?;
    assert_eq!(examples.len(), operator::testing::install::bundle::csv::EXAMPLES.len(), "the CSV OLM installed");
    for example in &examples {
        prerequisites(admin, pods, namespace, example).await?;
        workloads::apply(admin, namespace, localized(example, image)).await?;
        let kind = kind_of(example);
        let group = example["apiVersion"].as_str().unwrap_or_default().split('/').next().unwrap_or_default();
        let (api, name) = (resource(group, kind), name_of(example));
        let steady = |o: &Value| match kind {
            "BareMetalHost" => workloads::host_state(o) == "available",
            // Reconciled: an Ironic (as above); the settings or components read (or why not)
            // for the spec.
            "Ironic" | "HostFirmwareSettings" | "HostFirmwareComponents" => {
                o["status"]["observedGeneration"] == o["metadata"]["generation"]
            }
            // A policy has no status, as in baremetal-operator: there once applied.
            "HostUpdatePolicy" => true,
            // Reconciled (its host is not in the namespace: Ready says so, for the spec).
            "DataImage" | "BMCEventSubscription" => workloads::reconciled(o),
            // NodeSet (its hosts provisioned) and NodeSetService (a valid definition).
            _ => workloads::ready(o),
        };
        workloads::wait_steady(admin, pods, namespace, &api, name, "steady", steady).await?;
    }
    Ok(())
}

#[tokio::test]
async fn installed_through_olm_from_a_catalog_upgraded_in_every_install_mode_and_sharded_every_host_stays()
-> anyhow::Result<()> {
    let started = Instant::now();
    let archive = tokio::task::spawn_blocking(operator_image).await??;
    let (mut cp, ironic) = tokio::try_join!(
        ControlPlane::start_with(ControlPlaneConfig { node: true, ..Default::default() }),
        IronicServer::start(IronicConfig::default())
    )?;
    let node = cp.node().context("a node")?;
    node.import(&archive)?;
    let first_image = operator::testing::install::image(FIRST);
    node.ctr(&["images", "tag", "--force", &first_image, &operator::testing::install::image(NEXT)])?;
    let ironic_for_pods = node.forward_from_pods(ironic.socket_addr()?.port())?;
    let ironic_endpoint = format!("http://{}", ironic_for_pods.addr());
    let (admin, kubeconfig) = (cp.client(), cp.kubeconfig().to_path_buf());

    // OLM's images and ferrometal's bundles and catalog in the registry, then OLM itself.
    let work = WorkDir::new("olm")?;
    let registry = Registry::start(&work.path().join("registry")).await?;
    let images = OlmImages::push(&registry, work.path())?;
    let next = work.subdir("next")?;
    next_bundle(&next)?;
    let bundle = |root: &Path, variant: Variant, version: &str| {
        olm::push_bundle(&registry, root, variant.dir(), &format!("{}-bundle:v{version}", variant.package()))
    };
    let first = entry(&repo_root(), Variant::Whole, bundle(&repo_root(), Variant::Whole, FIRST)?, None)?;
    let second = entry(&next, Variant::Whole, bundle(&next, Variant::Whole, NEXT)?, Some(&first))?;
    let sharded = entry(&repo_root(), Variant::Sharded, bundle(&repo_root(), Variant::Sharded, FIRST)?, None)?;
    let catalog = |entries: &[Entry], tag: &str| {
        let packages = [Package { name: PACKAGE, channel: CHANNEL, entries }];
        olm::push_catalog(&registry, &images, work.path(), &packages, &format!("{CATALOG}:{tag}"))
    };
    let first_catalog = catalog(std::slice::from_ref(&first), "1")?;
    olm::install(&cp, &images).await?;
    eprintln!("---- real::install olm: cluster, registry, images and OLM up in {:.1?}", started.elapsed());

    // SingleNamespace: the operator in its namespace, the hosts in another.
    let phase = Instant::now();
    catalog_ready(&admin, &first_catalog).await?;
    cp.create_namespace(OPERATOR_NAMESPACE).await?;
    let hosts_ns = cp.namespace("olm-hosts").await?;
    subscribe(&admin, PACKAGE, &[hosts_ns.as_str()], &ironic_endpoint).await?;
    let csv = until_succeeded(&admin, &kubeconfig, OPERATOR_NAMESPACE, &csv_name(FIRST)).await?;
    eprintln!("---- real::install olm: {} Succeeded in {:.1?}", csv_name(FIRST), phase.elapsed());
    let mut pods = OperatorPods::new(&kubeconfig, OPERATOR_NAMESPACE);
    until_serving(&admin, &kubeconfig, &hosts_ns).await?;
    let iso = ironic.image_server().write_live_iso("olm/live.iso")?;
    examples_steady(&admin, &mut pods, &hosts_ns, &csv, &iso).await?;
    pods.ensure_running()?;
    let machines = ironic_nodes(&ironic).await?;
    assert!(machines.iter().filter(|n| n["provision_state"] == "active").count() >= 2, "{machines:#?}");
    eprintln!("---- real::install olm: every example steady in {:.1?}", phase.elapsed());

    // The next version published: OLM upgrades the operator; no machine is touched.
    let phase = Instant::now();
    let next_catalog = catalog(&[first.clone(), second.clone()], "2")?;
    catalog_ready(&admin, &next_catalog).await?;
    until_succeeded(&admin, &kubeconfig, OPERATOR_NAMESPACE, &csv_name(NEXT)).await?;
    let csvs: Api<DynamicObject> =
        Api::namespaced_with(admin.clone(), OPERATOR_NAMESPACE, &olm_resource("v1alpha1", "ClusterServiceVersion"));
    wait::until("the first CSV replaced and gone", Duration::from_secs(120), Duration::from_millis(500), || {
        let csvs = csvs.clone();
        async move { csvs.get_opt(&csv_name(FIRST)).await.ok().filter(Option::is_none).map(drop) }
    })
    .await?;
    let nodesets = resource("ferrometal.io", "NodeSet");
    workloads::wait_steady(&admin, &mut pods, &hosts_ns, &nodesets, "computes", "Ready", workloads::ready).await?;
    assert_eq!(ironic_nodes(&ironic).await?, machines, "no machine changed state during the upgrade");
    // Each bundle came from its image, through OLM's unpack Job (cp, cpb, opm's extract).
    let jobs: Api<k8s_openapi::api::batch::v1::Job> = Api::namespaced(admin.clone(), olm::NAMESPACE);
    let unpacked = jobs
        .list(&Default::default())
        .await?
        .items
        .iter()
        .filter(|j| j.status.as_ref().and_then(|s| s.succeeded) == Some(1))
        .count();
    assert_eq!(unpacked, 2, "one unpack Job per bundle");
    eprintln!("---- real::install olm: upgraded to {} in {:.1?}", csv_name(NEXT), phase.elapsed());

    // Every other install mode: uninstalled and installed again, the hosts left as they are.
    let other = cp.namespace("olm-other").await?;
    let mut subscription = PACKAGE.to_string();
    for (mode, targets) in [
        ("OwnNamespace", vec![OPERATOR_NAMESPACE]),
        ("MultiNamespace", vec![hosts_ns.as_str(), other.as_str()]),
        ("AllNamespaces", vec![]),
    ] {
        let phase = Instant::now();
        unsubscribe(&admin, &subscription, &csv_name(NEXT)).await?;
        subscription = format!("{PACKAGE}-{}", mode.to_lowercase());
        subscribe(&admin, &subscription, &targets, &ironic_endpoint).await?;
        let csv = until_succeeded(&admin, &kubeconfig, OPERATOR_NAMESPACE, &csv_name(NEXT)).await?;
        let modes = csv["spec"]["installModes"].as_array().cloned().unwrap_or_default();
        assert!(modes.iter().any(|m| m["type"] == mode && m["supported"] == true), "{mode} declared: {modes:?}");
        let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
            Api::namespaced(admin.clone(), OPERATOR_NAMESPACE);
        let deployment = super::until_available_in(&deployments, &kubeconfig, OPERATOR_NAMESPACE).await?;
        let annotations = deployment.spec.and_then(|s| s.template.metadata).and_then(|m| m.annotations);
        let watched = annotations.unwrap_or_default().get("olm.targetNamespaces").cloned().unwrap_or_default();
        assert_eq!(watched, targets.join(","), "{mode}: the namespaces OLM hands the operator");
        eprintln!("---- real::install olm: {mode} installed in {:.1?}", phase.elapsed());
    }
    // Back on every namespace: the NodeSet and its machines as they were.
    workloads::wait_steady(&admin, &mut pods, &hosts_ns, &nodesets, "computes", "Ready", workloads::ready).await?;
    assert_eq!(ironic_nodes(&ironic).await?, machines, "no machine changed state through the reinstalls");

    // The sharded package instead, published beside the other in the catalog.
    let phase = Instant::now();
    let packages = [
        Package { name: PACKAGE, channel: CHANNEL, entries: &[first, second] },
        Package { name: SHARDED_PACKAGE, channel: CHANNEL, entries: std::slice::from_ref(&sharded) },
    ];
    let both = olm::push_catalog(&registry, &images, work.path(), &packages, &format!("{CATALOG}:3"))?;
    catalog_ready(&admin, &both).await?;
    unsubscribe(&admin, &subscription, &csv_name(NEXT)).await?;
    sharded_install(&admin, &kubeconfig, &hosts_ns, &ironic_endpoint).await?;
    workloads::wait_steady(&admin, &mut pods, &hosts_ns, &nodesets, "computes", "Ready", workloads::ready).await?;
    assert_eq!(ironic_nodes(&ironic).await?, machines, "no machine changed state in the switch to shards");
    // A new host is served by the host controller's replicas, in the namespace OLM targets.
    let mut host_pods = OperatorPods::selected(&kubeconfig, OPERATOR_NAMESPACE, shards::HOSTS_SELECTOR);
    let host = workloads::fake_host("sharded-0", false, None, json!({}));
    workloads::host_reaches(&admin, &mut host_pods, &hosts_ns, host, "available").await?;
    let now = ironic_nodes(&ironic).await?;
    assert_eq!(now.len(), machines.len() + 1, "one node more, for sharded-0: {now:#?}");
    assert!(machines.iter().all(|m| now.contains(m)), "every other machine where it was: {now:#?}");
    eprintln!("---- real::install olm: {} serving in {:.1?}", sharded_csv_name(FIRST), phase.elapsed());
    cp.ensure_running()?;
    Ok(())
}

/// The sharded package installed for `hosts_ns` (SingleNamespace): its CSV `Succeeded`, both
/// Deployments available, OLM's target namespaces on the host controller's pods too, and every
/// shard's Lease held by the host controller's replicas, two each, under the CSV's permissions.
async fn sharded_install(
    admin: &kube::Client,
    kubeconfig: &Path,
    hosts_ns: &str,
    ironic_endpoint: &str,
) -> anyhow::Result<()> {
    subscribe_to(admin, SHARDED_PACKAGE, SHARDED_PACKAGE, &[hosts_ns], ironic_endpoint).await?;
    let csv = until_succeeded(admin, kubeconfig, OPERATOR_NAMESPACE, &sharded_csv_name(FIRST)).await?;
    let names: Vec<&str> = csv["spec"]["install"]["spec"]["deployments"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert_eq!(names, [operator::testing::install::NAME, shards::HOSTS], "the CSV OLM installed");
    until_serving(admin, kubeconfig, hosts_ns).await?;
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(admin.clone(), OPERATOR_NAMESPACE);
    let hosts = super::until_named_available(
        &deployments,
        kubeconfig,
        OPERATOR_NAMESPACE,
        shards::HOSTS,
        shards::HOSTS_SELECTOR,
    )
    .await?;
    let annotations = hosts.spec.and_then(|s| s.template.metadata).and_then(|m| m.annotations);
    let watched = annotations.unwrap_or_default().get("olm.targetNamespaces").cloned().unwrap_or_default();
    assert_eq!(watched, hosts_ns, "the namespaces OLM hands the host controller");
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> = Api::namespaced(admin.clone(), OPERATOR_NAMESPACE);
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(admin.clone(), OPERATOR_NAMESPACE);
    let divided = shards::until_divided(&leases, &pods).await?;
    eprintln!("---- real::install olm: shards held {divided:?}");
    Ok(())
}
