//! The ValidatingWebhookConfiguration the operator applies when it manages
//! its own registration (render is pure; apply is the only side effect).

use super::admission::Kind;
use crate::kit::ledger::apply_params;
use crate::kit::{KubeError, Verb};
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    RuleWithOperations, ServiceReference, ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use kube::api::{Api, ObjectMeta, Patch};

/// The configuration's name.
pub const CONFIGURATION_NAME: &str = "ferrometal-validating-webhooks";

/// How the apiserver reaches the webhook server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientConfig {
    /// A base URL (`https://host:port`); paths are appended.
    Url(String),
    /// A Service in the cluster.
    Service { namespace: String, name: String, port: u16 },
}

impl ClientConfig {
    /// Parses `namespace/name[:port]` (port 443 by default).
    pub fn parse_service(text: &str) -> Option<Self> {
        let (namespace, rest) = text.split_once('/')?;
        let (name, port) = match rest.split_once(':') {
            Some((name, port)) => (name, port.parse().ok()?),
            None => (rest, 443),
        };
        (!namespace.is_empty() && !name.is_empty()).then(|| Self::Service {
            namespace: namespace.to_string(),
            name: name.to_string(),
            port,
        })
    }

    /// The DNS names and IP addresses a serving certificate must cover.
    pub fn subject_alt_names(&self) -> Vec<String> {
        match self {
            Self::Url(url) => url::Url::parse(url)
                .ok()
                .and_then(|u| u.host_str().map(|h| h.trim_matches(['[', ']']).to_string()))
                .into_iter()
                .collect(),
            Self::Service { namespace, name, .. } => vec![
                name.clone(),
                format!("{name}.{namespace}"),
                format!("{name}.{namespace}.svc"),
                format!("{name}.{namespace}.svc.cluster.local"),
            ],
        }
    }

    fn for_path(&self, path: &str, ca_bundle: Option<&str>) -> WebhookClientConfig {
        let ca_bundle = ca_bundle.map(|pem| ByteString(pem.as_bytes().to_vec()));
        match self {
            Self::Url(base) => WebhookClientConfig {
                url: Some(format!("{}{path}", base.trim_end_matches('/'))),
                ca_bundle,
                service: None,
            },
            Self::Service { namespace, name, port } => WebhookClientConfig {
                service: Some(ServiceReference {
                    namespace: namespace.clone(),
                    name: name.clone(),
                    path: Some(path.to_string()),
                    port: Some(i32::from(*port)),
                }),
                ca_bundle,
                url: None,
            },
        }
    }
}

/// One validating webhook per kind, for creates and updates.
pub(crate) fn render_configuration(client: &ClientConfig, ca_bundle: Option<&str>) -> ValidatingWebhookConfiguration {
    let webhooks = Kind::ALL
        .iter()
        .map(|kind| ValidatingWebhook {
            name: format!("v{}.ferrometal.io", kind.plural()),
            admission_review_versions: vec!["v1".to_string()],
            client_config: client.for_path(&kind.path(), ca_bundle),
            failure_policy: Some("Fail".to_string()),
            match_policy: Some("Equivalent".to_string()),
            side_effects: "None".to_string(),
            timeout_seconds: Some(10),
            rules: Some(vec![RuleWithOperations {
                api_groups: Some(vec![kind.group().to_string()]),
                api_versions: Some(vec![kind.version().to_string()]),
                operations: Some(vec!["CREATE".to_string(), "UPDATE".to_string()]),
                resources: Some(vec![kind.plural().to_string()]),
                scope: Some("Namespaced".to_string()),
            }]),
            ..Default::default()
        })
        .collect();
    ValidatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some(CONFIGURATION_NAME.to_string()),
            labels: Some([("app.kubernetes.io/managed-by".to_string(), "ferrometal".to_string())].into()),
            ..Default::default()
        },
        webhooks: Some(webhooks),
    }
}

/// Applies the configuration, with the kit's apply parameters (the one field manager, forced).
pub(super) async fn apply(
    client: &kube::Client,
    config: &ClientConfig,
    ca_bundle: Option<&str>,
) -> Result<(), KubeError> {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let configuration = render_configuration(config, ca_bundle);
    api.patch(CONFIGURATION_NAME, &apply_params(), &Patch::Apply(&configuration)).await.map_err(KubeError::of::<
        ValidatingWebhookConfiguration,
    >(
        Verb::Apply,
        CONFIGURATION_NAME,
    ))?;
    Ok(())
}

/// The caBundle the apiserver has now, when every webhook of the
/// configuration carries the same one; `None` when it cannot be read or the
/// webhooks disagree (a publication in progress).
pub(super) async fn published_ca_bundle(client: &kube::Client) -> Option<String> {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let configuration = api.get_opt(CONFIGURATION_NAME).await.ok().flatten()?;
    common_bundle(&configuration)
}

fn common_bundle(configuration: &ValidatingWebhookConfiguration) -> Option<String> {
    let mut bundles = configuration.webhooks.iter().flatten().map(|w| w.client_config.ca_bundle.as_ref());
    let first = bundles.next()??;
    bundles.all(|b| b == Some(first)).then(|| String::from_utf8(first.0.clone()).ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_reference_parses_with_and_without_port() {
        assert_eq!(
            ClientConfig::parse_service("ops/ferrometal"),
            Some(ClientConfig::Service { namespace: "ops".into(), name: "ferrometal".into(), port: 443 })
        );
        assert_eq!(
            ClientConfig::parse_service("ops/ferrometal:9443"),
            Some(ClientConfig::Service { namespace: "ops".into(), name: "ferrometal".into(), port: 9443 })
        );
        assert_eq!(ClientConfig::parse_service("ferrometal"), None);
        assert_eq!(ClientConfig::parse_service("ops/x:port"), None);
    }

    #[test]
    fn every_kind_gets_a_webhook_with_its_path_and_the_ca_bundle() {
        let config = render_configuration(&ClientConfig::Url("https://127.0.0.1:9443/".into()), Some("PEM"));
        let webhooks = config.webhooks.expect("webhooks");
        assert_eq!(webhooks.len(), Kind::ALL.len());
        let ironic = webhooks.iter().find(|w| w.name == "vironics.ferrometal.io").expect("ironic webhook");
        assert_eq!(ironic.client_config.url.as_deref(), Some("https://127.0.0.1:9443/validate/ironic"));
        assert_eq!(ironic.client_config.ca_bundle, Some(ByteString(b"PEM".to_vec())));
        let rule = &ironic.rules.as_ref().expect("rules")[0];
        assert_eq!(rule.api_groups, Some(vec!["ironic.metal3.io".to_string()]));
        assert_eq!(ironic.side_effects, "None");
        assert_eq!(ironic.failure_policy.as_deref(), Some("Fail"));
    }

    #[test]
    fn the_published_bundle_is_the_one_every_webhook_carries() {
        let client = ClientConfig::Url("https://127.0.0.1:9443".into());
        assert_eq!(common_bundle(&render_configuration(&client, Some("PEM"))).as_deref(), Some("PEM"));
        let mut mixed = render_configuration(&client, Some("PEM"));
        if let Some(first) = mixed.webhooks.as_mut().and_then(|w| w.first_mut()) {
            first.client_config.ca_bundle = Some(ByteString(b"OTHER".to_vec()));
        }
        assert_eq!(common_bundle(&mixed), None);
        assert_eq!(common_bundle(&render_configuration(&client, None)), None);
    }

    #[test]
    fn service_names_cover_every_dns_form() {
        let service = ClientConfig::Service { namespace: "ops".into(), name: "fm".into(), port: 443 };
        assert_eq!(service.subject_alt_names(), ["fm", "fm.ops", "fm.ops.svc", "fm.ops.svc.cluster.local"]);
        assert_eq!(ClientConfig::Url("https://127.0.0.1:9443".into()).subject_alt_names(), ["127.0.0.1"]);
    }
}
