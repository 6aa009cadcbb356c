//! The Secrets a host refers to: BMC credentials, and the user, network and
//! meta data of its config drive. Their content never reaches logs, events
//! or status; only the credentials Secret's resourceVersion is recorded, to
//! notice rotations.

use crate::host::configdrive::{self, HostConfigData};
use crate::host::driver::BmcCredentials;
use crate::kit::names::{CrossNamespace, same_namespace};
use crate::kit::{KubeError, Verb};
use crds::baremetalhost::credentials::{PASSWORD_KEY, USERNAME_KEY, validate_bmc_credentials};
use crds::baremetalhost::{BareMetalHost, CredentialsStatus};
use ironic_client::Secret as SecretValue;
use k8s_openapi::api::core::v1::{Secret, SecretReference};
use kube::api::Api;
use kube::{Client, ResourceExt};

/// The host's BMC credentials, as far as they could be read.
#[derive(Clone, Debug, Default)]
pub(super) struct Credentials {
    pub value: Option<BmcCredentials>,
    /// What to record as tried/good credentials.
    pub status: Option<CredentialsStatus>,
    /// Why they could not be read.
    pub problem: Option<String>,
}

impl Credentials {
    pub(super) fn version(&self) -> Option<&str> {
        self.status.as_ref().and_then(|s| s.credentials_version.as_deref())
    }
}

/// Reads the BMC credentials Secret (`username`, `password`); nothing for a `fake` BMC, which
/// talks to no BMC.
pub(super) async fn credentials(client: &Client, host: &BareMetalHost, fake: bool) -> Result<Credentials, KubeError> {
    let Some(bmc) = host.spec.bmc.as_ref().filter(|_| !fake) else {
        return Ok(Credentials::default());
    };
    let name = bmc.credentials_name.trim();
    if name.is_empty() {
        return Ok(Credentials::default());
    }
    let namespace = host.namespace().unwrap_or_default();
    let api: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    let Some(secret) = api.get_opt(name).await.map_err(KubeError::of::<Secret>(Verb::Get, name))? else {
        return Ok(Credentials {
            problem: Some(format!("the BMC credentials Secret {namespace}/{name} does not exist")),
            ..Credentials::default()
        });
    };
    let status = CredentialsStatus {
        credentials: Some(SecretReference { name: Some(name.to_string()), namespace: Some(namespace.clone()) }),
        credentials_version: secret.resource_version(),
    };
    let data = secret.data.unwrap_or_default();
    // The rule the webhook applies too: both keys, UTF-8, a user name and a non-empty password.
    let (value, problem) = match validate_bmc_credentials(&data) {
        Ok(()) => {
            let text =
                |key: &str| data.get(key).map(|v| String::from_utf8_lossy(&v.0).into_owned()).unwrap_or_default();
            let username = text(USERNAME_KEY).trim().to_string();
            (Some(BmcCredentials { username, password: SecretValue::new(text(PASSWORD_KEY)) }), None)
        }
        Err(err) => (None, Some(format!("{err} ({namespace}/{name})"))),
    };
    Ok(Credentials { value, status: Some(status), problem })
}

/// Why the config drive's data could not be read.
#[derive(Debug, thiserror::Error)]
pub(super) enum Error {
    #[error(transparent)]
    Read(#[from] KubeError),
    #[error("Secret {0} does not exist")]
    Missing(String),
    #[error("{0}")]
    CrossNamespace(#[from] CrossNamespace),
    #[error(transparent)]
    Content(#[from] configdrive::Error),
}

async fn read(
    client: &Client,
    host: &BareMetalHost,
    field: &'static str,
    reference: Option<(&str, Option<&str>)>,
    key: &'static str,
) -> Result<Option<(String, String)>, Error> {
    let Some((name, namespace)) = reference.filter(|(n, _)| !n.is_empty()) else {
        return Ok(None);
    };
    // Refused here, not only at admission: the webhook is optional, and a Secret of another
    // namespace would end up in the config drive of a machine this host's owner controls.
    let own = host.namespace().unwrap_or_default();
    let namespace = same_namespace(field, &own, namespace)?.to_string();
    let full = format!("{namespace}/{name}");
    let api: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    let secret = api.get_opt(name).await.map_err(KubeError::of::<Secret>(Verb::Get, &full))?;
    let secret = secret.ok_or_else(|| Error::Missing(full.clone()))?;
    let data = secret.data.unwrap_or_default();
    Ok(configdrive::secret_text(&full, &data, key)?.map(|text| (full, text)))
}

fn reference(r: &Option<SecretReference>) -> Option<(&str, Option<&str>)> {
    r.as_ref().and_then(|r| r.name.as_deref().map(|n| (n, r.namespace.as_deref())))
}

/// Reads the user, network and meta data Secrets. Network data falls back
/// to the preprovisioning network data, as in baremetal-operator.
pub(super) async fn host_config_data(client: &Client, host: &BareMetalHost) -> Result<HostConfigData, Error> {
    let spec = &host.spec;
    let user_data = read(client, host, "spec.userData", reference(&spec.user_data), configdrive::USER_DATA_KEY).await?;
    let (network_field, network_ref) = match reference(&spec.network_data) {
        Some(r) => ("spec.networkData", Some(r)),
        None => (
            "spec.preprovisioningNetworkDataName",
            spec.preprovisioning_network_data_name.as_deref().map(|n| (n, None)),
        ),
    };
    let network_data = read(client, host, network_field, network_ref, configdrive::NETWORK_DATA_KEY).await?;
    let meta_data = read(client, host, "spec.metaData", reference(&spec.meta_data), configdrive::META_DATA_KEY).await?;
    Ok(HostConfigData { user_data: user_data.map(|(_, text)| text), network_data, meta_data })
}

/// The Secrets a host names, in its namespace: a change to any of them must reach it
/// (`index`).
pub(super) fn secrets_named(host: &BareMetalHost) -> Vec<String> {
    let spec = &host.spec;
    let name = |r: &Option<SecretReference>| r.as_ref().and_then(|r| r.name.clone());
    let mut names: Vec<String> = [
        spec.bmc.as_ref().map(|b| b.credentials_name.clone()),
        name(&spec.user_data),
        name(&spec.network_data),
        name(&spec.meta_data),
        spec.preprovisioning_network_data_name.clone(),
    ]
    .into_iter()
    .flatten()
    .filter(|n| !n.is_empty())
    .collect();
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::baremetalhost::{BareMetalHostSpec, BmcDetails};

    #[test]
    fn hosts_refer_to_their_credentials_and_config_secrets() {
        let host = BareMetalHost::new(
            "h",
            BareMetalHostSpec {
                bmc: Some(BmcDetails {
                    address: "fake://h".into(),
                    credentials_name: "bmc".into(),
                    ..Default::default()
                }),
                user_data: Some(SecretReference { name: Some("ud".into()), namespace: None }),
                preprovisioning_network_data_name: Some("nd".into()),
                ..Default::default()
            },
        );
        assert_eq!(secrets_named(&host), ["bmc", "nd", "ud"]);
    }
}
