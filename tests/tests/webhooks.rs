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
    let env = Env::start_api_only("webhooks").await?;
    let mut config = env.operator_config();
    env.with_webhooks(&mut config)?;
    let _operator = env.start_operator(config).await?;

    let configurations: Api<ValidatingWebhookConfiguration> = Api::all(env.client());
    let registered = configurations.get(operator::testing::webhook::CONFIGURATION_NAME).await?;
    // Ironic, BareMetalHost, NodeSet, NodeSetService, HostFirmwareSettings, HostFirmwareComponents,
    // DataImage, BMCEventSubscription and PreprovisioningImage.
    assert_eq!(registered.webhooks.map(|w| w.len()), Some(9));

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

    // Updates are validated too: an annotation baremetal-operator acts on must parse.
    let message = denial(
        hosts
            .patch(
                "good",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"annotations": {"reboot.metal3.io": "{not json"}}})),
            )
            .await,
    );
    assert!(message.contains("reboot.metal3.io"), "{message}");
    // The boot MAC is immutable: the CRD's own CEL rule refuses it before the webhook is asked
    // (tests/tests/cel.rs has every rule; the webhook's twin serves clusters without CEL).
    match hosts
        .patch("good", &PatchParams::default(), &Patch::Merge(json!({"spec": {"bootMACAddress": "52:54:00:65:43:21"}})))
        .await
    {
        Err(kube::Error::Api(status)) if status.code == 422 => {
            assert!(status.message.contains("bootMACAddress can not be changed"), "{}", status.message)
        }
        other => panic!("expected the apiserver's refusal, got {other:?}"),
    }
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

/// A client acting as `user`, by impersonation from the admin's credentials.
async fn client_as(env: &Env, user: &str) -> anyhow::Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::read_from(env.cp.kubeconfig())?;
    let options = kube::config::KubeConfigOptions::default();
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &options).await?;
    config.auth_info.impersonate = Some(user.to_string());
    Ok(kube::Client::try_from(config)?)
}

/// Lets `user` write the `resources` (`(group, plural)`) of the test's namespace.
async fn grant(env: &Env, user: &str, resources: &[(&str, &str)]) -> anyhow::Result<()> {
    use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding};
    let rules: Vec<PolicyRule> = resources
        .iter()
        .map(|(group, plural)| PolicyRule {
            api_groups: Some(vec![group.to_string()]),
            resources: Some(vec![plural.to_string()]),
            verbs: ["get", "list", "create", "update", "patch"].map(String::from).to_vec(),
            ..Default::default()
        })
        .collect();
    let role: Role = serde_json::from_value(json!({"metadata": {"name": user}, "rules": rules}))?;
    Api::<Role>::namespaced(env.client(), &env.ns).create(&PostParams::default(), &role).await?;
    let binding: RoleBinding = serde_json::from_value(json!({"metadata": {"name": user},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": user},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}))?;
    Api::<RoleBinding>::namespaced(env.client(), &env.ns).create(&PostParams::default(), &binding).await?;
    Ok(())
}

fn service(name: &str, image: &str, account: Option<&str>) -> serde_json::Value {
    json!({"apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSetService", "metadata": {"name": name},
        "spec": {"job": {"image": image, "serviceAccountName": account}}})
}

#[tokio::test]
async fn a_service_is_admitted_only_from_someone_who_may_create_jobs_and_never_as_the_operators_account()
-> anyhow::Result<()> {
    use crds::nodesetservice::{NodeSetService, ReservedAccount};
    let env = Env::start_api_only("webhook-service-author").await?;
    let mut config = env.operator_config();
    env.with_webhooks(&mut config)?;
    config.reserved_account = Some(ReservedAccount { namespace: env.ns.clone(), name: "ferrometal".into() });
    let _operator = env.start_operator(config).await?;
    grant(&env, "alice", &[("ferrometal.io", "nodesetservices")]).await?;
    grant(&env, "bob", &[("ferrometal.io", "nodesetservices"), ("batch", "jobs")]).await?;
    let as_alice: Api<NodeSetService> = Api::namespaced(client_as(&env, "alice").await?, &env.ns);
    let as_bob: Api<NodeSetService> = Api::namespaced(client_as(&env, "bob").await?, &env.ns);

    // Alice may write NodeSetServices but not Jobs: what she writes would run as one.
    let message = denial(create(&as_alice, service("alices", "registry.local/netconf:1", None)).await);
    assert!(message.contains(&format!("alice may not create Jobs in namespace {}", env.ns)), "{message}");
    create(&as_bob, service("bobs", "registry.local/netconf:1", Some("netconf"))).await?;

    // Nor may she change what Bob's runs; a change that leaves the spec alone is hers to make.
    let image = json!({"spec": {"job": {"image": "registry.local/evil:1"}}});
    let message = denial(as_alice.patch("bobs", &PatchParams::default(), &Patch::Merge(&image)).await);
    assert!(message.contains("may not create Jobs"), "{message}");
    let label = json!({"metadata": {"labels": {"team": "a"}}});
    as_alice.patch("bobs", &PatchParams::default(), &Patch::Merge(&label)).await?;

    // Nobody runs a service as the operator itself, not even an admin.
    let admin: Api<NodeSetService> = Api::namespaced(env.client(), &env.ns);
    let message = denial(create(&admin, service("as-operator", "registry.local/netconf:1", Some("ferrometal"))).await);
    assert!(message.contains("spec.job.serviceAccountName"), "{message}");
    assert!(message.contains("operator's own ServiceAccount"), "{message}");
    Ok(())
}
