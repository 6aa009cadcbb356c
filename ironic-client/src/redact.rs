//! Keeping secrets (BMC passwords, rescue passwords, config-drive user data)
//! out of `Debug` output, error messages and traces.
//!
//! Ironic masks secrets in what it returns (`"******"`), but what we *send* is
//! in clear text. Everything that may hold one goes through here: [`Secret`]
//! for values we keep, [`redact_json`] for request bodies written to traces,
//! and [`scrub`] for server messages that might echo our input back.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a redacted value prints as.
pub const REDACTED: &str = "<redacted>";

/// A value that never shows in `Debug` or `Display` output.
///
/// It serialises transparently, because the secret has to reach Ironic; read
/// it with [`Secret::expose`] only where it is actually used.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret<T>(T);

impl<T> Secret<T> {
    /// Wraps a secret value.
    pub fn new(value: T) -> Self {
        Self(value)
    }

    /// The secret itself. Never log what this returns.
    pub fn expose(&self) -> &T {
        &self.0
    }

    /// Unwraps the secret.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> From<T> for Secret<T> {
    fn from(value: T) -> Self {
        Self(value)
    }
}

impl From<&str> for Secret<String> {
    fn from(value: &str) -> Self {
        Self(value.to_owned())
    }
}

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl<T> fmt::Display for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// Whether a JSON key names a secret.
///
/// The rule follows what Ironic itself masks in `driver_info` and request
/// bodies: every `*password` (`redfish_password`, `ipmi_password`,
/// `rescue_password`), keys (`snmp_auth_key`, `*_private_key`), passphrases,
/// tokens and anything called secret. The config drive is included because
/// its user data routinely carries credentials.
pub fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key.ends_with("password")
        || key.ends_with("_key")
        || key.ends_with("passphrase")
        || key.contains("secret")
        || key.contains("token")
        || key == "configdrive"
        || key == "user_data"
        // A Redfish event subscription's headers: an Authorization header, a token.
        || key == "httpheaders"
}

/// Whether a JSON Pointer ends in a secret key (`/driver_info/ipmi_password`).
pub fn is_secret_path(path: &str) -> bool {
    path.rsplit('/').next().is_some_and(is_secret_key)
}

/// Whether member `key` of `map` holds a secret: a secret key, or the
/// `value` of a JSON Patch operation whose `path` is secret.
fn is_secret_member(map: &serde_json::Map<String, Value>, key: &str) -> bool {
    is_secret_key(key) || (key == "value" && map.get("path").and_then(Value::as_str).is_some_and(is_secret_path))
}

/// A copy of `value` with every secret-keyed member replaced by
/// [`REDACTED`], at any depth. Used for request bodies in traces.
pub fn redact_json(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_secret_member(map, k) { Value::String(REDACTED.to_owned()) } else { redact_json(v) };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact_json).collect()),
        other => other.clone(),
    }
}

/// Every string held under a secret key in `value`, at any depth, in the
/// forms an error message may quote it in, longest first so that [`scrub`]
/// never leaves the tail of a longer secret behind.
///
/// Ironic quotes rejected input with Python's `repr` (its JSON schema errors
/// print the whole offending config drive), which escapes newlines, and a
/// multi-line secret may be quoted line by line: so besides each string
/// itself, its `repr` form and each of its lines count too.
pub fn secret_strings(value: &Value) -> Vec<String> {
    fn collect(value: &Value, under_secret: bool, out: &mut Vec<String>) {
        match value {
            Value::String(s) if under_secret && !s.is_empty() => {
                out.push(s.clone());
                out.push(python_repr_body(s));
                out.extend(s.lines().map(str::trim).filter(|line| line.len() >= MIN_SCRUBBED_LINE).map(str::to_owned));
            }
            Value::Object(map) => {
                for (k, v) in map {
                    collect(v, under_secret || is_secret_member(map, k), out);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| collect(v, under_secret, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    collect(value, false, &mut out);
    out.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    out.dedup();
    out
}

/// Lines shorter than this are not scrubbed on their own: they would
/// mangle messages (think `}` or `---`) without protecting anything.
const MIN_SCRUBBED_LINE: usize = 4;

/// What Python's `repr` puts between the quotes of a string: it escapes
/// backslashes and control characters, and single quotes only when it has
/// to quote with them (the string also holds a double quote).
fn python_repr_body(s: &str) -> String {
    let escape_single = s.contains('"') || !s.contains('\'');
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\'' if escape_single => out.push_str("\\'"),
            c => out.push(c),
        }
    }
    out
}

/// `text` with every occurrence of each secret replaced by [`REDACTED`].
///
/// Ironic error messages sometimes quote the offending input; this makes sure
/// a password we sent cannot come back to us inside an error.
pub fn scrub(text: &str, secrets: &[String]) -> String {
    secrets.iter().fold(text.to_owned(), |acc, secret| acc.replace(secret.as_str(), REDACTED))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_hides_in_debug_and_display_but_serialises() {
        let s = Secret::new("hunter2".to_owned());
        assert_eq!(format!("{s:?}"), REDACTED);
        assert_eq!(format!("{s}"), REDACTED);
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"hunter2\"");
        assert_eq!(s.expose(), "hunter2");
    }

    #[test]
    fn secret_keys() {
        for key in [
            "redfish_password",
            "ipmi_password",
            "IPMI_PASSWORD",
            "rescue_password",
            "snmp_auth_key",
            "snmp_priv_key",
            "agent_secret_token",
            "configdrive",
            "user_data",
        ] {
            assert!(is_secret_key(key), "{key} should be secret");
        }
        for key in ["redfish_username", "redfish_address", "keyboard", "deploy_kernel"] {
            assert!(!is_secret_key(key), "{key} should not be secret");
        }
    }

    #[test]
    fn redact_json_walks_objects_and_arrays() {
        let body = json!({
            "driver_info": {"redfish_password": "pw", "redfish_username": "admin"},
            "steps": [{"args": {"bmc_password": "pw2"}}],
            "configdrive": {"user_data": "#cloud-config\npassword: x"},
        });
        let out = redact_json(&body);
        assert_eq!(out["driver_info"]["redfish_password"], REDACTED);
        assert_eq!(out["driver_info"]["redfish_username"], "admin");
        assert_eq!(out["steps"][0]["args"]["bmc_password"], REDACTED);
        assert_eq!(out["configdrive"], REDACTED);
        let text = out.to_string();
        assert!(!text.contains("pw\"") && !text.contains("pw2") && !text.contains("cloud-config"));
    }

    #[test]
    fn an_event_subscriptions_headers_are_secret_in_traces_and_errors() {
        let body = json!({"Destination": "https://e/x", "HttpHeaders": [{"Authorization": "Bearer tok-123"}]});
        assert_eq!(redact_json(&body)["HttpHeaders"], REDACTED);
        assert_eq!(redact_json(&body)["Destination"], "https://e/x");
        let secrets = secret_strings(&body);
        assert!(secrets.iter().any(|s| s == "Bearer tok-123"), "{secrets:?}");
    }

    #[test]
    fn json_patch_values_under_secret_paths_are_secret() {
        let patch = json!([
            {"op": "replace", "path": "/driver_info/redfish_password", "value": "pw-123"},
            {"op": "add", "path": "/extra/note", "value": "public"},
        ]);
        let out = redact_json(&patch);
        assert_eq!(out[0]["value"], REDACTED);
        assert_eq!(out[1]["value"], "public");
        assert_eq!(secret_strings(&patch), vec!["pw-123".to_owned()]);
    }

    #[test]
    fn scrub_removes_every_secret_sent() {
        let body = json!({"driver_info": {"ipmi_password": "abc", "x_password": "abcdef"}});
        let secrets = secret_strings(&body);
        assert_eq!(secrets, vec!["abcdef".to_owned(), "abc".to_owned()]);
        let msg = "invalid driver_info {'x_password': 'abcdef', 'ipmi_password': 'abc'}";
        let out = scrub(msg, &secrets);
        assert!(!out.contains("abc"), "{out}");
    }

    #[test]
    fn scrub_catches_python_repr_and_single_lines() {
        let user_data = "#cloud-config\nchpasswd: {list: 'root:hunter2'}\n";
        let body = json!({"configdrive": {"user_data": user_data, "vendor_data": "xyz"}});
        let secrets = secret_strings(&body);
        // As Ironic's schema error prints the offending config drive.
        let msg = "Invalid configdrive format: 'xyz' is not of type 'object'\nOn instance:\n    \
                   {'user_data': \"#cloud-config\\nchpasswd: {list: 'root:hunter2'}\\n\", 'vendor_data': 'xyz'}";
        assert!(secrets.contains(&"#cloud-config\\nchpasswd: {list: 'root:hunter2'}\\n".to_owned()));
        let out = scrub(msg, &secrets);
        assert!(!out.contains("hunter2"), "{out}");
        assert!(out.starts_with("Invalid configdrive format"), "{out}");
        assert_eq!(python_repr_body("a\\b\tc'd\"e"), "a\\\\b\\tc\\'d\"e");
        // A line quoted on its own.
        let out = scrub("bad line chpasswd: {list: 'root:hunter2'}", &secrets);
        assert!(!out.contains("hunter2"), "{out}");
    }
}
