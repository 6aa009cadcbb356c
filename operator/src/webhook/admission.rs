//! Admission reviews: which kinds we validate, and the answer for each.

use crds::FieldError;
use crds::baremetalhost::BareMetalHost;
use crds::ironic::{Ironic, IronicValidationOptions};
use crds::nodeset::{HostPools, NodeSet};
use crds::nodesetservice::NodeSetService;
use crds::validation::summarize;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
use serde::de::DeserializeOwned;

/// A kind our webhooks validate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Ironic,
    BareMetalHost,
    NodeSet,
    NodeSetService,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Ironic, Kind::BareMetalHost, Kind::NodeSet, Kind::NodeSetService];

    /// The URL path the apiserver posts reviews of this kind to.
    pub fn path(self) -> String {
        format!("/validate/{}", self.segment())
    }

    /// The kind named by a path segment.
    pub fn from_segment(segment: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.segment() == segment)
    }

    fn segment(self) -> &'static str {
        match self {
            Kind::Ironic => "ironic",
            Kind::BareMetalHost => "baremetalhost",
            Kind::NodeSet => "nodeset",
            Kind::NodeSetService => "nodesetservice",
        }
    }

    pub fn group(self) -> &'static str {
        match self {
            Kind::Ironic => "ironic.metal3.io",
            Kind::BareMetalHost => "metal3.io",
            Kind::NodeSet | Kind::NodeSetService => "ferrometal.io",
        }
    }

    pub fn version(self) -> &'static str {
        "v1alpha1"
    }

    pub fn plural(self) -> &'static str {
        match self {
            Kind::Ironic => "ironics",
            Kind::BareMetalHost => "baremetalhosts",
            Kind::NodeSet => "nodesets",
            Kind::NodeSetService => "nodesetservices",
        }
    }
}

/// What the operator's flags add to the kinds' own rules: the controllers apply the same.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    /// Feature gates (the Ironic's rules).
    pub features: IronicValidationOptions,
    /// Host pools opened to NodeSets of other namespaces.
    pub host_pools: HostPools,
}

/// Answers one review. Deletes (no new object) are always allowed.
pub fn review(kind: Kind, review: AdmissionReview<DynamicObject>, policy: &Policy) -> AdmissionReview<DynamicObject> {
    let request: AdmissionRequest<DynamicObject> = match review.try_into() {
        Ok(request) => request,
        Err(err) => return AdmissionResponse::invalid(err.to_string()).into_review(),
    };
    let response = AdmissionResponse::from(&request);
    let errors = match validate(kind, &request, policy) {
        Ok(errors) => errors,
        Err(message) => return response.deny(message).into_review(),
    };
    if errors.is_empty() {
        response.into_review()
    } else {
        tracing::info!(kind = ?kind, name = %request.name, namespace = ?request.namespace,
            violations = errors.len(), "admission denied");
        response.deny(summarize(&errors)).into_review()
    }
}

fn validate(kind: Kind, request: &AdmissionRequest<DynamicObject>, policy: &Policy) -> Result<Vec<FieldError>, String> {
    let Some(object) = &request.object else { return Ok(Vec::new()) };
    let old = request.old_object.as_ref();
    let unchanged = |old: &DynamicObject| {
        object.data.get("spec") == old.data.get("spec") && object.metadata.annotations == old.metadata.annotations
    };
    if let Some(old) = old
        && old.metadata.deletion_timestamp.is_some()
    {
        // The controllers are running the object's deletion (a deletion policy, a clean-up)
        // from what its spec says now: a change under them would run another one than was
        // asked. Metadata (finalizers, the annotations controllers act on) may still change.
        let same = object.data.get("spec") == old.data.get("spec");
        return Ok(if same {
            Vec::new()
        } else {
            vec![FieldError::new("spec", "the object is being deleted: its spec can no longer change")]
        });
    }
    if let Some(old) = old
        && unchanged(old)
    {
        // An update that leaves what the rules look at as it was (the spec, and the
        // annotations some kinds' rules read), such as a finalizer, labels or owner
        // references, or one that finishes a deletion, is allowed. Refusing it would leave an
        // object that got in while the webhook was down, or whose rules tightened since,
        // unable to take the controller's finalizer or to go away; the controller reports its
        // problems as conditions instead.
        return Ok(Vec::new());
    }
    Ok(match kind {
        Kind::Ironic => {
            let (new, old) = typed::<Ironic>(object, old)?;
            crds::ironic::validate_ironic(&new.spec, old.as_ref().map(|o| &o.spec), &policy.features)
        }
        Kind::BareMetalHost => {
            let (new, old) = typed::<BareMetalHost>(object, old)?;
            crds::baremetalhost::validate_baremetalhost(&new, old.as_ref())
        }
        Kind::NodeSet => {
            let (new, old) = typed::<NodeSet>(object, old)?;
            let mut errors = crds::nodeset::validate_nodeset(&new, old.as_ref());
            errors.extend(crds::nodeset::validate_host_pool(&new, &policy.host_pools));
            errors
        }
        Kind::NodeSetService => {
            let (new, _) = typed::<NodeSetService>(object, old)?;
            crds::nodesetservice::validate_nodeset_service(&new.spec)
        }
    })
}

/// The review's objects as our types. An object that does not even parse
/// is refused with the parser's message (it names the field).
fn typed<K: DeserializeOwned>(object: &DynamicObject, old: Option<&DynamicObject>) -> Result<(K, Option<K>), String> {
    let convert = |o: &DynamicObject| {
        serde_json::to_value(o)
            .and_then(serde_json::from_value::<K>)
            .map_err(|e| format!("cannot parse the object: {e}"))
    };
    Ok((convert(object)?, old.map(convert).transpose()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn review_of(object: serde_json::Value) -> AdmissionReview<DynamicObject> {
        serde_json::from_value(json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": "0df28fbd-5f5f-4a5d-9d2b-3c1e1b0a9c11",
                "kind": {"group": "ironic.metal3.io", "version": "v1alpha1", "kind": "Ironic"},
                "resource": {"group": "ironic.metal3.io", "version": "v1alpha1", "resource": "ironics"},
                "name": "ironic", "namespace": "default", "operation": "CREATE",
                "userInfo": {"username": "admin"}, "object": object, "dryRun": false
            }
        }))
        .expect("review parses")
    }

    /// A review with the default feature gates.
    fn review(kind: Kind, review: AdmissionReview<DynamicObject>) -> AdmissionReview<DynamicObject> {
        super::review(kind, review, &Policy::default())
    }

    #[test]
    fn the_operators_feature_gates_apply_at_admission() {
        let ha = || {
            review_of(json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic",
                "metadata": {"name": "ironic", "namespace": "default"},
                "spec": {"highAvailability": true, "database": {"managed": {}}}}))
        };
        let default = review(Kind::Ironic, ha()).response.expect("response");
        assert!(!default.result.message.contains("feature gate"), "allowed by default: {}", default.result.message);
        let gates = IronicValidationOptions::from_feature_gates("HighAvailability=false").expect("gates");
        let denied = super::review(Kind::Ironic, ha(), &Policy { features: gates, ..Policy::default() })
            .response
            .expect("response");
        assert!(!denied.allowed);
        assert!(denied.result.message.contains("feature gate HighAvailability"), "{}", denied.result.message);
    }

    #[test]
    fn a_nodeset_naming_another_namespace_is_denied_unless_an_admin_opened_that_pool() {
        let nodeset = || {
            let mut r = review_of(json!({"apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSet",
                "metadata": {"name": "computes", "namespace": "team-a"},
                "spec": {"baremetalSetTemplate": {"bmhNamespace": "team-b", "image": {"url": "http://i/os.qcow2",
                             "checksum": "a".repeat(64), "checksumType": "sha256"}},
                         "nodes": {"compute-0": {}}}}));
            if let Some(request) = r.request.as_mut() {
                request.namespace = Some("team-a".into());
            }
            r
        };
        let denied = review(Kind::NodeSet, nodeset()).response.expect("response");
        assert!(!denied.allowed);
        assert!(denied.result.message.contains("spec.baremetalSetTemplate.bmhNamespace"), "{}", denied.result.message);
        let opened = Policy { host_pools: "team-a=team-b".parse().expect("pools"), ..Policy::default() };
        let allowed = super::review(Kind::NodeSet, nodeset(), &opened).response.expect("response");
        assert!(allowed.allowed, "{:?}", allowed.result);
    }

    #[test]
    fn a_valid_ironic_is_allowed() {
        let out = review(
            Kind::Ironic,
            review_of(json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic",
            "metadata": {"name": "ironic", "namespace": "default"}, "spec": {}})),
        );
        let response = out.response.expect("response");
        assert!(response.allowed, "{:?}", response.result);
        assert_eq!(response.uid, "0df28fbd-5f5f-4a5d-9d2b-3c1e1b0a9c11");
    }

    #[test]
    fn an_invalid_ironic_is_denied_with_the_field_path() {
        let out = review(
            Kind::Ironic,
            review_of(json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic",
            "metadata": {"name": "ironic", "namespace": "default"},
            "spec": {"highAvailability": true}})),
        );
        let response = out.response.expect("response");
        assert!(!response.allowed);
        assert!(response.result.message.contains("spec.database"), "{}", response.result.message);
    }

    fn update_of(object: serde_json::Value, old: serde_json::Value) -> AdmissionReview<DynamicObject> {
        let mut review = serde_json::to_value(review_of(object)).expect("serializes");
        review["request"]["operation"] = json!("UPDATE");
        review["request"]["oldObject"] = old;
        serde_json::from_value(review).expect("review parses")
    }

    fn invalid_ironic(metadata: serde_json::Value) -> serde_json::Value {
        json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic", "metadata": metadata,
            "spec": {"highAvailability": true}})
    }

    #[test]
    fn an_update_that_leaves_an_invalid_spec_unchanged_is_allowed_but_one_that_changes_it_is_not() {
        let old = invalid_ironic(json!({"name": "ironic", "namespace": "default"}));
        let finalized = invalid_ironic(json!({"name": "ironic", "namespace": "default",
            "finalizers": ["ironic.metal3.io/ferrometal"]}));
        let allowed = review(Kind::Ironic, update_of(finalized, old.clone())).response.expect("response");
        assert!(allowed.allowed, "a finalizer on an invalid Ironic: {:?}", allowed.result);

        let mut changed = invalid_ironic(json!({"name": "ironic", "namespace": "default"}));
        changed["spec"]["version"] = json!("38.0");
        let denied = review(Kind::Ironic, update_of(changed, old)).response.expect("response");
        assert!(!denied.allowed);
        assert!(denied.result.message.contains("spec.database"), "{}", denied.result.message);
    }

    #[test]
    fn an_update_of_annotations_alone_is_still_validated() {
        let host = |annotations: serde_json::Value| {
            json!({"apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
                "metadata": {"name": "host-0", "namespace": "default", "annotations": annotations},
                "spec": {"online": true, "bootMACAddress": "52:54:00:00:00:01",
                    "bmc": {"address": "ipmi://192.0.2.1", "credentialsName": "bmc"}}})
        };
        let mut review =
            serde_json::to_value(update_of(host(json!({"reboot.metal3.io": "{not json"})), host(json!({}))))
                .expect("serializes");
        review["request"]["kind"] = json!({"group": "metal3.io", "version": "v1alpha1", "kind": "BareMetalHost"});
        let review: AdmissionReview<DynamicObject> = serde_json::from_value(review).expect("parses");
        let response = self::review(Kind::BareMetalHost, review).response.expect("response");
        assert!(!response.allowed, "a malformed reboot annotation is refused");
        assert!(response.result.message.contains("reboot.metal3.io"), "{}", response.result.message);
    }

    #[test]
    fn an_update_that_finishes_a_deletion_is_allowed() {
        let old = invalid_ironic(json!({"name": "ironic", "namespace": "default",
            "finalizers": ["ironic.metal3.io/ferrometal"], "deletionTimestamp": "2026-12-01T10:00:00Z"}));
        let gone = invalid_ironic(json!({"name": "ironic", "namespace": "default",
            "deletionTimestamp": "2026-12-01T10:00:00Z"}));
        let response = review(Kind::Ironic, update_of(gone.clone(), old.clone())).response.expect("response");
        assert!(response.allowed, "the finalizer goes: {:?}", response.result);
        let mut changed = gone;
        changed["spec"]["version"] = json!("1.0");
        let response = review(Kind::Ironic, update_of(changed, old)).response.expect("response");
        assert!(!response.allowed, "a spec change under a running deletion is refused");
        assert!(response.result.message.contains("being deleted"), "{}", response.result.message);
    }

    #[test]
    fn paths_name_their_kind() {
        for kind in Kind::ALL {
            let path = kind.path();
            let segment = path.trim_start_matches("/validate/");
            assert_eq!(Kind::from_segment(segment), Some(kind));
        }
    }
}
