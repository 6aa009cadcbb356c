//! `driver_info`: how Ironic reaches a node's BMC, credentials included.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::redact::{REDACTED, Secret, is_secret_key};

#[derive(Clone, PartialEq)]
enum Entry {
    Plain(Value),
    Secret(Secret<Value>),
}

/// A node's `driver_info`. Values whose key names a secret
/// ([`crate::redact::is_secret_key`]: `redfish_password`, `ipmi_password`…)
/// are stored as [`Secret`]s: they never show in `Debug` output and
/// [`DriverInfo::get`] does not hand them out.
#[derive(Clone, Default, PartialEq)]
pub struct DriverInfo {
    entries: BTreeMap<String, Entry>,
}

impl DriverInfo {
    /// An empty `driver_info`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key`, as a secret when the key names one.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<Value>) -> &mut Self {
        let key = key.into();
        let value = value.into();
        let entry = if is_secret_key(&key) { Entry::Secret(Secret::new(value)) } else { Entry::Plain(value) };
        self.entries.insert(key, entry);
        self
    }

    /// Builder form of [`DriverInfo::insert`].
    #[must_use]
    pub fn with(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.insert(key, value);
        self
    }

    /// A non-secret value. Secret keys return `None`; use
    /// [`DriverInfo::secret`] for those.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self.entries.get(key)? {
            Entry::Plain(v) => Some(v),
            Entry::Secret(_) => None,
        }
    }

    /// A secret value. Ironic returns secrets masked as `"******"`.
    pub fn secret(&self, key: &str) -> Option<&Secret<Value>> {
        match self.entries.get(key)? {
            Entry::Secret(v) => Some(v),
            Entry::Plain(_) => None,
        }
    }

    /// Whether `key` is set, secret or not.
    pub fn contains_key(&self, key: &str) -> bool {
        self.entries.contains_key(key)
    }

    /// Removes `key`; returns whether it was set.
    pub fn remove(&mut self, key: &str) -> bool {
        self.entries.remove(key).is_some()
    }

    /// Every key, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl fmt::Debug for DriverInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for (k, entry) in &self.entries {
            match entry {
                Entry::Plain(v) => map.entry(k, v),
                Entry::Secret(_) => map.entry(k, &format_args!("{REDACTED}")),
            };
        }
        map.finish()
    }
}

/// Serialises secrets in clear text: this is what Ironic must receive.
impl Serialize for DriverInfo {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.entries.len()))?;
        for (k, entry) in &self.entries {
            match entry {
                Entry::Plain(v) => map.serialize_entry(k, v)?,
                Entry::Secret(v) => map.serialize_entry(k, v.expose())?,
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for DriverInfo {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct DriverInfoVisitor;

        impl<'de> Visitor<'de> for DriverInfoVisitor {
            type Value = DriverInfo;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a driver_info object")
            }

            fn visit_unit<E>(self) -> Result<DriverInfo, E> {
                Ok(DriverInfo::default())
            }

            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<DriverInfo, A::Error> {
                let mut info = DriverInfo::default();
                while let Some((k, v)) = access.next_entry::<String, Value>()? {
                    info.insert(k, v);
                }
                Ok(info)
            }
        }

        deserializer.deserialize_any(DriverInfoVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_hidden_from_debug_and_get_but_sent() {
        let info = DriverInfo::new()
            .with("redfish_address", "https://bmc")
            .with("redfish_username", "admin")
            .with("redfish_password", "hunter2");
        let debug = format!("{info:?}");
        assert!(!debug.contains("hunter2"), "{debug}");
        assert!(debug.contains("redfish_password") && debug.contains(REDACTED));
        assert!(info.get("redfish_password").is_none());
        assert_eq!(info.secret("redfish_password").map(|s| s.expose()), Some(&json!("hunter2")));
        assert_eq!(info.get("redfish_username"), Some(&json!("admin")));
        assert_eq!(
            serde_json::to_value(&info).unwrap(),
            json!({"redfish_address": "https://bmc", "redfish_username": "admin", "redfish_password": "hunter2"})
        );
    }

    #[test]
    fn deserialises_objects_and_null() {
        let info: DriverInfo =
            serde_json::from_value(json!({"ipmi_password": "******", "ipmi_address": "1.2.3.4"})).unwrap();
        assert!(info.secret("ipmi_password").is_some());
        assert_eq!(info.len(), 2);
        let empty: DriverInfo = serde_json::from_value(Value::Null).unwrap();
        assert!(empty.is_empty());
    }
}
