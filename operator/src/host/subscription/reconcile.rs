//! One reconcile of a `BMCEventSubscription`: dereference its host (`spec.hostName`, in the
//! object's namespace: never another's) → our finalizer → the headers → the BMC's subscription
//! → status. Being deleted, its subscription is deleted from the BMC before the finalizer goes.
//! What Ironic or the BMC refuses is reported in the status and tried again later; only failed
//! Kubernetes writes are errors.

use super::bmc::{self, Claimed, Current, Done};
use super::headers::{self, Headers};
use super::status::{Observed, compute};
use crate::host::context::HostContext;
use crate::host::firmware::target::{NOT_READY, STEADY, Target, Unread, target};
use crate::host::owned;
use crate::kit::backoff::spread;
use crate::kit::runner::{Reconcile, Runner};
use crate::kit::scrub::scrubbed;
use crate::kit::status::Commit;
use crate::kit::{KubeError, Publisher};
use crds::bmceventsubscription::{BMCEventSubscription, SUBSCRIPTION_FINALIZER};
use futures::future::BoxFuture;
use ironic_client::IronicClient;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::reflector::Store;
use kube::{Resource, ResourceExt};
use std::sync::Arc;
use std::time::Duration;

/// The controller's name: in metrics, logs and as the Events' reporter.
pub(super) const CONTROLLER: &str = "bmceventsubscription";

/// What the BMC refused is asked again this often.
const REFUSED: Duration = Duration::from_secs(60);

crate::install::rbac::require_access!(crate::install::rbac::table::HOST, BMCEventSubscription: Patch);
crate::install::rbac::require_access!(crate::install::rbac::table::HOST, BMCEventSubscription, status: Patch);

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum Error {
    #[error(transparent)]
    Kube(#[from] KubeError),
}

crate::kit::label::metric_labels!(Error: Kube);

/// What the reconciles share.
pub(super) struct SubscriptionReconciler {
    pub(super) runner: Runner,
    pub(super) publisher: Publisher,
    /// The host controller's: its Ironic connection.
    pub(super) hosts: Arc<HostContext>,
    /// The controller's cache of this scope's subscriptions.
    pub(super) subscriptions: Store<BMCEventSubscription>,
}

impl Reconcile for SubscriptionReconciler {
    type Object = BMCEventSubscription;
    type Error = Error;

    fn runner(&self) -> &Runner {
        &self.runner
    }

    fn reconcile(self: Arc<Self>, object: Arc<BMCEventSubscription>) -> BoxFuture<'static, Result<Action, Error>> {
        Box::pin(async move { self.run(&object).await })
    }
}

impl SubscriptionReconciler {
    async fn run(&self, subscription: &BMCEventSubscription) -> Result<Action, Error> {
        let namespace = subscription.namespace().unwrap_or_default();
        let api: Api<BMCEventSubscription> = Api::namespaced(self.hosts.kube.clone(), &namespace);
        let host = &subscription.spec.host_name;
        let found = match host.is_empty() {
            // Admitted without the webhook: no host to read.
            true => Target::Unread(Unread {
                reason: "NoHost",
                message: "spec.hostName names no host".into(),
                again: STEADY,
            }),
            false => target(&self.hosts, &namespace, host).await?,
        };
        if subscription.meta().deletion_timestamp.is_some() {
            return self.delete(&api, subscription, found).await;
        }
        owned::adopt(&api, subscription, SUBSCRIPTION_FINALIZER, None).await?;
        let (observed, again) = match found {
            Target::Unread(Unread { reason, message, again }) => (Observed::Failed { reason, message }, again),
            Target::Node { node, client, .. } => self.subscribe(subscription, &client, &node).await?,
        };
        self.write(&api, subscription, &observed).await?;
        Ok(Action::requeue(spread(again)))
    }

    /// Makes the BMC have the subscription.
    async fn subscribe(
        &self,
        subscription: &BMCEventSubscription,
        client: &IronicClient,
        node: &str,
    ) -> Result<(Observed, Duration), Error> {
        let namespace = subscription.namespace().unwrap_or_default();
        let headers = headers::read(&self.hosts.kube, &namespace, &subscription.spec).await?;
        let secrets: Vec<String> = headers.values().into_iter().map(str::to_string).collect();
        let headers = match headers {
            Headers::Read(headers) => headers,
            Headers::Unusable(message) => {
                return Ok((Observed::Failed { reason: "InvalidHeaders", message }, NOT_READY));
            }
        };
        let status = subscription.status.clone().unwrap_or_default();
        let for_this_spec =
            status.observed_generation.is_some() && status.observed_generation == subscription.metadata.generation;
        let current = Current { id: &status.subscription_id, for_this_spec };
        let claimed = claimed(&self.subscriptions, subscription);
        match bmc::ensure(client, node, &subscription.spec, current, &claimed, headers).await {
            Ok(done) => {
                if !matches!(done, Done::Kept(_)) {
                    tracing::info!(?done, "the host's BMC has the subscription");
                }
                Ok((Observed::Subscribed { id: done.id().to_string() }, STEADY))
            }
            Err(err) => {
                let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
                let message = scrubbed(&format!("the BMC's subscription could not be made: {err}"), &secrets);
                // No answer (or Ironic's own unavailability) is Ironic's; an answer (a 500 that
                // quotes the BMC's refusal among them) is the subscription's.
                let unavailable = err.api_error().is_none() || err.is_retryable();
                let reason = if unavailable { "IronicUnavailable" } else { "SubscriptionFailed" };
                Ok((Observed::Failed { reason, message }, REFUSED))
            }
        }
    }

    /// Deletes the BMC's subscription, then lets the object go; without a host or a node there
    /// is nothing to delete.
    async fn delete(
        &self,
        api: &Api<BMCEventSubscription>,
        subscription: &BMCEventSubscription,
        found: Target,
    ) -> Result<Action, Error> {
        let id = subscription.status.as_ref().map(|s| s.subscription_id.clone()).unwrap_or_default();
        let failed = match found {
            Target::Unread(Unread { reason: "NoHost" | "NotRegistered", .. }) => None,
            Target::Unread(Unread { reason, message, .. }) => Some(Observed::Failed { reason, message }),
            Target::Node { node, client, .. } => {
                match bmc::remove(&client, &node, &subscription.spec, &id, &claimed(&self.subscriptions, subscription))
                    .await
                {
                    Ok(()) => None,
                    Err(err) => Some(Observed::Failed {
                        reason: "UnsubscribeFailed",
                        message: scrubbed(&format!("the BMC's subscription could not be deleted: {err}"), &[]),
                    }),
                }
            }
        };
        match failed {
            None => {
                owned::release(api, subscription, SUBSCRIPTION_FINALIZER).await?;
                Ok(Action::await_change())
            }
            Some(observed) => {
                self.write(api, subscription, &observed).await?;
                Ok(Action::requeue(spread(REFUSED)))
            }
        }
    }

    async fn write(
        &self,
        api: &Api<BMCEventSubscription>,
        subscription: &BMCEventSubscription,
        observed: &Observed,
    ) -> Result<(), KubeError> {
        let outcome = compute(subscription, observed, &Time(Timestamp::now()));
        let commit = Commit { controller: CONTROLLER, metrics: &self.runner.metrics, publisher: &self.publisher };
        commit.write(api, subscription, outcome.status.as_ref(), outcome.notices).await?;
        Ok(())
    }
}

/// The ids the other subscriptions of the same host record, as the controller's cache has
/// them: a list of the namespace at every reconcile would cost the apiserver more the more
/// subscriptions there are. A claim the cache has not seen yet is the race a list has too (an
/// id written between the list and the request): the next reconcile settles who keeps it.
fn claimed(subscriptions: &Store<BMCEventSubscription>, subscription: &BMCEventSubscription) -> Claimed {
    claims(subscriptions.state().iter().map(Arc::as_ref), subscription)
}

/// The ids the others of the same host (in `mine`'s namespace: a cache of every namespace holds
/// hosts of one name in several) record, and those of the ones made before `mine` (by creation
/// time, then name: a total order, so two that took one id agree on who keeps it).
pub(super) fn claims<'a>(
    all: impl IntoIterator<Item = &'a BMCEventSubscription>,
    mine: &BMCEventSubscription,
) -> Claimed {
    let order = |s: &BMCEventSubscription| (s.metadata.creation_timestamp.clone().map(|t| t.0), s.name_any());
    let me = order(mine);
    let mut claimed = Claimed::default();
    let same_host = |o: &&BMCEventSubscription| {
        o.uid() != mine.uid() && o.namespace() == mine.namespace() && o.spec.host_name == mine.spec.host_name
    };
    for other in all.into_iter().filter(same_host) {
        let id = other.status.as_ref().map(|s| s.subscription_id.clone()).unwrap_or_default();
        if id.is_empty() {
            continue;
        }
        if order(other) < me {
            claimed.earlier.insert(id.clone());
        }
        claimed.all.insert(id);
    }
    claimed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::bmceventsubscription::{BMCEventSubscriptionSpec, BMCEventSubscriptionStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn object(name: &str, host: &str, created: i64, id: &str) -> BMCEventSubscription {
        let spec = BMCEventSubscriptionSpec { host_name: host.into(), ..Default::default() };
        let mut s = BMCEventSubscription::new(name, spec);
        s.metadata.uid = Some(format!("uid-{name}"));
        s.metadata.creation_timestamp = Timestamp::from_second(created).ok().map(Time);
        s.status = Some(BMCEventSubscriptionStatus { subscription_id: id.into(), ..Default::default() });
        s
    }

    #[test]
    fn the_ids_of_the_same_hosts_others_are_claimed_and_the_older_ones_win() {
        let older = object("a", "h", 10, "1");
        let mine = object("b", "h", 20, "1");
        let younger = object("c", "h", 30, "2");
        let other_host = object("d", "g", 5, "3");
        let unrecorded = object("e", "h", 1, "");
        let all = [older.clone(), mine.clone(), younger.clone(), other_host, unrecorded];
        let claimed = claims(&all, &mine);
        assert_eq!(claimed.all, ["1".to_string(), "2".to_string()].into());
        assert_eq!(claimed.earlier, ["1".to_string()].into(), "the older one keeps id 1");
        // The older one sees no earlier claim of its id: it keeps it.
        assert!(claims(&all, &older).earlier.is_empty());
    }

    #[test]
    fn a_host_of_the_same_name_in_another_namespace_claims_nothing() {
        let mine = object("b", "h", 20, "1");
        let mut elsewhere = object("a", "h", 10, "1");
        elsewhere.metadata.namespace = Some("other".into());
        let claimed = claims(&[elsewhere, mine.clone()], &mine);
        assert!(claimed.all.is_empty() && claimed.earlier.is_empty(), "{claimed:?}");
    }

    #[test]
    fn at_the_same_instant_the_name_decides() {
        let a = object("a", "h", 10, "1");
        let b = object("b", "h", 10, "1");
        assert!(claims(&[a.clone(), b.clone()], &b).earlier.contains("1"));
        assert!(!claims(&[a.clone(), b], &a).earlier.contains("1"));
    }
}
