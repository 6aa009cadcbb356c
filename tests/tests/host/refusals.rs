//! Crash windows held open by the real apiserver: a ValidatingAdmissionPolicy, bound to one
//! test's namespace, refuses the status writes that would record what Ironic did, so the
//! operator retries in that window however long it takes, and the test kills it there. A
//! paused object of each kind, named [`PROBE`], whose status only the test writes (by dry run),
//! tells when the apiserver enforces a refusal and when it no longer does.

use crate::host_common::{HostEnv, secs};
use crds::baremetalhost::BareMetalHost;
use crds::firmware::HostFirmwareComponents;
use ferrometal_tests::wait;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};
use std::time::Duration;

/// The object of each refused kind whose status only the test writes.
pub(crate) const PROBE: &str = "probe";

/// Whose status writes a refusal is about.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    Host,
    Components,
}

impl Kind {
    fn resource(self) -> ApiResource {
        match self {
            Kind::Host => ApiResource::erase::<BareMetalHost>(&()),
            Kind::Components => ApiResource::erase::<HostFirmwareComponents>(&()),
        }
    }
}

/// A status write the apiserver is to refuse: a CEL condition on the written object's status
/// (`has(object.status)` is checked first), and a status that meets it (and the schema), for
/// the probe.
pub(crate) struct Refusal {
    pub name: &'static str,
    pub kind: Kind,
    pub condition: &'static str,
    pub probe: Value,
}

/// A host status of `state` that the schema accepts, with `extra` fields.
pub(crate) fn host_status(state: &str, extra: Value) -> Value {
    let mut status = json!({"errorCount": 0, "errorMessage": "", "operationalStatus": "OK", "poweredOn": false,
        "provisioning": {"ID": "", "state": state}});
    if let (Some(status), Value::Object(extra)) = (status.as_object_mut(), extra) {
        status.extend(extra);
    }
    json!({ "status": status })
}

fn admission(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind), plural)
}

/// The refusals of the status writes of one namespace's objects.
pub(crate) struct Refusals {
    client: kube::Client,
    ns: String,
}

impl Refusals {
    /// The refusals of `t`'s namespace, with its paused probe host created.
    pub(crate) async fn of(t: &HostEnv) -> anyhow::Result<Self> {
        t.create_host(PROBE, t.fake_spec(PROBE), json!({"baremetalhost.metal3.io/paused": ""})).await?;
        Ok(Self { client: t.env.client(), ns: t.ns().to_string() })
    }

    /// Creates the probe of `kind` when there is none (the host's exists from the start).
    pub(crate) async fn probe(&self, kind: Kind) -> anyhow::Result<()> {
        let resource = kind.resource();
        let probe: DynamicObject = serde_json::from_value(json!({
            "apiVersion": resource.api_version, "kind": resource.kind,
            "metadata": {"name": PROBE}, "spec": {},
        }))?;
        match self.objects(kind).create(&PostParams::default(), &probe).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
            Err(other) => Err(other.into()),
        }
    }

    fn objects(&self, kind: Kind) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), &self.ns, &kind.resource())
    }

    fn name(&self, refusal: &Refusal) -> String {
        format!("refuse-{}-{}", self.ns, refusal.name)
    }

    /// Whether the probe's dry-run status write is refused by the test's policy.
    async fn refused(&self, refusal: &Refusal) -> anyhow::Result<bool> {
        let params = PatchParams { dry_run: true, ..PatchParams::default() };
        match self.objects(refusal.kind).patch_status(PROBE, &params, &Patch::Merge(&refusal.probe)).await {
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
    pub(crate) async fn impose(&self, refusal: &Refusal) -> anyhow::Result<()> {
        let name = self.name(refusal);
        let resource = refusal.kind.resource();
        let expression = format!("!(has(object.status) && ({}))", refusal.condition);
        let policy: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{"apiGroups": [resource.group], "apiVersions": [resource.version],
                    "operations": ["UPDATE"], "resources": [format!("{}/status", resource.plural)]}]},
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
    pub(crate) async fn lift(&self, refusal: &Refusal) -> anyhow::Result<()> {
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

/// Waits until Ironic logged the host's node moving through `through` and resting in `rests`;
/// answers the node's UUID.
pub(crate) async fn until_ironic_did(
    t: &HostEnv,
    host: &str,
    through: &str,
    rests: &str,
    timeout: Duration,
) -> anyhow::Result<String> {
    let what = format!("{host}'s node through {through:?} to {rests:?}");
    wait::until_ok(&what, timeout, Duration::from_millis(200), || async move {
        let Ok(uuid) = t.node_uuid(host).await else { return Ok(None) };
        let moves = t.ironic_transitions(&uuid)?;
        let done = moves.iter().any(|m| m == through) && moves.last().is_some_and(|m| m == rests);
        Ok(done.then_some(uuid))
    })
    .await
}

/// Kills the operator: nothing of it is left to write anything.
pub(crate) fn kill(t: &mut HostEnv) {
    if let Some(operator) = t.operator.take() {
        operator.abort();
    }
}
