//! What each claimed machine gets written (pure), once the rollout settled what ran on it: its
//! image and first-boot data when it is provisioned, the clear of its image when it is
//! reprovisioned, and otherwise its consumer fields kept current.

use super::basis::Basis;
use super::consumer::{
    Body, Consumer, HostWrite, Purpose, apply_body, live_provisioning_fields, provisioning_fields, reprovision_patch,
};
use super::facts::Facts;
use super::machine::{Action, Decision};
use super::network_data::network_data;
use super::plan::{HostPhase, HostPlan, NetworkData, network_data_name, write};
use crds::baremetalhost::BareMetalHost;
use kube::ResourceExt;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The writes on claimed machines, and the network data their provisioning needs.
#[derive(Default)]
pub(super) struct MachineWrites {
    pub(super) writes: Vec<HostWrite>,
    pub(super) network_data: Vec<NetworkData>,
}

/// The writes on the machines of `claimed` (hostname to BareMetalHost), per the decision of
/// each (`hosts`): after the rollout, so the completions they record are this reconcile's.
pub(super) fn machine_writes(
    basis: &Basis,
    facts: &Facts,
    hosts: &BTreeMap<String, HostPlan>,
    claimed: &BTreeMap<String, Arc<BareMetalHost>>,
) -> MachineWrites {
    let mut out = MachineWrites::default();
    for (hostname, host) in claimed {
        let Some(entry) = hosts.get(hostname) else { continue };
        let HostPhase::Machine(decision) = &entry.phase else { continue };
        let generated = match decision.action {
            Action::Provision { .. } => generated_network_data(basis, entry, facts, host, hostname),
            _ => None,
        };
        let generated_name = generated.as_ref().map(|g| g.name.clone());
        out.network_data.extend(generated);
        let machine = Machine { hostname, host, entry, decision };
        out.writes.extend(machine.write(basis, facts, generated_name.as_deref()));
    }
    out
}

/// A claimed machine, as `machine_writes` sees it.
struct Machine<'a> {
    hostname: &'a str,
    host: &'a Arc<BareMetalHost>,
    entry: &'a HostPlan,
    decision: &'a Decision,
}

impl Machine<'_> {
    /// The machine's write, if it needs one; `generated` names its generated network data.
    fn write(&self, basis: &Basis, facts: &Facts, generated: Option<&str>) -> Option<HostWrite> {
        let (host, hostname) = (self.host, self.hostname);
        match &self.decision.action {
            Action::Reprovision { token, replaced } => {
                let patch = reprovision_patch(host, token, replaced.as_deref());
                Some(write(host, hostname, Purpose::Reprovision, Body::Merge(patch)))
            }
            Action::Provision { token } => {
                let fields = provisioning_fields(hostname, basis.spec, &facts.bmh_namespace, generated);
                let consumer = Consumer { token: token.clone(), ..self.consumer(basis, Some(fields)) };
                let body = apply_body(&basis.owner, host, &consumer, Purpose::Provision)?;
                Some(write(host, hostname, Purpose::Provision, Body::Apply(body)))
            }
            Action::Keep => {
                // Only what this NodeSet provisioned is its to apply, and as it is now.
                let fields = self.decision.provisioned_hash.as_ref().map(|_| live_provisioning_fields(host));
                let consumer = self.consumer(basis, fields);
                let body = apply_body(&basis.owner, host, &consumer, Purpose::Update)?;
                Some(write(host, hostname, Purpose::Update, Body::Apply(body)))
            }
        }
    }

    /// The consumer fields of the machine, with `provisioning` as its first-boot fields.
    fn consumer(&self, basis: &Basis, provisioning: Option<serde_json::Map<String, serde_json::Value>>) -> Consumer {
        Consumer {
            provisioned_hash: self.decision.provisioned_hash.clone(),
            completed: self.entry.completed.clone(),
            provisioning,
            ..Consumer::claim(self.hostname, basis.spec)
        }
    }
}

/// The network data generated for a machine to provision, unless the NodeSet gives its own
/// (the template's, or the host's section's) or nothing is known to generate it from.
fn generated_network_data(
    basis: &Basis,
    entry: &HostPlan,
    facts: &Facts,
    host: &Arc<BareMetalHost>,
    hostname: &str,
) -> Option<NetworkData> {
    let spec = basis.spec;
    let template = spec.baremetal_set_template.as_ref()?;
    let section = spec.nodes.as_ref().and_then(|n| n.get(hostname));
    if template.network_data.is_some() || section.is_some_and(|s| s.network_data.is_some()) {
        return None;
    }
    let content = network_data(&entry.config, facts.hardware.get(&host.name_any()))?;
    Some(NetworkData {
        name: network_data_name(&basis.owner, hostname),
        namespace: facts.bmh_namespace.clone(),
        owner: host.clone(),
        content,
    })
}
