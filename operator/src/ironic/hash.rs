//! The content hash on the pod template: a digest of every Secret and ConfigMap the pods use.
//!
//! Only the data counts (names, keys, values), never labels, annotations or resource
//! versions, so that editing a Secret's metadata leaves the pods alone while rotating a
//! password rolls them. (A serving certificate the pods reload in place is left out by the
//! caller: `tls::reloaded_in_place`.)

use super::linked::Source;
use sha2::{Digest, Sha256};

/// The digest of `sources`, independent of their order.
pub(crate) fn content_hash<'a>(sources: impl IntoIterator<Item = &'a Source>) -> String {
    let mut sorted: Vec<&Source> = sources.into_iter().collect();
    sorted.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
    sorted.dedup_by(|a, b| a.kind == b.kind && a.name == b.name);
    let mut hasher = Sha256::new();
    for source in sorted {
        // Length prefixes keep ("ab","c") and ("a","bc") apart.
        field(&mut hasher, source.kind.to_string().as_bytes());
        field(&mut hasher, source.name.as_bytes());
        hasher.update((source.data.len() as u64).to_be_bytes());
        for (key, value) in &source.data {
            field(&mut hasher, key.as_bytes());
            field(&mut hasher, value);
        }
    }
    hex::encode(&hasher.finalize()[..16])
}

fn field(hasher: &mut Sha256, bytes: &[u8]) {
    hasher.update((bytes.len() as u64).to_be_bytes());
    hasher.update(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ironic::linked::SourceKind;
    use k8s_openapi::ByteString;
    use k8s_openapi::api::core::v1::Secret;
    use kube::api::ObjectMeta;

    fn secret(name: &str, password: &str, labels: &[(&str, &str)]) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
                resource_version: Some(format!("{}", labels.len())),
                ..Default::default()
            },
            data: Some([("password".to_string(), ByteString(password.as_bytes().to_vec()))].into()),
            ..Default::default()
        }
    }

    #[test]
    fn a_content_change_changes_the_hash() {
        let before = content_hash([&Source::from_secret(&secret("creds", "one", &[]))]);
        let after = content_hash([&Source::from_secret(&secret("creds", "two", &[]))]);
        assert_ne!(before, after);
    }

    #[test]
    fn a_metadata_only_change_keeps_the_hash() {
        let before = content_hash([&Source::from_secret(&secret("creds", "one", &[]))]);
        let after = content_hash([&Source::from_secret(&secret("creds", "one", &[("team", "metal")]))]);
        assert_eq!(before, after);
    }

    #[test]
    fn order_does_not_matter_but_names_and_kinds_do() {
        let a = Source::from_secret(&secret("a", "x", &[]));
        let b = Source::from_secret(&secret("b", "x", &[]));
        assert_eq!(content_hash([&a, &b]), content_hash([&b, &a]));
        let renamed = Source { name: "c".into(), ..b.clone() };
        assert_ne!(content_hash([&a, &b]), content_hash([&a, &renamed]));
        let as_config_map = Source { kind: SourceKind::ConfigMap, ..b.clone() };
        assert_ne!(content_hash([&a, &b]), content_hash([&a, &as_config_map]));
    }
}
