//! The Ironic controller's three TLS modes end to end: the user's Secret, Auto (an
//! operator-managed CA, with renewal) and cert-manager (the test plays the issuer).

use crate::common::{Env, POLL};
use crate::ironic_common::*;
use ferrometal_tests::wait;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use operator::testing::pki as auto;
use serde_json::json;

fn mounted_secret(deployment: &Deployment, volume: &str) -> Option<String> {
    let pod = deployment.spec.as_ref()?.template.spec.as_ref()?;
    pod.volumes.iter().flatten().find(|v| v.name == volume)?.secret.as_ref()?.secret_name.clone()
}

#[tokio::test]
async fn a_user_tls_secret_serves_the_api_through_httpd_and_its_ca_is_published() -> anyhow::Result<()> {
    let env = Env::start("ironic-tls-secret").await?;
    let host = format!("ironic.{}.svc", env.ns);
    let (ca, cert, key) = certificate(&[&host], 90)?;
    create_secret(&env, "ironic-cert", "kubernetes.io/tls", &[("tls.crt", &cert), ("tls.key", &key), ("ca.crt", &ca)])
        .await?;
    let _operator = start(&env).await?;
    create_ironic(
        &env,
        json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic", "metadata": {"name": "ironic"},
            "spec": {"tls": {"certificateName": "ironic-cert"}}}),
    )
    .await?;
    let ironic = wait_ready(&env, "ironic", "38.0").await?;
    let status = ironic.status.expect("status");
    assert_eq!(status.api_endpoint, Some(format!("https://{host}:443")));
    let tls = status.tls.expect("tls status");
    assert_eq!(tls.mode, Some(crds::ironic::TlsMode::Secret));
    assert_eq!(tls.serving_secret_name.as_deref(), Some("ironic-cert"));
    let expiry = auto::inspect(&cert).expect("test certificate parses").not_after;
    assert_eq!(tls.not_after.map(|t| t.0.as_second()), Some(expiry));
    let ca_ref = status.ca_ref.expect("caRef");
    assert_eq!((ca_ref.name.as_deref(), ca_ref.key.as_deref()), (Some("ironic-ca-bundle"), Some("ca.crt")));
    let bundle = api::<ConfigMap>(&env).get("ironic-ca-bundle").await?;
    assert_eq!(bundle.data.and_then(|d| d.get("ca.crt").cloned()), Some(ca));

    let deployment = deployment(&env, "ironic-service").await?;
    assert_eq!(mounted_secret(&deployment, "cert-ironic").as_deref(), Some("ironic-cert"));
    let containers = template_containers(&deployment);
    let ironic_container = container(&containers, "ironic");
    assert_eq!(env_value(ironic_container, "IRONIC_PRIVATE_PORT").as_deref(), Some("unix"));
    assert_eq!(env_value(ironic_container, "IRONIC_CACERT_FILE").as_deref(), Some("/certs/ironic/ca.crt"));
    assert!(ironic_container.ports.is_none(), "httpd serves the API");
    let httpd = container(&containers, "httpd");
    let ports: Vec<_> = httpd.ports.iter().flatten().filter_map(|p| p.name.clone()).collect();
    assert_eq!(ports, ["image-svc", "ironic-api", "image-svc-tls"]);
    assert_eq!(env_value(httpd, "VMEDIA_TLS_PORT").as_deref(), Some("6183"));
    let service = api::<Service>(&env).get("ironic").await?;
    let ports: Vec<_> = service.spec.and_then(|s| s.ports).unwrap_or_default().iter().map(|p| p.port).collect();
    assert_eq!(ports, [443, 8080, 8443]);
    Ok(())
}

#[tokio::test]
async fn auto_tls_issues_a_ca_and_serving_certificate_and_renews_one_about_to_expire() -> anyhow::Result<()> {
    let env = Env::start("ironic-tls-auto").await?;
    let operator = start(&env).await?;
    create_ironic(
        &env,
        json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic", "metadata": {"name": "ironic"},
            "spec": {"tls": {"mode": "Auto"}}}),
    )
    .await?;
    let ironic = wait_ready(&env, "ironic", "38.0").await?;
    let status = ironic.status.expect("status");
    let tls = status.tls.expect("tls status");
    assert_eq!(tls.ca_secret_name.as_deref(), Some("ironic-tls-ca"));
    assert_eq!(tls.serving_secret_name.as_deref(), Some("ironic-tls-auto"));

    let secrets = api::<Secret>(&env);
    let ca_secret = secrets.get("ironic-tls-ca").await?;
    let ca = secret_text(&ca_secret, "ca.crt");
    let ca_info = auto::inspect(&ca).expect("CA parses");
    assert!(ca_info.is_ca);
    let serving = secrets.get("ironic-tls-auto").await?;
    let info = auto::inspect(&secret_text(&serving, "tls.crt")).expect("certificate parses");
    assert_eq!(info.issuer, ca_info.subject, "signed by the published CA");
    let ns = &env.ns;
    assert_eq!(
        info.dns,
        [
            "ironic".to_string(),
            format!("ironic.{ns}"),
            format!("ironic.{ns}.svc"),
            format!("ironic.{ns}.svc.cluster.local")
        ]
    );
    // No fixed provisioning IP: Ironic serves on its node's address, the simulated node's.
    assert_eq!(info.ips, ["127.0.0.1".parse::<std::net::IpAddr>()?]);
    assert_eq!(tls.renewal_time.map(|t| t.0.as_second()), Some(info.renewal_at()));
    let bundle = api::<ConfigMap>(&env).get("ironic-ca-bundle").await?;
    assert_eq!(bundle.data.and_then(|d| d.get("ca.crt").cloned()), Some(ca.clone()));
    wait_event(&env, "ironic", "CertificateIssued").await?;

    // A serving certificate issued a day ago that expires in a minute.
    let pod = the_one_pod(&env, "ironic").await?;
    let started = reconciles_started(&operator);
    let before = deployment(&env, "ironic-service").await?;
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let pair = auto::CertifiedPem { cert: ca.clone(), key: secret_text(&ca_secret, "ca.key") };
    let names = operator::testing::ironic::tls::SubjectAltNames { dns: info.dns.clone(), ips: info.ips.clone() };
    let expiring = auto::issue_serving(&pair, &names, 1, now - 86_400 + 60)?;
    let patch = json!({"stringData": {"tls.crt": expiring.cert, "tls.key": expiring.key}});
    secrets.patch("ironic-tls-auto", &PatchParams::default(), &Patch::Merge(&patch)).await?;

    let original = secret_text(&serving, "tls.crt");
    let renewed = wait::until_ok("the serving certificate to be renewed", STEP, POLL, || async {
        let pem = secret_text(&secrets.get("ironic-tls-auto").await?, "tls.crt");
        if pem == original {
            // A reconcile already under way read the Secret before the patch and applied the
            // certificate it knew back over it: expire it again.
            secrets.patch("ironic-tls-auto", &PatchParams::default(), &Patch::Merge(&patch)).await?;
            return Ok(None);
        }
        Ok(auto::inspect(&pem).filter(|i| i.not_after > now + 300 * 86_400))
    })
    .await?;
    assert_eq!(renewed.issuer, ca_info.subject, "the same CA signs the renewed certificate");
    assert_eq!(secret_text(&secrets.get("ironic-tls-ca").await?, "ca.crt"), ca, "the CA is kept");
    assert_kept(&env, &operator, started, &pod, &before).await?;
    wait_ready(&env, "ironic", "38.0").await?;
    Ok(())
}

fn certificate_crd() -> anyhow::Result<CustomResourceDefinition> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "certificates.cert-manager.io"},
        "spec": {"group": "cert-manager.io", "scope": "Namespaced",
            "names": {"kind": "Certificate", "listKind": "CertificateList", "plural": "certificates", "singular": "certificate"},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}
    }))?)
}

#[tokio::test]
async fn cert_manager_tls_requests_a_certificate_waits_for_its_secret_and_keeps_the_pod_on_rotation()
-> anyhow::Result<()> {
    let env = Env::start("ironic-tls-cm").await?;
    env.cp.install_crds(&[certificate_crd()?]).await?;
    let operator = start(&env).await?;
    create_ironic(
        &env,
        json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic", "metadata": {"name": "ironic"},
            "spec": {"tls": {"mode": "CertManager",
                "certManager": {"issuerRef": {"name": "metal3-ca", "kind": "ClusterIssuer"}, "duration": "2160h"}}}}),
    )
    .await?;
    let waiting = wait_condition(&env, "ironic", "Progressing", "True", "WaitingForCertificate").await?;
    let ready = condition_of(&waiting, "Ready").expect("Ready");
    assert_eq!((ready.status.as_str(), ready.reason.as_str()), ("False", "DeploymentInProgress"));
    assert!(ready.message.contains("waiting for cert-manager to issue Secret ironic-tls"), "{}", ready.message);
    assert!(api::<Deployment>(&env).get_opt("ironic-service").await?.is_none(), "nothing to mount yet");

    let certificates: Api<DynamicObject> =
        Api::namespaced_with(env.client(), &env.ns, &operator::testing::ironic::tls::cert_manager::api_resource());
    let requested = certificates.get("ironic-tls").await?;
    let spec = &requested.data["spec"];
    let ns = &env.ns;
    assert_eq!(spec["secretName"], "ironic-tls");
    assert_eq!(spec["issuerRef"], json!({"name": "metal3-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}));
    assert_eq!(spec["privateKey"]["rotationPolicy"], "Always");
    assert_eq!(spec["duration"], "2160h");
    assert_eq!(
        spec["dnsNames"],
        json!(["ironic", format!("ironic.{ns}"), format!("ironic.{ns}.svc"), format!("ironic.{ns}.svc.cluster.local")])
    );
    assert_eq!(spec["ipAddresses"], json!(["127.0.0.1"]));
    let owner = requested.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(owner.first().map(|o| o.kind.as_str()), Some("Ironic"));

    // Play the issuer.
    let (ca, cert, key) = certificate(&[&format!("ironic.{ns}.svc")], 90)?;
    create_secret(&env, "ironic-tls", "kubernetes.io/tls", &[("tls.crt", &cert), ("tls.key", &key), ("ca.crt", &ca)])
        .await?;
    let ironic = wait_ready(&env, "ironic", "38.0").await?;
    let status = ironic.status.expect("status");
    assert_eq!(status.tls.and_then(|t| t.certificate_name).as_deref(), Some("ironic-tls"));
    let deployment_before = deployment(&env, "ironic-service").await?;
    assert_eq!(mounted_secret(&deployment_before, "cert-ironic").as_deref(), Some("ironic-tls"));
    let bundle = api::<ConfigMap>(&env).get("ironic-ca-bundle").await?;
    assert_eq!(bundle.data.and_then(|d| d.get("ca.crt").cloned()), Some(ca));

    // cert-manager renews: the one pod reloads it, nothing rolls.
    let pod = the_one_pod(&env, "ironic").await?;
    let started = reconciles_started(&operator);
    let (ca, cert, key) = certificate(&[&format!("ironic.{ns}.svc")], 90)?;
    let patch = json!({"stringData": {"tls.crt": cert, "tls.key": key, "ca.crt": ca}});
    api::<Secret>(&env).patch("ironic-tls", &PatchParams::default(), &Patch::Merge(&patch)).await?;
    wait::until_ok("the renewed CA published", STEP, POLL, || async {
        let bundle = api::<ConfigMap>(&env).get("ironic-ca-bundle").await?;
        Ok((bundle.data.and_then(|d| d.get("ca.crt").cloned()).as_ref() == Some(&ca)).then_some(()))
    })
    .await?;
    assert_kept(&env, &operator, started, &pod, &deployment_before).await?;
    Ok(())
}
