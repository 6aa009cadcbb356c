//! `NodeSetService` (`ferrometal.io/v1alpha1`, short name nss): one configuration step a
//! NodeSet runs on its hosts as a Job. See design/nodeset.md for the inventory it receives.

use crate::nodeset::hash::hash_of;
use crate::nodeset::sources::{SourceRef, Sources};
use crate::validation::{Errors, FieldError, is_dns1123_subdomain};
use k8s_openapi::api::core::v1::{EnvFromSource, EnvVar, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Path of the inventory file in every service Job.
pub const INVENTORY_PATH: &str = "/var/run/ferrometal/inventory.json";
/// Environment variable holding [`INVENTORY_PATH`].
pub const INVENTORY_ENV: &str = "FERROMETAL_INVENTORY";
/// Environment variables the operator sets in every service Job (the inventory's path, the
/// NodeSet's name, the service's name); a Job template may not set them itself.
pub const RESERVED_ENV: [&str; 3] = [INVENTORY_ENV, "FERROMETAL_NODESET", "FERROMETAL_SERVICE"];
/// Default retries of a service Job.
pub const DEFAULT_BACKOFF_LIMIT: i32 = 2;
/// Default `activeDeadlineSeconds` of a service Job: an hour. A configuration step that hangs
/// (an unreachable host, a prompt nobody answers) must fail, or its hosts would stay
/// unavailable and the rollout would never move on.
pub const DEFAULT_ACTIVE_DEADLINE_SECONDS: i64 = 3600;

/// A configuration step run on NodeSet hosts.
// printcolumn(...) repeats type_ and priority by design; clippy reads them as duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "ferrometal.io",
    version = "v1alpha1",
    kind = "NodeSetService",
    namespaced,
    status = "NodeSetServiceStatus",
    shortname = "nss",
    derive = "PartialEq",
    derive = "Default",
    doc = "A configuration step that NodeSets run on their hosts as a Job, with the hosts' inventory mounted at /var/run/ferrometal/inventory.json.",
    printcolumn(name = "Image", type_ = "string", json_path = ".spec.job.image", description = "Job image"),
    printcolumn(name = "RunOnce", type_ = "boolean", json_path = ".spec.runOnce", description = "Runs once per host"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time since creation"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct NodeSetServiceSpec {
    /// The Job run for a batch of hosts.
    pub job: ServiceJob,
    /// Run once per host (e.g. bootstrap) and never again on configuration changes. Otherwise
    /// the service re-runs on a host whenever the host's config hash or this spec changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_once: Option<bool>,
}

/// Template of the service's Job. The inventory Secret is mounted at
/// /var/run/ferrometal/inventory.json and FERROMETAL_INVENTORY points at it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceJob {
    /// Seconds a run may take before it is failed; an hour when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 3600), range(min = 1))]
    pub active_deadline_seconds: Option<i64>,
    /// Arguments to the command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// Retries before the run counts as failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 2), range(min = 0))]
    pub backoff_limit: Option<i32>,
    /// Entrypoint; the image's when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Environment variables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,
    /// Environment from ConfigMaps and Secrets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_from: Option<Vec<EnvFromSource>>,
    /// Container image.
    pub image: String,
    /// Resources of the container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// ServiceAccount of the Job's pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
}

/// Observed state of a service.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeSetServiceStatus {
    /// Ready: the spec is valid and can be run (reason Valid), or not (InvalidSpec, naming the
    /// fields).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Option<Vec<Condition>>,
    /// Generation of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Hash of the current spec. NodeSets record it in servicesCompleted, or, for a service whose
    /// Job reads Secrets or ConfigMaps, a hash of it and of their content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_hash: Option<String>,
}

/// Hash of a service's spec; a change makes non-runOnce services run again.
pub fn service_hash(spec: &NodeSetServiceSpec) -> String {
    hash_of(spec)
}

/// A Secret or ConfigMap a service's Job reads, where its spec names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    pub source: SourceRef,
    /// The Job runs without it (`optional: true`); otherwise the service waits for it.
    pub optional: bool,
    /// The field naming it, e.g. `spec.job.env[0].valueFrom.secretKeyRef`.
    pub path: String,
}

/// Every Secret and ConfigMap the service's Job reads: `env[].valueFrom` key references and
/// `envFrom` sources (the Job has no volumes of the user's), in spec order.
pub fn references(spec: &NodeSetServiceSpec) -> Vec<Reference> {
    let mut out = Vec::new();
    let mut push = |source: SourceRef, optional: Option<bool>, path: String| {
        if !source.name.is_empty() {
            out.push(Reference { source, optional: optional.unwrap_or(false), path });
        }
    };
    for (i, env) in spec.job.env.iter().flatten().enumerate() {
        let Some(from) = &env.value_from else { continue };
        if let Some(key) = &from.secret_key_ref {
            push(SourceRef::secret(&key.name), key.optional, format!("spec.job.env[{i}].valueFrom.secretKeyRef"));
        }
        if let Some(key) = &from.config_map_key_ref {
            let path = format!("spec.job.env[{i}].valueFrom.configMapKeyRef");
            push(SourceRef::config_map(&key.name), key.optional, path);
        }
    }
    for (i, from) in spec.job.env_from.iter().flatten().enumerate() {
        if let Some(secret) = &from.secret_ref {
            push(SourceRef::secret(&secret.name), secret.optional, format!("spec.job.envFrom[{i}].secretRef"));
        }
        if let Some(map) = &from.config_map_ref {
            push(SourceRef::config_map(&map.name), map.optional, format!("spec.job.envFrom[{i}].configMapRef"));
        }
    }
    out
}

/// The hash that decides whether a service is done on a host: its spec hash, and a digest of
/// the content of every Secret and ConfigMap its Job reads (or that one is absent), so a
/// content change reruns it as an edit of its spec would. A service that reads none has its
/// spec hash, as before references counted: an upgrade reruns nothing.
pub fn run_hash(spec: &NodeSetServiceSpec, sources: &Sources) -> String {
    let references = references(spec);
    if references.is_empty() {
        return service_hash(spec);
    }
    let digests: Vec<(String, String)> =
        references.iter().map(|r| (r.source.to_string(), sources.digest(&r.source))).collect();
    hash_of(&serde_json::json!({"spec": service_hash(spec), "sources": digests}))
}

/// The sources a service's Job needs that do not exist (`sources` holds those read): the
/// service waits for them. Messages name the field and the source, never content.
pub fn missing_sources(spec: &NodeSetServiceSpec, sources: &Sources) -> Vec<FieldError> {
    references(spec)
        .into_iter()
        .filter(|r| !r.optional && sources.get(&r.source).is_none())
        .map(|r| FieldError::new(r.path, format!("{} does not exist in this namespace", r.source)))
        .collect()
}

/// A ServiceAccount no service may run as: the operator's own, whose token may write Secrets
/// and Jobs in every namespace the operator serves. A service in the operator's namespace
/// could otherwise name it and run any image with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReservedAccount {
    pub namespace: String,
    pub name: String,
}

/// What the ServiceAccount a service names may not be, in `namespace` (the service's).
pub fn validate_service_account(
    spec: &NodeSetServiceSpec,
    namespace: &str,
    reserved: Option<&ReservedAccount>,
) -> Vec<FieldError> {
    let mut errors = Errors::default();
    if let (Some(account), Some(reserved)) = (spec.job.service_account_name.as_deref(), reserved)
        && account == reserved.name
        && namespace == reserved.namespace
    {
        errors.push(
            "spec.job.serviceAccountName",
            format!("{account} is the operator's own ServiceAccount: a service may not run with its rights"),
        );
    }
    errors.into_vec()
}

/// Validates a NodeSetService. Returns every violation.
pub fn validate_nodeset_service(spec: &NodeSetServiceSpec) -> Vec<FieldError> {
    let mut errors = Errors::default();
    let path = "spec.job";
    if spec.job.image.trim().is_empty() {
        errors.push(format!("{path}.image"), "is required");
    }
    if spec.job.backoff_limit.is_some_and(|b| b < 0) {
        errors.push(format!("{path}.backoffLimit"), "must not be negative");
    }
    if spec.job.active_deadline_seconds.is_some_and(|s| s < 1) {
        errors.push(format!("{path}.activeDeadlineSeconds"), "must be at least 1");
    }
    if let Some(account) = spec.job.service_account_name.as_deref()
        && !is_dns1123_subdomain(account)
    {
        errors.push(format!("{path}.serviceAccountName"), format!("{account:?} is not a valid ServiceAccount name"));
    }
    for (i, env) in spec.job.env.iter().flatten().enumerate() {
        if env.name.is_empty() || env.name.contains('=') {
            errors.push(format!("{path}.env[{i}].name"), "must be non-empty and must not contain '='");
        } else if RESERVED_ENV.contains(&env.name.as_str()) {
            errors.push(format!("{path}.env[{i}].name"), format!("{} is set by the operator", env.name));
        }
    }
    errors.into_vec()
}

#[cfg(test)]
mod reference_tests {
    use super::*;
    use crate::nodeset::sources::SourceData;
    use serde_json::json;

    fn spec() -> NodeSetServiceSpec {
        serde_json::from_value(json!({"job": {"image": "x:1",
            "env": [{"name": "A", "value": "plain"},
                    {"name": "B", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}},
                    {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "opts", "key": "k", "optional": true}}}],
            "envFrom": [{"secretRef": {"name": "more"}}]}}))
        .expect("spec")
    }

    fn with(password: &str) -> Sources {
        let data = SourceData { data: [("password".to_string(), password.to_string())].into(), binary: Vec::new() };
        Sources([(SourceRef::secret("db"), data.clone()), (SourceRef::secret("more"), data)].into())
    }

    #[test]
    fn referenced_content_counts_in_the_run_hash_by_digest() {
        let paths: Vec<String> = references(&spec()).into_iter().map(|r| r.path).collect();
        assert_eq!(
            paths,
            [
                "spec.job.env[1].valueFrom.secretKeyRef",
                "spec.job.env[2].valueFrom.configMapKeyRef",
                "spec.job.envFrom[0].secretRef"
            ]
        );
        let (a, b) = (run_hash(&spec(), &with("one")), run_hash(&spec(), &with("two")));
        assert_ne!(a, b, "a content change is a new run");
        assert_eq!(a, run_hash(&spec(), &with("one")));
        let plain = NodeSetServiceSpec::default();
        assert_eq!(run_hash(&plain, &with("one")), service_hash(&plain), "no references: the spec hash");
    }

    #[test]
    fn a_missing_non_optional_source_holds_the_service() {
        let missing = missing_sources(&spec(), &Sources::default());
        let text = crate::validation::summarize(&missing);
        assert_eq!(missing.len(), 2, "{text}");
        assert!(text.contains("spec.job.env[1].valueFrom.secretKeyRef: Secret db does not exist"), "{text}");
        assert!(missing_sources(&spec(), &with("x")).is_empty(), "the optional ConfigMap may be missing");
    }
}

#[cfg(test)]
mod account_tests {
    use super::*;

    #[test]
    fn only_the_operators_own_account_in_its_own_namespace_is_refused() {
        let reserved = ReservedAccount { namespace: "ferrometal-system".into(), name: "ferrometal".into() };
        let named = |account: &str| {
            let mut spec = NodeSetServiceSpec::default();
            spec.job.service_account_name = Some(account.into());
            spec
        };
        let refused = validate_service_account(&named("ferrometal"), "ferrometal-system", Some(&reserved));
        assert_eq!(refused.len(), 1);
        assert!(refused[0].to_string().contains("spec.job.serviceAccountName"), "{}", refused[0]);
        assert!(validate_service_account(&named("ferrometal"), "team-a", Some(&reserved)).is_empty());
        assert!(validate_service_account(&named("netconf"), "ferrometal-system", Some(&reserved)).is_empty());
        assert!(validate_service_account(&named("ferrometal"), "ferrometal-system", None).is_empty());
    }
}
