//! The class-(c) locks, on the real apiserver through the validating webhook, reading the
//! status this controller writes: an edit that would change which machines a NodeSet claims is
//! refused with what to do instead, and a user who can only write spec cannot defeat a lock.

use crate::host_common::secs;
use crate::nodeset_common::{NodeSetEnv, Setup, names};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};

fn denial(result: Result<impl std::fmt::Debug, kube::Error>) -> (u16, String) {
    match result {
        Err(kube::Error::Api(status)) => (status.code, status.message),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// A client acting as `user`, by impersonation from the admin's credentials.
async fn client_as(env: &NodeSetEnv, user: &str) -> anyhow::Result<kube::Client> {
    let kubeconfig = Kubeconfig::read_from(env.t.env.cp.kubeconfig())?;
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    config.auth_info.impersonate = Some(user.to_string());
    Ok(kube::Client::try_from(config)?)
}

/// Lets `user` read and write NodeSets, but not their status subresource.
async fn spec_writer(env: &NodeSetEnv, user: &str) -> anyhow::Result<()> {
    let roles: Api<Role> = Api::namespaced(env.t.env.client(), env.ns());
    let role = Role {
        metadata: ObjectMeta { name: Some("nodeset-spec-writer".into()), ..Default::default() },
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec!["ferrometal.io".into()]),
            resources: Some(vec!["nodesets".into()]),
            verbs: ["get", "list", "watch", "create", "update", "patch"].map(String::from).to_vec(),
            ..Default::default()
        }]),
    };
    roles.create(&PostParams::default(), &role).await?;
    let bindings: Api<RoleBinding> = Api::namespaced(env.t.env.client(), env.ns());
    let binding = RoleBinding {
        metadata: ObjectMeta { name: Some("nodeset-spec-writer".into()), ..Default::default() },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: "nodeset-spec-writer".into(),
        },
        subjects: Some(vec![Subject {
            kind: "User".into(),
            name: user.into(),
            api_group: Some("rbac.authorization.k8s.io".into()),
            ..Default::default()
        }]),
    };
    bindings.create(&PostParams::default(), &binding).await?;
    Ok(())
}

#[tokio::test]
async fn locked_edits_are_refused_with_what_to_do_instead_and_spec_writers_cannot_unlock_them() -> anyhow::Result<()> {
    let env = NodeSetEnv::start("nset-locks", Setup { webhooks: true, ..Setup::default() }).await?;
    env.free_hosts(&names("server", 3), json!({"rack": "r1"})).await?;
    let mut spec = env.spec(&["compute-0", "compute-1"], &[]);
    spec["baremetalSetTemplate"]["bmhLabelSelector"] = json!({"matchLabels": {"rack": "r1"}});
    env.create_nodeset("computes", spec).await?;
    env.wait_ready("computes", secs(300)).await?;

    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            "the template's selector",
            json!({"baremetalSetTemplate": {"bmhLabelSelector": {"matchLabels": {"rack": "r2"}}}}),
            "spec.baremetalSetTemplate.bmhLabelSelector",
            "create a new NodeSet instead",
        ),
        (
            "the hardware requirements",
            json!({"baremetalSetTemplate": {"hardwareReqs": {"minCpuCount": 64}}}),
            "spec.baremetalSetTemplate.hardwareReqs",
            "create a new NodeSet instead",
        ),
        (
            "the BareMetalHosts' namespace",
            json!({"baremetalSetTemplate": {"bmhNamespace": "elsewhere"}}),
            "spec.baremetalSetTemplate.bmhNamespace",
            "create a new NodeSet instead",
        ),
        (
            "a claimed host's selector",
            json!({"nodes": {"compute-0": {"bmhLabelSelector": {"matchLabels": {"serial": "X"}}}}}),
            "spec.nodes[compute-0].bmhLabelSelector",
            "add it under a new name",
        ),
        (
            "preProvisioned",
            json!({"preProvisioned": true, "baremetalSetTemplate": null}),
            "spec.preProvisioned",
            "create a new NodeSet instead",
        ),
    ];
    for (what, edit, path, advice) in cases {
        let (code, message) = denial(env.patch_spec("computes", edit).await);
        match code {
            // The webhook names the exact field.
            400 => assert!(message.contains(path) && message.contains(advice), "{what}: {message}"),
            // The CRD's CEL twin, which the apiserver evaluates before it asks the webhook,
            // names the field and says the same.
            422 => {
                let field = path.rsplit('.').next().unwrap_or(path);
                assert!(message.contains(field) && message.contains(advice), "{what}: {message}");
            }
            other => panic!("{what}: refused with {other}: {message}"),
        }
    }
    // What is applied in place, or at the next provisioning, stays editable.
    env.patch_spec(
        "computes",
        json!({"baremetalSetTemplate": {"automatedCleaningMode": "metadata"}, "deletionPolicy": "Detach"}),
    )
    .await?;
    let iso = env.t.ironic.image_server().write_live_iso("other.iso")?;
    env.patch_spec("computes", json!({"baremetalSetTemplate": {"image": {"url": iso, "format": "live-iso"}}})).await?;

    // A user who may write the spec, but not the status the locks read.
    spec_writer(&env, "spec-writer").await?;
    let as_writer: Api<crds::nodeset::NodeSet> = Api::namespaced(client_as(&env, "spec-writer").await?, env.ns());
    let unclaim = json!({"status": {"claimedHosts": 0, "hosts": null}});
    let (code, _) = denial(as_writer.patch_status("computes", &PatchParams::default(), &Patch::Merge(&unclaim)).await);
    assert_eq!(code, 403, "the status subresource is not theirs");
    // Status sent with a spec edit is ignored: the CEL rule and the webhook still see the claims.
    let mut both = unclaim.clone();
    both["spec"] = json!({"baremetalSetTemplate": {"bmhLabelSelector": {"matchLabels": {"rack": "r2"}}}});
    let (code, message) = denial(as_writer.patch("computes", &PatchParams::default(), &Patch::Merge(&both)).await);
    assert!(code == 400 || code == 422, "{code}: {message}");
    assert!(message.contains("bmhLabelSelector"), "{message}");
    // Read and sent again while the controller may write the status in between: a conflict
    // (409) is no answer to what is asked here, so the update is made again from a fresh read.
    let (code, message) = loop {
        let mut current = as_writer.get("computes").await?;
        current.status = Some(Default::default());
        if let Some(template) = current.spec.baremetal_set_template.as_mut() {
            template.hardware_reqs = Some(Default::default());
        }
        match denial(as_writer.replace("computes", &PostParams::default(), &current).await) {
            (409, _) => continue,
            answer => break answer,
        }
    };
    assert!(code == 400 || code == 422, "a whole-object update with an empty status is refused too: {message}");
    let nodeset = env.nodesets.get("computes").await?;
    assert_eq!(nodeset.status.and_then(|s| s.claimed_hosts), Some(2), "the claims stand");
    Ok(())
}
