//! Admission reviews: which kinds we validate, and the answer for each.

use super::envelope::{Answer, JobAuthor, Object, Request, Review, SchemaCheck, Weight};
use crds::FieldError;
use crds::baremetalhost::BareMetalHost;
use crds::baremetalhost::access::HostAccess;
use crds::bmceventsubscription::{BMCEventSubscription, validate_bmc_event_subscription};
use crds::dataimage::{DataImage, validate_data_image};
use crds::firmware::{
    HostFirmwareComponents, HostFirmwareSettings, validate_host_firmware_components, validate_host_firmware_settings,
};
use crds::ironic::{Ironic, IronicNamespaces, IronicValidationOptions};
use crds::nodeset::{HostPools, NodeSet};
use crds::nodesetservice::NodeSetService;
use crds::nodesetservice::{ReservedAccount, validate_service_account};
use crds::preprovisioningimage::{PreprovisioningImage, validate_preprovisioning_image};
use crds::validation::summarize;
use serde::de::DeserializeOwned;

/// The most parsing one review may cost ([`Weight::cost`]), both of an update's objects
/// together, metadata's `managedFields` not counted. Two NodeSets at etcd's 1.5 MiB, made of
/// the smallest per-host entries their status holds, cost about 40 MiB.
pub const MAX_PARSE_COST: usize = 64 << 20;

/// A kind our webhooks validate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Ironic,
    BareMetalHost,
    NodeSet,
    NodeSetService,
    HostFirmwareSettings,
    HostFirmwareComponents,
    DataImage,
    BMCEventSubscription,
    PreprovisioningImage,
}

impl Kind {
    pub(crate) const ALL: [Kind; 9] = [
        Kind::Ironic,
        Kind::BareMetalHost,
        Kind::NodeSet,
        Kind::NodeSetService,
        Kind::HostFirmwareSettings,
        Kind::HostFirmwareComponents,
        Kind::DataImage,
        Kind::BMCEventSubscription,
        Kind::PreprovisioningImage,
    ];

    /// The URL path the apiserver posts reviews of this kind to.
    pub(crate) fn path(self) -> String {
        format!("/validate/{}", self.segment())
    }

    /// The kind named by a path segment.
    pub(crate) fn from_segment(segment: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.segment() == segment)
    }

    fn segment(self) -> &'static str {
        match self {
            Kind::Ironic => "ironic",
            Kind::BareMetalHost => "baremetalhost",
            Kind::NodeSet => "nodeset",
            Kind::NodeSetService => "nodesetservice",
            Kind::HostFirmwareSettings => "hostfirmwaresettings",
            Kind::HostFirmwareComponents => "hostfirmwarecomponents",
            Kind::DataImage => "dataimage",
            Kind::BMCEventSubscription => "bmceventsubscription",
            Kind::PreprovisioningImage => "preprovisioningimage",
        }
    }

    pub(crate) fn group(self) -> &'static str {
        match self {
            Kind::Ironic => "ironic.metal3.io",
            Kind::BareMetalHost
            | Kind::HostFirmwareSettings
            | Kind::HostFirmwareComponents
            | Kind::DataImage
            | Kind::BMCEventSubscription
            | Kind::PreprovisioningImage => "metal3.io",
            Kind::NodeSet | Kind::NodeSetService => "ferrometal.io",
        }
    }

    pub(crate) fn version(self) -> &'static str {
        "v1alpha1"
    }

    pub(crate) fn plural(self) -> &'static str {
        match self {
            Kind::Ironic => "ironics",
            Kind::BareMetalHost => "baremetalhosts",
            Kind::NodeSet => "nodesets",
            Kind::NodeSetService => "nodesetservices",
            Kind::HostFirmwareSettings => "hostfirmwaresettings",
            Kind::HostFirmwareComponents => "hostfirmwarecomponents",
            Kind::DataImage => "dataimages",
            Kind::BMCEventSubscription => "bmceventsubscriptions",
            Kind::PreprovisioningImage => "preprovisioningimages",
        }
    }
}

/// What the operator's flags add to the kinds' own rules: the controllers apply the same.
#[derive(Clone, Debug)]
pub(crate) struct Policy {
    /// Feature gates (the Ironic's rules).
    pub features: IronicValidationOptions,
    /// The namespaces where an Ironic may run.
    pub ironic_namespaces: IronicNamespaces,
    /// Host pools opened to NodeSets of other namespaces.
    pub host_pools: HostPools,
    /// The operator's own ServiceAccount, which no NodeSetService may run as.
    pub reserved_account: Option<ReservedAccount>,
    /// Where hosts may make Ironic reach.
    pub host_access: HostAccess,
}

impl Default for Policy {
    /// A base for tests: any namespace runs an Ironic (the runtime fills every field from the
    /// flags, whose default is the operator's own namespace).
    fn default() -> Self {
        Self {
            features: IronicValidationOptions::default(),
            ironic_namespaces: IronicNamespaces::Any,
            host_pools: HostPools::default(),
            reserved_account: None,
            host_access: HostAccess::default(),
        }
    }
}

/// What the rules found: the violations, whether they looked at the object at all (an
/// update that leaves the spec as it was, or a delete, is let through unread), and what is
/// left to check against another object.
struct Checked {
    errors: Vec<FieldError>,
    read: bool,
    schema: Option<SchemaCheck>,
}

impl Checked {
    fn unread() -> Self {
        Self { errors: Vec::new(), read: false, schema: None }
    }

    fn read(errors: Vec<FieldError>) -> Self {
        Self { errors, read: true, schema: None }
    }
}

/// Answers one review, read from its JSON `body`. Deletes (no new object) are always allowed.
pub(crate) fn review(kind: Kind, body: &[u8], policy: &Policy) -> Answer {
    let review: Review<'_> = match serde_json::from_slice(body) {
        Ok(review) => review,
        Err(err) => return Answer::deny("", format!("cannot parse the admission review: {err}")),
    };
    let request = review.request;
    let Checked { errors, read, schema } = match validate(kind, &request, policy) {
        Ok(checked) => checked,
        Err(message) => return Answer::deny(&request.uid, message),
    };
    if errors.is_empty() {
        let mut answer = Answer::allow(&request.uid);
        // A service runs its image as a Job, under any ServiceAccount of its namespace: only
        // someone who may create Jobs there may write what it runs.
        if read && kind == Kind::NodeSetService {
            let namespace = request.namespace.clone().unwrap_or_default();
            answer.requires = Some(JobAuthor { user: request.user_info.clone(), namespace });
        }
        answer.schema = schema;
        answer
    } else {
        tracing::info!(kind = ?kind, name = %request.name, namespace = ?request.namespace,
            violations = errors.len(), "admission denied");
        Answer::deny(&request.uid, summarize(&errors))
    }
}

fn validate(kind: Kind, request: &Request<'_>, policy: &Policy) -> Result<Checked, String> {
    let Some(object) = request.object else { return Ok(Checked::unread()) };
    let new = Object::of(object)?;
    let old = request.old_object.map(Object::of).transpose()?;
    let weight = old.iter().map(Object::weight).fold(new.weight(), Weight::plus);
    if weight.cost() > MAX_PARSE_COST {
        return Err(format!(
            "the review holds {} objects and {} values in {} bytes, more than the webhook parses",
            weight.objects, weight.values, weight.bytes
        ));
    }
    if let Some(old) = &old
        && old.deleting()
    {
        // The controllers are running the object's deletion (a deletion policy, a clean-up)
        // from what its spec says now: a change under them would run another one than was
        // asked. Metadata (finalizers, the annotations controllers act on) may still change.
        return Ok(if new.spec() == old.spec() {
            Checked::unread()
        } else {
            let errors = vec![FieldError::new("spec", "the object is being deleted: its spec can no longer change")];
            Checked::read(errors)
        });
    }
    if let Some(old) = &old
        && new.spec() == old.spec()
        && new.annotations()? == old.annotations()?
    {
        // An update that leaves what the rules look at as it was (the spec, and the
        // annotations some kinds' rules read), such as a finalizer, labels or owner
        // references, or one that finishes a deletion, is allowed. Refusing it would leave an
        // object that got in while the webhook was down, or whose rules tightened since,
        // unable to take the controller's finalizer or to go away; the controller reports its
        // problems as conditions instead.
        return Ok(Checked::unread());
    }
    let old = old.as_ref();
    let namespace = request.namespace.as_deref().unwrap_or_default();
    let errors = match kind {
        Kind::Ironic => {
            let (new, old) = typed::<Ironic>(&new, old)?;
            let mut errors = crds::ironic::validate_ironic(&new.spec, old.as_ref().map(|o| &o.spec), &policy.features);
            errors.extend(policy.ironic_namespaces.check(namespace));
            errors
        }
        Kind::BareMetalHost => {
            let (new, old) = typed::<BareMetalHost>(&new, old)?;
            let mut errors = crds::baremetalhost::validate_baremetalhost(&new, old.as_ref());
            errors.extend(policy.host_access.check(&new.spec));
            errors
        }
        Kind::NodeSet => {
            let (new, old) = typed::<NodeSet>(&new, old)?;
            let mut errors = crds::nodeset::validate_nodeset(&new, old.as_ref());
            errors.extend(crds::nodeset::validate_host_pool(&new, &policy.host_pools));
            let image = new.spec.baremetal_set_template.as_ref().and_then(|t| t.image.as_ref());
            if let Some(refusal) = image.and_then(|i| policy.host_access.file_image_dirs.refusal(i)) {
                errors.push(FieldError::new("spec.baremetalSetTemplate.image", refusal));
            }
            errors
        }
        Kind::NodeSetService => {
            let (new, _) = typed::<NodeSetService>(&new, old)?;
            let mut errors = crds::nodesetservice::validate_nodeset_service(&new.spec);
            errors.extend(validate_service_account(&new.spec, namespace, policy.reserved_account.as_ref()));
            errors
        }
        Kind::HostFirmwareSettings => {
            let (new, _) = typed::<HostFirmwareSettings>(&new, old)?;
            return Ok(firmware_settings(new, namespace));
        }
        Kind::HostFirmwareComponents => {
            let (new, _) = typed::<HostFirmwareComponents>(&new, old)?;
            validate_host_firmware_components(&new.spec)
        }
        Kind::DataImage => {
            let (new, _) = typed::<DataImage>(&new, old)?;
            validate_data_image(&new.spec)
        }
        Kind::BMCEventSubscription => {
            let (new, old) = typed::<BMCEventSubscription>(&new, old)?;
            let mut errors = validate_bmc_event_subscription(&new.spec, Some(namespace));
            // The status's id belongs to the old host's BMC (not in baremetal-operator).
            if old.is_some_and(|old| old.spec.host_name != new.spec.host_name) {
                errors.push(FieldError::new(
                    "spec.hostName",
                    "cannot be changed: delete the subscription and make another",
                ));
            }
            errors
        }
        Kind::PreprovisioningImage => {
            let (new, _) = typed::<PreprovisioningImage>(&new, old)?;
            validate_preprovisioning_image(&new.spec)
        }
    };
    Ok(Checked::read(errors))
}

/// A host's wanted BIOS settings: what needs no other object is checked here (a password, a
/// setting the host lacks); when the status names the schema of the host's settings, the values
/// are checked against it before the answer goes out (`firmware.rs`). The schema is looked up
/// in the object's own namespace, whatever namespace the status names.
fn firmware_settings(settings: HostFirmwareSettings, namespace: &str) -> Checked {
    let status = settings.status.unwrap_or_default();
    let errors = validate_host_firmware_settings(&settings.spec, &status.settings, None);
    let schema = status.firmware_schema.filter(|_| errors.is_empty()).map(|schema| SchemaCheck {
        namespace: namespace.to_string(),
        name: schema.name,
        spec: settings.spec,
        current: status.settings,
    });
    Checked { errors, read: true, schema }
}

/// The review's objects as our types, parsed from their text without the metadata no rule
/// reads. An object that does not even parse is refused with the parser's message (it names
/// the field).
fn typed<K: DeserializeOwned>(object: &Object<'_>, old: Option<&Object<'_>>) -> Result<(K, Option<K>), String> {
    let convert =
        |o: &Object<'_>| serde_json::from_str::<K>(&o.trimmed()?).map_err(|e| format!("cannot parse the object: {e}"));
    Ok((convert(object)?, old.map(convert).transpose()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhook::envelope::Response;
    use serde_json::json;

    fn review_of(object: serde_json::Value) -> serde_json::Value {
        json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": "0df28fbd-5f5f-4a5d-9d2b-3c1e1b0a9c11",
                "kind": {"group": "ironic.metal3.io", "version": "v1alpha1", "kind": "Ironic"},
                "resource": {"group": "ironic.metal3.io", "version": "v1alpha1", "resource": "ironics"},
                "name": "ironic", "namespace": "default", "operation": "CREATE",
                "userInfo": {"username": "admin"}, "object": object, "dryRun": false
            }
        })
    }

    /// A review with the default feature gates.
    fn review(kind: Kind, review: serde_json::Value) -> Response {
        answer(kind, review, &Policy::default())
    }

    fn answer(kind: Kind, review: serde_json::Value, policy: &Policy) -> Response {
        let body = serde_json::to_vec(&review).expect("serializes");
        super::review(kind, &body, policy).response
    }

    fn message(response: &Response) -> &str {
        response.status.as_ref().map_or("", |s| s.message.as_str())
    }

    #[test]
    fn the_operators_feature_gates_apply_at_admission() {
        let ha = || {
            review_of(json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic",
                "metadata": {"name": "ironic", "namespace": "default"},
                "spec": {"highAvailability": true, "database": {"managed": {}}}}))
        };
        let default = review(Kind::Ironic, ha());
        assert!(!message(&default).contains("feature gate"), "allowed by default: {}", message(&default));
        let gates = IronicValidationOptions::from_feature_gates("HighAvailability=false").expect("gates");
        let denied = answer(Kind::Ironic, ha(), &Policy { features: gates, ..Policy::default() });
        assert!(!denied.allowed);
        assert!(message(&denied).contains("feature gate HighAvailability"), "{}", message(&denied));
    }

    #[test]
    fn a_nodeset_naming_another_namespace_is_denied_unless_an_admin_opened_that_pool() {
        let nodeset = || {
            let mut r = review_of(json!({"apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSet",
                "metadata": {"name": "computes", "namespace": "team-a"},
                "spec": {"baremetalSetTemplate": {"bmhNamespace": "team-b", "image": {"url": "http://i/os.qcow2",
                             "checksum": "a".repeat(64), "checksumType": "sha256"}},
                         "nodes": {"compute-0": {}}}}));
            r["request"]["namespace"] = json!("team-a");
            r
        };
        let denied = review(Kind::NodeSet, nodeset());
        assert!(!denied.allowed);
        assert!(message(&denied).contains("spec.baremetalSetTemplate.bmhNamespace"), "{}", message(&denied));
        let opened = Policy { host_pools: "team-a=team-b".parse().expect("pools"), ..Policy::default() };
        let allowed = answer(Kind::NodeSet, nodeset(), &opened);
        assert!(allowed.allowed, "{:?}", allowed.status);
    }

    #[test]
    fn an_ironic_outside_the_listed_namespaces_is_refused() {
        let ironic = || {
            let mut r = review_of(json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic",
                "metadata": {"name": "ironic", "namespace": "team-a"}, "spec": {}}));
            r["request"]["namespace"] = json!("team-a");
            r
        };
        let listed = Policy { ironic_namespaces: "metal3".parse().expect("list"), ..Policy::default() };
        let denied = answer(Kind::Ironic, ironic(), &listed);
        assert!(!denied.allowed);
        assert!(message(&denied).contains("--ironic-namespaces"), "{}", message(&denied));
        let team_a = Policy { ironic_namespaces: "team-a".parse().expect("list"), ..Policy::default() };
        assert!(answer(Kind::Ironic, ironic(), &team_a).allowed);
    }

    #[test]
    fn a_host_may_not_point_ironic_outside_the_admins_lists() {
        let host = |address: &str, image: &str| {
            review_of(json!({"apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
                "metadata": {"name": "h", "namespace": "team-a"},
                "spec": {"online": true, "bootMACAddress": "52:54:00:00:00:01",
                         "bmc": {"address": address, "credentialsName": "bmc"},
                         "image": {"url": image, "format": "live-iso"}}}))
        };
        let policy = Policy {
            host_access: HostAccess {
                bmc_networks: "10.1.0.0/16".parse().expect("networks"),
                file_image_dirs: "/shared/images".parse().expect("dirs"),
            },
            ..Policy::default()
        };
        let allowed = answer(Kind::BareMetalHost, host("ipmi://10.1.0.9", "file:///shared/images/live.iso"), &policy);
        assert!(allowed.allowed, "{:?}", allowed.status);
        let denied = answer(Kind::BareMetalHost, host("ipmi://10.2.0.9", "file:///etc/shadow"), &policy);
        assert!(!denied.allowed);
        let text = message(&denied);
        assert!(text.contains("spec.bmc.address") && text.contains("--bmc-networks"), "{text}");
        assert!(text.contains("spec.image") && text.contains("--file-image-dirs"), "{text}");
    }

    fn firmware_settings(settings: serde_json::Value, status: serde_json::Value) -> Answer {
        let mut r = review_of(json!({"apiVersion": "metal3.io/v1alpha1", "kind": "HostFirmwareSettings",
            "metadata": {"name": "server-0", "namespace": "team-a"},
            "spec": {"settings": settings}, "status": status}));
        r["request"]["namespace"] = json!("team-a");
        let body = serde_json::to_vec(&r).expect("serializes");
        super::review(Kind::HostFirmwareSettings, &body, &Policy::default())
    }

    #[test]
    fn a_password_or_a_setting_the_host_lacks_is_refused_without_reading_anything() {
        let password = firmware_settings(json!({"AdminPassword": "x"}), json!({}));
        assert!(!password.response.allowed);
        assert!(password.message().contains("spec.settings[AdminPassword]"), "{}", password.message());
        let status = json!({"settings": {"ProcTurboMode": "Enabled"}});
        let missing = firmware_settings(json!({"NoSuchSetting": "x"}), status);
        assert!(!missing.response.allowed);
        assert!(missing.message().contains("not among the host's BIOS settings"), "{}", missing.message());
    }

    #[test]
    fn the_schema_is_checked_in_the_objects_own_namespace_whatever_the_status_names() {
        let status = json!({"settings": {"ProcTurboMode": "Enabled"},
                            "schema": {"namespace": "team-b", "name": "schema-1"}});
        let answer = firmware_settings(json!({"ProcTurboMode": "Disabled"}), status);
        assert!(answer.response.allowed, "{:?}", answer.response.status);
        let check = answer.schema.expect("a schema to check against");
        assert_eq!((check.namespace.as_str(), check.name.as_str()), ("team-a", "schema-1"));
        let before = firmware_settings(json!({"ProcTurboMode": "Disabled"}), json!({}));
        assert!(before.response.allowed && before.schema.is_none(), "settings written before the host are let in");
    }

    #[test]
    fn a_valid_ironic_is_allowed() {
        let out = review(
            Kind::Ironic,
            review_of(json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic",
            "metadata": {"name": "ironic", "namespace": "default"}, "spec": {}})),
        );
        let response = out;
        assert!(response.allowed, "{:?}", response.status);
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
        let response = out;
        assert!(!response.allowed);
        assert!(message(&response).contains("spec.database"), "{}", message(&response));
    }

    fn update_of(object: serde_json::Value, old: serde_json::Value) -> serde_json::Value {
        let mut review = review_of(object);
        review["request"]["operation"] = json!("UPDATE");
        review["request"]["oldObject"] = old;
        review
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
        let allowed = review(Kind::Ironic, update_of(finalized, old.clone()));
        assert!(allowed.allowed, "a finalizer on an invalid Ironic: {:?}", allowed.status);

        let mut changed = invalid_ironic(json!({"name": "ironic", "namespace": "default"}));
        changed["spec"]["version"] = json!("38.0");
        let denied = review(Kind::Ironic, update_of(changed, old));
        assert!(!denied.allowed);
        assert!(message(&denied).contains("spec.database"), "{}", message(&denied));
    }

    #[test]
    fn an_update_of_annotations_alone_is_still_validated() {
        let host = |annotations: serde_json::Value| {
            json!({"apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
                "metadata": {"name": "host-0", "namespace": "default", "annotations": annotations},
                "spec": {"online": true, "bootMACAddress": "52:54:00:00:00:01",
                    "bmc": {"address": "ipmi://192.0.2.1", "credentialsName": "bmc"}}})
        };
        let mut review = update_of(host(json!({"reboot.metal3.io": "{not json"})), host(json!({})));
        review["request"]["kind"] = json!({"group": "metal3.io", "version": "v1alpha1", "kind": "BareMetalHost"});
        let response = self::review(Kind::BareMetalHost, review);
        assert!(!response.allowed, "a malformed reboot annotation is refused");
        assert!(message(&response).contains("reboot.metal3.io"), "{}", message(&response));
    }

    #[test]
    fn an_update_that_finishes_a_deletion_is_allowed() {
        let old = invalid_ironic(json!({"name": "ironic", "namespace": "default",
            "finalizers": ["ironic.metal3.io/ferrometal"], "deletionTimestamp": "2026-12-01T10:00:00Z"}));
        let gone = invalid_ironic(json!({"name": "ironic", "namespace": "default",
            "deletionTimestamp": "2026-12-01T10:00:00Z"}));
        let response = review(Kind::Ironic, update_of(gone.clone(), old.clone()));
        assert!(response.allowed, "the finalizer goes: {:?}", response.status);
        let mut changed = gone;
        changed["spec"]["version"] = json!("1.0");
        let response = review(Kind::Ironic, update_of(changed, old));
        assert!(!response.allowed, "a spec change under a running deletion is refused");
        assert!(message(&response).contains("being deleted"), "{}", message(&response));
    }

    #[test]
    fn a_review_that_does_not_parse_is_refused_with_the_parsers_message() {
        let answer = super::review(Kind::Ironic, b"{\"request\": [", &Policy::default());
        assert!(!answer.response.allowed);
        assert!(answer.message().contains("cannot parse the admission review"), "{}", answer.message());
    }

    #[test]
    fn fields_no_kind_knows_are_ignored_whatever_they_hold() {
        // The kind's parser skips an unknown field without building it.
        let junk = "[],".repeat(3_000);
        let body = format!(
            r#"{{"request": {{"uid": "u", "object": {{"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic",
                "metadata": {{"name": "ironic"}}, "spec": {{}}, "junk": [{junk}[]]}}}}}}"#
        );
        let answer = super::review(Kind::Ironic, body.as_bytes(), &Policy::default());
        assert!(answer.response.allowed, "{}", answer.message());
        assert_eq!(answer.response.uid, "u");
    }

    #[test]
    fn a_review_that_would_cost_more_than_the_bound_to_parse_is_refused_before_parsing() {
        let nodes = (0..70_000).map(|i| format!("\"h{i}\": {{}}")).collect::<Vec<_>>().join(",");
        let body = format!(
            r#"{{"request": {{"uid": "u", "object": {{"kind": "NodeSet", "metadata": {{"name": "a"}},
                "spec": {{"nodes": {{{nodes}}}}}}}}}}}"#
        );
        let answer = super::review(Kind::NodeSet, body.as_bytes(), &Policy::default());
        assert!(!answer.response.allowed);
        assert!(answer.message().contains("70002 objects"), "{}", answer.message());
        assert!(answer.message().contains("more than the webhook parses"), "{}", answer.message());
    }

    #[test]
    fn an_update_of_a_thousand_host_nodeset_at_etcds_size_limit_is_within_the_bound() {
        let entry = json!({"name": "svc", "configHash": "77de", "serviceHash": "12aa",
            "completedAt": "2026-08-01T09:50:00Z"});
        let per_host = 1_500_000 / 1000 / entry.to_string().len();
        let hosts: serde_json::Map<String, serde_json::Value> = (0..1000)
            .map(|i| (format!("compute-{i}"), json!({"servicesCompleted": vec![entry.clone(); per_host]})))
            .collect();
        let nodes: serde_json::Map<String, serde_json::Value> =
            (0..1000).map(|i| (format!("compute-{i}"), json!({}))).collect();
        let nodeset = json!({"apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSet",
            "metadata": {"name": "computes", "namespace": "default"},
            "spec": {"nodes": nodes}, "status": {"hosts": hosts}});
        assert!(nodeset.to_string().len() <= 1_572_864, "etcd keeps {} bytes", nodeset.to_string().len());
        let response = review(Kind::NodeSet, update_of(nodeset.clone(), nodeset));
        assert!(!message(&response).contains("more than the webhook parses"), "{}", message(&response));
    }

    proptest::proptest! {
        /// Any body, of any kind, gets an answer: the envelope, the weight and the typed
        /// parse never panic on what a client posts.
        #[test]
        fn any_body_gets_an_answer(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512),
                                   spec in "[\\[\\]{}:,\"a-z0-9\\\\ ]{0,200}") {
            for kind in Kind::ALL {
                let _ = super::review(kind, &body, &Policy::default());
                let wrapped = format!(r#"{{"request":{{"uid":"u","object":{{"metadata":{{}},"spec":{spec}}},"oldObject":{{"spec":{spec}}}}}}}"#);
                let _ = super::review(kind, wrapped.as_bytes(), &Policy::default());
            }
        }
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
