//! `NodeSetService.status`: whether the service may run as it is (Ready, with the reason and
//! the fields that are wrong when it may not), the generation that says so and its spec hash.
//! The NodeSets that list a service say what it did on their hosts; this says only what the
//! service's own rules find, the same rules the webhook and the NodeSet controller apply.

use crate::kit::condition::Conditions;
use crate::kit::error::KubeError;
use crate::kit::runner::{Reconcile, Runner};
use crds::condition::{READY, set_condition};
use crds::nodesetservice::{
    NodeSetService, NodeSetServiceStatus, ReservedAccount, service_hash, validate_nodeset_service,
    validate_service_account,
};
use crds::validation::summarize;
use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use kube::{Api, Client, ResourceExt};
use std::sync::Arc;

/// The controller's name: metrics, spans.
pub(super) const CONTROLLER: &str = "nodesetservice";
/// Ready's reason for a service that may run.
pub(super) const VALID: &str = "Valid";
/// Ready's reason for a service whose spec breaks its rules: no NodeSet runs it.
pub(super) const INVALID_SPEC: &str = "InvalidSpec";

/// Why a status write failed; retried with backoff.
#[derive(Debug, thiserror::Error)]
pub(super) enum Error {
    #[error("cannot write the NodeSetService's status")]
    Write(#[from] KubeError),
}

crate::kit::label::metric_labels!(Error: Write);

/// The status `service` should have, the previous conditions' transition times kept.
pub(super) fn compute(
    service: &NodeSetService,
    reserved: Option<&ReservedAccount>,
    now: &Time,
) -> NodeSetServiceStatus {
    let namespace = service.namespace().unwrap_or_default();
    let mut problems = validate_nodeset_service(&service.spec);
    problems.extend(validate_service_account(&service.spec, &namespace, reserved));
    let make = Conditions::new(service.metadata.generation, now.clone());
    let ready = match problems.is_empty() {
        true => make.make(READY, true, VALID, "the spec is valid; NodeSets that list it run it"),
        false => make.make(READY, false, INVALID_SPEC, format!("{}; no NodeSet runs it", summarize(&problems))),
    };
    let previous = service.status.clone().unwrap_or_default();
    let mut conditions = previous.conditions.unwrap_or_default();
    set_condition(&mut conditions, ready);
    NodeSetServiceStatus {
        conditions: Some(conditions),
        observed_generation: service.metadata.generation,
        spec_hash: Some(service_hash(&service.spec)),
    }
}

/// Writes each NodeSetService's status when it changed.
pub(super) struct ServiceStatusReconciler {
    pub runner: Runner,
    pub client: Client,
    pub reserved_account: Option<ReservedAccount>,
}

impl Reconcile for ServiceStatusReconciler {
    type Object = NodeSetService;
    type Error = Error;

    fn runner(&self) -> &Runner {
        &self.runner
    }

    fn reconcile(self: Arc<Self>, object: Arc<NodeSetService>) -> BoxFuture<'static, Result<Action, Error>> {
        Box::pin(async move {
            let status = compute(&object, self.reserved_account.as_ref(), &Time(Timestamp::now()));
            if object.status.as_ref() != Some(&status) {
                let api: Api<NodeSetService> =
                    Api::namespaced(self.client.clone(), &object.namespace().unwrap_or_default());
                crate::kit::status::apply(&api, &object.name_any(), &status).await?;
                self.runner.metrics.status_written(CONTROLLER);
            }
            Ok(Action::await_change())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn service(job: serde_json::Value) -> NodeSetService {
        serde_json::from_value(json!({"apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSetService",
            "metadata": {"name": "netconf", "namespace": "ops", "generation": 4}, "spec": {"job": job}}))
        .expect("service")
    }

    fn at(second: i64) -> Time {
        Time(Timestamp::from_second(second).expect("time"))
    }

    #[test]
    fn a_valid_service_is_ready_at_its_generation_and_an_invalid_one_says_why() {
        let mut valid = service(json!({"image": "netconf:1"}));
        let status = compute(&valid, None, &at(10));
        assert_eq!(status.observed_generation, Some(4));
        assert_eq!(status.spec_hash, Some(service_hash(&valid.spec)));
        let ready = status.conditions.clone().unwrap_or_default().remove(0);
        assert_eq!((ready.type_.as_str(), ready.status.as_str(), ready.reason.as_str()), ("Ready", "True", VALID));
        valid.status = Some(status.clone());
        assert_eq!(compute(&valid, None, &at(20)), status, "nothing changed: the same status, no write");

        let reserved = ReservedAccount { namespace: "ops".into(), name: "ferrometal".into() };
        let invalid = service(json!({"image": " ", "serviceAccountName": "ferrometal"}));
        let ready = compute(&invalid, Some(&reserved), &at(30)).conditions.unwrap_or_default().remove(0);
        assert_eq!((ready.status.as_str(), ready.reason.as_str()), ("False", INVALID_SPEC));
        assert!(ready.message.contains("spec.job.image") && ready.message.contains("operator's own"), "{ready:?}");
    }
}
