//! The validating webhooks, through the real apiserver: the operator serves
//! them over TLS with operator-managed certificates and registers itself.

mod common;

use common::Env;
use crds::baremetalhost::BareMetalHost;
use crds::ironic::Ironic;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

async fn create<K>(api: &Api<K>, object: serde_json::Value) -> Result<K, kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    api.create(&PostParams::default(), &serde_json::from_value(object).expect("object parses")).await
}

fn denial(result: Result<impl std::fmt::Debug, kube::Error>) -> String {
    match result {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 400, "{status:?}");
            status.message
        }
        other => panic!("expected a denial, got {other:?}"),
    }
}

#[tokio::test]
async fn the_webhooks_reject_invalid_objects_with_the_field_path() -> anyhow::Result<()> {
    let env = Env::start("webhooks").await?;
    let mut config = env.operator_config();
    env.with_webhooks(&mut config)?;
    let _operator = env.start_operator(config).await?;

    let configurations: Api<ValidatingWebhookConfiguration> = Api::all(env.client());
    let registered = configurations.get(operator::webhook::CONFIGURATION_NAME).await?;
    assert_eq!(registered.webhooks.map(|w| w.len()), Some(4));

    let ironics: Api<Ironic> = Api::namespaced(env.client(), &env.ns);
    let message = denial(
        create(
            &ironics,
            json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic", "metadata": {"name": "bad"},
            "spec": {"networking": {"dhcp": {"networkCIDR": "192.0.2.0/24", "rangeBegin": "192.0.2.200",
                "rangeEnd": "192.0.2.10"}, "ipAddress": "192.0.2.2"}}}),
        )
        .await,
    );
    assert!(message.contains("spec.networking.dhcp"), "{message}");

    let hosts: Api<BareMetalHost> = Api::namespaced(env.client(), &env.ns);
    let message = denial(
        create(
            &hosts,
            json!({"apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost", "metadata": {"name": "bad"},
            "spec": {"bmc": {"address": "nonsense://10.0.0.1", "credentialsName": "bmc"}, "online": true}}),
        )
        .await,
    );
    assert!(message.contains("spec.bmc.address"), "{message}");

    // Valid objects pass.
    create(
        &ironics,
        json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic", "metadata": {"name": "good"}, "spec": {}}),
    )
    .await?;
    create(
        &hosts,
        json!({"apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost", "metadata": {"name": "good"},
        "spec": {"bmc": {"address": "redfish://10.0.0.1/redfish/v1/Systems/1", "credentialsName": "bmc"},
            "bootMACAddress": "52:54:00:12:34:56", "online": true}}),
    )
    .await?;

    // Updates are validated against the old object: the boot MAC is immutable.
    let message = denial(
        hosts
            .patch(
                "good",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"bootMACAddress": "52:54:00:65:43:21"}})),
            )
            .await,
    );
    assert!(message.contains("spec.bootMACAddress"), "{message}");
    // The same MAC in upper case is no change.
    hosts
        .patch(
            "good",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"bootMACAddress": "52:54:00:12:34:56".to_uppercase()}})),
        )
        .await?;
    Ok(())
}
