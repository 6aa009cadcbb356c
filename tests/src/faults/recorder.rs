//! The recorder: a task that lists Ironic's nodes (one bulk request) and the namespace's
//! BareMetalHosts every interval for the whole scenario, and keeps what it saw per machine;
//! beside it, a watch of the namespace's NodeSet service Jobs ([`super::jobs`]), and which
//! NodeSetServices are `runOnce`, listed with the hosts. It never fails: a listing that fails
//! (Ironic or the apiserver down during a fault) is counted and the next one tries again.

use super::ironic_log::IronicLog;
use super::record::Record;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How the recorder reaches Ironic.
#[derive(Clone)]
pub struct IronicProbe {
    pub endpoint: String,
    /// Sends the microversion header and trusts Ironic's CA (`IronicServer::http_client`).
    pub client: reqwest::Client,
    pub credentials: Option<(String, String)>,
    /// Ironic's log, for the transitions between two listings.
    pub log: Option<IronicLog>,
}

impl IronicProbe {
    /// The probe of a harness Ironic.
    pub fn of(ironic: &crate::ironic::IronicServer) -> crate::Result<Self> {
        Ok(Self {
            endpoint: ironic.endpoint().to_string(),
            client: ironic.http_client()?,
            credentials: ironic.credentials().map(|(u, p)| (u.to_string(), p.to_string())),
            log: Some(IronicLog::new(&ironic.dir().join("ironic.log"))),
        })
    }

    async fn nodes(&self) -> crate::Result<Vec<Value>> {
        let mut request = self
            .client
            .get(format!("{}/v1/nodes?fields=uuid,name,provision_state", self.endpoint))
            .timeout(Duration::from_secs(5));
        if let Some((user, password)) = &self.credentials {
            request = request.basic_auth(user, Some(password));
        }
        let response = request.send().await?.error_for_status()?;
        let body: Value = response.json().await?;
        Ok(body["nodes"].as_array().cloned().unwrap_or_default())
    }
}

/// A running recorder; [`Recorder::stop`] ends it and hands over the record.
pub struct Recorder {
    record: Arc<Mutex<Record>>,
    task: JoinHandle<()>,
    jobs: JoinHandle<()>,
    log: Option<(IronicLog, u64)>,
}

/// The BareMetalHost resource, read untyped: a record must not depend on a status that
/// fails to parse.
fn hosts_resource() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("metal3.io", "v1alpha1", "BareMetalHost"))
}

fn services_resource() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("ferrometal.io", "v1alpha1", "NodeSetService"))
}

impl Recorder {
    /// Records the hosts of `namespace` and their nodes (named `<namespace>~<host>`).
    pub fn start(ironic: IronicProbe, client: kube::Client, namespace: &str, interval: Duration) -> Self {
        let record = Arc::new(Mutex::new(Record::default()));
        let log = ironic.log.clone().map(|log| {
            let mark = log.mark();
            (log, mark)
        });
        let start = Instant::now();
        let jobs = super::jobs::watch(client.clone(), namespace, record.clone(), start);
        let services: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &services_resource());
        let hosts: Api<DynamicObject> = Api::namespaced_with(client, namespace, &hosts_resource());
        let prefix = format!("{namespace}~");
        let shared = record.clone();
        let task = tokio::spawn(async move {
            loop {
                let nodes = ironic.nodes().await;
                let listed = hosts.list(&Default::default()).await;
                // Only to know which services are runOnce: a failure is no failed poll.
                let services = services.list(&Default::default()).await;
                let at = start.elapsed();
                if let Ok(mut record) = shared.lock() {
                    record.polls += 1;
                    for service in services.iter().flat_map(|l| l.items.iter()) {
                        if service.data["spec"]["runOnce"] == Value::Bool(true) {
                            record.run_once.insert(service.name_any());
                        }
                    }
                    match (nodes, listed) {
                        (Ok(nodes), Ok(listed)) => {
                            let hosts: Vec<Value> =
                                listed.items.into_iter().map(|h| serde_json::to_value(h).unwrap_or_default()).collect();
                            observe(&mut record, at, &prefix, &nodes, &hosts);
                        }
                        _ => record.failed_polls += 1,
                    }
                }
                tokio::time::sleep(interval).await;
            }
        });
        Self { record, task, jobs, log }
    }

    /// What was recorded so far.
    pub fn snapshot(&self) -> Record {
        let mut record = self.record.lock().map(|r| r.clone()).unwrap_or_default();
        if let Some((log, mark)) = &self.log {
            record.transitions = Some(log.transitions_since(*mark));
        }
        record
    }

    /// Stops recording; the whole record.
    pub fn stop(self) -> Record {
        self.task.abort();
        self.jobs.abort();
        self.snapshot()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.task.abort();
        self.jobs.abort();
    }
}

/// Adds one pair of listings to the record.
pub fn observe(record: &mut Record, at: Duration, prefix: &str, nodes: &[Value], hosts: &[Value]) {
    for host in hosts {
        let name = host["metadata"]["name"].as_str().unwrap_or_default();
        let state = host["status"]["provisioning"]["state"].as_str().unwrap_or_default();
        let finalizers = host["metadata"]["finalizers"].as_array().is_some_and(|f| !f.is_empty());
        let deleting = !host["metadata"]["deletionTimestamp"].is_null();
        record.machines.entry(name.to_string()).or_default().saw_host(at, state, finalizers, deleting);
    }
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for node in nodes {
        let Some(host) = node["name"].as_str().and_then(|n| n.strip_prefix(prefix)) else { continue };
        let uuid = node["uuid"].as_str().unwrap_or_default();
        match record.machines.get_mut(host) {
            Some(machine) => {
                machine.saw_node(at, uuid, node["provision_state"].as_str().unwrap_or_default());
                *counts.entry(host.to_string()).or_default() += 1;
            }
            None => {
                record.orphans.insert(uuid.to_string());
            }
        }
    }
    for (host, count) in counts {
        if let Some(machine) = record.machines.get_mut(&host) {
            machine.most_nodes_at_once = machine.most_nodes_at_once.max(count);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn listings_become_per_machine_state_sequences_and_strangers_orphans() {
        let mut record = Record::default();
        let host = |state: &str| json!({"metadata": {"name": "h0", "finalizers": ["x"]}, "status": {"provisioning": {"state": state}}});
        let node = |state: &str| json!({"uuid": "u0", "name": "ns~h0", "provision_state": state});
        for (i, (h, n)) in
            [("registering", "enroll"), ("registering", "enroll"), ("available", "available")].iter().enumerate()
        {
            observe(
                &mut record,
                Duration::from_secs(i as u64),
                "ns~",
                &[node(n), json!({"uuid": "u9", "name": "ns~gone"})],
                &[host(h)],
            );
        }
        let machine = &record.machines["h0"];
        let states: Vec<&str> = machine.nodes[0].states.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(states, ["enroll", "available"]);
        assert_eq!(machine.host_state(), "available");
        assert_eq!(machine.host_states.len(), 2);
        assert_eq!(machine.most_nodes_at_once, 1);
        assert!(machine.had_finalizer && !machine.lost_finalizer);
        assert_eq!(record.orphans.iter().collect::<Vec<_>>(), ["u9"]);
    }
}
