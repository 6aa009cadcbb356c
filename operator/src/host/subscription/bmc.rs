//! What the BMC has, and the calls that make it match a subscription's spec. Ironic answers a
//! created subscription with the BMC's id, which the status then records: a crash between the
//! two would leave a subscription no status names, so before making one the BMC's subscriptions
//! are read, and one with the spec's destination and context that no other object of the same
//! host names is taken as this object's own. A spec changed since the subscription was made
//! (its generation, headers included: the BMC never shows them) is a new subscription: made
//! (or found) first, then the old one deleted. Every vendor passthru takes the node's lock: a
//! subscription kept as it is costs one read.

use crds::bmceventsubscription::BMCEventSubscriptionSpec;
use ironic_client::{EventSubscription, EventSubscriptionCreate, IronicClient};
use std::collections::{BTreeMap, BTreeSet};

/// What was done.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Done {
    /// The BMC had it already.
    Kept(String),
    /// One made earlier for this object (before a crash) was found and taken.
    Adopted(String),
    Created(String),
}

impl Done {
    pub(super) fn id(&self) -> &str {
        match self {
            Done::Kept(id) | Done::Adopted(id) | Done::Created(id) => id,
        }
    }
}

/// The ids the other subscriptions of the same host record: `all` are never taken as this
/// one's; `earlier` (those of objects made before this one) win one this object records too
/// (two that took the same subscription at once: the older keeps it).
#[derive(Debug, Default)]
pub(super) struct Claimed {
    pub all: BTreeSet<String>,
    pub earlier: BTreeSet<String>,
}

/// What the status records of the BMC's subscription.
#[derive(Debug)]
pub(super) struct Current<'a> {
    pub id: &'a str,
    /// It was made (or confirmed) for the spec's current generation.
    pub for_this_spec: bool,
}

/// Whether the BMC's `subscription` is what `spec` asks for (its headers are write-only).
fn matches(subscription: &EventSubscription, spec: &BMCEventSubscriptionSpec) -> bool {
    // Some BMCs write the destination back with a trailing slash, or without one.
    let destination = |d: &str| d.trim_end_matches('/').to_string();
    subscription.destination.as_deref().map(destination) == Some(destination(&spec.destination))
        && subscription.context.as_deref().unwrap_or_default() == spec.context
}

/// Makes the BMC of `node` have the subscription `spec` asks for.
pub(super) async fn ensure(
    client: &IronicClient,
    node: &str,
    spec: &BMCEventSubscriptionSpec,
    current: Current<'_>,
    claimed: &Claimed,
    headers: Vec<BTreeMap<String, String>>,
) -> Result<Done, ironic_client::Error> {
    // Ours only while no earlier object records it too (a BMC that reuses ids, a host renamed).
    let ours = !current.id.is_empty() && !claimed.earlier.contains(current.id);
    if ours && current.for_this_spec && exists(client, node, current.id, spec).await? {
        return Ok(Done::Kept(current.id.to_string()));
    }
    let mut done = None;
    for id in client.event_subscription_ids(node).await? {
        if id != current.id && !claimed.all.contains(&id) && matches(&client.event_subscription(node, &id).await?, spec)
        {
            done = Some(Done::Adopted(id));
            break;
        }
    }
    let done = match done {
        Some(done) => done,
        None => {
            let wanted = EventSubscriptionCreate {
                destination: spec.destination.clone(),
                context: spec.context.clone(),
                protocol: "Redfish".into(),
                http_headers: headers,
            };
            Done::Created(client.create_event_subscription(node, &wanted).await?.id)
        }
    };
    if ours && !claimed.all.contains(current.id) {
        // The subscription of the spec before it changed (gone already is fine).
        remove_id(client, node, current.id).await?;
    }
    Ok(done)
}

/// Whether the BMC still has `id` matching `spec`. A read that fails is told apart from a
/// subscription the BMC lost (Ironic answers both with an error) by the BMC's list.
async fn exists(
    client: &IronicClient,
    node: &str,
    id: &str,
    spec: &BMCEventSubscriptionSpec,
) -> Result<bool, ironic_client::Error> {
    match client.event_subscription(node, id).await {
        Ok(subscription) => Ok(matches(&subscription, spec)),
        Err(err) => match client.event_subscription_ids(node).await?.iter().any(|i| i == id) {
            true => Err(err),
            false => Ok(false),
        },
    }
}

/// Deletes this object's subscription from the BMC of `node`: the one its status records
/// (unless another object records it), or, with none recorded (made just before a crash), the
/// one it would have taken.
pub(super) async fn remove(
    client: &IronicClient,
    node: &str,
    spec: &BMCEventSubscriptionSpec,
    current: &str,
    claimed: &Claimed,
) -> Result<(), ironic_client::Error> {
    if !current.is_empty() {
        return match claimed.all.contains(current) {
            true => Ok(()),
            false => remove_id(client, node, current).await,
        };
    }
    for id in client.event_subscription_ids(node).await? {
        if !claimed.all.contains(&id) && matches(&client.event_subscription(node, &id).await?, spec) {
            return client.delete_event_subscription(node, &id).await;
        }
    }
    Ok(())
}

/// Deletes `id`, unless the BMC no longer has it.
async fn remove_id(client: &IronicClient, node: &str, id: &str) -> Result<(), ironic_client::Error> {
    if !client.event_subscription_ids(node).await?.iter().any(|i| i == id) {
        return Ok(());
    }
    client.delete_event_subscription(node, id).await
}
