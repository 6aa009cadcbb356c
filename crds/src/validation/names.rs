//! Kubernetes name rules (RFC 1123) and UUID detection.

/// RFC 1123 label: at most 63 characters of `[a-z0-9-]`, starting and ending alphanumeric.
pub fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && s.as_bytes().first().is_some_and(u8::is_ascii_alphanumeric)
        && s.as_bytes().last().is_some_and(u8::is_ascii_alphanumeric)
}

/// RFC 1123 subdomain: at most 253 characters, dot-separated labels.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

/// True for the canonical 8-4-4-4-12 hexadecimal UUID form, any case.
pub fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    let lengths = [8, 4, 4, 4, 12];
    groups.len() == lengths.len()
        && groups.iter().zip(lengths).all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_follow_rfc1123() {
        assert!(is_dns1123_label("compute-0"));
        assert!(!is_dns1123_label("Compute"));
        assert!(!is_dns1123_label("-a"));
        assert!(!is_dns1123_label("a-"));
        assert!(!is_dns1123_label(&"a".repeat(64)));
        assert!(!is_dns1123_label(""));
    }

    #[test]
    fn subdomains_are_dot_separated_labels() {
        assert!(is_dns1123_subdomain("compute-0.example.com"));
        assert!(!is_dns1123_subdomain("compute..x"));
        assert!(!is_dns1123_subdomain("a_b"));
    }

    #[test]
    fn uuids_are_detected() {
        assert!(is_uuid("0f8fad5b-d9cb-469f-a165-70867728950e"));
        assert!(is_uuid("0F8FAD5B-D9CB-469F-A165-70867728950E"));
        assert!(!is_uuid("worker-0"));
        assert!(!is_uuid("0f8fad5b-d9cb-469f-a165-70867728950"));
    }
}
