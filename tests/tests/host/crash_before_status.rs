//! The operator dies after Ironic did what a host's state asked, before the status saying so
//! was written: the restarted operator finds the work done and records it, never asks Ironic
//! to do it again. The real apiserver refuses the status write (a ValidatingAdmissionPolicy
//! of this namespace), so the operator is killed exactly in that window, however long it
//! retries; the policy is lifted before the next operator starts.

use crate::host_common::{HostEnv, Options, secs, state_of};
use crds::baremetalhost::BareMetalHost;
use ferrometal_tests::wait;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};
use std::time::Duration;

/// A paused host whose status only the test writes, by dry run, to learn whether a refusal
/// is in force.
const PROBE: &str = "probe";

fn admission(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind), plural)
}

/// A status write the apiserver is to refuse: a CEL condition on the written host, and a
/// status that meets it (and the schema), for the probe.
struct Refusal {
    name: &'static str,
    condition: &'static str,
    probe: Value,
}

/// A status of `state` that the schema accepts, with `extra` fields.
fn status_of(state: &str, extra: Value) -> Value {
    let mut status = json!({"errorCount": 0, "errorMessage": "", "operationalStatus": "OK", "poweredOn": false,
        "provisioning": {"ID": "", "state": state}});
    if let (Some(status), Value::Object(extra)) = (status.as_object_mut(), extra) {
        status.extend(extra);
    }
    json!({ "status": status })
}

/// Every write that records an inspection's start: the one right after the operator called
/// `inspect`, and every later one, so that the operator stays in that window.
fn inspection_recorded() -> Refusal {
    Refusal {
        name: "inspection-start",
        condition: "has(object.status.operationHistory) && has(object.status.operationHistory.inspect) \
                    && has(object.status.operationHistory.inspect.start)",
        probe: status_of("inspecting", json!({"operationHistory": {"inspect": {"start": "2026-01-01T00:00:00Z"}}})),
    }
}

/// The write of `provisioned`, once Ironic deployed the host.
fn deployment_recorded() -> Refusal {
    Refusal {
        name: "provisioned",
        condition: "object.status.provisioning.state == 'provisioned'",
        probe: status_of("provisioned", json!({})),
    }
}

/// The refusals of the status writes of one namespace's hosts.
struct Refusals {
    client: kube::Client,
    ns: String,
    hosts: Api<BareMetalHost>,
}

impl Refusals {
    fn of(t: &HostEnv) -> Self {
        Self { client: t.env.client(), ns: t.ns().to_string(), hosts: t.hosts.clone() }
    }

    fn name(&self, refusal: &Refusal) -> String {
        format!("refuse-{}-{}", self.ns, refusal.name)
    }

    /// Whether the probe's dry-run status write is refused by the test's policy.
    async fn refused(&self, refusal: &Refusal) -> anyhow::Result<bool> {
        let params = PatchParams { dry_run: true, ..PatchParams::default() };
        match self.hosts.patch_status(PROBE, &params, &Patch::Merge(&refusal.probe)).await {
            Ok(_) => Ok(false),
            Err(kube::Error::Api(status)) if status.message.contains(&self.name(refusal)) => Ok(true),
            Err(other) => Err(other.into()),
        }
    }

    async fn until(&self, refusal: &Refusal, refused: bool) -> anyhow::Result<()> {
        let what = format!("status writes of {} refused: {refused}", refusal.name);
        wait::until_ok(&what, secs(30), Duration::from_millis(200), || async move {
            Ok((self.refused(refusal).await? == refused).then_some(()))
        })
        .await
    }

    /// Refuses every status write that meets `refusal`, once the apiserver enforces it.
    async fn impose(&self, refusal: &Refusal) -> anyhow::Result<()> {
        let name = self.name(refusal);
        let expression = format!("!(has(object.status) && has(object.status.provisioning) && ({}))", refusal.condition);
        let policy: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{"apiGroups": ["metal3.io"], "apiVersions": ["v1alpha1"],
                    "operations": ["UPDATE"], "resources": ["baremetalhosts/status"]}]},
                "validations": [{"expression": expression, "message": format!("{name}: the test's crash window")}],
            },
        }))?;
        let binding: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": self.ns}}}},
        }))?;
        self.policies().create(&PostParams::default(), &policy).await?;
        self.bindings().create(&PostParams::default(), &binding).await?;
        self.until(refusal, true).await
    }

    /// Lifts `refusal`, once the apiserver no longer enforces it.
    async fn lift(&self, refusal: &Refusal) -> anyhow::Result<()> {
        let name = self.name(refusal);
        self.bindings().delete(&name, &DeleteParams::default()).await?;
        self.policies().delete(&name, &DeleteParams::default()).await?;
        self.until(refusal, false).await
    }

    fn policies(&self) -> Api<DynamicObject> {
        Api::all_with(self.client.clone(), &admission("ValidatingAdmissionPolicy", "validatingadmissionpolicies"))
    }

    fn bindings(&self) -> Api<DynamicObject> {
        let resource = admission("ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings");
        Api::all_with(self.client.clone(), &resource)
    }
}

/// Waits until Ironic logged the node moving through `through` and resting in `rests`.
async fn until_ironic_did(t: &HostEnv, host: &str, through: &str, rests: &str) -> anyhow::Result<String> {
    let what = format!("{host}'s node through {through:?} to {rests:?}");
    wait::until_ok(&what, secs(90), Duration::from_millis(200), || async move {
        let Ok(uuid) = t.node_uuid(host).await else { return Ok(None) };
        let moves = t.ironic_transitions(&uuid)?;
        let done = moves.iter().any(|m| m == through) && moves.last().is_some_and(|m| m == rests);
        Ok(done.then_some(uuid))
    })
    .await
}

/// Kills the operator (nothing of it is left to write anything), then lifts `lifted`, imposes
/// `next` and starts the operator again.
async fn restart(t: &mut HostEnv, refusals: &Refusals, lifted: &Refusal, next: Option<&Refusal>) -> anyhow::Result<()> {
    if let Some(next) = next {
        refusals.impose(next).await?;
    }
    refusals.lift(lifted).await?;
    t.start_operator(t.host_config()).await
}

fn kill(t: &mut HostEnv) {
    if let Some(operator) = t.operator.take() {
        operator.abort();
    }
}

#[tokio::test]
async fn an_operator_killed_before_recording_an_inspection_or_a_deployment_starts_neither_again() -> anyhow::Result<()>
{
    let mut t = HostEnv::start("host-crash", Options::default()).await?;
    let refusals = Refusals::of(&t);
    let (inspection, deployment) = (inspection_recorded(), deployment_recorded());
    t.create_host(PROBE, t.fake_spec(PROBE), json!({"baremetalhost.metal3.io/paused": ""})).await?;
    refusals.impose(&inspection).await?;
    t.start_operator(t.host_config()).await?;
    let iso = t.ironic.image_server().write_live_iso("live.iso")?;
    let mut spec = t.fake_spec("crash-0");
    spec["image"] = json!({"url": iso, "format": "live-iso"});
    t.create_host("crash-0", spec, json!({})).await?;

    // Inspected in Ironic, its start never recorded in the host's status (every write since
    // that would record it refused, the same operator retrying in the window): it dies there.
    let uuid = until_ironic_did(&t, "crash-0", "inspecting", "manageable").await?;
    kill(&mut t);
    let host = t.hosts.get("crash-0").await?;
    assert_eq!(state_of(&host), "inspecting");
    let history = host.status.and_then(|s| s.operation_history).and_then(|h| h.inspect);
    assert!(history.is_none_or(|m| m.start.is_none()), "the inspection's start was refused");
    restart(&mut t, &refusals, &inspection, Some(&deployment)).await?;

    // Deployed in Ironic, not in the host's status: it dies there again.
    until_ironic_did(&t, "crash-0", "deploying", "active").await?;
    kill(&mut t);
    assert_eq!(state_of(&t.hosts.get("crash-0").await?), "provisioning", "the write of provisioned was refused");
    restart(&mut t, &refusals, &deployment, None).await?;

    let host = t.wait_provisioned("crash-0", secs(60)).await?;
    let moves = t.ironic_transitions(&uuid)?;
    let count = |state: &str| moves.iter().filter(|m| *m == state).count();
    assert_eq!((count("inspecting"), count("deploying")), (1, 1), "one inspection and one deployment: {moves:?}");
    assert_eq!(host.status.map(|s| s.provisioning.id), Some(uuid), "the node it had, no other");
    assert_eq!(t.node_count().await?, 1, "the paused probe has none; the host has one");
    Ok(())
}
