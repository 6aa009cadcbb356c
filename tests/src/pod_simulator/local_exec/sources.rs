//! The Secrets and ConfigMaps a pod refers to, read from the apiserver once
//! per attempt to start it.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Client;
use kube::api::Api;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// The keys of a Secret or ConfigMap (`data` and `binaryData`), decoded.
pub(super) type Content = BTreeMap<String, Vec<u8>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    Secret,
    ConfigMap,
}

impl Kind {
    /// The kind as the kubelet's "not found" messages spell it.
    pub(super) fn lower(self) -> &'static str {
        match self {
            Kind::Secret => "secret",
            Kind::ConfigMap => "configmap",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Secret => "Secret",
            Kind::ConfigMap => "ConfigMap",
        })
    }
}

pub(super) struct Sources {
    client: Client,
    namespace: String,
    cache: HashMap<(Kind, String), Option<Content>>,
}

impl Sources {
    pub(super) fn new(client: Client, namespace: &str) -> Self {
        Self { client, namespace: namespace.to_string(), cache: HashMap::new() }
    }

    pub(super) fn namespace(&self) -> &str {
        &self.namespace
    }

    /// A token of ServiceAccount `account` of the pod's namespace, as the kubelet asks for one.
    pub(super) async fn token(
        &self,
        account: &str,
        audience: Option<&str>,
        seconds: Option<i64>,
    ) -> Result<String, kube::Error> {
        use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
        use k8s_openapi::api::core::v1::ServiceAccount;
        let api: Api<ServiceAccount> = Api::namespaced(self.client.clone(), &self.namespace);
        let spec = TokenRequestSpec {
            audiences: audience.map(|a| vec![a.to_string()]).unwrap_or_default(),
            expiration_seconds: Some(seconds.unwrap_or(3600)),
            ..Default::default()
        };
        let request = TokenRequest { spec, ..Default::default() };
        let issued = api.create_token_request(account, &kube::api::PostParams::default(), &request).await?;
        Ok(issued.status.map(|s| s.token).unwrap_or_default())
    }

    /// The content of `kind/name` in the pod's namespace, `None` when it
    /// does not exist.
    pub(super) async fn get(&mut self, kind: Kind, name: &str) -> Result<Option<Content>, kube::Error> {
        let key = (kind, name.to_string());
        if let Some(content) = self.cache.get(&key) {
            return Ok(content.clone());
        }
        let content = match kind {
            Kind::Secret => {
                let api: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
                api.get_opt(name).await?.map(|s| s.data.into_iter().flatten().map(|(k, v)| (k, v.0)).collect())
            }
            Kind::ConfigMap => {
                let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
                api.get_opt(name).await?.map(|c| {
                    let binary = c.binary_data.into_iter().flatten().map(|(k, v)| (k, v.0));
                    c.data.into_iter().flatten().map(|(k, v)| (k, v.into_bytes())).chain(binary).collect()
                })
            }
        };
        self.cache.insert(key, content.clone());
        Ok(content)
    }
}
