//! The NodeSet's writes on a BareMetalHost, as its consumer (pure): what metal3's cluster-api
//! provider writes (consumerRef, image, user and network data, `online`,
//! `automatedCleaningMode`, `preprovisioningNetworkDataName`), the claim labels, and the
//! annotations that record on the machine what it was provisioned with and what ran on it.
//!
//! Consumer fields are written with server-side apply under the one field manager, so the
//! user's own fields stay. Server-side apply removes the fields a manager stops applying, so
//! every apply carries the whole set it owns: once a machine is provisioned, its image and
//! first-boot data are applied again with the values the machine has (never the template's
//! newer ones). Clearing is never left to that rule: the two writes that clear an image (a
//! reprovision, a release under `deletionPolicy: Deprovision`) are explicit merge patches with
//! nulls, guarded by the host's resourceVersion like a claim.

use super::claims::Owner;
use super::machine::{has_image, tokens_used_after};
use crds::baremetalhost::BareMetalHost;
use crds::baremetalhost::annotations::DETACHED;
use crds::nodeset::{
    CompletedService, HOSTNAME_LABEL, NODESET_LABEL, NodeSetSpec, PROVISIONED_HASH_ANNOTATION,
    PROVISIONED_TOKEN_ANNOTATION, REPROVISION_TOKEN_ANNOTATION, REPROVISION_TOKENS_USED_ANNOTATION,
    SERVICES_COMPLETED_ANNOTATION,
};
use k8s_openapi::api::core::v1::SecretReference;
use kube::{Resource, ResourceExt};
use serde_json::{Map, Value, json};

/// Why a BareMetalHost is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Purpose {
    /// Claim labels and consumerRef, guarded by the host's resourceVersion.
    Claim,
    /// Image and first-boot data: provisioning.
    Provision,
    /// Keeping the consumer fields current (cleaning mode, completions), the image as it is.
    Update,
    /// Clearing the image for a reprovision the user asked for.
    Reprovision,
    /// Releasing under `deletionPolicy: Detach`.
    Detach,
    /// Releasing under `deletionPolicy: Deprovision`: clearing image, data and consumerRef.
    Deprovision,
    /// The reboot at which the machine is serviced with the NodeSet's BIOS settings, and their
    /// hash: annotations only.
    FirmwareReboot,
}

/// How a write is sent.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Body {
    /// Server-side apply of this body.
    Apply(Value),
    /// JSON merge patch.
    Merge(Value),
}

/// One write on a BareMetalHost.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct HostWrite {
    pub host: String,
    pub namespace: String,
    /// The hostname of the NodeSet it is for.
    pub hostname: String,
    pub purpose: Purpose,
    pub body: Body,
}

impl HostWrite {
    /// True when the write removes the machine's image: only a reprovision or a deprovision.
    pub(super) fn clears_image(&self) -> bool {
        match &self.body {
            Body::Merge(patch) => patch.pointer("/spec/image").is_some_and(Value::is_null),
            Body::Apply(_) => false,
        }
    }

    /// True when this write would remove the image `host` has: an apply that does not carry
    /// it (server-side apply removes what the manager applied before and omits now). Only the
    /// two explicit requests may; the planner never plans such an apply, and apply checks.
    pub(super) fn drops_image(&self, host: &BareMetalHost) -> bool {
        has_image(host)
            && match &self.body {
                Body::Apply(body) => body.pointer("/spec/image").is_none_or(Value::is_null),
                Body::Merge(_) => self.clears_image(),
            }
    }

    /// True when this write would remove the image of `planned` (the host as it was planned
    /// on) without being one of the two explicit requests: the promise, checked once more
    /// where writes are sent.
    pub(super) fn forbidden(&self, planned: Option<&BareMetalHost>) -> bool {
        let drops = self.clears_image() || planned.is_some_and(|h| self.drops_image(h));
        drops && !matches!(self.purpose, Purpose::Reprovision | Purpose::Deprovision)
    }

    /// The image this write applies, if it applies one.
    #[cfg(test)]
    pub(super) fn applied_image(&self) -> Option<&Value> {
        match &self.body {
            Body::Apply(body) => body.pointer("/spec/image"),
            Body::Merge(_) => None,
        }
    }
}

/// The first-boot inputs of a machine, in BareMetalHost spec fields.
pub(super) fn provisioning_fields(
    hostname: &str,
    spec: &NodeSetSpec,
    bmh_namespace: &str,
    generated_network_data: Option<&str>,
) -> Map<String, Value> {
    let mut fields = Map::new();
    let Some(template) = spec.baremetal_set_template.as_ref() else {
        return fields;
    };
    let section = spec.nodes.as_ref().and_then(|n| n.get(hostname));
    let secret = |reference: &SecretReference| json!({"name": reference.name.clone().unwrap_or_default(), "namespace": bmh_namespace});
    if let Some(image) = &template.image {
        fields.insert("image".into(), serde_json::to_value(image).unwrap_or(Value::Null));
    }
    let user_data = section.and_then(|s| s.user_data.as_ref()).or(template.user_data.as_ref());
    if let Some(reference) = user_data {
        fields.insert("userData".into(), secret(reference));
    }
    let network_data = section.and_then(|s| s.network_data.as_ref()).or(template.network_data.as_ref());
    match (network_data, generated_network_data) {
        (Some(reference), _) => {
            fields.insert("networkData".into(), secret(reference));
        }
        (None, Some(generated)) => {
            fields.insert("networkData".into(), json!({"name": generated, "namespace": bmh_namespace}));
        }
        (None, None) => {}
    }
    if let Some(name) = template.provisioning_network.as_ref().and_then(|p| p.preprovisioning_network_data_name.clone())
    {
        fields.insert("preprovisioningNetworkDataName".into(), Value::String(name));
    }
    if let Some(mode) = template.boot_mode {
        fields.insert("bootMode".into(), serde_json::to_value(mode).unwrap_or(Value::Null));
    }
    if let Some(hints) = &template.root_device_hints {
        fields.insert("rootDeviceHints".into(), serde_json::to_value(hints).unwrap_or(Value::Null));
    }
    fields.insert("online".into(), Value::Bool(true));
    fields
}

/// The first-boot fields the machine has now: what this NodeSet applied when it provisioned
/// it (a user may have changed some since; theirs stand).
pub(super) fn live_provisioning_fields(host: &BareMetalHost) -> Map<String, Value> {
    let spec = serde_json::to_value(&host.spec).unwrap_or(Value::Null);
    let mut fields = Map::new();
    for key in
        ["image", "userData", "networkData", "preprovisioningNetworkDataName", "bootMode", "rootDeviceHints", "online"]
    {
        if let Some(value) = spec.get(key).filter(|v| !v.is_null()) {
            fields.insert(key.into(), value.clone());
        }
    }
    fields
}

/// What the consumer fields of a claimed machine should be.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Consumer {
    pub hostname: String,
    /// `automatedCleaningMode` from the template, if it sets one.
    pub cleaning: Option<Value>,
    /// The provisioning hash annotation (when this NodeSet provisioned the machine).
    pub provisioned_hash: Option<String>,
    /// The services completed on the machine.
    pub completed: Vec<CompletedService>,
    /// First-boot fields, when this NodeSet provisions or provisioned the machine.
    pub provisioning: Option<Map<String, Value>>,
    /// The reprovisionToken a provisioning records on the machine as answered
    /// (`Action::Provision`); otherwise the machine's record of it is applied as it is.
    pub token: Option<String>,
}

/// The server-side apply body for `host`'s consumer fields, `None` when the host already has
/// them. Every apply carries the resourceVersion it was decided on: a host someone else claimed
/// meanwhile, or whose `online` a user just changed, fails it with a conflict instead of being
/// written over from a stale cache.
///
/// A machine with an image always gets its first-boot fields applied again as they are, whether
/// or not the planner knows this NodeSet provisioned it: the record of that (an annotation) can
/// be removed by anyone, and an apply that omitted a field this manager once applied would
/// remove it, the image included, and deprovision the machine.
pub(super) fn apply_body(owner: &Owner, host: &BareMetalHost, consumer: &Consumer, purpose: Purpose) -> Option<Value> {
    let mut annotations = Map::new();
    if let Some(hash) = &consumer.provisioned_hash {
        annotations.insert(PROVISIONED_HASH_ANNOTATION.into(), Value::String(hash.clone()));
    }
    if !consumer.completed.is_empty() {
        let completed = serde_json::to_string(&consumer.completed).unwrap_or_default();
        annotations.insert(SERVICES_COMPLETED_ANNOTATION.into(), Value::String(completed));
    }
    for kept in [REPROVISION_TOKEN_ANNOTATION, REPROVISION_TOKENS_USED_ANNOTATION, PROVISIONED_TOKEN_ANNOTATION] {
        if let Some(value) = host.annotations().get(kept) {
            annotations.insert(kept.into(), Value::String(value.clone()));
        }
    }
    if let Some(token) = &consumer.token {
        annotations.insert(PROVISIONED_TOKEN_ANNOTATION.into(), Value::String(token.clone()));
    }
    let mut spec = consumer
        .provisioning
        .clone()
        .or_else(|| has_image(host).then(|| live_provisioning_fields(host)))
        .unwrap_or_default();
    spec.insert("consumerRef".into(), serde_json::to_value(owner.consumer_ref()).unwrap_or(Value::Null));
    if let Some(cleaning) = &consumer.cleaning {
        spec.insert("automatedCleaningMode".into(), cleaning.clone());
    }
    let mut metadata = json!({
        "name": host.name_any(),
        "namespace": host.namespace(),
        "labels": {NODESET_LABEL: owner.label, HOSTNAME_LABEL: consumer.hostname},
        "annotations": annotations,
    });
    if let Some(version) = host.resource_version() {
        metadata["resourceVersion"] = json!(version);
    }
    let body = json!({
        "apiVersion": BareMetalHost::api_version(&()),
        "kind": BareMetalHost::kind(&()),
        "metadata": metadata,
        "spec": spec,
    });
    (purpose == Purpose::Claim || !already(host, &body)).then_some(body)
}

/// True when every field of `body` already has that value on `host`.
fn already(host: &BareMetalHost, body: &Value) -> bool {
    let Ok(current) = serde_json::to_value(host) else {
        return false;
    };
    contains(&current, body, &["apiVersion", "kind", "name", "namespace"])
}

fn contains(current: &Value, wanted: &Value, skip: &[&str]) -> bool {
    match (current, wanted) {
        (Value::Object(current), Value::Object(wanted)) => wanted.iter().all(|(key, value)| {
            skip.contains(&key.as_str())
                || match current.get(key) {
                    Some(have) => contains(have, value, &[]),
                    None => value.is_null() || value.as_object().is_some_and(|o| o.is_empty()),
                }
        }),
        (current, wanted) => current == wanted,
    }
}

/// The merge patch that clears a machine's image for a reprovision, recording `token`, and
/// `replaced` (the token the machine stood under) as used. The completions go with the image:
/// every service runs again on the new installation.
pub(super) fn reprovision_patch(host: &BareMetalHost, token: &str, replaced: Option<&str>) -> Value {
    let used: Vec<&str> = replaced.into_iter().chain([token]).collect();
    json!({
        "metadata": {
            "resourceVersion": host.resource_version(),
            "annotations": {
                PROVISIONED_HASH_ANNOTATION: null,
                SERVICES_COMPLETED_ANNOTATION: null,
                PROVISIONED_TOKEN_ANNOTATION: null,
                REPROVISION_TOKEN_ANNOTATION: token,
                REPROVISION_TOKENS_USED_ANNOTATION: tokens_used_after(host, &used),
            }
        },
        "spec": {"image": null}
    })
}

/// The merge patch that releases a machine under `deletionPolicy: Deprovision`: image, data
/// and consumerRef cleared, powered off, claim labels and annotations removed.
pub(super) fn deprovision_patch(host: &BareMetalHost) -> Value {
    json!({
        "metadata": {
            "resourceVersion": host.resource_version(),
            "labels": {NODESET_LABEL: null, HOSTNAME_LABEL: null},
            "annotations": {
                PROVISIONED_HASH_ANNOTATION: null,
                SERVICES_COMPLETED_ANNOTATION: null,
                PROVISIONED_TOKEN_ANNOTATION: null,
                REPROVISION_TOKEN_ANNOTATION: null,
                REPROVISION_TOKENS_USED_ANNOTATION: null,
            }
        },
        "spec": {"image": null, "userData": null, "networkData": null, "consumerRef": null, "online": false}
    })
}

/// The merge patch that releases a machine under `deletionPolicy: Detach`; `None` when it is
/// detached already.
pub(super) fn detach_patch(host: &BareMetalHost) -> Option<Value> {
    (!host.annotations().contains_key(DETACHED)).then(|| json!({"metadata": {"annotations": {DETACHED: ""}}}))
}

/// The services completed on a machine, as its annotation records them.
pub(super) fn recorded_completions(host: &BareMetalHost) -> Vec<CompletedService> {
    host.annotations().get(SERVICES_COMPLETED_ANNOTATION).and_then(|v| serde_json::from_str(v).ok()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner() -> Owner {
        Owner { namespace: "metal3".into(), name: "computes".into(), label: "computes".into() }
    }

    fn host(value: Value) -> BareMetalHost {
        let mut base = json!({
            "apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
            "metadata": {"name": "server-0", "namespace": "metal3", "resourceVersion": "42"},
            "spec": {"online": true, "bmc": {"address": "fake://x", "credentialsName": "c"}}
        });
        json_patch::merge(&mut base, &value);
        serde_json::from_value(base).expect("host")
    }

    fn consumer() -> Consumer {
        Consumer {
            hostname: "compute-0".into(),
            cleaning: None,
            provisioned_hash: None,
            completed: vec![],
            provisioning: None,
            token: None,
        }
    }

    #[test]
    fn a_claim_is_guarded_by_the_resource_version_and_carries_labels_and_consumer() {
        let body = apply_body(&owner(), &host(json!({})), &consumer(), Purpose::Claim).expect("a claim is written");
        assert_eq!(body["metadata"]["resourceVersion"], "42");
        assert_eq!(body["metadata"]["labels"][NODESET_LABEL], "computes");
        assert_eq!(body["metadata"]["labels"][HOSTNAME_LABEL], "compute-0");
        assert_eq!(body["spec"]["consumerRef"]["kind"], "NodeSet");
        assert!(body["spec"].get("bmc").is_none(), "the user's fields are not ours to apply");
        assert!(body["spec"].get("image").is_none());
    }

    #[test]
    fn a_host_with_every_consumer_field_in_place_is_not_written_again() {
        let claimed = host(json!({
            "metadata": {"labels": {NODESET_LABEL: "computes", HOSTNAME_LABEL: "compute-0"}},
            "spec": {"consumerRef": {"apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSet", "name": "computes", "namespace": "metal3"},
                     "image": {"url": "http://i/os.qcow2"}}
        }));
        let mut c = consumer();
        c.provisioning = Some(live_provisioning_fields(&claimed));
        assert_eq!(apply_body(&owner(), &claimed, &c, Purpose::Update), None);
        c.cleaning = Some(json!("disabled"));
        let body = apply_body(&owner(), &claimed, &c, Purpose::Update).expect("the cleaning mode changed");
        assert_eq!(body["spec"]["image"]["url"], "http://i/os.qcow2", "the image is applied again as it is");
        assert_eq!(body["metadata"]["resourceVersion"], "42", "a stale cache meets a conflict");
    }

    #[test]
    fn a_machine_whose_provisioning_record_was_removed_keeps_its_image_in_every_apply() {
        // Someone stripped ferrometal.io/provisioned-hash: the planner no longer knows this
        // NodeSet provisioned the machine, and hands no first-boot fields.
        let running = host(json!({
            "metadata": {"labels": {NODESET_LABEL: "computes", HOSTNAME_LABEL: "compute-0"}},
            "spec": {"image": {"url": "http://i/os.qcow2", "checksum": "abc"}, "userData": {"name": "ud"}}
        }));
        let mut c = consumer();
        c.cleaning = Some(json!("disabled"));
        for purpose in [Purpose::Claim, Purpose::Update] {
            let body = apply_body(&owner(), &running, &c, purpose).expect("a write");
            assert_eq!(body["spec"]["image"], json!({"url": "http://i/os.qcow2", "checksum": "abc"}), "{purpose:?}");
            assert_eq!(body["spec"]["userData"]["name"], "ud", "{purpose:?}");
            let write = HostWrite {
                host: "server-0".into(),
                namespace: "metal3".into(),
                hostname: "compute-0".into(),
                purpose,
                body: Body::Apply(body),
            };
            assert!(!write.drops_image(&running));
        }
        let careless = HostWrite {
            host: "server-0".into(),
            namespace: "metal3".into(),
            hostname: "compute-0".into(),
            purpose: Purpose::Update,
            body: Body::Apply(json!({"spec": {"consumerRef": {}}})),
        };
        assert!(careless.drops_image(&running), "the guard in apply refuses it");
    }

    #[test]
    fn every_later_apply_keeps_the_token_a_provisioning_recorded() {
        // Server-side apply drops what its manager stops applying: the record goes with each.
        let provisioned = host(json!({"metadata": {"annotations": {PROVISIONED_TOKEN_ANNOTATION: "t1"}},
                                       "spec": {"image": {"url": "http://i/os.qcow2"}}}));
        let mut c = consumer();
        c.cleaning = Some(json!("disabled"));
        let body = apply_body(&owner(), &provisioned, &c, Purpose::Update).expect("the cleaning mode changed");
        assert_eq!(body["metadata"]["annotations"][PROVISIONED_TOKEN_ANNOTATION], "t1");
        c.token = Some("t2".into());
        let body = apply_body(&owner(), &host(json!({})), &c, Purpose::Provision).expect("a provisioning");
        assert_eq!(body["metadata"]["annotations"][PROVISIONED_TOKEN_ANNOTATION], "t2");
    }

    #[test]
    fn provisioning_fields_come_from_the_template_and_the_host() {
        let spec: NodeSetSpec = serde_json::from_value(json!({
            "baremetalSetTemplate": {"image": {"url": "http://i/os.qcow2", "checksum": "abc"}, "userData": {"name": "ud"},
                "bootMode": "UEFI", "provisioningNetwork": {"preprovisioningNetworkDataName": "ramdisk"}},
            "nodes": {"compute-0": {"networkData": {"name": "nd-0"}}, "compute-1": {}}
        }))
        .expect("spec");
        let fields = provisioning_fields("compute-0", &spec, "metal3", Some("generated"));
        assert_eq!(fields["image"]["checksum"], "abc");
        assert_eq!(fields["userData"], json!({"name": "ud", "namespace": "metal3"}));
        assert_eq!(fields["networkData"]["name"], "nd-0", "the host's own network data wins");
        assert_eq!(fields["preprovisioningNetworkDataName"], "ramdisk");
        assert_eq!(fields["online"], true);
        assert_eq!(
            provisioning_fields("compute-1", &spec, "metal3", Some("generated"))["networkData"]["name"],
            "generated"
        );
    }

    #[test]
    fn only_the_reprovision_and_deprovision_patches_clear_the_image() {
        let h = host(json!({"spec": {"image": {"url": "http://i/os.qcow2"}}}));
        let write = |purpose, body| HostWrite {
            host: "server-0".into(),
            namespace: "metal3".into(),
            hostname: "compute-0".into(),
            purpose,
            body,
        };
        assert!(write(Purpose::Reprovision, Body::Merge(reprovision_patch(&h, "t2", None))).clears_image());
        assert!(write(Purpose::Deprovision, Body::Merge(deprovision_patch(&h))).clears_image());
        assert!(!write(Purpose::Detach, Body::Merge(detach_patch(&h).expect("patch"))).clears_image());
        assert_eq!(reprovision_patch(&h, "t2", None)["metadata"]["resourceVersion"], "42");
        assert_eq!(deprovision_patch(&h)["spec"]["online"], false);
    }

    #[test]
    fn completions_round_trip_through_the_annotation() {
        let completed =
            vec![CompletedService { name: "bootstrap".into(), config_hash: Some("c".into()), ..Default::default() }];
        let mut c = consumer();
        c.completed = completed.clone();
        let body = apply_body(&owner(), &host(json!({})), &c, Purpose::Update).expect("body");
        let annotated = host(json!({"metadata": {"annotations": body["metadata"]["annotations"]}}));
        assert_eq!(recorded_completions(&annotated), completed);
    }
}
