//! Text from elsewhere (Ironic's `last_error`, a BMC's answer) made fit for status, Events
//! and logs: values of secret-looking keys redacted, known secrets redacted, and the whole
//! bounded. Ironic quotes its input in errors (`driver_info` with `redfish_password`, a
//! config drive), so its messages are never passed on as they came.

use super::condition::bounded_message;

/// What a redacted value becomes.
pub(crate) const REDACTED: &str = "<redacted>";

/// Key names whose values are secrets, matched case-insensitively at the end of a key
/// (`redfish_password`, `ipmi_password`, `agent_secret_token`, `snmp_priv_key`, `user_data`).
const SECRET_KEYS: [&str; 7] = ["password", "passwd", "secret", "token", "_key", "configdrive", "user_data"];

/// `text` with the values of secret-looking keys and every one of `secrets` redacted, cut to
/// the condition message limit.
pub(crate) fn scrubbed(text: &str, secrets: &[&str]) -> String {
    let mut out = redact_values(text);
    for secret in secrets.iter().filter(|s| s.len() >= 3) {
        out = out.replace(secret, REDACTED);
    }
    bounded_message(out)
}

/// Redacts the value after every `<secret key>` followed by `:` or `=` (quoted or not), as
/// Python reprs, JSON and `key=value` texts write them.
fn redact_values(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let rest = &lower.as_bytes()[i..];
        let Some(key_end) = SECRET_KEYS.iter().find_map(|k| rest.starts_with(k.as_bytes()).then_some(i + k.len()))
        else {
            i += 1;
            continue;
        };
        // The rest of the key: letters, digits, `_` (`password_hash`), then a closing quote.
        let mut j = key_end;
        while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
            j += 1;
        }
        if j < bytes.len() && matches!(bytes[j], b'\'' | b'"') {
            j += 1;
        }
        while j < bytes.len() && bytes[j] == b' ' {
            j += 1;
        }
        if j >= bytes.len() || !matches!(bytes[j], b':' | b'=') {
            i = key_end;
            continue;
        }
        j += 1;
        while j < bytes.len() && bytes[j] == b' ' {
            j += 1;
        }
        let (start, end) = match bytes.get(j) {
            Some(&quote @ (b'\'' | b'"')) => {
                let close = bytes[j + 1..].iter().position(|&b| b == quote).map_or(bytes.len(), |p| j + 1 + p);
                (j + 1, close)
            }
            _ => {
                let stop = bytes[j..]
                    .iter()
                    .position(|&b| b.is_ascii_whitespace() || matches!(b, b',' | b'}' | b')' | b']' | b';' | b'&'))
                    .map_or(bytes.len(), |p| j + p);
                (j, stop)
            }
        };
        if end > start {
            out.push_str(&text[copied..start]);
            out.push_str(REDACTED);
            copied = end;
        }
        i = end.max(key_end);
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_of_secret_keys_are_redacted_in_every_notation() {
        let cases = [
            ("Invalid driver_info {'redfish_password': 'hunter2', 'redfish_username': 'admin'}", "hunter2"),
            (r#"bad body {"ipmi_password":"hunter2","x":1}"#, "hunter2"),
            ("connect failed: password=hunter2 user=admin", "hunter2"),
            ("token: hunter2, then", "hunter2"),
        ];
        for (text, secret) in cases {
            let out = scrubbed(text, &[]);
            assert!(!out.contains(secret), "{out}");
            assert!(out.contains(REDACTED), "{out}");
        }
        assert!(scrubbed("{'redfish_username': 'admin'}", &[]).contains("admin"), "other values stay");
        assert_eq!(scrubbed("the password is wrong", &[]), "the password is wrong", "no key, nothing redacted");
    }

    #[test]
    fn known_secrets_are_redacted_and_the_result_is_bounded() {
        let out = scrubbed(&format!("BMC said: s3cr3t-value {}", "x".repeat(5000)), &["s3cr3t-value"]);
        assert!(!out.contains("s3cr3t-value"));
        assert!(out.len() <= crate::kit::condition::MESSAGE_LIMIT + '…'.len_utf8());
    }

    #[test]
    fn any_text_is_scrubbed_without_panicking() {
        for text in ["password", "password:", "password: '", "\"token\":\"", "é password=ü", "key=\u{1F600}"] {
            let _ = scrubbed(text, &["é"]);
        }
    }
}
