//! RFC 6902 JSON Patch operations for `PATCH /v1/nodes/{id}`.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::redact::{REDACTED, is_secret_path};

/// One JSON Patch operation. Ironic supports `add`, `replace` and `remove`.
#[derive(Clone, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum PatchOperation {
    /// Sets a member, creating it if needed.
    Add {
        /// JSON Pointer (`/driver_info/redfish_address`).
        path: String,
        /// The new value.
        value: Value,
    },
    /// Sets an existing member.
    Replace {
        /// JSON Pointer.
        path: String,
        /// The new value.
        value: Value,
    },
    /// Removes a member.
    Remove {
        /// JSON Pointer.
        path: String,
    },
}

impl PatchOperation {
    /// An `add` of `value` at `path`.
    pub fn add(path: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::Add { path: path.into(), value: value.into() }
    }

    /// A `replace` of `path` with `value`.
    pub fn replace(path: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::Replace { path: path.into(), value: value.into() }
    }

    /// A `remove` of `path`.
    pub fn remove(path: impl Into<String>) -> Self {
        Self::Remove { path: path.into() }
    }

    /// The JSON Pointer this operation targets.
    pub fn path(&self) -> &str {
        match self {
            Self::Add { path, .. } | Self::Replace { path, .. } | Self::Remove { path } => path,
        }
    }
}

/// Hides the value when the path's last segment names a secret
/// (`/driver_info/redfish_password`).
impl fmt::Debug for PatchOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (op, value) = match self {
            Self::Add { value, .. } => ("add", Some(value)),
            Self::Replace { value, .. } => ("replace", Some(value)),
            Self::Remove { .. } => ("remove", None),
        };
        let path = self.path();
        let secret = is_secret_path(path);
        let mut s = f.debug_struct("PatchOperation");
        s.field("op", &op).field("path", &path);
        match value {
            Some(_) if secret => s.field("value", &format_args!("{REDACTED}")),
            Some(v) => s.field("value", v),
            None => &mut s,
        };
        s.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn serialises_as_rfc6902_and_hides_secrets() {
        let ops = [
            PatchOperation::add("/driver_info/redfish_password", "pw"),
            PatchOperation::replace("/instance_info/image_source", "http://img"),
            PatchOperation::remove("/extra/foo"),
        ];
        assert_eq!(
            serde_json::to_value(&ops).unwrap(),
            json!([
                {"op": "add", "path": "/driver_info/redfish_password", "value": "pw"},
                {"op": "replace", "path": "/instance_info/image_source", "value": "http://img"},
                {"op": "remove", "path": "/extra/foo"},
            ])
        );
        let debug = format!("{ops:?}");
        assert!(!debug.contains("\"pw\"") && debug.contains("http://img"), "{debug}");
    }
}
