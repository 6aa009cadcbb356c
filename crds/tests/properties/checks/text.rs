//! Properties of the parsers of single values: BMC addresses, Go durations, storage
//! quantities, IP addresses and networks, MAC addresses, URLs, names, Ironic versions, reboot
//! annotation keys, and the content of a BMC credentials Secret. Each function takes any input
//! and panics when a property does not hold; none of them may panic otherwise.

use super::schema::{one_in, pick};
use arbitrary::{Result, Unstructured};
use crds::baremetalhost::annotations::is_reboot_annotation;
use crds::baremetalhost::bmc::{BmcScheme, parse_bmc_address};
use crds::baremetalhost::validate_bmc_credentials;
use crds::ironic::versions::{self, IronicVersion};
use crds::validation::{
    QuantityError, is_dns1123_label, is_dns1123_subdomain, is_mac_address, is_uuid, parse_go_duration, parse_ip,
    parse_ip_net, parse_quantity_bytes, valid_url,
};
use k8s_openapi::ByteString;
use std::collections::BTreeMap;
use std::time::Duration;

/// A BMC address that parses renders canonically (`Display`), and the rendering parses to the
/// same address.
pub fn bmc_address(input: &str) {
    match parse_bmc_address(input) {
        Ok(address) => {
            let canonical = address.to_string();
            assert_eq!(parse_bmc_address(&canonical), Ok(address.clone()), "{input:?} renders as {canonical:?}");
            assert!(!address.host.is_empty(), "{input:?} parsed without a host");
            if address.scheme != BmcScheme::Fake {
                assert!(!address.host.contains(['/', '?', '#', '@']), "{input:?}: host {:?}", address.host);
            }
            if let Some(system) = address.redfish_system_id() {
                assert!(address.scheme.is_redfish() && system == address.path, "{input:?}");
            }
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

/// Go's `Duration.String()` form of `d`, e.g. `1h2m3.000000004s`.
fn render_go_duration(d: Duration) -> String {
    let secs = d.as_secs();
    format!("{}h{}m{}.{:09}s", secs / 3600, secs / 60 % 60, secs % 60, d.subsec_nanos())
}

/// A duration that parses renders in Go's form and reads back the same, to the precision of
/// the float the parser sums in.
pub fn go_duration(input: &str) {
    let Ok(d) = parse_go_duration(input) else {
        return;
    };
    let rendered = render_go_duration(d);
    let back =
        parse_go_duration(&rendered).unwrap_or_else(|e| panic!("{input:?} = {d:?} renders as {rendered:?}: {e}"));
    let error = back.abs_diff(d).as_secs_f64();
    assert!(error <= 2e-9 + d.as_secs_f64() * 1e-13, "{input:?} = {d:?}, read back from {rendered:?} as {back:?}");
}

/// `{hours}h{minutes}m{seconds}s` is their sum, exactly while it fits a float's 53 bits, and an
/// error (never a wrapped or saturated number) past the largest duration.
pub fn go_duration_sum(hours: u64, minutes: u64, seconds: u64) {
    let text = format!("{hours}h{minutes}m{seconds}s");
    let total = u128::from(hours) * 3600 + u128::from(minutes) * 60 + u128::from(seconds);
    let parsed = parse_go_duration(&text);
    if total < 1 << 53 {
        assert_eq!(parsed, Ok(Duration::from_secs(total as u64)), "{text}");
    } else if total as f64 > u64::MAX as f64 * 1.01 {
        assert!(parsed.is_err(), "{text} is past the largest duration: {parsed:?}");
    }
}

/// The storage suffixes and what each multiplies by.
pub const QUANTITY_SUFFIXES: &[(&str, u128)] = &[
    ("", 1),
    ("Ki", 1 << 10),
    ("Mi", 1 << 20),
    ("Gi", 1 << 30),
    ("Ti", 1 << 40),
    ("Pi", 1 << 50),
    ("Ei", 1 << 60),
    ("k", 1_000),
    ("M", 1_000_000),
    ("G", 1_000_000_000),
    ("T", 1_000_000_000_000),
    ("P", 1_000_000_000_000_000),
    ("E", 1_000_000_000_000_000_000),
    ("e0", 1),
    ("e3", 1_000),
    ("E9", 1_000_000_000),
];

/// A quantity that parses is a number of bytes that reads back the same as plain digits, with
/// surrounding blanks, and with `Ki` when it is a whole number of KiB.
pub fn quantity(input: &str) {
    let Ok(bytes) = parse_quantity_bytes(input) else {
        return;
    };
    assert_eq!(parse_quantity_bytes(&bytes.to_string()), Ok(bytes), "{input:?}");
    assert_eq!(parse_quantity_bytes(&format!(" {bytes} ")), Ok(bytes), "{input:?}");
    if bytes % 1024 == 0 {
        assert_eq!(parse_quantity_bytes(&format!("{}Ki", bytes / 1024)), Ok(bytes), "{input:?}");
    }
}

/// `{whole}{suffix}` is `whole` times the suffix's multiplier, or an overflow error when that
/// does not fit in 128 bits: never a wrapped number. With a fraction (`whole` below 10^12, at
/// most six digits, so the exact value fits), the value is rounded up, as Kubernetes rounds
/// storage.
pub fn quantity_value(whole: u128, fraction: &str, suffix: usize) {
    let (suffix, multiplier) = QUANTITY_SUFFIXES[suffix % QUANTITY_SUFFIXES.len()];
    let expected = if fraction.is_empty() {
        whole.checked_mul(multiplier)
    } else {
        assert!(whole < 1_000_000_000_000 && fraction.len() <= 6 && fraction.bytes().all(|b| b.is_ascii_digit()));
        let digits: u128 = format!("{whole}{fraction}").parse().expect("digits");
        Some((digits * multiplier).div_ceil(10u128.pow(fraction.len() as u32)))
    };
    let text = if fraction.is_empty() { format!("{whole}{suffix}") } else { format!("{whole}.{fraction}{suffix}") };
    match (parse_quantity_bytes(&text), expected) {
        (Ok(bytes), Some(expected)) => assert_eq!(bytes, expected, "{text}"),
        (Err(QuantityError::Overflow(_)), None) => {}
        (parsed, expected) => panic!("{text}: parsed {parsed:?}, expected {expected:?} (None: too large)"),
    }
}

/// IP addresses and networks re-render and parse the same; a network contains its own
/// address; a MAC is six pairs; an accepted URL has one of the asked schemes and no control
/// character; a DNS label is a subdomain; a UUID has 36 characters.
pub fn network_text(input: &str) {
    if let Some(ip) = parse_ip(input) {
        assert_eq!(parse_ip(&ip.to_string()), Some(ip), "{input:?}");
    }
    if let Some(net) = parse_ip_net(input) {
        assert!(net.contains(net.addr), "{input:?} does not contain its own address");
        assert!(u32::from(net.prefix) <= if net.is_ipv6() { 128 } else { 32 }, "{input:?}");
        assert_eq!(parse_ip_net(&format!("{}/{}", net.addr, net.prefix)), Some(net), "{input:?}");
    }
    if is_mac_address(input) {
        assert_eq!(input.len(), 17, "{input:?}");
    }
    for schemes in [&["http", "https"][..], &["http", "https", "file", "oci"], &["file"]] {
        if let Ok(url) = valid_url(input, schemes) {
            assert!(schemes.contains(&url.scheme()), "{input:?} accepted as {}", url.scheme());
            assert!(!input.chars().any(char::is_control), "{input:?} has a control character");
        }
    }
    if is_dns1123_label(input) {
        assert!(is_dns1123_subdomain(input) && input.len() <= 63, "{input:?}");
    }
    if is_dns1123_subdomain(input) {
        assert!(!input.bytes().any(|b| b.is_ascii_uppercase()), "{input:?}");
    }
    if is_uuid(input) {
        assert_eq!(input.len(), 36, "{input:?}");
    }
    if is_reboot_annotation(input) {
        assert!(input.starts_with("reboot.metal3.io"), "{input:?}");
    }
}

/// An Ironic version that parses renders and parses the same, and resolving any text either
/// finds a supported version or says why not.
pub fn ironic_version(input: &str) {
    if let Ok(version) = input.parse::<IronicVersion>() {
        assert_eq!(version.to_string().parse(), Ok(version), "{input:?}");
        assert!(IronicVersion::Latest >= version, "latest sorts last");
    }
    match versions::resolve(Some(input)) {
        Ok(supported) => assert!(versions::lookup(supported.version).is_some()),
        Err(e) => assert!(!e.0.is_empty()),
    }
}

/// Any Secret content is judged without panicking, and the verdict never quotes a value.
pub fn bmc_credentials(u: &mut Unstructured) -> Result<()> {
    let mut data = BTreeMap::new();
    for key in ["username", "password"] {
        if !one_in(u, 8)? {
            let value: Vec<u8> = if u.arbitrary()? {
                pick(u, &["admin", " ", "", "hunter2", "p\u{e9}"])?.as_bytes().to_vec()
            } else {
                u.arbitrary()?
            };
            data.insert(key.to_string(), ByteString(value));
        }
    }
    if one_in(u, 4)? {
        data.insert(u.arbitrary::<String>()?, ByteString(u.arbitrary()?));
    }
    if let Err(e) = validate_bmc_credentials(&data) {
        assert!(!e.to_string().contains("hunter2"), "{e} quotes a value of the Secret");
    }
    Ok(())
}

/// [`go_duration_sum`] of three numbers drawn from the bytes, small or any.
#[allow(dead_code, reason = "the fuzz targets' byte-driven form; proptest draws the parts itself")]
pub fn duration_parts(u: &mut Unstructured) -> Result<()> {
    let mut part =
        |small: u64| -> Result<u64> { if u.arbitrary()? { u.int_in_range(0..=small) } else { u.arbitrary() } };
    let (hours, minutes, seconds) = (part(10_000)?, part(120)?, part(120)?);
    go_duration_sum(hours, minutes, seconds);
    Ok(())
}

/// [`quantity_value`] of a number, fraction and suffix drawn from the bytes.
#[allow(dead_code, reason = "the fuzz targets' byte-driven form; proptest draws the parts itself")]
pub fn quantity_parts(u: &mut Unstructured) -> Result<()> {
    let suffix = u.choose_index(QUANTITY_SUFFIXES.len())?;
    if u.arbitrary()? {
        quantity_value(u.arbitrary()?, "", suffix);
    } else {
        let whole = u.int_in_range(0..=999_999_999_999u128)?;
        let digits = u.int_in_range(0..=6)?;
        let fraction: String =
            (0..digits).map(|_| Ok(char::from(b'0' + u.int_in_range(0..=9u8)?))).collect::<Result<_>>()?;
        quantity_value(whole, &fraction, suffix);
    }
    Ok(())
}
