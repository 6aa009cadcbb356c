//! The checked-in `config/` as kustomize renders it (kubectl's own kustomize, no servers):
//! each overlay yields exactly the objects the generator meant, the cert-manager overlay's
//! patch yields the cert-manager Deployment, and the optional features stay out of the
//! default install. (That `config/` is what `ferrometal manifests` writes is checked by the
//! operator's unit tests.)

use crate::install_common::*;
use operator::testing::install::manifests::{webhook, workload};
use operator::testing::install::rbac::{Feature, render};
use operator::testing::install::{Layout, WebhookCertificates};
use serde_json::Value;

fn value<T: serde::Serialize>(object: &T) -> Value {
    serde_json::to_value(object).expect("json")
}

fn sorted_volumes(mut deployment: Value) -> Value {
    let by_name = |list: &mut Value| {
        if let Some(items) = list.as_array_mut() {
            items.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        }
    };
    let pod = &mut deployment["spec"]["template"]["spec"];
    by_name(&mut pod["volumes"]);
    by_name(&mut pod["containers"][0]["volumeMounts"]);
    deployment
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| kind_of(o) == kind && name_of(o) == name)
        .unwrap_or_else(|| panic!("no {kind} {name} among {:?}", objects.iter().map(name_of).collect::<Vec<_>>()))
}

#[test]
fn config_default_renders_the_cluster_wide_install_with_operator_managed_certificates() {
    ferrometal_tests::init();
    let layout = Layout::default();
    let objects = render(&config_dir(), "default").expect("kustomize renders config/default");
    assert_eq!(
        find(&objects, "Deployment", "ferrometal"),
        &value(&workload::deployment(&layout, WebhookCertificates::SelfManaged))
    );
    assert_eq!(
        find(&objects, "ValidatingWebhookConfiguration", operator::testing::webhook::CONFIGURATION_NAME),
        &value(&webhook::configuration(&layout, false))
    );
    let mut expected_rbac = render::objects(&layout.grantee(), Feature::Always);
    expected_rbac.extend(render::objects(&layout.grantee(), Feature::WebhookSelfManaged));
    for role in &expected_rbac {
        assert_eq!(find(&objects, kind_of(role), name_of(role)), role);
    }
    let crds = objects.iter().filter(|o| kind_of(o) == "CustomResourceDefinition").count();
    assert_eq!(crds, crds::all_crds().len());
    // Optional features are not part of it: no nodes, no cert-manager Certificates.
    let granted: Vec<String> = objects
        .iter()
        .filter(|o| matches!(kind_of(o), "ClusterRole" | "Role"))
        .flat_map(|o| o["rules"].as_array().cloned().unwrap_or_default())
        .map(|rule| rule.to_string())
        .collect();
    assert!(
        !granted.iter().any(|rule| rule.contains("\"nodes\"") || rule.contains("cert-manager.io")),
        "optional permissions leaked in: {granted:?}"
    );
    for kind in ["Namespace", "ServiceAccount", "Service"] {
        assert!(objects.iter().any(|o| kind_of(o) == kind), "{kind}");
    }
}

#[test]
fn the_cert_manager_overlay_mounts_cert_managers_certificate_and_lets_cainjector_fill_the_ca() {
    ferrometal_tests::init();
    let layout = Layout::default();
    let objects = render(&config_dir(), "cert-manager").expect("kustomize renders config/cert-manager");
    // The patch's mount and volume join the others; their order does not matter.
    let rendered = sorted_volumes(find(&objects, "Deployment", "ferrometal").clone());
    let expected = sorted_volumes(value(&workload::deployment(&layout, WebhookCertificates::CertManager)));
    if let Some(difference) = first_difference(&rendered, &expected, "deployment") {
        panic!("the patch does not turn the Deployment into the cert-manager one: {difference}");
    }
    assert_eq!(
        find(&objects, "ValidatingWebhookConfiguration", operator::testing::webhook::CONFIGURATION_NAME),
        &value(&webhook::configuration(&layout, true))
    );
    let certificate = find(&objects, "Certificate", webhook::CERTIFICATE);
    assert_eq!(certificate["spec"]["secretName"], operator::testing::install::CERT_MANAGER_SECRET);
    assert!(
        !objects.iter().any(|o| name_of(o) == "ferrometal-webhook-configuration"),
        "no permission to write webhook configurations: cert-manager provides the CA"
    );
}

#[test]
fn each_optional_feature_renders_only_its_own_roles() {
    ferrometal_tests::init();
    let layout = Layout::default();
    for feature in [Feature::CertManagerTls, Feature::CsrTls, Feature::NodeAddresses] {
        let objects = render(&config_dir(), &format!("optional/{}", feature.slug())).expect("renders");
        assert_eq!(objects, render::objects(&layout.grantee(), feature), "{feature:?}");
    }
}
