//! Generators of valid objects, drawn from fuzzer bytes: every field a rule reads is set (or
//! not) at random, with values that satisfy the rule, including its edges (the last port, the
//! shortest duration, a range that ends where it begins). The properties: a valid object is
//! accepted, and so is an update that keeps every transition rule (the database identity, a
//! volume that grows, a BMC address changed while detached, selectors kept once hosts are
//! claimed). A refusal is either a validator that refuses too much or a generator that does
//! not know a rule; both are worth knowing.

pub mod baremetalhost;
pub mod ironic;
pub mod nodeset;

use super::schema::pick;
use arbitrary::{Result, Unstructured};
use crds::FieldError;
use std::fmt::Debug;

/// `Some(f())` half of the time.
pub fn maybe<T>(u: &mut Unstructured, f: impl FnOnce(&mut Unstructured) -> Result<T>) -> Result<Option<T>> {
    if u.arbitrary()? { f(u).map(Some) } else { Ok(None) }
}

/// A valid Kubernetes object name (DNS-1123 label).
pub fn name(u: &mut Unstructured) -> Result<String> {
    let base = pick(u, &["a", "ironic", "db-creds", "compute-0", "x1", "metal3-io"])?;
    Ok(if u.arbitrary()? { base.to_string() } else { format!("{base}-{}", u.int_in_range(0..=99u8)?) })
}

/// Asserts that `object` is accepted.
pub fn assert_accepted<T: Debug>(errors: Vec<FieldError>, what: &str, object: &T) {
    assert!(errors.is_empty(), "a valid {what} is refused: {errors:#?}\n{object:#?}");
}

/// Checks the generated valid Ironic, its update, and the same for the other kinds.
pub fn ironic(u: &mut Unstructured) -> Result<()> {
    let (old, new) = ironic::update(u)?;
    let options = crds::ironic::IronicValidationOptions::default();
    assert_accepted(crds::ironic::validate_ironic(&old, None, &options), "Ironic spec", &old);
    assert_accepted(crds::ironic::validate_ironic(&new, Some(&old), &options), "Ironic update", &(&old, &new));
    Ok(())
}

/// A valid host is accepted, on create and in a valid update.
pub fn baremetalhost(u: &mut Unstructured) -> Result<()> {
    let (old, new) = baremetalhost::update(u)?;
    assert_accepted(crds::baremetalhost::validate_baremetalhost(&old, None), "BareMetalHost", &old);
    assert_accepted(
        crds::baremetalhost::validate_baremetalhost(&new, Some(&old)),
        "BareMetalHost update",
        &(&old, &new),
    );
    Ok(())
}

/// A valid NodeSet is accepted, on create and in a valid update; so is a valid service.
pub fn nodeset(u: &mut Unstructured) -> Result<()> {
    let (old, new) = nodeset::update(u)?;
    assert_accepted(crds::nodeset::validate_nodeset(&old, None), "NodeSet", &old);
    assert_accepted(crds::nodeset::validate_nodeset(&new, Some(&old)), "NodeSet update", &(&old, &new));
    let service = nodeset::service(u)?;
    assert_accepted(crds::nodesetservice::validate_nodeset_service(&service), "NodeSetService", &service);
    Ok(())
}
