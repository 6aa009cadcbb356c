//! Shared by the install tests: the manifests of `config/` rendered by real kustomize
//! (kubectl's) and applied with kubectl as a user would, the operator run as a process with
//! the ServiceAccount's token and the Deployment's own arguments and environment, and the
//! access reviews that show what that identity may not do.
#![allow(dead_code)]

pub mod cluster;
pub mod workloads;

use anyhow::Context as _;
use ferrometal_tests::ControlPlane;
use ferrometal_tests::operator_process::repo_root;
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec};
use kube::api::{Api, PostParams};
use serde_json::Value;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Runs the harness's kubectl (of the newest release) with `kubeconfig`, feeding `stdin`.
pub fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> anyhow::Result<String> {
    let mut child = Command::new(ferrometal_tests::env::kube_bin("kubectl")?)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(input) = stdin {
        child.stdin.take().context("stdin")?.write_all(input.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    anyhow::ensure!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The objects `kubectl kustomize` renders from `overlay`, a directory of the tree `tree`.
pub fn render(tree: &Path, overlay: &str) -> anyhow::Result<Vec<Value>> {
    // Any kubeconfig: kustomize reads none.
    let rendered = kubectl(Path::new("/dev/null"), &["kustomize", &tree.join(overlay).display().to_string()], None)?;
    Ok(serde_saphyr::from_multiple::<Value>(&rendered)?.into_iter().filter(|o| !o.is_null()).collect())
}

/// The checked-in tree.
pub fn config_dir() -> PathBuf {
    repo_root().join("config")
}

pub fn kind_of(object: &Value) -> &str {
    object["kind"].as_str().unwrap_or_default()
}

pub fn name_of(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or_default()
}

/// Applies objects with `kubectl apply --server-side` as the cluster's administrator, as the
/// README tells users to.
pub fn apply(cp: &ControlPlane, objects: &[Value]) -> anyhow::Result<()> {
    let stream: String =
        objects.iter().map(|o| format!("---\n{}\n", serde_json::to_string(o).unwrap_or_default())).collect();
    kubectl(cp.kubeconfig(), &["apply", "--server-side", "-f", "-"], Some(&stream))?;
    Ok(())
}

/// Environment variables, in order.
pub type Env = Vec<(String, String)>;

/// What a pod of `deployment` would run: the container's arguments and its environment, with
/// the downward API's fields resolved for a pod `pod_name` in `namespace` annotated
/// `annotations`.
pub fn pod_command(
    deployment: &Value,
    namespace: &str,
    pod_name: &str,
    annotations: &[(&str, &str)],
) -> anyhow::Result<(Vec<String>, Env)> {
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let args = container["args"]
        .as_array()
        .context("the container has arguments")?
        .iter()
        .filter_map(|a| a.as_str().map(str::to_string))
        .collect();
    let mut env = Vec::new();
    for var in container["env"].as_array().into_iter().flatten() {
        let name = var["name"].as_str().unwrap_or_default().to_string();
        let value = match var["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
            Some("metadata.name") => pod_name.to_string(),
            Some("metadata.namespace") => namespace.to_string(),
            Some(path) => {
                let key = path.trim_start_matches("metadata.annotations['").trim_end_matches("']");
                annotations.iter().find(|(k, _)| *k == key).map(|(_, v)| v.to_string()).unwrap_or_default()
            }
            None => var["value"].as_str().unwrap_or_default().to_string(),
        };
        env.push((name, value));
    }
    Ok((args, env))
}

/// Replaces the flag `--name=...` in `args` (or adds it).
pub fn set_flag(args: &mut Vec<String>, name: &str, value: &str) {
    args.retain(|a| !a.starts_with(&format!("--{name}=")));
    args.push(format!("--{name}={value}"));
}

/// Points every webhook of a ValidatingWebhookConfiguration at `base` (the apiserver here
/// cannot route to a Service: no kube-proxy, and Endpoints may not name loopback), keeping
/// each webhook's path, and sets its caBundle when given (as cainjector or OLM would).
pub fn webhooks_at(configuration: &mut Value, base: &str, ca_pem: Option<&str>) {
    use base64::Engine;
    for webhook in configuration["webhooks"].as_array_mut().into_iter().flatten() {
        let path = webhook["clientConfig"]["service"]["path"].as_str().unwrap_or_default().to_string();
        webhook["clientConfig"] = serde_json::json!({"url": format!("{base}{path}")});
        if let Some(ca) = ca_pem {
            webhook["clientConfig"]["caBundle"] = base64::engine::general_purpose::STANDARD.encode(ca).into();
        }
    }
}

/// One access to review.
#[derive(Clone, Copy, Debug)]
pub struct Ask<'a> {
    pub verb: &'a str,
    pub group: &'a str,
    pub resource: &'a str,
    pub namespace: Option<&'a str>,
    pub name: Option<&'a str>,
}

pub const fn ask<'a>(verb: &'a str, group: &'a str, resource: &'a str, namespace: Option<&'a str>) -> Ask<'a> {
    Ask { verb, group, resource, namespace, name: None }
}

/// Whether the identity of `client` may do `ask`, by a SelfSubjectAccessReview.
pub async fn may(client: &kube::Client, ask: Ask<'_>) -> anyhow::Result<bool> {
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(ask.verb.to_string()),
                group: Some(ask.group.to_string()),
                resource: Some(ask.resource.to_string()),
                namespace: ask.namespace.map(str::to_string),
                name: ask.name.map(str::to_string),
                ..Default::default()
            }),
            non_resource_attributes: None,
        },
        ..Default::default()
    };
    let answer = api.create(&PostParams::default(), &review).await?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

/// Fails unless the identity may do every one of `allowed` and none of `denied`, naming each
/// access that came out otherwise.
pub async fn assert_access(client: &kube::Client, allowed: &[Ask<'_>], denied: &[Ask<'_>]) -> anyhow::Result<()> {
    let mut wrong = Vec::new();
    for ask in allowed {
        if !may(client, *ask).await? {
            wrong.push(format!("may not, but needs to: {ask:?}"));
        }
    }
    for ask in denied {
        if may(client, *ask).await? {
            wrong.push(format!("may, but must not: {ask:?}"));
        }
    }
    anyhow::ensure!(wrong.is_empty(), "{}", wrong.join("\n"));
    Ok(())
}

/// Where `a` and `b` first differ, as a path and both values; numbers compare by value
/// (kustomize writes a schema's `minimum: 0.0` as `0`).
pub fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                let (l, r) = (x.get(key).unwrap_or(&Value::Null), y.get(key).unwrap_or(&Value::Null));
                if let Some(d) = first_difference(l, r, &format!("{path}.{key}")) {
                    return Some(d);
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            x.iter().zip(y).enumerate().find_map(|(i, (l, r))| first_difference(l, r, &format!("{path}[{i}]")))
        }
        (Value::Number(x), Value::Number(y)) if x.as_f64() == y.as_f64() => None,
        _ if a == b => None,
        _ => Some(format!("{path}: {} != {}", truncated(a), truncated(b))),
    }
}

fn truncated(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 200 { format!("{}...", text.chars().take(200).collect::<String>()) } else { text }
}
