//! The Ironic controller end to end: deployment from ironic-standalone-operator-style
//! objects, rendered containers, rollouts on content changes, and deletion.

use crate::common::{Env, POLL};
use crate::ironic_common::*;
use crds::baremetalhost::BareMetalHost;
use ferrometal_tests::wait;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

#[tokio::test]
async fn a_minimal_irso_style_ironic_becomes_ready_keeps_its_spec_byte_for_byte_and_writes_status_only_on_change()
-> anyhow::Result<()> {
    let env = Env::start("ironic-minimal").await?;
    let operator = start(&env).await?;
    // The metal3 user guide's smallest Ironic.
    let created = create_ironic(
        &env,
        json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic",
            "metadata": {"name": "ironic", "namespace": env.ns},
            "spec": {"networking": {"interface": "em0", "ipAddress": "192.168.222.2"}}}),
    )
    .await?;
    // The spec as the apiserver stored it (with the CRD's defaults), as raw JSON, not through
    // our types: whatever the operator might add would show here.
    let raw = |name: &str| {
        let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
            env.client(),
            &env.ns,
            &kube::api::ApiResource::erase::<crds::ironic::Ironic>(&()),
        );
        let name = name.to_string();
        async move { anyhow::Ok(api.get(&name).await?) }
    };
    let spec_before = serde_json::to_string(&raw("ironic").await?.data["spec"])?;
    assert_eq!(created.metadata.generation, Some(1));

    let ironic = wait_ready(&env, "ironic", "38.0").await?;
    let status = ironic.status.clone().expect("status");
    assert_eq!(status.requested_version.as_deref(), Some("38.0"));
    assert_eq!(status.observed_generation, Some(1));
    // Secure by default: no TLS settings means the operator-managed CA, not plain HTTP.
    assert_eq!(status.api_endpoint, Some(format!("https://ironic.{}.svc:443", env.ns)));
    assert_eq!(status.tls.as_ref().and_then(|t| t.mode), Some(crds::ironic::TlsMode::Auto));
    assert_eq!(status.ca_ref.as_ref().and_then(|r| r.name.as_deref()), Some("ironic-ca-bundle"));

    // The generated credentials are named in status, never in spec.
    assert_eq!(status.api_credentials_secret_name.as_deref(), Some("ironic-api-credentials"));
    let stored = raw("ironic").await?;
    assert_eq!(serde_json::to_string(&stored.data["spec"])?, spec_before, "the stored spec is byte-for-byte unchanged");
    assert_eq!(ironic.metadata.generation, Some(1), "nobody wrote the spec");
    // And the operator's field manager owns nothing under spec: only its finalizer and status.
    for entry in stored.metadata.managed_fields.iter().flatten().filter(|e| e.manager.as_deref() == Some("ferrometal"))
    {
        let fields = serde_json::to_string(&entry.fields_v1)?;
        assert!(!fields.contains("\"f:spec\""), "the operator manages spec fields: {fields}");
    }
    assert!(ironic.spec.api_credentials_name.is_none());
    assert!(ironic.metadata.finalizers.iter().flatten().any(|f| f == operator::testing::ironic::names::FINALIZER));

    let secrets = api::<Secret>(&env);
    let credentials = secrets.get("ironic-api-credentials").await?;
    let data = credentials.data.expect("data");
    let password = String::from_utf8(data["password"].0.clone())?;
    assert_eq!(data["username"].0, b"ironic");
    assert_eq!(password.len(), 32);
    let htpasswd = secrets.get("ironic-htpasswd").await?.data.expect("data");
    let line = String::from_utf8(htpasswd["htpasswd"].0.clone())?;
    let (user, hash) = line.split_once(':').expect("user:hash");
    assert_eq!(user, "ironic");
    assert!(bcrypt::verify(&password, hash)?, "the htpasswd matches the generated password");

    let deployment = deployment(&env, "ironic-service").await?;
    let spec = deployment.spec.clone().expect("spec");
    assert_eq!(spec.replicas, Some(1));
    assert_eq!(spec.strategy.and_then(|s| s.type_).as_deref(), Some("Recreate"));
    let containers = template_containers(&deployment);
    let ironic_container = container(&containers, "ironic");
    assert_eq!(env_value(ironic_container, "PROVISIONING_IP").as_deref(), Some("192.168.222.2"));
    assert_eq!(env_value(ironic_container, "PROVISIONING_INTERFACE").as_deref(), Some("em0"));
    assert_eq!(ironic_container.image.as_deref(), Some("quay.io/metal3-io/ironic:release-38.0"));
    // With TLS, httpd terminates HTTPS and checks the password; Ironic behind it does not.
    assert!(has_env(container(&containers, "httpd"), "IRONIC_HTPASSWD"));
    assert!(!has_env(ironic_container, "IRONIC_HTPASSWD"));
    let service = api::<Service>(&env).get("ironic").await?;
    let ports: Vec<_> = service.spec.and_then(|s| s.ports).unwrap_or_default().iter().map(|p| p.port).collect();
    assert_eq!(ports, [443, 8080, 8443], "HTTPS by default, virtual media over TLS too");

    let note = wait_event(&env, "ironic", "IronicReady").await?;
    assert!(note.contains("38.0"), "{note}");

    // A reconcile that changes nothing writes no status.
    let writes = operator.metrics().status_write_count("ironic");
    let started = reconciles_started(&operator);
    let touch = json!({"metadata": {"annotations": {"example.com/touched": "yes"}}});
    ironics(&env).patch("ironic", &PatchParams::default(), &Patch::Merge(&touch)).await?;
    wait_for_reconcile_since(&operator, started).await?;
    assert_eq!(operator.metrics().status_write_count("ironic"), writes, "status is written only when it changes");
    Ok(())
}

fn full_ironic(namespace: &str) -> anyhow::Result<serde_json::Value> {
    let sample = crds::samples::ALL.iter().find(|s| s.file == "ironic-full.yaml").expect("full sample");
    let mut object: serde_json::Value = serde_saphyr::from_str(sample.yaml)?;
    object["metadata"]["namespace"] = json!(namespace);
    // The simulated node has none of the sample's labels.
    object["spec"]["nodeSelector"] = json!({"kubernetes.io/hostname": ferrometal_tests::pod_simulator::NODE_NAME});
    Ok(object)
}

#[tokio::test]
async fn a_full_ironic_renders_every_container_and_variable_and_high_availability_swaps_the_workload()
-> anyhow::Result<()> {
    let env = Env::start("ironic-full").await?;
    let (ca, cert, key) = certificate(&["ironic.example.com"], 90)?;
    create_secret(
        &env,
        "ironic-api-credentials",
        "kubernetes.io/basic-auth",
        &[("username", "admin"), ("password", "pw")],
    )
    .await?;
    // The sample's external database, made real: the operator checks it over TLS first.
    let database = external_database(&env, "ironic-db-credentials", true).await?;
    create_secret(&env, "ironic-tls", "kubernetes.io/tls", &[("tls.crt", &cert), ("tls.key", &key), ("ca.crt", &ca)])
        .await?;
    // The BMC CA is a Secret (bmcCA kind Secret, and the deprecated bmcCAName names one), the
    // image servers' CA a ConfigMap.
    create_secret(&env, "bmc-ca", "Opaque", &[("bmc.pem", &ca)]).await?;
    let config_map: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "image-server-ca"}, "data": {"ca.crt": ca.clone()}}))?;
    api::<ConfigMap>(&env).create(&PostParams::default(), &config_map).await?;
    let _operator = start(&env).await?;
    let mut full = full_ironic(&env.ns)?;
    full["spec"]["database"] = database.spec();
    create_ironic(&env, full).await?;
    wait_ready(&env, "ironic", "38.0").await?;

    let deployment = deployment(&env, "ironic-service").await?;
    let pod = deployment.spec.clone().expect("spec").template.spec.expect("pod spec");
    let names =
        |list: &[k8s_openapi::api::core::v1::Container]| list.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&pod.containers),
        ["ironic", "httpd", "ramdisk-logs", "dnsmasq", "keepalived", "ironic-prometheus-exporter", "sidecar"]
    );
    assert_eq!(names(pod.init_containers.as_deref().unwrap_or_default()), ["ramdisk-downloader", "prepare"]);
    assert_eq!(pod.host_network, Some(true));
    assert_eq!(
        pod.tolerations.as_ref().map(|t| t[0].key.clone()),
        Some(Some("node-role.kubernetes.io/control-plane".into()))
    );

    let expected: &[(&str, &str, &str)] = &[
        ("ironic", "PROVISIONING_IP", "192.0.2.2"),
        ("ironic", "PROVISIONING_INTERFACE", "eno1"),
        ("ironic", "PROVISIONING_MACS", "52:54:00:aa:bb:cc"),
        ("ironic", "LISTEN_ALL_INTERFACES", "false"),
        ("ironic", "IRONIC_PRIVATE_PORT", "unix"),
        ("ironic", "IRONIC_REVERSE_PROXY_SETUP", "true"),
        ("ironic", "IRONIC_KERNEL_PARAMS", "console=ttyS0 ipa-debug=1"),
        ("ironic", "IRONIC_IPA_COLLECTORS", "default,logs"),
        ("ironic", "IRONIC_ENABLE_VLAN_INTERFACES", "eno1,eno2.100"),
        ("ironic", "IRONIC_USE_MARIADB", "true"),
        ("ironic", "MARIADB_HOST", &database.host),
        ("ironic", "MARIADB_DATABASE", "ironic"),
        ("ironic", "IRONIC_SKIP_DBSYNC", "true"),
        ("ironic", "IRONIC_JSON_RPC_PORT", "6189"),
        ("ironic", "IRONIC_CACERT_FILE", "/certs/ironic/ca.crt"),
        ("ironic", "WEBSERVER_CACERT_FILE", "/certs/ca/trusted/ca.crt"),
        ("ironic", "OS_CONDUCTOR__DEPLOY_CALLBACK_TIMEOUT", "3600"),
        ("ironic", "OS_DEFAULT__DEBUG", "true"),
        ("ironic", "IRONIC_EXTERNAL_CALLBACK_URL", "https://ironic.example.com:6385"),
        ("ironic", "IRONIC_EXTERNAL_HTTP_URL", "https://images.example.com"),
        ("ironic", "SEND_SENSOR_DATA", "true"),
        ("ironic", "OS_SENSOR_DATA__INTERVAL", "120"),
        ("httpd", "HTTP_PORT", "6180"),
        ("dnsmasq", "DHCP_RANGE", "192.0.2.100,192.0.2.200,24;set:range_0,198.51.100.10,198.51.100.100,24"),
        ("dnsmasq", "DNS_IP", "192.0.2.53"),
        ("dnsmasq", "GATEWAY_IP", "192.0.2.1"),
        ("dnsmasq", "DHCP_HOSTS", "52:54:00:12:34:56,192.0.2.150"),
        ("dnsmasq", "DHCP_IGNORE", "tag:!known"),
        ("keepalived", "KEEPALIVED_VIRTUAL_IPS", "192.0.2.2,eno1,24 198.51.100.2,eno2,24"),
        ("ironic-prometheus-exporter", "FLASK_RUN_PORT", "9608"),
    ];
    for (name, variable, value) in expected {
        let c = container(&pod.containers, name);
        assert_eq!(env_value(c, variable).as_deref(), Some(*value), "{name}: {variable}");
    }
    assert!(has_env(container(&pod.containers, "httpd"), "IRONIC_HTPASSWD"), "httpd authenticates behind TLS");
    assert!(!has_env(container(&pod.containers, "ironic"), "IRONIC_HTPASSWD"));
    let downloader = container(pod.init_containers.as_deref().unwrap_or_default(), "ramdisk-downloader");
    assert_eq!(env_value(downloader, "IPA_BRANCH").as_deref(), Some("stable/2025.1"));
    let ironic_container = container(&pod.containers, "ironic");
    assert_eq!(
        ironic_container.volume_mounts.iter().flatten().map(|m| m.mount_path.as_str()).collect::<Vec<_>>(),
        ["/shared", "/certs/ironic", "/certs/ca/bmc", "/certs/ca/trusted", "/auth/mariadb", "/certs/ca/mariadb"]
    );

    // With a database the first installation ran the schema Job and the migrations Job.
    let jobs = api::<Job>(&env);
    for name in ["ironic-pre-none-to-38.0", "ironic-post-none-to-38.0"] {
        let job = jobs.get(name).await?;
        assert_eq!(job.status.and_then(|s| s.succeeded), Some(1), "{name}");
    }
    assert!(api::<Ingress>(&env).get("ironic").await.is_ok());
    // The sample's networkingService is accepted but not deployed, and the user is told so.
    let note = wait_event(&env, "ironic", "NotSupported").await?;
    assert!(note.contains("networkingService"), "{note}");
    // Its exporter wants a ServiceMonitor, whose API this cluster lacks: said, and Ready all the same.
    let ironic = wait_condition(&env, "ironic", "ServiceMonitorReady", "False", "ServiceMonitorCRDMissing").await?;
    assert_eq!(condition_of(&ironic, "Ready").map(|c| c.status).as_deref(), Some("True"));

    // highAvailability: a DaemonSet replaces the Deployment.
    let patch = json!({"spec": {"highAvailability": true,
        "networking": {"dhcp": null, "keepalived": null, "ipAddress": null},
        "prometheusExporter": {"disableServiceMonitor": true}}});
    ironics(&env).patch("ironic", &PatchParams::default(), &Patch::Merge(&patch)).await?;
    let ironic = wait_for(&env, "ironic", "the DaemonSet to be ready", STEP, |i| {
        condition_of(i, "Ready").is_some_and(|c| c.status == "True")
            && i.status.as_ref().and_then(|s| s.workload.as_ref()).and_then(|w| w.kind.as_deref()) == Some("DaemonSet")
    })
    .await?;
    assert_eq!(ironic.status.and_then(|s| s.installed_version).as_deref(), Some("38.0"));
    wait::until("the Deployment to be gone", STEP, POLL, || async {
        api::<Deployment>(&env).get_opt("ironic-service").await.ok().flatten().is_none().then_some(())
    })
    .await?;
    let daemonset = api::<DaemonSet>(&env).get("ironic-service").await?;
    let pod = daemonset.spec.expect("spec").template.spec.expect("pod spec");
    assert_eq!(names(&pod.containers), ["ironic", "httpd", "ramdisk-logs", "ironic-prometheus-exporter", "sidecar"]);
    let ironic_container = container(&pod.containers, "ironic");
    assert_eq!(env_value(ironic_container, "IRONIC_EXPOSE_JSON_RPC").as_deref(), Some("true"));
    assert_eq!(env_value(ironic_container, "IRONIC_DEPLOYMENT").as_deref(), Some("Conductor"));
    assert!(has_env(ironic_container, "IRONIC_HTPASSWD"), "JSON RPC needs the password");
    wait_event(&env, "ironic", "WorkloadReplaced").await?;
    Ok(())
}

#[tokio::test]
async fn a_referenced_secret_must_exist_and_its_content_change_rolls_the_pods_but_a_label_change_does_not()
-> anyhow::Result<()> {
    let env = Env::start("ironic-rollout").await?;
    let operator = start(&env).await?;
    create_ironic(
        &env,
        json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic", "metadata": {"name": "ironic"},
            "spec": {"apiCredentialsName": "api-credentials"}}),
    )
    .await?;
    // The Secret does not exist yet: a condition says so, and nothing is deployed.
    let waiting = wait_condition(&env, "ironic", "Degraded", "True", "InvalidLinkedResource").await?;
    let message = condition_of(&waiting, "Degraded").map(|c| c.message).unwrap_or_default();
    assert_eq!(message, "Secret api-credentials (from spec.apiCredentialsName) does not exist");
    assert!(api::<Deployment>(&env).get_opt("ironic-service").await?.is_none());
    // Creating it is enough: the controller watches the Secrets Ironics name.
    create_secret(&env, "api-credentials", "kubernetes.io/basic-auth", &[("username", "admin"), ("password", "one")])
        .await?;
    wait_ready(&env, "ironic", "38.0").await?;
    let pod = the_one_pod(&env, "ironic").await?;
    let before = deployment(&env, "ironic-service").await?;

    // Labels only: the operator looks (the Secret is watched) and leaves the pods alone.
    let secrets = api::<Secret>(&env);
    let started = reconciles_started(&operator);
    let labels = json!({"metadata": {"labels": {"team": "metal"}}});
    secrets.patch("api-credentials", &PatchParams::default(), &Patch::Merge(&labels)).await?;
    wait_for_reconcile_since(&operator, started).await?;
    let after_labels = deployment(&env, "ironic-service").await?;
    assert_eq!(after_labels.metadata.generation, before.metadata.generation, "the template did not change");
    assert_eq!(content_hash(&after_labels), content_hash(&before));
    assert_eq!(the_one_pod(&env, "ironic").await?, pod, "the same pod still runs");

    // New content: a new template, a new pod, and an htpasswd for the new password.
    let content = json!({"stringData": {"password": "two"}});
    secrets.patch("api-credentials", &PatchParams::default(), &Patch::Merge(&content)).await?;
    let rolled = wait::until_ok("the pod template to change", STEP, POLL, || async {
        let d = deployment(&env, "ironic-service").await?;
        Ok((content_hash(&d) != content_hash(&before)).then_some(d))
    })
    .await?;
    assert!(rolled.metadata.generation > before.metadata.generation);
    let new_pod = wait::until_ok("a new pod to replace the old one", STEP, POLL, || async {
        let uid = the_one_pod(&env, "ironic").await?;
        Ok((uid != pod).then_some(uid))
    })
    .await?;
    assert_ne!(new_pod, pod);
    let htpasswd = secrets.get("ironic-htpasswd").await?.data.expect("data");
    let line = String::from_utf8(htpasswd["htpasswd"].0.clone())?;
    assert!(bcrypt::verify("two", line.split_once(':').expect("user:hash").1)?);
    wait_ready(&env, "ironic", "38.0").await?;
    Ok(())
}

#[tokio::test]
async fn deleting_an_ironic_leaves_cleanup_to_the_garbage_collector_and_touches_no_host() -> anyhow::Result<()> {
    let env = Env::start("ironic-delete").await?;
    let hosts = api::<BareMetalHost>(&env);
    let host: BareMetalHost = serde_json::from_value(json!({"metadata": {"name": "host-0"},
        "spec": {"bmc": {"address": "redfish://192.0.2.10/redfish/v1/Systems/1", "credentialsName": "bmc"},
            "bootMACAddress": "52:54:00:12:34:56", "online": true}}))?;
    let host = hosts.create(&PostParams::default(), &host).await?;
    let user_ca: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "user-ca"}, "data": {"ca.crt": "PEM"}}))?;
    api::<ConfigMap>(&env).create(&PostParams::default(), &user_ca).await?;
    let _operator = start(&env).await?;
    create_ironic(
        &env,
        json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic", "metadata": {"name": "ironic"},
            "spec": {"tls": {"mode": "Auto", "trustedCA": {"name": "user-ca", "kind": "ConfigMap"}}}}),
    )
    .await?;
    wait_ready(&env, "ironic", "38.0").await?;
    let owned_secrets = ["ironic-api-credentials", "ironic-htpasswd", "ironic-tls-ca", "ironic-tls-auto"];
    for name in owned_secrets {
        api::<Secret>(&env).get(name).await?;
    }
    api::<ConfigMap>(&env).get("ironic-ca-bundle").await?;

    ironics(&env).delete("ironic", &DeleteParams::default()).await?;
    wait::until("the Ironic to be gone (finalizer removed)", STEP, POLL, || async {
        ironics(&env).get_opt("ironic").await.ok().flatten().is_none().then_some(())
    })
    .await?;
    wait::until_ok("the garbage collector to remove the owned objects", STEP, POLL, || async {
        let mut left = Vec::new();
        if api::<Deployment>(&env).get_opt("ironic-service").await?.is_some() {
            left.push("Deployment".to_string());
        }
        if api::<Service>(&env).get_opt("ironic").await?.is_some() {
            left.push("Service".to_string());
        }
        if api::<ConfigMap>(&env).get_opt("ironic-ca-bundle").await?.is_some() {
            left.push("ConfigMap".to_string());
        }
        for name in owned_secrets {
            if api::<Secret>(&env).get_opt(name).await?.is_some() {
                left.push(name.to_string());
            }
        }
        Ok(left.is_empty().then_some(()))
    })
    .await?;
    let after = hosts.get("host-0").await?;
    assert_eq!(after.metadata.resource_version, host.metadata.resource_version, "the BareMetalHost was not touched");
    assert!(api::<ConfigMap>(&env).get_opt("user-ca").await?.is_some(), "the user's ConfigMap stays");
    wait_event(&env, "ironic", "Deleting").await?;
    Ok(())
}
