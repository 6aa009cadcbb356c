//! `BMCEventSubscription` (baremetal-operator's): a Redfish event subscription on the BMC of a
//! BareMetalHost of the same namespace, made through Ironic. The spec is baremetal-operator's
//! (`hostName`, `destination`, `context`, `httpHeadersRef`), the status too (`subscriptionID`,
//! `error`), with `observedGeneration` and conditions added (`design/hosts.md`, "BMC event
//! subscriptions").

use crate::FieldError;
use crate::validation::valid_url;
use k8s_openapi::api::core::v1::SecretReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The finalizer baremetal-operator puts on a subscription: it stays until the BMC's
/// subscription is deleted.
pub const SUBSCRIPTION_FINALIZER: &str = "bmceventsubscription.metal3.io";

/// The longest destination and context accepted: both are copied to the BMC.
pub const MAX_LENGTH: usize = 2048;

/// A subscription to the events of a host's BMC.
// printcolumn(...) repeats type_ and priority by design; clippy reads them as duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "metal3.io",
    version = "v1alpha1",
    kind = "BMCEventSubscription",
    plural = "bmceventsubscriptions",
    shortname = "bes",
    shortname = "bmcevent",
    namespaced,
    status = "BMCEventSubscriptionStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "A Redfish event subscription on the BMC of a BareMetalHost in the same namespace.",
    printcolumn(
        name = "Error",
        type_ = "string",
        json_path = ".status.error",
        description = "The most recent error message"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time duration since creation of BMCEventSubscription"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct BMCEventSubscriptionSpec {
    /// The BareMetalHost, in this namespace, whose BMC sends the events.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub host_name: String,
    /// Where the BMC posts its events (a webhook URL).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 2048))]
    pub destination: String,
    /// A string the BMC sends back with every event.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 2048))]
    pub context: String,
    /// A Secret, in this namespace, whose keys and values are HTTP headers the BMC sends with
    /// every event (an `Authorization` header).
    #[serde(default, rename = "httpHeadersRef", skip_serializing_if = "Option::is_none")]
    pub http_headers_ref: Option<SecretReference>,
}

/// The BMC's subscription.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BMCEventSubscriptionStatus {
    /// The BMC's id of the subscription.
    #[serde(default, rename = "subscriptionID", skip_serializing_if = "String::is_empty")]
    pub subscription_id: String,
    /// The most recent error.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
    /// `Ready`: the BMC has the subscription the spec asks for (not in baremetal-operator).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// The generation of the spec the status describes (not in baremetal-operator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// baremetal-operator's checks (a host, a destination with a path, headers from this
/// namespace), and ours: a destination Ironic's Redfish can post to (`http` or `https` with a
/// host), lengths the BMC can hold.
pub fn validate_bmc_event_subscription(spec: &BMCEventSubscriptionSpec, namespace: Option<&str>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if spec.host_name.is_empty() {
        errors.push(FieldError::new("spec.hostName", "hostName cannot be empty"));
    }
    if let Some(problem) = destination_problem(&spec.destination) {
        errors.push(FieldError::new("spec.destination", problem));
    }
    if spec.context.len() > MAX_LENGTH {
        errors.push(FieldError::new("spec.context", format!("is longer than {MAX_LENGTH} bytes")));
    }
    if let Some(reference) = &spec.http_headers_ref {
        let theirs = reference.namespace.as_deref().filter(|n| !n.is_empty());
        if theirs.is_some_and(|n| Some(n) != namespace) {
            errors.push(FieldError::new(
                "spec.httpHeadersRef.namespace",
                "httpHeadersRef secret must be in the same namespace as the BMCEventSubscription",
            ));
        }
        if reference.name.as_deref().is_none_or(str::is_empty) {
            errors.push(FieldError::new("spec.httpHeadersRef.name", "names no Secret"));
        }
    }
    errors
}

fn destination_problem(destination: &str) -> Option<String> {
    if destination.is_empty() {
        return Some("destination cannot be empty".into());
    }
    if destination.len() > MAX_LENGTH {
        return Some(format!("is longer than {MAX_LENGTH} bytes"));
    }
    match valid_url(destination, &["http", "https"]) {
        Err(problem) => Some(format!("destination is invalid: {problem}")),
        // A URL parser adds the slash a hostname alone lacks; what was written counts.
        Ok(_) if destination.split_once("://").is_some_and(|(_, rest)| !rest.contains('/')) => {
            Some("hostname-only destination must have a trailing slash".into())
        }
        Ok(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(host: &str, destination: &str) -> BMCEventSubscriptionSpec {
        BMCEventSubscriptionSpec { host_name: host.into(), destination: destination.into(), ..Default::default() }
    }

    fn paths(spec: &BMCEventSubscriptionSpec) -> Vec<String> {
        validate_bmc_event_subscription(spec, Some("ns")).into_iter().map(|e| e.path).collect()
    }

    #[test]
    fn a_host_and_a_destination_with_a_path_are_valid() {
        assert!(paths(&spec("h", "https://events.example/hook")).is_empty());
        assert!(paths(&spec("h", "http://192.0.2.1:8080/")).is_empty());
    }

    #[test]
    fn what_baremetal_operator_refuses_is_refused() {
        assert_eq!(paths(&spec("", "https://e.example/")), ["spec.hostName"]);
        assert_eq!(paths(&spec("h", "")), ["spec.destination"]);
        assert_eq!(paths(&spec("h", "https://e.example")), ["spec.destination"], "hostname only");
        assert_eq!(paths(&spec("h", "not a url")), ["spec.destination"]);
        let elsewhere = SecretReference { name: Some("headers".into()), namespace: Some("other".into()) };
        let with = BMCEventSubscriptionSpec { http_headers_ref: Some(elsewhere), ..spec("h", "https://e.example/") };
        assert_eq!(paths(&with), ["spec.httpHeadersRef.namespace"]);
    }

    #[test]
    fn headers_of_this_namespace_or_none_named_are_valid() {
        for namespace in [None, Some(String::new()), Some("ns".to_string())] {
            let reference = SecretReference { name: Some("headers".into()), namespace };
            let with =
                BMCEventSubscriptionSpec { http_headers_ref: Some(reference), ..spec("h", "https://e.example/") };
            assert!(paths(&with).is_empty());
        }
    }

    #[test]
    fn what_a_bmc_cannot_post_to_or_hold_is_refused() {
        let long = format!("https://e.example/{}", "a".repeat(MAX_LENGTH));
        for destination in ["ftp://e.example/x", "https:///x", long.as_str()] {
            assert_eq!(paths(&spec("h", destination)), ["spec.destination"], "{destination}");
        }
        let chatty =
            BMCEventSubscriptionSpec { context: "c".repeat(MAX_LENGTH + 1), ..spec("h", "https://e.example/") };
        assert_eq!(paths(&chatty), ["spec.context"]);
    }
}
