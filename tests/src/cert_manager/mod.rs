//! cert-manager's controller, cainjector and webhook, built from the Go module proxy by
//! `scripts/build-cert-manager.sh` (`tests/go/cert-manager`), run against a test's control
//! plane: as pods of its real node when it has one (`pods.rs`), else as processes of this
//! machine with its admin kubeconfig.
//!
//! The controller runs cert-manager's own Issuer, CertificateRequest and Certificate
//! controllers: real issuance by CA and SelfSigned issuers, real approval, real renewal at
//! `renewBefore`. The cainjector runs cert-manager's injectors: the CA of an annotated
//! webhook configuration, APIService or CRD filled from a Certificate's or a Secret's `ca.crt`.
//! The webhook runs cert-manager's webhook server (its `internal/webhook`, built inside a copy
//! of cert-manager's module): every cert-manager.io and acme.cert-manager.io object created or
//! updated is validated by it, and a CertificateRequest gets its requester's identity from it.
//! It serves a certificate for its Service's names that it signs with its own CA, which it keeps
//! in the Secret `cert-manager/cert-manager-webhook-ca`.
//!
//! On a node the three are the release's Deployments in the namespace `cert-manager`, each under
//! its ServiceAccount, from one image pushed to a [`Registry`] on loopback, and the apiserver
//! calls the webhook through its Service `cert-manager-webhook`. Without a node the processes
//! stand in: the webhook listens on a free port (every interface, as cert-manager's server
//! binds) and is called on loopback, `https://localhost:<port>`, with `localhost` among its
//! certificate's names. Its two configurations are the release's
//! (`deploy/charts/cert-manager/templates/webhook-*-webhook.yaml` with its default values:
//! rules, `failurePolicy: Fail`, the validating webhook's namespaceSelector, `sideEffects: None`),
//! with that URL in place of the Service without a node, and, as in the release, their
//! `caBundle` is the webhook's CA injected by our cainjector
//! (`cert-manager.io/inject-ca-from-secret`). [`CertManager::start`] returns once the apiserver
//! accepts a Certificate through the webhook (a dry run, as cert-manager's startupapicheck does).

mod pods;

use crate::control_plane::{ControlPlane, TEST_FIELD_MANAGER};
use crate::process::ManagedProcess;
use crate::registry::Registry;
use crate::workdir::WorkDir;
use crate::{Result, env, ports, wait};
use anyhow::Context;
use k8s_openapi::api::admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// The cert-manager release `scripts/build-cert-manager.sh` builds.
pub const VERSION: &str = "v1.21.2";

/// cert-manager's namespace in its release: its pods, where the webhook keeps its CA, and where
/// the controller keeps ClusterIssuers' Secrets (its `--cluster-resource-namespace`).
pub const NAMESPACE: &str = "cert-manager";

/// The name of both webhook configurations, as the release names them.
pub const WEBHOOK_CONFIGURATION: &str = "cert-manager-webhook";

/// The webhook's Service (and Deployment), as the release names it.
pub const WEBHOOK_SERVICE: &str = "cert-manager-webhook";

/// The Secret the webhook keeps its serving CA in, as the release names it.
pub const WEBHOOK_CA_SECRET: &str = "cert-manager-webhook-ca";

/// How long [`CertManager::start`] waits for the webhook to answer the apiserver: on a node
/// this includes pulling the image and the webhook's readiness, on a loaded machine.
const WEBHOOK_READY: Duration = Duration::from_secs(180);

/// The programs of the build, each cert-manager's component of that name.
const BINARIES: [&str; 3] = ["controller", "cainjector", "webhook"];

/// Where the build keeps the binaries and cert-manager's CRDs.
pub fn cached() -> Result<PathBuf> {
    let dir = env::cache_dir().join("cert-manager").join(VERSION);
    anyhow::ensure!(
        BINARIES.iter().all(|binary| dir.join(binary).is_file()),
        "no cert-manager controller, cainjector and webhook in {}: run scripts/build-cert-manager.sh (make install)",
        dir.display()
    );
    Ok(dir)
}

/// cert-manager's CRDs, as its release ships them.
pub fn crds() -> Result<Vec<CustomResourceDefinition>> {
    let dir = cached()?.join("crds");
    let mut crds = Vec::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&path)?;
            crds.push(serde_saphyr::from_str(&text).with_context(|| format!("parsing {}", path.display()))?);
        }
    }
    anyhow::ensure!(!crds.is_empty(), "no CRDs in {}", dir.display());
    Ok(crds)
}

/// The webhook's arguments in the release (`webhook-deployment.yaml`, default values) beside
/// its ports: its log level, the serving CA in the Secret the configurations' annotation
/// names, a certificate for the Service's names (and `extra_names`), no metrics server.
fn webhook_args(namespace: &str, extra_names: &[&str]) -> Vec<String> {
    let mut args = vec![
        "--v=2".to_string(),
        format!("--dynamic-serving-ca-secret-namespace={namespace}"),
        format!("--dynamic-serving-ca-secret-name={WEBHOOK_CA_SECRET}"),
    ];
    let names = [
        WEBHOOK_SERVICE.to_string(),
        format!("{WEBHOOK_SERVICE}.{namespace}"),
        format!("{WEBHOOK_SERVICE}.{namespace}.svc"),
    ];
    let names = names.into_iter().chain(extra_names.iter().map(|n| n.to_string()));
    args.extend(names.map(|name| format!("--dynamic-serving-dns-names={name}")));
    args.push("--metrics-listen-address=0".into());
    args
}

/// cert-manager, running; see the module's documentation for where.
pub struct CertManager {
    run: Run,
}

/// Where cert-manager runs.
enum Run {
    /// No node: processes of this machine, which stop when dropped.
    Processes { controller: ManagedProcess, cainjector: ManagedProcess, webhook: ManagedProcess },
    /// Pods of the node, which run until the node stops; dropped, only the registry stops (the
    /// node already holds the image).
    Pods { pods: pods::Pods, _registry: Registry, _work: WorkDir },
}

impl CertManager {
    /// Installs cert-manager's CRDs in `cp`, starts the controller, the cainjector and the
    /// webhook (pods on `cp`'s node when it has one, else processes with the cluster's admin
    /// credentials), registers the webhook as the release does, and waits until the three run
    /// (the pods Ready), the webhook's CA is in both configurations and the apiserver reaches
    /// the webhook. cert-manager is a test's infrastructure here, not under test itself.
    pub async fn start(cp: &ControlPlane) -> Result<Self> {
        let started = std::time::Instant::now();
        cp.install_crds(&crds()?).await?;
        let client = cp.client();
        ensure_namespace(&client).await?;
        let (run, endpoint) = match cp.node() {
            Some(node) => {
                let (pods, registry, work) = pods::start(&client, node).await?;
                (Run::Pods { pods, _registry: registry, _work: work }, Endpoint::Service)
            }
            None => {
                let (run, port) = start_processes(cp)?;
                (run, Endpoint::Url(format!("https://localhost:{port}")))
            }
        };
        let mut cert_manager = Self { run };
        register_webhook(&client, &endpoint).await?;
        let ready = cert_manager.until_webhook_ready(&client).await;
        cert_manager.checked(ready).await?;
        if let Run::Pods { pods, .. } = &mut cert_manager.run {
            pods.settle().await?;
        }
        eprintln!("---- cert-manager running, its webhook answering, {:.1?} after its start", started.elapsed());
        Ok(cert_manager)
    }

    /// Waits until the three run (pods Ready), cainjector has put the webhook's CA in both
    /// configurations and the apiserver accepts a Certificate through the webhook (a dry run:
    /// nothing is stored), failing at once when a process has exited or a pod failed.
    async fn until_webhook_ready(&mut self, client: &kube::Client) -> Result<()> {
        let certificates = Api::<DynamicObject>::namespaced_with(client.clone(), NAMESPACE, &certificate_resource());
        let probe: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "cert-manager.io/v1", "kind": "Certificate",
            "metadata": {"name": "ferrometal-tests-webhook-check"},
            "spec": {"dnsNames": ["example.com"], "secretName": "ferrometal-tests-webhook-check",
                     "issuerRef": {"name": "ferrometal-tests-webhook-check"}}
        }))?;
        let dry_run = PostParams { dry_run: true, ..Default::default() };
        wait::until_ok(
            "cert-manager running and its webhook answering the apiserver",
            WEBHOOK_READY,
            Duration::from_millis(500),
            || {
                // The processes are checked here (their handles are this object's); the pods
                // through the API, below.
                let alive = self.processes_running();
                let pods = self.pods().cloned();
                let (client, certificates, probe, dry_run) =
                    (client.clone(), certificates.clone(), probe.clone(), dry_run.clone());
                async move {
                    alive?;
                    if let Some(pods) = pods
                        && !pods.ready().await?
                    {
                        return Ok(None);
                    }
                    if !webhook_ca_injected(&client).await? {
                        return Ok(None);
                    }
                    Ok(certificates.create(&dry_run, &probe).await.ok().map(|_| ()))
                }
            },
        )
        .await
    }

    /// The pods, when cert-manager runs as pods.
    fn pods(&self) -> Option<&pods::Pods> {
        match &self.run {
            Run::Pods { pods, .. } => Some(pods),
            Run::Processes { .. } => None,
        }
    }

    /// Fails when a process has exited; nothing to check for pods here.
    fn processes_running(&mut self) -> Result<()> {
        match &mut self.run {
            Run::Processes { controller, cainjector, webhook } => {
                controller.ensure_running()?;
                cainjector.ensure_running()?;
                webhook.ensure_running()
            }
            Run::Pods { .. } => Ok(()),
        }
    }

    /// The controller's, the cainjector's and the webhook's logs so far: the processes' files,
    /// or the pods' logs through the API (with a restarted container's previous log).
    pub async fn log(&self) -> String {
        match &self.run {
            Run::Processes { controller, cainjector, webhook } => format!(
                "{}\n---- cainjector:\n{}\n---- webhook:\n{}",
                controller.log(),
                cainjector.log(),
                webhook.log()
            ),
            Run::Pods { pods, .. } => pods.log().await,
        }
    }

    /// Fails when the controller, the cainjector or the webhook has stopped: a process exited,
    /// or a pod failed, was replaced or restarted a container.
    pub async fn ensure_running(&mut self) -> Result<()> {
        self.processes_running()?;
        match self.pods() {
            Some(pods) => pods.ensure_running().await,
            None => Ok(()),
        }
    }

    /// `outcome`, a wait on cert-manager's work, unless cert-manager stopped meanwhile
    /// ([`Self::ensure_running`]); when either failed, with cert-manager's log.
    pub async fn checked<T>(&mut self, outcome: Result<T>) -> Result<T> {
        let outcome = self.ensure_running().await.and(outcome);
        match outcome {
            Ok(value) => Ok(value),
            Err(err) => Err(err.context(format!("cert-manager's log:\n{}", self.log().await))),
        }
    }
}

/// Starts the three as processes with `cp`'s admin kubeconfig, the webhook on free ports;
/// returns them and the webhook's port.
fn start_processes(cp: &ControlPlane) -> Result<(Run, u16)> {
    let spawn = |binary: &str, name: &str, args: &[String]| {
        let mut cmd = Command::new(cached()?.join(binary));
        cmd.arg(format!("--kubeconfig={}", cp.kubeconfig().display())).args(args);
        ManagedProcess::spawn(name, cmd, &cp.dir().join(format!("{name}.log")))
    };
    let (port, healthz) = (ports::free_port()?, ports::free_port()?);
    let mut args = webhook_args(NAMESPACE, &["localhost"]);
    args.extend([format!("--secure-port={port}"), format!("--healthz-port={healthz}")]);
    let webhook = spawn("webhook", "cert-manager-webhook", &args)?;
    // The release's log level: cert-manager says what it issues and injects at 2.
    let verbosity = ["--v=2".to_string()];
    let cainjector = spawn("cainjector", "cert-manager-cainjector", &verbosity)?;
    let controller = spawn("controller", "cert-manager", &verbosity)?;
    Ok((Run::Processes { controller, cainjector, webhook }, port))
}

/// The API resource of cert-manager's Certificates.
pub fn certificate_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("cert-manager.io", "v1", "Certificate"), "certificates")
}

/// cert-manager's namespace, created when missing.
async fn ensure_namespace(client: &kube::Client) -> Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": NAMESPACE}}))?;
    match namespaces.create(&PostParams::default(), &namespace).await {
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        created => created.map(|_| ()).with_context(|| format!("creating namespace {NAMESPACE}")),
    }
}

/// The webhook's CA (`ca.crt` of [`WEBHOOK_CA_SECRET`]), once the webhook has made it.
pub async fn webhook_ca(client: &kube::Client) -> Result<Option<Vec<u8>>> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let secret = secrets.get_opt(WEBHOOK_CA_SECRET).await?;
    Ok(secret.and_then(|s| s.data?.get("ca.crt").map(|ca| ca.0.clone())))
}

/// Whether every webhook of both configurations trusts the webhook's CA: cainjector copies it
/// from the Secret the configurations' annotation names.
pub async fn webhook_ca_injected(client: &kube::Client) -> Result<bool> {
    let Some(ca) = webhook_ca(client).await? else { return Ok(false) };
    let validating = Api::<ValidatingWebhookConfiguration>::all(client.clone()).get(WEBHOOK_CONFIGURATION).await?;
    let mutating = Api::<MutatingWebhookConfiguration>::all(client.clone()).get(WEBHOOK_CONFIGURATION).await?;
    let bundles: Vec<_> = (validating.webhooks.unwrap_or_default().into_iter().map(|w| w.client_config.ca_bundle))
        .chain(mutating.webhooks.unwrap_or_default().into_iter().map(|w| w.client_config.ca_bundle))
        .collect();
    Ok(!bundles.is_empty() && bundles.iter().all(|b| b.as_ref().is_some_and(|b| b.0 == ca)))
}

/// Where the apiserver calls the webhook.
enum Endpoint {
    /// Its Service in cert-manager's namespace, on the Service's port 443, as in the release.
    Service,
    /// A URL on loopback (the webhook a process of this machine).
    Url(String),
}

impl Endpoint {
    /// The `clientConfig` of a webhook served at `path`.
    fn client_config(&self, path: &str) -> Value {
        match self {
            Endpoint::Service => json!({"service": {"name": WEBHOOK_SERVICE, "namespace": NAMESPACE, "path": path}}),
            Endpoint::Url(url) => json!({"url": format!("{url}{path}")}),
        }
    }
}

/// Registers cert-manager's ValidatingWebhookConfiguration and MutatingWebhookConfiguration
/// as its release does (`deploy/charts/cert-manager/templates/webhook-validating-webhook.yaml`
/// and `webhook-mutating-webhook.yaml`, default values), calling `endpoint`. No `caBundle`:
/// cainjector injects it.
async fn register_webhook(client: &kube::Client, endpoint: &Endpoint) -> Result<()> {
    let metadata = json!({
        "name": WEBHOOK_CONFIGURATION,
        "labels": {
            "app": "webhook",
            "app.kubernetes.io/name": "webhook",
            "app.kubernetes.io/instance": "cert-manager",
            "app.kubernetes.io/component": "webhook",
            "app.kubernetes.io/version": VERSION,
        },
        "annotations": {"cert-manager.io/inject-ca-from-secret": format!("{NAMESPACE}/{WEBHOOK_CA_SECRET}")},
    });
    // Both accept only v1 objects; `Equivalent` sends them other versions converted to v1.
    let webhook = |path: &str, rules: Value| {
        json!({
            "name": "webhook.cert-manager.io",
            "rules": rules,
            "admissionReviewVersions": ["v1"],
            "matchPolicy": "Equivalent",
            "timeoutSeconds": 30,
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "clientConfig": endpoint.client_config(path),
        })
    };
    let mut validating = webhook(
        "/validate",
        json!([{"apiGroups": ["cert-manager.io", "acme.cert-manager.io"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["*/*"]}]),
    );
    // A namespace labelled `cert-manager.io/disable-validation: "true"` opts out of validation.
    validating["namespaceSelector"] = json!({"matchExpressions": [
        {"key": "cert-manager.io/disable-validation", "operator": "NotIn", "values": ["true"]}]});
    let mutating = webhook(
        "/mutate",
        json!([{"apiGroups": ["cert-manager.io"], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["certificaterequests"]}]),
    );
    let configuration = |kind: &str, webhook: Value| json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": metadata, "webhooks": [webhook]});
    let validating = configuration("ValidatingWebhookConfiguration", validating);
    apply(&Api::<ValidatingWebhookConfiguration>::all(client.clone()), validating).await?;
    apply(
        &Api::<MutatingWebhookConfiguration>::all(client.clone()),
        configuration("MutatingWebhookConfiguration", mutating),
    )
    .await
}

/// Server-side applies `object` (the JSON of a `K`) through `api`, as the test's administrator.
async fn apply<K>(api: &Api<K>, object: Value) -> Result<()>
where
    K: kube::Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    let kind = K::kind(&());
    let object: K = serde_json::from_value(object).with_context(|| format!("a {kind}"))?;
    let name = kube::Resource::meta(&object).name.clone().with_context(|| format!("the {kind}'s name"))?;
    api.patch(&name, &PatchParams::apply(TEST_FIELD_MANAGER).force(), &Patch::Apply(&object))
        .await
        .with_context(|| format!("applying cert-manager's {kind} {name}"))?;
    Ok(())
}
