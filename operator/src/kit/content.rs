//! The content of a Secret or ConfigMap as a pod mounting it sees it: what controllers hash
//! (a content change rolls pods, a metadata change does not) and read keys from. Its `Debug`
//! shows the keys, never the values: a Secret's content must never reach a log.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use std::collections::BTreeMap;
use std::fmt;

/// Secret or ConfigMap: the API's one type, so that what a NodeSet names and what the kit
/// reads are the same kind.
pub(crate) use crds::nodeset::sources::SourceKind;

/// The content of a Secret or ConfigMap. Metadata is left out on purpose: only content
/// changes roll the pods.
#[derive(Clone, PartialEq, Eq)]
pub struct Source {
    pub kind: SourceKind,
    pub name: String,
    pub data: BTreeMap<String, Vec<u8>>,
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Source")
            .field("kind", &self.kind)
            .field("name", &self.name)
            .field("keys", &self.data.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Source {
    pub fn from_secret(secret: &Secret) -> Self {
        let mut data: BTreeMap<String, Vec<u8>> =
            secret.data.iter().flatten().map(|(k, v)| (k.clone(), v.0.clone())).collect();
        // stringData is write-only, but a test double or an old client may still show it.
        for (k, v) in secret.string_data.iter().flatten() {
            data.entry(k.clone()).or_insert_with(|| v.as_bytes().to_vec());
        }
        Self { kind: SourceKind::Secret, name: secret.metadata.name.clone().unwrap_or_default(), data }
    }

    pub fn from_config_map(config_map: &ConfigMap) -> Self {
        let mut data: BTreeMap<String, Vec<u8>> =
            config_map.data.iter().flatten().map(|(k, v)| (k.clone(), v.as_bytes().to_vec())).collect();
        for (k, v) in config_map.binary_data.iter().flatten() {
            data.insert(k.clone(), v.0.clone());
        }
        Self { kind: SourceKind::ConfigMap, name: config_map.metadata.name.clone().unwrap_or_default(), data }
    }

    /// A key's value as text.
    pub fn text(&self, key: &str) -> Option<&str> {
        self.data.get(key).and_then(|v| std::str::from_utf8(v).ok())
    }

    /// True when `key` is present with a non-empty value.
    pub fn has(&self, key: &str) -> bool {
        self.data.get(key).is_some_and(|v| !v.is_empty())
    }

    /// The first key, sorted, for references that name none.
    pub fn first_key(&self) -> Option<&str> {
        self.data.keys().next().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_keys_and_never_values() {
        let source = Source {
            kind: SourceKind::Secret,
            name: "creds".into(),
            data: [("password".to_string(), b"sentinel-secret".to_vec())].into(),
        };
        let shown = format!("{source:?}");
        assert!(shown.contains("password") && shown.contains("creds"), "{shown}");
        assert!(!shown.contains("sentinel-secret"), "{shown}");
    }
}
