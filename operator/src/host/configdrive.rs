//! The config drive of a deployment, from the host's userData, networkData
//! and metaData Secrets, as baremetal-operator builds it: Ironic receives
//! the three parts as JSON and writes the ISO itself.

use ironic_client::{ConfigDriveData, JsonObject};
use k8s_openapi::ByteString;
use serde_json::Value;
use std::collections::BTreeMap;

/// The key of each part in its Secret; `value` is accepted for all three.
pub(super) const USER_DATA_KEY: &str = "userData";
pub(super) const NETWORK_DATA_KEY: &str = "networkData";
pub(super) const META_DATA_KEY: &str = "metaData";
const FALLBACK_KEY: &str = "value";

/// Why a config drive cannot be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(super) enum Error {
    #[error("{key} in Secret {secret} is not UTF-8")]
    NotText { secret: String, key: &'static str },
    #[error("{key} in Secret {secret} is not a YAML or JSON mapping: {message}")]
    NotAMapping { secret: String, key: &'static str, message: String },
}

/// The raw parts, as read from the Secrets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct HostConfigData {
    pub user_data: Option<String>,
    /// The Secret it came from, for messages.
    pub network_data: Option<(String, String)>,
    pub meta_data: Option<(String, String)>,
}

/// Who the host is, for the default metadata.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct HostIdentity {
    pub uid: String,
    pub namespace: String,
    pub name: String,
}

/// The value of `key` (or `value`) in a Secret's data.
pub(super) fn secret_text(
    secret: &str,
    data: &BTreeMap<String, ByteString>,
    key: &'static str,
) -> Result<Option<String>, Error> {
    let Some(bytes) = data.get(key).or_else(|| data.get(FALLBACK_KEY)) else {
        return Ok(None);
    };
    String::from_utf8(bytes.0.clone()).map(Some).map_err(|_| Error::NotText { secret: secret.to_string(), key })
}

fn mapping(secret: &str, key: &'static str, text: &str) -> Result<JsonObject, Error> {
    // Where the YAML breaks, never what it says: the parser's message quotes the Secret's
    // content, and this message goes to status, Events and logs.
    let value: Value = serde_saphyr::from_str(text).map_err(|e| Error::NotAMapping {
        secret: secret.to_string(),
        key,
        message: match e.location() {
            Some(at) => format!("not valid YAML (line {}, column {})", at.line(), at.column()),
            None => "not valid YAML".to_string(),
        },
    })?;
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(JsonObject::new()),
        other => {
            Err(Error::NotAMapping { secret: secret.to_string(), key, message: format!("found {}", kind(&other)) })
        }
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Builds the config drive: default metadata naming the host, overridden
/// by the metaData Secret; network data and user data as given.
pub(super) fn build(identity: &HostIdentity, data: &HostConfigData) -> Result<ConfigDriveData, Error> {
    let mut meta = JsonObject::new();
    for (key, value) in [
        ("uuid", identity.uid.as_str()),
        ("metal3-namespace", identity.namespace.as_str()),
        ("metal3-name", identity.name.as_str()),
        ("local-hostname", identity.name.as_str()),
        ("local_hostname", identity.name.as_str()),
        ("name", identity.name.as_str()),
    ] {
        meta.insert(key.to_string(), Value::String(value.to_string()));
    }
    if let Some((secret, text)) = &data.meta_data {
        meta.extend(mapping(secret, META_DATA_KEY, text)?);
    }
    let network_data = match &data.network_data {
        Some((secret, text)) if !text.trim().is_empty() => {
            Some(Value::Object(mapping(secret, NETWORK_DATA_KEY, text)?))
        }
        _ => None,
    };
    Ok(ConfigDriveData {
        meta_data: meta,
        user_data: data.user_data.clone().filter(|u| !u.is_empty()).map(Value::String),
        network_data,
        vendor_data: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn identity() -> HostIdentity {
        HostIdentity { uid: "uid-1".into(), namespace: "ns".into(), name: "host-0".into() }
    }

    #[test]
    fn defaults_name_the_host() {
        let drive = build(&identity(), &HostConfigData::default()).expect("builds");
        assert_eq!(
            Value::Object(drive.meta_data),
            json!({"uuid": "uid-1", "metal3-namespace": "ns", "metal3-name": "host-0",
                   "local-hostname": "host-0", "local_hostname": "host-0", "name": "host-0"})
        );
        assert!(drive.user_data.is_none() && drive.network_data.is_none());
    }

    #[test]
    fn secrets_fill_user_network_and_meta_data() {
        let data = HostConfigData {
            user_data: Some("#cloud-config\nusers: []\n".into()),
            network_data: Some(("nd".into(), "links:\n- id: eth0\n  type: phy\nnetworks: []\n".into())),
            meta_data: Some(("md".into(), "{\"local-hostname\": \"custom\", \"role\": \"worker\"}".into())),
        };
        let drive = build(&identity(), &data).expect("builds");
        assert_eq!(drive.user_data, Some(json!("#cloud-config\nusers: []\n")));
        assert_eq!(drive.network_data, Some(json!({"links": [{"id": "eth0", "type": "phy"}], "networks": []})));
        assert_eq!(drive.meta_data["local-hostname"], "custom");
        assert_eq!(drive.meta_data["role"], "worker");
        assert_eq!(drive.meta_data["uuid"], "uid-1");
    }

    #[test]
    fn malformed_parts_are_reported_with_their_secret() {
        let data = HostConfigData { network_data: Some(("nd".into(), "- a list".into())), ..Default::default() };
        let err = build(&identity(), &data).expect_err("a list is not network data");
        assert!(matches!(err, Error::NotAMapping { ref secret, .. } if secret == "nd"), "{err}");
    }

    #[test]
    fn malformed_yaml_is_located_never_quoted() {
        let sentinel = "hunter2-sentinel";
        let broken = format!("password: {sentinel}\n  - : ][ {sentinel}");
        let data = HostConfigData { meta_data: Some(("md".into(), broken)), ..Default::default() };
        let err = build(&identity(), &data).expect_err("not YAML").to_string();
        assert!(!err.contains(sentinel), "{err}");
        assert!(err.contains("not valid YAML"), "{err}");
    }

    #[test]
    fn secret_keys_fall_back_to_value() {
        let mut data = BTreeMap::new();
        data.insert("value".to_string(), ByteString(b"hello".to_vec()));
        assert_eq!(secret_text("s", &data, USER_DATA_KEY), Ok(Some("hello".into())));
        data.insert("userData".to_string(), ByteString(b"preferred".to_vec()));
        assert_eq!(secret_text("s", &data, USER_DATA_KEY), Ok(Some("preferred".into())));
        assert_eq!(secret_text("s", &BTreeMap::new(), USER_DATA_KEY), Ok(None));
        data.insert("metaData".to_string(), ByteString(vec![0xff, 0xfe]));
        assert!(secret_text("s", &data, META_DATA_KEY).is_err());
    }
}
