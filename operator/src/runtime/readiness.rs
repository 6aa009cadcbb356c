//! What `/readyz` answers: ready when the webhook server serves, and the replica either
//! stands by for the leader lease or leads with every watch of its controllers synced.
//!
//! "Synced" is observed, not assumed: the runtime's client passes every request through
//! [`Readiness::observe`], and a watcher only starts its watch request once its initial list
//! succeeded. So a successful watch request of a resource in a scope means that watch's cache
//! is filled. The watches expected are those the RBAC table grants each running controller
//! (`install::rbac::table`): a watch that lacks its permission, or a CRD that is missing,
//! keeps the replica unready, and `/readyz` names it.

use crate::install::rbac::{Resource, table};
use axum::http::{Request, Uri};
use kube::Client;
use kube::client::Body;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

/// Where this replica stands with the leader lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Not yet known: the lease has not been read.
    Starting,
    /// Another replica leads (or the lease is being taken over); this one serves webhooks.
    StandingBy,
    /// This replica runs the controllers (with leader election, or alone without it).
    Leading,
}

/// A watch: its group, plural and namespace (`None` for the whole cluster).
type Watch = (String, String, Option<String>);

#[derive(Debug)]
struct State {
    /// `None` when no webhook server runs.
    webhook_serving: Option<bool>,
    role: Role,
    /// The watches the running controllers must have synced, and whether they have.
    watches: BTreeMap<Watch, bool>,
}

/// The replica's readiness, shared by the runtime, its client and the health server.
#[derive(Debug)]
pub(crate) struct Readiness {
    state: Mutex<State>,
}

impl Default for Readiness {
    fn default() -> Self {
        Self { state: Mutex::new(State { webhook_serving: None, role: Role::Starting, watches: BTreeMap::new() }) }
    }
}

impl Readiness {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A webhook server will run: not ready until it serves.
    pub(crate) fn webhook_starting(&self) {
        self.state().webhook_serving = Some(false);
    }

    /// The webhook server is bound and its webhooks are registered.
    pub(crate) fn webhook_serving(&self) {
        self.state().webhook_serving = Some(true);
    }

    pub(crate) fn standing_by(&self) {
        self.state().role = Role::StandingBy;
    }

    /// This replica leads: its controllers' watches must sync before it is ready. Call it
    /// before starting the controllers, so no watch is seen before it is expected.
    pub(crate) fn leading(&self, controllers: &[&str], namespaces: &[String]) {
        let scopes: Vec<Option<String>> =
            if namespaces.is_empty() { vec![None] } else { namespaces.iter().cloned().map(Some).collect() };
        let mut state = self.state();
        for controller in controllers {
            for component in table::of_controller(controller) {
                for resource in component.watched() {
                    for scope in &scopes {
                        state.watches.entry(key(&resource, scope.clone())).or_insert(false);
                    }
                }
            }
        }
        state.role = Role::Leading;
    }

    /// Records that the watch request `uri` succeeded.
    fn watched(&self, uri: &Uri) {
        if let Some(watch) = watch_of(uri) {
            let mut state = self.state();
            if let Some(synced) = state.watches.get_mut(&watch) {
                *synced = true;
            }
        }
    }

    /// Whether the replica is ready, and a line per check (kube-apiserver's `/readyz?verbose`
    /// style: `[+]` passed, `[-]` failed).
    pub(crate) fn report(&self) -> (bool, String) {
        let state = self.state();
        let mut text = String::new();
        let webhook = state.webhook_serving.unwrap_or(true);
        let _ = writeln!(
            text,
            "[{}]webhook {}",
            mark(webhook),
            match state.webhook_serving {
                None => "disabled",
                Some(true) => "serving",
                Some(false) => "starting",
            }
        );
        let (leader, role) = match state.role {
            Role::Starting => (false, "not yet known"),
            Role::StandingBy => (true, "standing by"),
            Role::Leading => (true, "leading"),
        };
        let _ = writeln!(text, "[{}]leader election: {role}", mark(leader));
        let mut synced = true;
        if state.role == Role::Leading {
            for ((group, plural, namespace), done) in &state.watches {
                synced &= done;
                let resource = if group.is_empty() { plural.clone() } else { format!("{plural}.{group}") };
                let scope = namespace.as_deref().map(|n| format!("namespace {n}")).unwrap_or("all namespaces".into());
                let what = if *done { "synced" } else { "waiting for its initial list" };
                let _ = writeln!(text, "[{}]watch {resource} in {scope}: {what}", mark(*done));
            }
        }
        (webhook && leader && synced, text)
    }

    /// `client`, with every successful watch request recorded here. Requests and answers pass
    /// through unchanged.
    pub(crate) fn observe(self: &Arc<Self>, client: Client) -> Client {
        let readiness = self.clone();
        let namespace = client.default_namespace().to_string();
        let service = tower::service_fn(move |request: Request<Body>| {
            let (readiness, inner) = (readiness.clone(), client.clone());
            async move {
                let uri = request.uri().clone();
                let response = inner.send(request).await?;
                if response.status().is_success() {
                    readiness.watched(&uri);
                }
                Ok::<_, kube::Error>(response)
            }
        });
        Client::new(service, namespace)
    }
}

fn mark(ok: bool) -> char {
    if ok { '+' } else { '-' }
}

fn key(resource: &Resource, namespace: Option<String>) -> Watch {
    (resource.group.to_string(), resource.plural.to_string(), namespace)
}

/// The watch a request asks for: `GET /api/v1[/namespaces/NS]/PLURAL?watch=true` or
/// `/apis/GROUP/VERSION[/namespaces/NS]/PLURAL?watch=true`.
fn watch_of(uri: &Uri) -> Option<Watch> {
    let watching = uri.query()?.split('&').any(|pair| matches!(pair, "watch=true" | "watch=1"));
    if !watching {
        return None;
    }
    let segments: Vec<&str> = uri.path().trim_matches('/').split('/').collect();
    let (group, rest) = match segments.as_slice() {
        ["api", _version, rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        _ => return None,
    };
    match rest {
        ["namespaces", namespace, plural] => Some((group.to_string(), plural.to_string(), Some(namespace.to_string()))),
        [plural] => Some((group.to_string(), plural.to_string(), None)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(text: &str) -> Uri {
        text.parse().expect("uri")
    }

    #[test]
    fn watch_requests_name_their_resource_and_scope() {
        assert_eq!(
            watch_of(&uri("/apis/apps/v1/namespaces/ns/deployments?labelSelector=x&watch=true&resourceVersion=1")),
            Some(("apps".into(), "deployments".into(), Some("ns".into())))
        );
        assert_eq!(watch_of(&uri("/api/v1/secrets?watch=true")), Some(("".into(), "secrets".into(), None)));
        assert_eq!(watch_of(&uri("/api/v1/secrets?limit=500")), None, "a list is not a watch");
        assert_eq!(watch_of(&uri("/api/v1/namespaces/ns/secrets/one?watch=true")), None, "one object");
    }

    #[test]
    fn a_leader_is_ready_once_every_expected_watch_synced() {
        let readiness = Readiness::default();
        readiness.webhook_starting();
        assert!(!readiness.report().0, "nothing known yet");
        readiness.webhook_serving();
        readiness.leading(&["host"], &["a".to_string()]);
        let (ready, text) = readiness.report();
        assert!(!ready);
        assert!(text.contains("[-]watch baremetalhosts.metal3.io in namespace a"), "{text}");
        readiness.watched(&uri("/apis/metal3.io/v1alpha1/namespaces/a/baremetalhosts?watch=true"));
        readiness.watched(&uri("/api/v1/namespaces/b/secrets?watch=true"));
        assert!(!readiness.report().0, "the Secrets of namespace a are not synced");
        readiness.watched(&uri("/api/v1/namespaces/a/secrets?watch=true"));
        assert!(!readiness.report().0, "the firmware controllers' watches run with the host controller");
        readiness.watched(&uri("/apis/metal3.io/v1alpha1/namespaces/a/hostfirmwaresettings?watch=true"));
        assert!(!readiness.report().0, "nor the components controller's");
        readiness.watched(&uri("/apis/metal3.io/v1alpha1/namespaces/a/hostfirmwarecomponents?watch=true"));
        assert!(!readiness.report().0, "nor the data image controller's");
        readiness.watched(&uri("/apis/metal3.io/v1alpha1/namespaces/a/dataimages?watch=true"));
        assert!(!readiness.report().0, "nor the event subscription controller's");
        readiness.watched(&uri("/apis/metal3.io/v1alpha1/namespaces/a/bmceventsubscriptions?watch=true"));
        assert!(!readiness.report().0, "nor the preprovisioning images'");
        readiness.watched(&uri("/apis/metal3.io/v1alpha1/namespaces/a/preprovisioningimages?watch=true"));
        let (ready, text) = readiness.report();
        assert!(ready, "{text}");
    }

    #[test]
    fn a_replica_standing_by_is_ready_while_its_webhook_serves() {
        let readiness = Readiness::default();
        readiness.webhook_starting();
        readiness.standing_by();
        assert!(!readiness.report().0);
        readiness.webhook_serving();
        let (ready, text) = readiness.report();
        assert!(ready && text.contains("standing by"), "{text}");
    }
}
