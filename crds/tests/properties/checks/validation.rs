//! Properties of the validators on whatever an apiserver could store: objects of each kind
//! shaped by its CRD schema (so every field a rule reads can be there, with any value), and
//! updates that change a few places of such an object.
//!
//! - Whatever the schema admits deserializes into the Rust type (the webhook and the
//!   controllers read what the apiserver stored).
//! - Validation never panics, and every violation names a field of the object and says why.
//! - An update is held to every rule a create is (the create's violations are among the
//!   update's), and an update that changes nothing is judged as the object alone is: the
//!   transition rules only ever refuse a change.

use super::pools;
use super::schema::{self, one_in, pick};
use arbitrary::{Result, Unstructured};
use crds::FieldError;
use crds::baremetalhost::annotations::{HARDWARE_DETAILS, STATUS};
use crds::baremetalhost::{self, BareMetalHost, BareMetalHostSpec, BareMetalHostStatus};
use crds::ironic::{IronicSpec, IronicValidationOptions, validate_ironic};
use crds::nodeset::{self, NodeSet, NodeSetSpec, NodeSetStatus};
use crds::nodesetservice::{NodeSetServiceSpec, service_hash, validate_nodeset_service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Debug;

/// A value of `kind`'s schema at `pointer`, and an update of it.
fn pair(u: &mut Unstructured, kind: &str, pointer: &str) -> Result<(Value, Value)> {
    let schema = schema::schema_of(kind, pointer);
    let old = schema::value(u, schema, 1)?;
    let new = if one_in(u, 8)? { schema::value(u, schema, 1)? } else { schema::mutate(u, &old, schema, 1)? };
    Ok((old, new))
}

/// `value` as `T`; the schema admitting what the type refuses is a failure.
pub fn typed<T: DeserializeOwned>(value: &Value, what: &str) -> T {
    serde_json::from_value(value.clone())
        .unwrap_or_else(|e| panic!("the schema admits a {what} the type refuses: {e}\n{value:#}"))
}

/// The properties every validator has, given the validation of (new, old) as `validate`.
fn assert_validator<T: Debug>(new: &T, old: &T, validate: impl Fn(&T, Option<&T>) -> Vec<FieldError>) {
    let created = validate(new, None);
    for error in &created {
        let rooted = error.path.starts_with("spec") || error.path.starts_with("metadata");
        assert!(rooted && !error.message.trim().is_empty(), "{error:?} names no field or gives no reason");
    }
    let updated = validate(new, Some(old));
    for error in &created {
        assert!(updated.contains(error), "the update is spared {error:?}\nnew: {new:#?}\nold: {old:#?}");
    }
    assert_eq!(validate(new, Some(new)), created, "an update that changes nothing is judged as a create\n{new:#?}");
}

/// `Ironic`: any spec and update, with either feature gate on or off.
pub fn ironic(u: &mut Unstructured) -> Result<()> {
    let (old, new) = pair(u, "Ironic", "/properties/spec")?;
    let (old, new): (IronicSpec, IronicSpec) = (typed(&old, "Ironic spec"), typed(&new, "Ironic spec"));
    let options = IronicValidationOptions {
        allow_high_availability: u.arbitrary()?,
        allow_overrides: u.arbitrary()?,
        allow_privileged_overrides: u.arbitrary()?,
    };
    assert_validator(&new, &old, |new, old| validate_ironic(new, old, &options));
    // What the operator reads from a spec: every accessor takes any value.
    let _ = crds::ironic::versions::resolve(new.version.as_deref());
    let networking = new.networking.clone().unwrap_or_default();
    let _ = (networking.api_port(), networking.rpc_port(), networking.keepalived_enabled(), networking.host_network());
    if let Some(managed) = new.database.as_ref().and_then(|d| d.managed.as_ref()) {
        let _ = (managed.image(), managed.termination_grace_period_seconds());
    }
    let _ = new.tls.as_ref().map(|t| t.effective_mode());
    Ok(())
}

/// Metadata with the annotations whose values have rules, those values drawn from the pool or,
/// for the JSON ones, from the schema.
fn host_metadata(u: &mut Unstructured) -> Result<ObjectMeta> {
    let mut annotations = BTreeMap::new();
    for _ in 0..u.int_in_range(0..=3)? {
        let key = pick(u, pools::KEYS)?.to_string();
        let value = if key == STATUS && u.arbitrary()? {
            schema::value(u, schema::schema_of("BareMetalHost", "/properties/status"), 1)?.to_string()
        } else if key == HARDWARE_DETAILS && u.arbitrary()? {
            schema::value(u, schema::schema_of("BareMetalHost", "/properties/status/properties/hardware"), 2)?
                .to_string()
        } else {
            schema::text(u)?
        };
        annotations.insert(key, value);
    }
    Ok(ObjectMeta {
        name: Some(schema::text(u)?),
        namespace: Some(pick(u, &["metal3", "other", ""])?.to_string()),
        annotations: (!annotations.is_empty()).then_some(annotations),
        ..Default::default()
    })
}

/// `BareMetalHost`: any metadata, spec and status, and an update of them.
pub fn baremetalhost(u: &mut Unstructured) -> Result<()> {
    let (old_spec, new_spec) = pair(u, "BareMetalHost", "/properties/spec")?;
    let status = schema::value(u, schema::schema_of("BareMetalHost", "/properties/status"), 1)?;
    let old = BareMetalHost {
        metadata: host_metadata(u)?,
        spec: typed::<BareMetalHostSpec>(&old_spec, "BareMetalHost spec"),
        status: u.arbitrary::<bool>()?.then(|| typed::<BareMetalHostStatus>(&status, "BareMetalHost status")),
    };
    let mut new = BareMetalHost { spec: typed(&new_spec, "BareMetalHost spec"), ..old.clone() };
    if one_in(u, 2)? {
        new.metadata = host_metadata(u)?;
    }
    assert_validator(&new, &old, baremetalhost::validate_baremetalhost);
    let _ = (baremetalhost::boot_mac_requirement(&new), baremetalhost::inspection_disabled(&new));
    Ok(())
}

/// `NodeSet`: any spec, status and update, with the hashes every reconcile computes.
pub fn nodeset(u: &mut Unstructured) -> Result<()> {
    let (old_spec, new_spec) = pair(u, "NodeSet", "/properties/spec")?;
    let status = schema::value(u, schema::schema_of("NodeSet", "/properties/status"), 1)?;
    let metadata = ObjectMeta { namespace: Some(pick(u, &["metal3", "other"])?.to_string()), ..Default::default() };
    let old = NodeSet {
        metadata,
        spec: typed::<NodeSetSpec>(&old_spec, "NodeSet spec"),
        status: u.arbitrary::<bool>()?.then(|| typed::<NodeSetStatus>(&status, "NodeSet status")),
    };
    let new = NodeSet { spec: typed(&new_spec, "NodeSet spec"), ..old.clone() };
    assert_validator(&new, &old, nodeset::validate_nodeset);
    let spec = &new.spec;
    let _ = nodeset::nodeset_config_hash(spec);
    for (hostname, section) in spec.nodes.iter().flatten() {
        let config = nodeset::effective_host_config(hostname, spec.node_template.as_ref(), Some(section));
        let _ = (config.management_address(), nodeset::provisioning_hash(hostname, spec));
    }
    Ok(())
}

/// `NodeSetService`: any spec.
pub fn nodeset_service(u: &mut Unstructured) -> Result<()> {
    let value = schema::value(u, schema::schema_of("NodeSetService", "/properties/spec"), 1)?;
    let spec: NodeSetServiceSpec = typed(&value, "NodeSetService spec");
    for error in validate_nodeset_service(&spec) {
        assert!(error.path.starts_with("spec.job") && !error.message.is_empty(), "{error:?}");
    }
    assert_eq!(service_hash(&spec), service_hash(&spec.clone()));
    Ok(())
}
