//! cert-manager's controller, cainjector and webhook, built from the Go module proxy by
//! `scripts/build-cert-manager.sh` (`tests/go/cert-manager`), run as processes of this machine
//! (not pods) against a test's control plane, with its admin kubeconfig.
//!
//! The controller runs cert-manager's own Issuer, CertificateRequest and Certificate
//! controllers: real issuance by CA and SelfSigned issuers, real approval, real renewal at
//! `renewBefore`. The cainjector runs cert-manager's injectors: the CA of an annotated
//! webhook configuration, APIService or CRD filled from a Certificate's or a Secret's `ca.crt`.
//! The webhook runs cert-manager's webhook server (its `internal/webhook`, built inside a copy
//! of cert-manager's module): every cert-manager.io and acme.cert-manager.io object created or
//! updated is validated by it, and a CertificateRequest gets its requester's identity from it.
//! It listens on a free port (every interface, as cert-manager's server binds; the apiserver
//! calls it on loopback, `https://localhost:<port>`) and serves a certificate for `localhost`
//! that it signs with its own CA, which it keeps in the Secret `cert-manager/cert-manager-webhook-ca`.
//! Its two configurations are the release's (`deploy/charts/cert-manager/templates/webhook-*-webhook.yaml`
//! with its default values: rules, `failurePolicy: Fail`, the validating webhook's
//! namespaceSelector, `sideEffects: None`) with a URL instead of a Service, and, as in the
//! release, their `caBundle` is that Secret's CA injected by our cainjector
//! (`cert-manager.io/inject-ca-from-secret`). [`CertManager::start`] returns once the apiserver
//! accepts a Certificate through the webhook (a dry run, as cert-manager's startupapicheck does).

use crate::control_plane::{ControlPlane, TEST_FIELD_MANAGER};
use crate::process::ManagedProcess;
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

/// cert-manager's namespace in its release: where the webhook keeps its CA, and where the
/// controller keeps ClusterIssuers' Secrets (its `--cluster-resource-namespace`).
pub const NAMESPACE: &str = "cert-manager";

/// The name of both webhook configurations, as the release names them.
pub const WEBHOOK_CONFIGURATION: &str = "cert-manager-webhook";

/// The Secret the webhook keeps its serving CA in, as the release names it.
pub const WEBHOOK_CA_SECRET: &str = "cert-manager-webhook-ca";

/// How long [`CertManager::start`] waits for the webhook to answer the apiserver.
const WEBHOOK_READY: Duration = Duration::from_secs(120);

/// Where the build keeps the binaries and cert-manager's CRDs.
pub fn cached() -> Result<PathBuf> {
    let dir = env::cache_dir().join("cert-manager").join(VERSION);
    anyhow::ensure!(
        ["controller", "cainjector", "webhook"].iter().all(|binary| dir.join(binary).is_file()),
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

/// The controller, cainjector and webhook processes; they stop when dropped. The webhook
/// configurations stay (`failurePolicy: Fail`): as with a stopped cert-manager, nothing of
/// cert-manager's can be created or updated in that cluster afterwards.
pub struct CertManager {
    process: ManagedProcess,
    cainjector: ManagedProcess,
    webhook: ManagedProcess,
}

impl CertManager {
    /// Installs cert-manager's CRDs in `cp`, starts the controller, the cainjector and the
    /// webhook against it with the cluster's admin credentials (as a test's infrastructure, not
    /// under test itself), registers the webhook as the release does, and waits until the
    /// apiserver reaches it.
    pub async fn start(cp: &ControlPlane) -> Result<Self> {
        cp.install_crds(&crds()?).await?;
        let client = cp.client();
        ensure_namespace(&client).await?;
        let spawn = |binary: &str, name: &str, args: &[String]| {
            let mut cmd = Command::new(cached()?.join(binary));
            cmd.arg(format!("--kubeconfig={}", cp.kubeconfig().display())).args(args);
            ManagedProcess::spawn(name, cmd, &cp.dir().join(format!("{name}.log")))
        };
        let (port, healthz) = (ports::free_port()?, ports::free_port()?);
        // The release's arguments (webhook-deployment.yaml, default values), on our ports: its
        // log level, the serving CA in the Secret the configurations' annotation names, a
        // certificate for the Service's names and for the host of our URL, no metrics server.
        let dns_names = [
            WEBHOOK_CONFIGURATION.to_string(),
            format!("{WEBHOOK_CONFIGURATION}.{NAMESPACE}"),
            format!("{WEBHOOK_CONFIGURATION}.{NAMESPACE}.svc"),
            "localhost".to_string(),
        ];
        let webhook = spawn(
            "webhook",
            "cert-manager-webhook",
            &[
                "--v=2".into(),
                format!("--secure-port={port}"),
                format!("--healthz-port={healthz}"),
                "--metrics-listen-address=0".into(),
                format!("--dynamic-serving-ca-secret-namespace={NAMESPACE}"),
                format!("--dynamic-serving-ca-secret-name={WEBHOOK_CA_SECRET}"),
                format!("--dynamic-serving-dns-names={}", dns_names.join(",")),
            ],
        )?;
        let cainjector = spawn("cainjector", "cert-manager-cainjector", &[])?;
        let process = spawn("controller", "cert-manager", &[])?;
        let mut cert_manager = Self { process, cainjector, webhook };
        register_webhook(&client, &format!("https://localhost:{port}")).await?;
        let ready = cert_manager.until_webhook_ready(&client).await;
        ready.with_context(|| format!("cert-manager's log:\n{}", cert_manager.log()))?;
        Ok(cert_manager)
    }

    /// Waits until cainjector has put the webhook's CA in both configurations and the apiserver
    /// accepts a Certificate through the webhook (a dry run: nothing is stored), failing at
    /// once when one of the processes has exited.
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
            "cert-manager's webhook to answer the apiserver",
            WEBHOOK_READY,
            Duration::from_millis(500),
            || {
                let alive = self.ensure_running();
                let (client, certificates, probe, dry_run) =
                    (client.clone(), certificates.clone(), probe.clone(), dry_run.clone());
                async move {
                    alive?;
                    if !webhook_ca_injected(&client).await? {
                        return Ok(None);
                    }
                    Ok(certificates.create(&dry_run, &probe).await.ok().map(|_| ()))
                }
            },
        )
        .await
    }

    /// The controller's, the cainjector's and the webhook's logs so far.
    pub fn log(&self) -> String {
        format!(
            "{}\n---- cainjector:\n{}\n---- webhook:\n{}",
            self.process.log(),
            self.cainjector.log(),
            self.webhook.log()
        )
    }

    /// Fails when the controller, the cainjector or the webhook has exited.
    pub fn ensure_running(&mut self) -> Result<()> {
        self.process.ensure_running()?;
        self.cainjector.ensure_running()?;
        self.webhook.ensure_running()
    }
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

/// Registers cert-manager's ValidatingWebhookConfiguration and MutatingWebhookConfiguration
/// as its release does (`deploy/charts/cert-manager/templates/webhook-validating-webhook.yaml`
/// and `webhook-mutating-webhook.yaml`, default values), calling `url` rather than the
/// webhook's Service, which has no pods here. No `caBundle`: cainjector injects it.
async fn register_webhook(client: &kube::Client, url: &str) -> Result<()> {
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
            "clientConfig": {"url": format!("{url}{path}")},
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
    register::<ValidatingWebhookConfiguration>(client, &metadata, validating).await?;
    register::<MutatingWebhookConfiguration>(client, &metadata, mutating).await
}

/// Server-side applies cert-manager's webhook configuration of kind `K` with `webhooks`.
async fn register<K>(client: &kube::Client, metadata: &serde_json::Value, webhook: serde_json::Value) -> Result<()>
where
    K: kube::Resource<Scope = kube::core::ClusterResourceScope, DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::Serialize
        + serde::de::DeserializeOwned,
{
    let kind = K::kind(&());
    let object: K = serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": metadata, "webhooks": [webhook]}))?;
    Api::<K>::all(client.clone())
        .patch(WEBHOOK_CONFIGURATION, &PatchParams::apply(TEST_FIELD_MANAGER).force(), &Patch::Apply(&object))
        .await
        .with_context(|| format!("registering cert-manager's {kind}"))?;
    Ok(())
}
