//! What the BMC has, and the calls that make it match a subscription's spec. Ironic answers a
//! created subscription with the BMC's id, which the status then records: a crash between the
//! two would leave a subscription no status names, so before making one the BMC's subscriptions
//! are read, and one with the spec's destination and context that no other object of the same
//! host names is taken as this object's own. A spec changed after the subscription was made is
//! a new subscription: made (or found) first, then the old one deleted.

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

/// Whether the BMC's `subscription` is what `spec` asks for (its headers are write-only: a
/// changed header Secret is not seen).
fn matches(subscription: &EventSubscription, spec: &BMCEventSubscriptionSpec) -> bool {
    subscription.destination.as_deref() == Some(spec.destination.as_str())
        && subscription.context.as_deref().unwrap_or_default() == spec.context
}

/// Makes the BMC of `node` have the subscription `spec` asks for. `current` is the id the
/// status records; `claimed` the ids other objects of the same host record.
pub(super) async fn ensure(
    client: &IronicClient,
    node: &str,
    spec: &BMCEventSubscriptionSpec,
    current: &str,
    claimed: &BTreeSet<String>,
    headers: Vec<BTreeMap<String, String>>,
) -> Result<Done, ironic_client::Error> {
    let ids = client.event_subscription_ids(node).await?;
    let present = !current.is_empty() && ids.iter().any(|id| id == current);
    if present && matches(&client.event_subscription(node, current).await?, spec) {
        return Ok(Done::Kept(current.to_string()));
    }
    let mut done = None;
    for id in ids.iter().filter(|id| id.as_str() != current && !claimed.contains(*id)) {
        if matches(&client.event_subscription(node, id).await?, spec) {
            done = Some(Done::Adopted(id.clone()));
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
    if present {
        // The subscription of the spec before it changed.
        client.delete_event_subscription(node, current).await?;
    }
    Ok(done)
}

/// Deletes the subscription `id` from the BMC of `node`, unless the BMC no longer has it.
pub(super) async fn remove(client: &IronicClient, node: &str, id: &str) -> Result<(), ironic_client::Error> {
    if id.is_empty() || !client.event_subscription_ids(node).await?.iter().any(|i| i == id) {
        return Ok(());
    }
    client.delete_event_subscription(node, id).await
}
