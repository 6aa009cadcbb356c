//! Images and root device hints; NodeSet validation reuses both.

use crate::baremetalhost::spec::{Image, RootDeviceHints};
use crate::validation::{Errors, valid_url};

/// Checks an image: URL scheme, checksum presence, checksum type and digest length.
pub(crate) fn validate_image(errors: &mut Errors, path: &str, image: &Image) {
    let url = match valid_url(&image.url, &["http", "https", "file", "oci"]) {
        Ok(url) => Some(url),
        Err(e) => {
            errors.push(format!("{path}.url"), e);
            None
        }
    };
    let oci = url.as_ref().is_some_and(|u| u.scheme() == "oci");
    let checksum = image.checksum.as_deref().unwrap_or_default().trim();
    if oci {
        // An OCI image is verified by its registry digest; a second checksum could only
        // disagree with it (checked before live-iso, which does not lift this rule).
        if !checksum.is_empty() {
            errors.push(format!("{path}.checksum"), "must be empty for oci:// images, which carry their own digest");
        }
        return;
    }
    if image.is_live_iso() {
        // Live ISOs are booted as they are.
        return;
    }
    if checksum.is_empty() {
        errors.push(format!("{path}.checksum"), "is required unless format is live-iso or the URL is oci://");
        return;
    }
    if checksum.contains("://") {
        if let Err(e) = valid_url(checksum, &["http", "https", "file"]) {
            errors.push(format!("{path}.checksum"), e);
        }
        return;
    }
    if !checksum.bytes().all(|b| b.is_ascii_hexdigit()) {
        errors.push(format!("{path}.checksum"), "must be a hexadecimal digest or the URL of a checksum file");
        return;
    }
    match image.checksum_type.and_then(|t| t.hex_len()) {
        Some(len) if checksum.len() != len => errors.push(
            format!("{path}.checksum"),
            format!(
                "a {} digest has {len} hexadecimal digits, not {}",
                image.checksum_type.map(|t| format!("{t:?}").to_lowercase()).unwrap_or_default(),
                checksum.len()
            ),
        ),
        Some(_) => {}
        None if ![32, 64, 128].contains(&checksum.len()) => errors.push(
            format!("{path}.checksum"),
            "must be an md5, sha256 or sha512 digest (32, 64 or 128 hexadecimal digits)",
        ),
        None => {}
    }
}

/// Checks root device hints: device names in /dev or /dev/disk/by-path (as baremetal-operator
/// checks them), SCSI addresses, sizes.
pub(crate) fn validate_root_device_hints(errors: &mut Errors, path: &str, hints: &RootDeviceHints) {
    if let Some(name) = hints.device_name.as_deref() {
        match name.strip_prefix("/dev/") {
            None => errors
                .push(format!("{path}.deviceName"), format!("{name:?} must be a device path starting with /dev/")),
            Some(rest) if rest.strip_prefix("disk/by-path/").unwrap_or(rest).contains('/') => errors.push(
                format!("{path}.deviceName"),
                format!(
                    "{name:?} must be a device in /dev/ or a link in /dev/disk/by-path/; other links (by-id, by-uuid...) are not matched"
                ),
            ),
            Some(_) => {}
        }
    }
    if let Some(hctl) = hints.hctl.as_deref() {
        let parts: Vec<&str> = hctl.split(':').collect();
        if parts.len() != 4 || parts.iter().any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit())) {
            errors.push(format!("{path}.hctl"), format!("{hctl:?} must be a SCSI address such as 0:0:0:0"));
        }
    }
    if hints.min_size_gigabytes.is_some_and(|s| s < 0) {
        errors.push(format!("{path}.minSizeGigabytes"), "must not be negative");
    }
}
