//! Property tests of every parser and validator of the crate: the checks in `checks/` (shared
//! with the fuzz targets in `fuzz/`), each run on `CASES` random inputs per `cargo test`
//! (proptest's default of 256; a few seconds per property at most). Text parsers get strings
//! shaped like their input (regular expressions) as well as arbitrary text; structured checks
//! get random bytes that `arbitrary::Unstructured` turns into objects. A failure prints the
//! smallest failing input proptest found; `regressions.rs` keeps every input that ever failed,
//! here or under the fuzzer, as a plain test.

mod checks;
mod regressions;

use arbitrary::Unstructured;
use proptest::collection::vec;
use proptest::prelude::*;

/// Cases per property.
const CASES: u32 = 256;
/// Most bytes a structured case draws from.
const BYTES: usize = 4096;

/// Runs a structured check on `bytes`; running out of bytes ends the case, it does not fail
/// it.
fn run(bytes: &[u8], check: fn(&mut Unstructured) -> arbitrary::Result<()>) {
    let _ = check(&mut Unstructured::new(bytes));
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..BYTES)
}

fn config() -> ProptestConfig {
    // Failing inputs become tests in regressions.rs, not files beside the sources.
    ProptestConfig { cases: CASES, failure_persistence: None, ..ProptestConfig::default() }
}

/// Text shaped like a BMC address: every scheme and its near misses, bare hosts and ports,
/// IPv6, paths, the privilege level query, and user info.
fn bmc_like() -> impl Strategy<Value = String> {
    let scheme = "(ipmi|IPMI|libvirt|redfish|redfish-virtualmedia|redfish-uefihttp|idrac-redfish|idrac-virtualmedia|ilo5-redfish|ilo5-virtualmedia|fake|ilo4|idrac|irmc|x|)";
    let pattern = format!(
        "{scheme}(\\+https?|\\+ftp)?(://|:|)([a-z]+(:[a-z]*)?@)?(\\[fd00::1\\]|\\[::ffff:10.0.0.1\\]|10\\.0\\.0\\.1|0x7f\\.1|[a-zA-Z0-9.%_+-]{{0,12}})(:[0-9]{{0,6}})?(/[a-zA-Z0-9/._%-]{{0,16}})?(\\?(privilegelevel|x)=[A-Za-z+%&=]{{0,10}})?(#[a-z]*)?"
    );
    prop_oneof![4 => proptest::string::string_regex(&pattern).expect("regex"), 1 => any::<String>()]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn bmc_addresses_re_render_and_parse_the_same(input in bmc_like()) {
        checks::text::bmc_address(&input);
    }

    #[test]
    fn durations_never_panic_and_round_trip(
        input in prop_oneof![
            "([0-9]{0,4}(\\.[0-9]{0,3})?(h|m|s|ms|us|µs|ns|d|H|)){0,4}",
            "[0-9.]{15,40}(h|s|ns)",
            any::<String>(),
        ]
    ) {
        checks::text::go_duration(&input);
    }

    #[test]
    fn durations_sum_their_segments_and_refuse_what_does_not_fit(
        hours in prop_oneof![0..10_000u64, any::<u64>()],
        minutes in prop_oneof![0..120u64, any::<u64>()],
        seconds in prop_oneof![0..120u64, any::<u64>()],
    ) {
        checks::text::go_duration_sum(hours, minutes, seconds);
    }

    #[test]
    fn quantities_never_panic_and_read_back(
        input in prop_oneof![
            "[ ]?[0-9]{0,8}(\\.[0-9]{0,4})?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|e-?[0-9]{0,11}|E[0-9]{0,3}|GB|m|)[ ]?",
            "[0-9]{30,45}(Ki|E|)",
            any::<String>(),
        ]
    ) {
        checks::text::quantity(&input);
    }

    #[test]
    fn quantities_scale_exactly_round_up_and_overflow_as_errors(
        whole in prop_oneof![0..1_000_000_000_000u128, any::<u128>()],
        fraction in "[0-9]{0,6}",
        suffix in 0..checks::text::QUANTITY_SUFFIXES.len(),
    ) {
        let fraction = if whole < 1_000_000_000_000 { fraction } else { String::new() };
        checks::text::quantity_value(whole, &fraction, suffix);
    }

    #[test]
    fn addresses_networks_macs_urls_and_names_are_consistent(
        input in prop_oneof![
            "(192\\.0\\.2\\.[0-9]{1,3}|fd00::[0-9a-f]{0,4}|::ffff:1\\.2\\.3\\.4|[0-9.:]{0,16})(/[0-9]{0,3})?",
            "([0-9a-fA-F]{2}[:-]){0,6}[0-9a-fA-F]{0,2}",
            "(https?|file|oci|ftp|HTTP)(:|://|:///)([a-z]+@)?[a-z0-9.:\\[\\]]{0,12}(/[a-z0-9./]{0,12})?[\t\n]?",
            "[a-z0-9.-]{0,70}",
            "reboot\\.metal3\\.io(/[a-z]{0,3})?",
            any::<String>(),
        ]
    ) {
        checks::text::network_text(&input);
    }

    #[test]
    fn ironic_versions_round_trip(input in prop_oneof!["(latest|v?[0-9]{0,11}\\.[0-9]{0,11}(\\.[0-9])?|)", any::<String>()]) {
        checks::text::ironic_version(&input);
    }

    #[test]
    fn bmc_credentials_are_judged_without_quoting_them(bytes in bytes()) {
        run(&bytes, checks::text::bmc_credentials);
    }

    #[test]
    fn status_annotation_text_never_panics_and_reads_stably(
        input in prop_oneof![
            "\\{(\"(operationalStatus|poweredOn|errorCount|provisioning|hardware|ID|state)\":(\"[a-zA-Z]{0,6}\"|[0-9]{1,3}|true|null|\\{\\}|\\[\\]),?){0,4}\\}",
            any::<String>(),
        ]
    ) {
        checks::annotations::annotation_text(&input);
    }

    #[test]
    fn status_annotations_read_whole_and_partial_statuses(bytes in bytes()) {
        run(&bytes, checks::annotations::status);
    }

    #[test]
    fn hardware_details_annotations_read_partial_details(bytes in bytes()) {
        run(&bytes, checks::annotations::hardware_details);
    }

    #[test]
    fn status_annotations_refuse_an_unknown_field_by_its_path(bytes in bytes()) {
        run(&bytes, checks::annotations::unknown_field);
    }

    #[test]
    fn ironic_validation_never_panics_and_holds_updates_to_create_rules(bytes in bytes()) {
        run(&bytes, checks::validation::ironic);
    }

    #[test]
    fn baremetalhost_validation_never_panics_and_holds_updates_to_create_rules(bytes in bytes()) {
        run(&bytes, checks::validation::baremetalhost);
    }

    #[test]
    fn nodeset_validation_never_panics_and_holds_updates_to_create_rules(bytes in bytes()) {
        run(&bytes, checks::validation::nodeset);
    }

    #[test]
    fn nodeset_service_validation_never_panics(bytes in bytes()) {
        run(&bytes, checks::validation::nodeset_service);
    }

    #[test]
    fn valid_ironics_and_their_valid_updates_are_accepted(bytes in bytes()) {
        run(&bytes, checks::valid::ironic);
    }

    #[test]
    fn valid_baremetalhosts_and_their_valid_updates_are_accepted(bytes in bytes()) {
        run(&bytes, checks::valid::baremetalhost);
    }

    #[test]
    fn valid_nodesets_services_and_valid_updates_are_accepted(bytes in bytes()) {
        run(&bytes, checks::valid::nodeset);
    }

    #[test]
    fn map_and_network_order_never_change_a_hash(bytes in bytes()) {
        run(&bytes, checks::hashes::order);
    }

    #[test]
    fn a_day2_change_moves_the_hashes_of_exactly_the_hosts_it_reaches(bytes in bytes()) {
        run(&bytes, checks::hashes::day2_change);
    }

    #[test]
    fn a_provisioning_change_moves_only_provisioning_hashes(bytes in bytes()) {
        run(&bytes, checks::hashes::provisioning_change);
    }
}
