//! Every request the operator sends the apiserver, counted by verb and resource
//! (`ferrometal_apiserver_requests_total`): status writes, applies, metadata patches, Events,
//! Leases, reads and watches alike, so a benchmark can tell all that the operator asks of the
//! apiserver, not only the status writes its controllers count themselves. The resources are
//! those the operator's RBAC lets it reach, so the labels stay few.

use crate::metrics::Metrics;
use axum::http::{Method, Request, Uri};
use kube::Client;
use kube::client::Body;
use std::sync::Arc;

/// `client`, with every request counted in `metrics` before it is sent (a refused or failed
/// request was still asked of the apiserver). Requests and answers pass through unchanged.
pub(crate) fn counted(client: Client, metrics: Arc<Metrics>) -> Client {
    let namespace = client.default_namespace().to_string();
    let service = tower::service_fn(move |request: Request<Body>| {
        let (metrics, inner) = (metrics.clone(), client.clone());
        async move {
            metrics.apiserver_request(verb(request.method(), request.uri()), &resource(request.uri()));
            inner.send(request).await
        }
    });
    Client::new(service, namespace)
}

/// The request's verb, as the apiserver's audit names it, except that a read of one object
/// and a list are both `get` (telling them apart needs the resource's discovery).
fn verb(method: &Method, uri: &Uri) -> &'static str {
    let watch = || uri.query().is_some_and(|q| q.split('&').any(|pair| pair == "watch=true" || pair == "watch=1"));
    match *method {
        Method::GET if watch() => "watch",
        Method::GET => "get",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "other",
    }
}

/// The resource a request's path names, with its subresource (`baremetalhosts/status`): the
/// segments after the API version, past a namespace's two. Anything else is `other`.
fn resource(uri: &Uri) -> String {
    let segments: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
    let rest = match segments.as_slice() {
        ["api", _version, rest @ ..] | ["apis", _, _version, rest @ ..] => rest,
        _ => return "other".into(),
    };
    let rest = match rest {
        ["namespaces", _, kind, more @ ..] => [&[*kind][..], more].concat(),
        _ => rest.to_vec(),
    };
    match rest.as_slice() {
        [kind] | [kind, _] => (*kind).to_string(),
        [kind, _, sub, ..] => format!("{kind}/{sub}"),
        [] => "other".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(text: &str) -> Uri {
        text.parse().unwrap_or_default()
    }

    #[test]
    fn a_watch_is_told_from_a_read_by_its_query() {
        let watch = uri("/apis/metal3.io/v1alpha1/namespaces/a/baremetalhosts?resourceVersion=5&watch=true");
        assert_eq!(verb(&Method::GET, &watch), "watch");
        assert_eq!(verb(&Method::GET, &uri("/apis/metal3.io/v1alpha1/namespaces/a/baremetalhosts?limit=500")), "get");
        assert_eq!(verb(&Method::GET, &uri("/api/v1/namespaces/a/secrets/watch")), "get", "a name is no query");
    }

    #[test]
    fn the_resource_and_subresource_are_read_from_the_path() {
        let named = |path: &str| resource(&uri(path));
        assert_eq!(named("/apis/metal3.io/v1alpha1/namespaces/a/baremetalhosts/h/status"), "baremetalhosts/status");
        assert_eq!(named("/apis/metal3.io/v1alpha1/namespaces/a/baremetalhosts?watch=true"), "baremetalhosts");
        assert_eq!(named("/api/v1/namespaces/a/events"), "events");
        assert_eq!(named("/api/v1/namespaces/a"), "namespaces", "a namespace itself");
        assert_eq!(named("/apis/coordination.k8s.io/v1/namespaces/a/leases/l"), "leases");
        assert_eq!(named("/api/v1/nodes/n"), "nodes");
        assert_eq!(named("/version"), "other");
    }

    #[test]
    fn writes_are_named_by_their_method() {
        let any = uri("/api/v1/namespaces/a/events");
        let named: Vec<&str> = [Method::POST, Method::PUT, Method::PATCH, Method::DELETE, Method::HEAD]
            .iter()
            .map(|m| verb(m, &any))
            .collect();
        assert_eq!(named, ["create", "update", "patch", "delete", "other"]);
    }
}
