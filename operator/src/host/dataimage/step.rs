//! The host's data image step, at its power on: read the node's record and what its virtual CD
//! holds, write the record first, then ask Ironic to attach or eject (`record::decide`).

use super::gate::Want;
use super::record::{Move, Record, Shown, decide};
use ironic_client::{IronicClient, VirtualMediaDevice};
use serde_json::{Map, Value};

/// What the step did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Ironic was asked something, or the node was busy: the step runs again after the next poll.
    Called,
    /// Nothing more at this power on: the host may be powered on.
    Settled,
}

/// Runs the step for the node `uuid` and the image `want` asks for. What Ironic refuses for good
/// (a driver without virtual media, a URL it cannot use) is recorded as the data image's failure
/// and the host boots without it; only what passes by itself is an error, to retry.
pub(crate) async fn run(client: &IronicClient, uuid: &str, want: &Want) -> Result<Outcome, ironic_client::Error> {
    let node = client.get_node_fields(uuid, &["extra", "last_error", "reservation"]).await?;
    if node.reservation.is_some() {
        // An attach or eject under way (virtual media actions run in the background).
        return Ok(Outcome::Called);
    }
    let record = Record::of(&node.extra);
    match act(client, uuid, want, &node.extra, &record, node.last_error.as_deref()).await {
        Err(err) if !err.is_transient() => {
            let url = want.url.as_deref().or(record.attached.as_deref()).unwrap_or_default();
            let failed = record.refused(url, &err.to_string());
            update(client, uuid, failed.patch(&node.extra)).await?;
            Ok(Outcome::Settled)
        }
        other => other,
    }
}

async fn act(
    client: &IronicClient,
    uuid: &str,
    want: &Want,
    extra: &Map<String, Value>,
    record: &Record,
    last_error: Option<&str>,
) -> Result<Outcome, ironic_client::Error> {
    let media = client.list_virtual_media(uuid).await?;
    let shown = Shown { record, inserted: media.iter().any(|m| m.inserted), last_error };
    match decide(want.url.as_deref(), shown) {
        Move::Attach { record: next, url } => {
            update(client, uuid, next.patch(extra)).await?;
            tracing::info!("attaching the host's data image");
            client.attach_virtual_media(uuid, VirtualMediaDevice::Cdrom, &url).await?;
            Ok(Outcome::Called)
        }
        Move::Detach => {
            tracing::info!("ejecting the host's data image");
            client.detach_virtual_media(uuid, VirtualMediaDevice::Cdrom).await?;
            Ok(Outcome::Called)
        }
        Move::Again { record: next } => {
            update(client, uuid, next.patch(extra)).await?;
            Ok(Outcome::Called)
        }
        Move::Settled { record: next } => {
            if next != *record {
                update(client, uuid, next.patch(extra)).await?;
            }
            Ok(Outcome::Settled)
        }
    }
}

async fn update(
    client: &IronicClient,
    uuid: &str,
    patch: Vec<ironic_client::PatchOperation>,
) -> Result<(), ironic_client::Error> {
    if !patch.is_empty() {
        client.update_node(uuid, &patch).await?;
    }
    Ok(())
}
