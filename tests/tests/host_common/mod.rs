//! Shared set-up of the BareMetalHost tests: a control plane with the CRDs,
//! a real Ironic (and sushy-tools when redfish is the point), the operator
//! running only the host controller against that Ironic, and helpers to
//! create hosts, wait for their states, record every state they pass
//! through, and read what Ironic did (its API and its log).
#![allow(dead_code)]

use crate::common::{Env, SECOND};
use anyhow::Context as _;
use crds::baremetalhost::BareMetalHost;
use ferrometal_tests::ironic::{IronicConfig, IronicServer};
use ferrometal_tests::sushy::{Sushy, SushyConfig};
use ferrometal_tests::wait;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::{Resource, ResourceExt};
use operator::Operator;
use operator::testing::host::{self, CredentialsSource, EndpointConfig, IronicSource};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;

/// BMC credentials the tests' sushy-tools accept.
pub const BMC_USER: &str = "admin";
pub const BMC_PASSWORD: &str = "redfish-pw";

/// What a test needs started.
#[derive(Default)]
pub struct Options {
    /// sushy-tools with this many systems (basic auth with BMC_USER/BMC_PASSWORD).
    pub sushy_systems: Option<usize>,
    pub ironic: IronicConfig,
    /// The name of an `Ironic` whose Service name (`<name>.<namespace>.svc`) Ironic's TLS
    /// certificate must cover, for an operator that derives the endpoint from it.
    pub ironic_service: Option<&'static str>,
}

/// The environment of one host test.
pub struct HostEnv {
    pub env: Env,
    pub ironic: IronicServer,
    pub sushy: Option<Sushy>,
    pub operator: Option<Operator>,
    pub hosts: Api<BareMetalHost>,
}

impl HostEnv {
    pub async fn start(prefix: &str, options: Options) -> anyhow::Result<Self> {
        let env = Env::start(prefix).await?;
        let mut ironic = options.ironic;
        if let Some(service) = options.ironic_service {
            ironic.server_names.push(format!("{service}.{}.svc", env.ns));
        }
        let ironic = IronicServer::start(ironic).await?;
        let sushy = match options.sushy_systems {
            Some(systems) => Some(
                Sushy::start(SushyConfig {
                    systems,
                    auth: Some((BMC_USER.into(), BMC_PASSWORD.into())),
                    ..SushyConfig::default()
                })
                .await?,
            ),
            None => None,
        };
        let hosts = Api::namespaced(env.client(), &env.ns);
        Ok(Self { env, ironic, sushy, operator: None, hosts })
    }

    /// Starts the environment and the operator with [`HostEnv::host_config`].
    pub async fn with_operator(prefix: &str, options: Options) -> anyhow::Result<Self> {
        let mut t = Self::start(prefix, options).await?;
        t.start_operator(t.host_config()).await?;
        Ok(t)
    }

    /// Creates a fake-hardware host deploying a live ISO and waits until it
    /// is provisioned and powered on; returns the host and the ISO's URL.
    pub async fn provisioned_fake_host(&self, name: &str) -> anyhow::Result<(BareMetalHost, String)> {
        let iso = self.ironic.image_server().write_live_iso("live.iso")?;
        let mut spec = self.fake_spec(name);
        spec["image"] = json!({"url": iso, "format": "live-iso"});
        self.create_host(name, spec, json!({})).await?;
        Ok((self.wait_provisioned(name, secs(60)).await?, iso))
    }

    /// Waits until a host is provisioned and powered on.
    pub async fn wait_provisioned(&self, name: &str, timeout: Duration) -> anyhow::Result<BareMetalHost> {
        self.wait_for(name, "provisioned and powered on", timeout, |h| {
            h.status.as_ref().is_some_and(|s| s.provisioning.state.as_str() == "provisioned" && s.powered_on)
        })
        .await
    }

    /// Removes the host's image and waits until it is available again.
    pub async fn deprovision(&self, name: &str, timeout: Duration) -> anyhow::Result<BareMetalHost> {
        self.patch_host(name, json!({"spec": {"image": null}})).await?;
        self.wait_for(name, "available without an image", timeout, |h| {
            h.status
                .as_ref()
                .is_some_and(|s| s.provisioning.state.as_str() == "available" && s.provisioning.image.is_none())
        })
        .await
    }

    /// The UUID of the host's node, as Ironic has it now.
    pub async fn node_uuid(&self, host: &str) -> anyhow::Result<String> {
        let node = self.node(host).await?.with_context(|| format!("{host} has no Ironic node"))?;
        Ok(node["uuid"].as_str().unwrap_or_default().to_string())
    }

    /// A host controller configuration for this Ironic, with the short
    /// intervals tests need.
    pub fn host_config(&self) -> host::Config {
        let credentials = match self.ironic.credentials() {
            Some((username, password)) => {
                CredentialsSource::Inline { username: username.into(), password: password.to_string().into() }
            }
            None => CredentialsSource::None,
        };
        host::Config {
            ironic: IronicSource::Endpoint(EndpointConfig {
                url: self.ironic.endpoint().to_string(),
                credentials,
                ca: self.ironic.ca_pem().map(|pem| host::CaSource::Pem(pem.to_string())),
                insecure: false,
            }),
            concurrency: 8,
            fast_poll_interval: Duration::from_millis(300),
            slow_poll_interval: Duration::from_secs(2),
            error_backoff_base: Duration::from_secs(2),
            error_backoff_max: Duration::from_secs(30),
            ..host::Config::default()
        }
    }

    /// Starts the operator with only the host controller.
    pub async fn start_operator(&mut self, config: host::Config) -> anyhow::Result<()> {
        let mut operator_config = self.env.operator_config();
        operator_config.host = Some(config);
        self.operator = Some(self.env.start_operator(operator_config).await?);
        Ok(())
    }

    pub fn operator(&self) -> anyhow::Result<&Operator> {
        self.operator.as_ref().context("the operator is not running")
    }

    pub fn ns(&self) -> &str {
        &self.env.ns
    }

    /// The Ironic node name of a host.
    pub fn node_name(&self, host: &str) -> String {
        format!("{}~{host}", self.env.ns)
    }

    /// A Secret with BMC credentials.
    pub async fn credentials_secret(&self, name: &str, username: &str, password: &str) -> anyhow::Result<Secret> {
        let secrets: Api<Secret> = Api::namespaced(self.env.client(), &self.env.ns);
        let secret = Secret {
            metadata: ObjectMeta { name: Some(name.into()), ..ObjectMeta::default() },
            string_data: Some(BTreeMap::from([
                ("username".to_string(), username.to_string()),
                ("password".to_string(), password.to_string()),
            ])),
            ..Secret::default()
        };
        match secrets.get_opt(name).await? {
            Some(_) => Ok(secrets.replace(name, &PostParams::default(), &secret).await?),
            None => Ok(secrets.create(&PostParams::default(), &secret).await?),
        }
    }

    /// A Secret with one key.
    pub async fn data_secret(&self, name: &str, key: &str, value: &str) -> anyhow::Result<Secret> {
        let secrets: Api<Secret> = Api::namespaced(self.env.client(), &self.env.ns);
        let secret = Secret {
            metadata: ObjectMeta { name: Some(name.into()), ..ObjectMeta::default() },
            string_data: Some(BTreeMap::from([(key.to_string(), value.to_string())])),
            ..Secret::default()
        };
        Ok(secrets.create(&PostParams::default(), &secret).await?)
    }

    /// Creates a host from a spec (and optional annotations).
    pub async fn create_host(&self, name: &str, spec: Value, annotations: Value) -> anyhow::Result<BareMetalHost> {
        let host: BareMetalHost = serde_json::from_value(json!({
            "apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
            "metadata": {"name": name, "annotations": annotations},
            "spec": spec,
        }))?;
        Ok(self.hosts.create(&PostParams::default(), &host).await?)
    }

    /// The spec of a fake-hardware host.
    pub fn fake_spec(&self, name: &str) -> Value {
        json!({"bmc": {"address": format!("fake://{name}"), "credentialsName": "fake-bmc"}, "online": true})
    }

    /// The spec of a redfish-virtualmedia host on emulated system `index`.
    pub fn redfish_spec(&self, index: usize, credentials: &str) -> anyhow::Result<Value> {
        let sushy = self.sushy.as_ref().context("no sushy-tools in this test")?;
        let system = sushy.systems().get(index).context("no such emulated system")?;
        Ok(json!({
            "bmc": {"address": sushy.bmc_address("redfish-virtualmedia", system), "credentialsName": credentials},
            "bootMACAddress": system.mac,
            "online": true,
            // Out-of-band inspection: no ramdisk can run here.
            "inspectionMode": "fast",
            // Cleaning needs the ramdisk too.
            "automatedCleaningMode": "disabled",
        }))
    }

    pub async fn patch_host(&self, name: &str, patch: Value) -> anyhow::Result<BareMetalHost> {
        Ok(self.hosts.patch(name, &PatchParams::default(), &Patch::Merge(patch)).await?)
    }

    pub async fn delete_host(&self, name: &str) -> anyhow::Result<()> {
        self.hosts.delete(name, &DeleteParams::default()).await?;
        Ok(())
    }

    /// Waits until the host satisfies `check`.
    pub async fn wait_for(
        &self,
        name: &str,
        what: &str,
        timeout: Duration,
        check: impl Fn(&BareMetalHost) -> bool,
    ) -> anyhow::Result<BareMetalHost> {
        let check = &check;
        let waited =
            wait::until_ok(&format!("host {name}: {what}"), timeout, Duration::from_millis(100), || async move {
                Ok(self.hosts.get_opt(name).await?.filter(|h| check(h)))
            })
            .await;
        match waited {
            Ok(host) => Ok(host),
            Err(err) => Err(err.context(format!("host {name} is {}", self.describe(name).await))),
        }
    }

    /// Waits for a provisioning state.
    pub async fn wait_state(&self, name: &str, state: &str, timeout: Duration) -> anyhow::Result<BareMetalHost> {
        self.wait_for(name, &format!("state {state:?}"), timeout, |h| state_of(h) == state).await
    }

    /// Waits until the host is gone.
    pub async fn wait_gone(&self, name: &str, timeout: Duration) -> anyhow::Result<()> {
        wait::until_ok(&format!("host {name} to be deleted"), timeout, Duration::from_millis(100), || async move {
            Ok(self.hosts.get_opt(name).await?.is_none().then_some(()))
        })
        .await
    }

    /// A one-line description of a host, for failure messages.
    pub async fn describe(&self, name: &str) -> String {
        match self.hosts.get_opt(name).await {
            Ok(Some(h)) => {
                let s = h.status.clone().unwrap_or_default();
                format!(
                    "in state {:?}, operational status {:?}, error {:?} {:?} (count {})",
                    s.provisioning.state.as_str(),
                    s.operational_status,
                    s.error_type,
                    s.error_message,
                    s.error_count
                )
            }
            Ok(None) => "gone".into(),
            Err(err) => format!("unreadable: {err}"),
        }
    }

    /// The Ironic node of a host, as Ironic's API returns it; `None` when
    /// Ironic has no such node.
    pub async fn node(&self, host: &str) -> anyhow::Result<Option<Value>> {
        let url = format!("{}/v1/nodes/{}", self.ironic.endpoint(), self.node_name(host));
        let mut request = self.ironic.http_client()?.get(url);
        if let Some((user, password)) = self.ironic.credentials() {
            request = request.basic_auth(user, Some(password));
        }
        let response = request.send().await?;
        if response.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let status = response.status();
        let body = response.text().await?;
        anyhow::ensure!(status.is_success(), "GET node {host}: {status}: {body}");
        Ok(Some(serde_json::from_str(&body)?))
    }

    /// An Ironic client of the test's own, as anyone else with access to Ironic would use it
    /// (its requests are not the operator's and are not in the operator's metrics).
    pub async fn ironic_client(&self) -> anyhow::Result<ironic_client::IronicClient> {
        let mut builder = ironic_client::IronicClient::builder(self.ironic.endpoint());
        if let Some((user, password)) = self.ironic.credentials() {
            builder = builder.basic_auth(user, password);
        }
        if let Some(pem) = self.ironic.ca_pem() {
            builder = builder.ca_pem(pem);
        }
        Ok(builder.build().await?)
    }

    /// How many nodes Ironic has.
    pub async fn node_count(&self) -> anyhow::Result<usize> {
        let nodes = self.ironic.get_json("/v1/nodes?fields=uuid").await?;
        Ok(nodes["nodes"].as_array().map(Vec::len).unwrap_or(0))
    }

    /// Waits until Ironic's node of `host` is in provision state `state`.
    pub async fn wait_node_state(&self, host: &str, state: &str, timeout: Duration) -> anyhow::Result<Value> {
        wait::until_ok(&format!("node of {host} in {state:?}"), timeout, Duration::from_millis(200), || async move {
            Ok(self.node(host).await?.filter(|n| n["provision_state"] == state))
        })
        .await
    }

    /// Every provision state Ironic logged node `uuid` moving to, in order.
    pub fn ironic_transitions(&self, uuid: &str) -> anyhow::Result<Vec<String>> {
        let log = std::fs::read_to_string(self.ironic.dir().join("ironic.log"))?;
        let marker = format!("Node {uuid} moved to provision state \"");
        Ok(log
            .lines()
            .filter_map(|line| line.split_once(&marker).map(|(_, rest)| rest))
            .filter_map(|rest| rest.split('"').next())
            .map(str::to_string)
            .collect())
    }

    /// The reasons of the Events about `host`, in the order they were first emitted.
    pub async fn event_reasons(&self, host: &str) -> anyhow::Result<Vec<String>> {
        let mut about = self.events_about(host).await?;
        about.sort_by_key(|e| e.metadata.creation_timestamp.clone().map(|t| t.0));
        Ok(about.into_iter().filter_map(|e| e.reason).collect())
    }

    /// The Events about `host`.
    pub async fn events_about(&self, host: &str) -> anyhow::Result<Vec<k8s_openapi::api::events::v1::Event>> {
        let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(self.env.client(), self.ns());
        Ok(events
            .list(&Default::default())
            .await?
            .items
            .into_iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(host))
            .collect())
    }

    /// Waits until the Events about `host` include every reason of `expected`.
    pub async fn wait_events(&self, host: &str, expected: &[&str]) -> anyhow::Result<Vec<String>> {
        wait::until_ok(&format!("events {expected:?} about {host}"), secs(30), Duration::from_millis(200), || async {
            let reasons = self.event_reasons(host).await?;
            Ok(expected.iter().all(|r| reasons.iter().any(|seen| seen == r)).then_some(reasons))
        })
        .await
    }

    /// Ironic requests the operator made, over every operation.
    pub fn ironic_requests(&self) -> anyhow::Result<u64> {
        let metrics = self.operator()?.metrics();
        Ok(ironic_client::Operation::ALL.iter().map(|op| metrics.ironic_request_count(op.as_str())).sum())
    }

    /// Requests of one operation.
    pub fn ironic_request_count(&self, operation: &str) -> anyhow::Result<u64> {
        Ok(self.operator()?.metrics().ironic_request_count(operation))
    }

    /// Bulk polls of Ironic completed so far (full lists and looks at what changed).
    pub fn poll_count(&self) -> anyhow::Result<u64> {
        let text = self.operator()?.metrics().encode();
        let count = text.lines().find_map(|line| line.strip_prefix("ferrometal_host_bulk_polls_total "));
        Ok(count.and_then(|n| n.trim().parse().ok()).unwrap_or(0))
    }

    /// Starts recording the states of every host of the namespace.
    /// Starts recording once the watch has listed the namespace, so no state
    /// written after this returns can be missed.
    pub async fn record(&self) -> anyhow::Result<Recorder> {
        Recorder::start(self.hosts.clone()).await
    }
}

/// A host's provisioning state as BMO spells it.
pub fn state_of(host: &BareMetalHost) -> &'static str {
    host.status.as_ref().map(|s| s.provisioning.state.as_str()).unwrap_or("")
}

/// States that take a provisioning slot.
pub const BUSY_STATES: [&str; 3] = ["inspecting", "provisioning", "deprovisioning"];

#[derive(Default)]
struct Recording {
    /// Every host's states, in the order seen, without repeats.
    history: HashMap<String, Vec<String>>,
    current: HashMap<String, String>,
    max_busy: usize,
    /// Hosts seen with operationalStatus `delayed` (waiting for a provisioning slot).
    delayed: std::collections::BTreeSet<String>,
    /// How often each host was seen to start waiting for a slot (delayed after not delayed).
    waits: HashMap<String, usize>,
    /// Hosts delayed in the last status seen.
    delayed_now: std::collections::BTreeSet<String>,
    /// Whether each host's first status seen in `provisioned` also said it was powered on.
    provisioned_powered_on: HashMap<String, bool>,
}

impl Recording {
    /// Takes in one version of a host.
    fn saw(&mut self, host: &BareMetalHost) {
        let name = host.name_any();
        let state = state_of(host).to_string();
        let history = self.history.entry(name.clone()).or_default();
        if history.last() != Some(&state) {
            history.push(state.clone());
        }
        let delayed = host
            .status
            .as_ref()
            .is_some_and(|s| s.operational_status == crds::baremetalhost::OperationalStatus::Delayed);
        if delayed && !self.delayed_now.contains(&name) {
            *self.waits.entry(name.clone()).or_default() += 1;
        }
        if delayed {
            self.delayed.insert(name.clone());
            self.delayed_now.insert(name.clone());
        } else {
            self.delayed_now.remove(&name);
        }
        if state == "provisioned" && !self.provisioned_powered_on.contains_key(&name) {
            let on = host.status.as_ref().is_some_and(|s| s.powered_on);
            self.provisioned_powered_on.insert(name.clone(), on);
        }
        self.current.insert(name, state);
    }
}

/// Watches the hosts of a namespace and records every state each passes
/// through, and the most hosts ever seen busy at once.
pub struct Recorder {
    recording: Arc<Mutex<Recording>>,
    task: JoinHandle<()>,
}

impl Recorder {
    async fn start(hosts: Api<BareMetalHost>) -> anyhow::Result<Self> {
        let recording = Arc::new(Mutex::new(Recording::default()));
        let sink = recording.clone();
        let (listed, ready) = tokio::sync::oneshot::channel();
        let mut listed = Some(listed);
        let task = tokio::spawn(async move {
            let mut events = watcher::watcher(hosts, watcher::Config::default()).boxed();
            while let Some(event) = events.next().await {
                let Ok(event) = event else { continue };
                if matches!(event, Event::InitDone) {
                    listed.take().map(|l| l.send(()));
                }
                let mut rec = sink.lock().unwrap_or_else(|e| e.into_inner());
                match event {
                    Event::Apply(host) | Event::InitApply(host) => rec.saw(&host),
                    Event::Delete(host) => {
                        let name = host.name_any();
                        rec.history.entry(name.clone()).or_default().push("<deleted>".into());
                        rec.current.remove(&name);
                    }
                    Event::Init | Event::InitDone => {}
                }
                let busy = rec.current.values().filter(|s| BUSY_STATES.contains(&s.as_str())).count();
                rec.max_busy = rec.max_busy.max(busy);
            }
        });
        tokio::time::timeout(Duration::from_secs(60), ready)
            .await
            .context("the recorder's first list took over a minute")?
            .context("the recorder stopped before its first list")?;
        Ok(Self { recording, task })
    }

    /// The state `host` is in, as last seen.
    pub fn current(&self, host: &str) -> Option<String> {
        let rec = self.recording.lock().unwrap_or_else(|e| e.into_inner());
        rec.current.get(host).cloned()
    }

    /// The states `host` went through.
    pub fn states(&self, host: &str) -> Vec<String> {
        let rec = self.recording.lock().unwrap_or_else(|e| e.into_inner());
        rec.history.get(host).cloned().unwrap_or_default()
    }

    /// The hosts seen waiting for a provisioning slot.
    pub fn delayed(&self) -> Vec<String> {
        self.recording.lock().unwrap_or_else(|e| e.into_inner()).delayed.iter().cloned().collect()
    }

    /// How often each host that waited for a provisioning slot started waiting.
    pub fn waits(&self) -> HashMap<String, usize> {
        self.recording.lock().unwrap_or_else(|e| e.into_inner()).waits.clone()
    }

    /// Whether `host`'s first status seen in `provisioned` said it was powered on; `None`
    /// when it was never seen provisioned.
    pub fn provisioned_powered_on(&self, host: &str) -> Option<bool> {
        self.recording.lock().unwrap_or_else(|e| e.into_inner()).provisioned_powered_on.get(host).copied()
    }

    /// The most hosts seen in a busy state at the same time.
    pub fn max_busy(&self) -> usize {
        self.recording.lock().unwrap_or_else(|e| e.into_inner()).max_busy
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Whether `expected` appears in `seen` in order (other states may come between).
pub fn in_order(seen: &[String], expected: &[&str]) -> bool {
    let mut rest = seen.iter();
    expected.iter().all(|want| rest.any(|s| s == want))
}

/// Asserts `in_order` with a readable message.
pub fn assert_in_order(seen: &[String], expected: &[&str]) {
    assert!(in_order(seen, expected), "expected the states {expected:?} in this order, saw {seen:?}");
}

/// The host's UID.
pub fn uid(host: &BareMetalHost) -> String {
    host.meta().uid.clone().unwrap_or_default()
}

/// Seconds, for readable timeouts.
pub fn secs(n: u64) -> Duration {
    SECOND * u32::try_from(n).unwrap_or(u32::MAX)
}
