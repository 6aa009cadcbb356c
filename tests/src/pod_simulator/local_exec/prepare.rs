//! What a pod's containers need before they can start: their volumes in the
//! scratch directory, their environment, and their command lines, each as a
//! kubelet would resolve it.

use super::LocalRun;
use super::expand::{expand, valid_env_name};
use super::mounts::Mounts;
use super::sources::{Kind, Sources};
use super::volumes;
use crate::pod_simulator::NODE_NAME;
use k8s_openapi::api::core::v1::{Container, EnvVarSource, Pod};
use kube::{Client, ResourceExt};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// Why a pod's containers cannot start (yet).
#[derive(Debug)]
pub(super) enum Blocker {
    /// A kubelet would wait and try again: a Secret, a ConfigMap or one of
    /// their keys is missing, or the apiserver did not answer. `reason` is
    /// the waiting container's.
    Wait { reason: &'static str, message: String },
    /// The pod cannot start at all.
    Fail(String),
}

/// How a container that cannot be configured waits.
pub(super) const CONFIG_ERROR: &str = "CreateContainerConfigError";

/// The processes to run, in the container's order.
#[derive(Debug)]
pub(super) struct Plan {
    pub init: Vec<ContainerPlan>,
    pub containers: Vec<ContainerPlan>,
}

/// One container's process.
#[derive(Debug)]
pub(super) struct ContainerPlan {
    pub name: String,
    pub program: String,
    pub args: Vec<String>,
    /// The whole environment, in order; a later entry wins.
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub log: PathBuf,
}

pub(super) async fn prepare(client: &Client, pod: &Pod, ip: &str, run: &LocalRun) -> Result<Plan, Blocker> {
    let spec = pod.spec.clone().unwrap_or_default();
    let mut sources = Sources::new(client.clone(), &run.namespace);
    let volumes = volumes::materialize(&spec, &run.scratch, &mut sources).await?;
    let fields = Fields { pod, ip };
    let mut plan = Plan { init: Vec::new(), containers: Vec::new() };
    for container in spec.init_containers.iter().flatten() {
        plan.init.push(container_plan(container, &volumes, &mut sources, &fields, run).await?);
    }
    for container in &spec.containers {
        plan.containers.push(container_plan(container, &volumes, &mut sources, &fields, run).await?);
    }
    Ok(plan)
}

async fn container_plan(
    container: &Container,
    volumes: &HashMap<String, PathBuf>,
    sources: &mut Sources,
    fields: &Fields<'_>,
    run: &LocalRun,
) -> Result<ContainerPlan, Blocker> {
    let name = &container.name;
    let mounts = mounts_of(container, volumes)?;
    let env = environment(container, sources, fields).await?;
    let command = container.command.clone().unwrap_or_default();
    if command.is_empty() {
        return Err(Blocker::Fail(format!(
            "container {name} has no command, and the pod simulator has no image entrypoint to fall back on"
        )));
    }
    // Expanded as the container sees its paths, then mapped once: a scratch
    // path must never be mapped again.
    let lookup = |var: &str| env.get(var);
    let mut argv = command
        .iter()
        .chain(container.args.iter().flatten())
        .map(|word| mounts.rewrite(&expand(word, lookup)))
        .collect::<Vec<_>>()
        .into_iter();
    let program = argv.next().unwrap_or_default();
    let scratch = run.scratch.to_string_lossy().into_owned();
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
    // What an image and the runtime would give: a PATH, a HOME, the pod's
    // host name; then the pod's own variables.
    let mut process_env = vec![
        ("PATH".to_string(), path),
        ("HOME".to_string(), scratch.clone()),
        ("HOSTNAME".to_string(), fields.pod.name_any()),
    ];
    process_env.extend(env.0.iter().map(|(k, v)| (k.clone(), mounts.rewrite(v))));
    process_env.push(("FERROMETAL_SCRATCH".to_string(), scratch));
    let cwd = match container.working_dir.as_deref() {
        Some(dir) if mounts.maps(dir) => PathBuf::from(mounts.rewrite(dir)),
        _ => run.scratch.clone(),
    };
    Ok(ContainerPlan {
        name: name.clone(),
        program,
        args: argv.collect(),
        env: process_env,
        cwd,
        log: run.log_path(name),
    })
}

fn mounts_of(container: &Container, volumes: &HashMap<String, PathBuf>) -> Result<Mounts, Blocker> {
    let mut mounts = Vec::new();
    for mount in container.volume_mounts.iter().flatten() {
        let what = || format!("container {}, mount of volume {}", container.name, mount.name);
        let dir = volumes.get(&mount.name).ok_or_else(|| Blocker::Fail(format!("{}: no such volume", what())))?;
        if mount.sub_path_expr.as_deref().is_some_and(|s| !s.is_empty()) {
            return Err(Blocker::Fail(format!("{}: the pod simulator does not support subPathExpr", what())));
        }
        let host = match mount.sub_path.as_deref().filter(|s| !s.is_empty()) {
            Some(sub) => dir.join(volumes::relative(sub).map_err(|e| Blocker::Fail(format!("{}: {e}", what())))?),
            None => dir.clone(),
        };
        mounts.push((mount.mount_path.clone(), host));
    }
    Ok(Mounts::new(mounts))
}

/// Environment variables in order; setting one again replaces it in place.
#[derive(Default)]
struct Env(Vec<(String, String)>);

impl Env {
    fn set(&mut self, name: String, value: String) {
        match self.0.iter_mut().find(|(k, _)| *k == name) {
            Some(entry) => entry.1 = value,
            None => self.0.push((name, value)),
        }
    }

    fn get(&self, name: &str) -> Option<String> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }
}

/// `envFrom`, then `env`: a later variable wins, and a value's `$(VAR)`
/// references see only the variables before it.
async fn environment(container: &Container, sources: &mut Sources, fields: &Fields<'_>) -> Result<Env, Blocker> {
    let mut env = Env::default();
    for from in container.env_from.iter().flatten() {
        let (kind, name, optional) = match (&from.config_map_ref, &from.secret_ref) {
            (Some(r), _) => (Kind::ConfigMap, &r.name, r.optional == Some(true)),
            (None, Some(r)) => (Kind::Secret, &r.name, r.optional == Some(true)),
            (None, None) => continue,
        };
        let prefix = from.prefix.as_deref().unwrap_or_default();
        match lookup(sources, kind, name).await? {
            Some(content) => {
                for (key, value) in content {
                    let var = format!("{prefix}{key}");
                    if valid_env_name(&var) {
                        env.set(var, String::from_utf8_lossy(&value).into_owned());
                    }
                }
            }
            None if optional => {}
            None => return Err(not_found(kind, name)),
        }
    }
    for var in container.env.iter().flatten() {
        let value = match &var.value_from {
            None => expand(var.value.as_deref().unwrap_or_default(), |name| env.get(name)),
            Some(from) => match key_ref(from) {
                Some((kind, name, key, optional)) => {
                    let content = match lookup(sources, kind, name).await? {
                        Some(content) => content,
                        None if optional => continue,
                        None => return Err(not_found(kind, name)),
                    };
                    match content.get(key) {
                        Some(value) => String::from_utf8_lossy(value).into_owned(),
                        None if optional => continue,
                        None => {
                            let message = format!("couldn't find key {key} in {kind} {}/{name}", sources.namespace());
                            return Err(Blocker::Wait { reason: CONFIG_ERROR, message });
                        }
                    }
                }
                None => fields.value(&var.name, from)?,
            },
        };
        env.set(var.name.clone(), value);
    }
    Ok(env)
}

async fn lookup(sources: &mut Sources, kind: Kind, name: &str) -> Result<Option<super::sources::Content>, Blocker> {
    sources
        .get(kind, name)
        .await
        .map_err(|e| Blocker::Wait { reason: CONFIG_ERROR, message: format!("reading {kind} {name}: {e}") })
}

fn not_found(kind: Kind, name: &str) -> Blocker {
    Blocker::Wait { reason: CONFIG_ERROR, message: format!("{} \"{name}\" not found", kind.lower()) }
}

/// A `secretKeyRef` or `configMapKeyRef`: kind, name, key, optional.
fn key_ref(from: &EnvVarSource) -> Option<(Kind, &str, &str, bool)> {
    if let Some(r) = &from.secret_key_ref {
        return Some((Kind::Secret, &r.name, &r.key, r.optional == Some(true)));
    }
    let r = from.config_map_key_ref.as_ref()?;
    Some((Kind::ConfigMap, &r.name, &r.key, r.optional == Some(true)))
}

/// The pod fields a `fieldRef` can name.
struct Fields<'a> {
    pod: &'a Pod,
    ip: &'a str,
}

impl Fields<'_> {
    fn value(&self, var: &str, from: &EnvVarSource) -> Result<String, Blocker> {
        let Some(field) = &from.field_ref else {
            return Err(Blocker::Fail(format!("variable {var}: the pod simulator does not support resourceFieldRef")));
        };
        let meta = &self.pod.metadata;
        let spec = self.pod.spec.as_ref();
        let path = field.field_path.as_str();
        let keyed = |map: &Option<BTreeMap<String, String>>, prefix: &str| {
            let key = path.strip_prefix(prefix)?.strip_suffix("']")?;
            Some(map.as_ref().and_then(|m| m.get(key)).cloned().unwrap_or_default())
        };
        let value = match path {
            "metadata.name" => Some(self.pod.name_any()),
            "metadata.namespace" => Some(self.pod.namespace().unwrap_or_default()),
            "metadata.uid" => Some(self.pod.uid().unwrap_or_default()),
            "spec.nodeName" => Some(NODE_NAME.to_string()),
            "spec.serviceAccountName" => Some(spec.and_then(|s| s.service_account_name.clone()).unwrap_or_default()),
            "status.hostIP" => Some("127.0.0.1".to_string()),
            "status.podIP" | "status.podIPs" => Some(self.ip.to_string()),
            _ => {
                keyed(&meta.labels, "metadata.labels['").or_else(|| keyed(&meta.annotations, "metadata.annotations['"))
            }
        };
        value.ok_or_else(|| Blocker::Fail(format!("variable {var}: the pod simulator does not know the field {path}")))
    }
}
