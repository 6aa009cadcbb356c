//! The fuzz targets' entry points. The checks are the crds property tests' own files
//! (`crds/tests/properties/checks/`, included by path), so a property is written once and run
//! by both drivers: proptest in every `cargo test`, libFuzzer here (`make fuzz`). Each target
//! is a thin `fuzz_target!` over one function below.

#[path = "../../crds/tests/properties/checks/mod.rs"]
pub mod checks;

use arbitrary::Unstructured;
use checks::{annotations, hashes, text, valid, validation};

/// A structured check; running out of bytes ends the input, it is not a failure.
type Check = fn(&mut Unstructured) -> arbitrary::Result<()>;

/// Runs one of `checks`, chosen by the first byte, on the rest of the input.
fn one_of(data: &[u8], checks: &[Check]) {
    let mut u = Unstructured::new(data);
    if let Ok(i) = u.choose_index(checks.len()) {
        let _ = checks[i](&mut u);
    }
}

/// The input as text; invalid UTF-8 is replaced, as a webhook's JSON decoder would refuse it.
fn text_of(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

pub fn bmc_address(data: &[u8]) {
    text::bmc_address(&text_of(data));
}

pub fn go_duration(data: &[u8]) {
    match data.split_first() {
        Some((0, rest)) => one_of(rest, &[text::duration_parts]),
        _ => text::go_duration(&text_of(data)),
    }
}

pub fn quantity(data: &[u8]) {
    match data.split_first() {
        Some((0, rest)) => one_of(rest, &[text::quantity_parts]),
        _ => text::quantity(&text_of(data)),
    }
}

pub fn network_text(data: &[u8]) {
    let input = text_of(data);
    text::network_text(&input);
    text::ironic_version(&input);
}

pub fn annotation_text(data: &[u8]) {
    annotations::annotation_text(&text_of(data));
}

pub fn status_annotation(data: &[u8]) {
    one_of(data, &[annotations::status, annotations::hardware_details, annotations::unknown_field]);
}

pub fn bmc_credentials(data: &[u8]) {
    one_of(data, &[text::bmc_credentials]);
}

pub fn ironic(data: &[u8]) {
    one_of(data, &[validation::ironic, valid::ironic]);
}

pub fn baremetalhost(data: &[u8]) {
    one_of(data, &[validation::baremetalhost, valid::baremetalhost]);
}

pub fn nodeset(data: &[u8]) {
    one_of(data, &[validation::nodeset, validation::nodeset_service, valid::nodeset]);
}

pub fn nodeset_hashes(data: &[u8]) {
    one_of(data, &[hashes::order, hashes::day2_change, hashes::provisioning_change]);
}
