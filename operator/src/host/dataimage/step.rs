//! The host's data image step, at its power on: read the node's record and what its virtual CD
//! holds, write the record first, then ask Ironic to attach or eject (`record::decide`).

use super::gate::Want;
use super::record::{Move, Record, Shown, decide};
use crds::dataimage::{DataImageSpec, validate_data_image};
use crds::validation::summarize;
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

/// Runs the step for the node `uuid` and the image `want` asks for. Whatever goes wrong past
/// reading the node (Ironic refusing, the BMC failing, an invalid URL from before the webhook)
/// is recorded as the data image's failure and the host boots without it, tried again at its
/// next power on: a data image never keeps a machine off. Only a node that cannot be read or
/// written is an error, to retry.
pub(crate) async fn run(client: &IronicClient, uuid: &str, want: &Want) -> Result<Outcome, ironic_client::Error> {
    let node = client.get_node_fields(uuid, &["extra", "last_error", "reservation"]).await?;
    if node.reservation.is_some() {
        // An attach or eject under way (virtual media actions run in the background).
        return Ok(Outcome::Called);
    }
    let record = Record::of(&node.extra);
    if want.url.is_none() && record == Record::default() {
        // No DataImage and nothing of ours recorded: the CD is not ours to look at.
        return Ok(Outcome::Settled);
    }
    let problem = match want.url.as_deref().map(|url| validate_data_image(&DataImageSpec { url: url.into() })) {
        Some(errors) if !errors.is_empty() => Some(summarize(&errors)),
        _ => None,
    };
    // What the node's record says after each write of the step: an attach that then errors
    // keeps the URL it wrote (the attach may have happened).
    let mut written = record.clone();
    let result = match problem {
        Some(problem) => Err(problem),
        None => act(client, uuid, want, &node.extra, &mut written, node.last_error.as_deref())
            .await
            .map_err(|e| e.to_string()),
    };
    let message = match result {
        Ok(outcome) => return Ok(outcome),
        Err(message) => message,
    };
    let url = want.url.as_deref().or(written.attached.as_deref()).unwrap_or_default();
    tracing::info!("the host's data image step failed; the host boots without it");
    // Best effort: a failure that cannot be recorded never keeps the host off either.
    if let Err(err) = update(client, uuid, written.refused(url, &message).patch(&node.extra)).await {
        tracing::warn!(error = %err, "cannot record the data image's failure in the node");
    }
    Ok(Outcome::Settled)
}

/// Drops the record before Ironic tears the deployment down (an undeploy ejects the CD): a
/// record never outlives the deployment it was made in.
pub(crate) async fn forget(
    client: &IronicClient,
    uuid: &str,
    extra: &Map<String, Value>,
) -> Result<(), ironic_client::Error> {
    if extra.contains_key(super::record::RECORD) {
        client
            .update_node(uuid, &[ironic_client::PatchOperation::remove(format!("/extra/{}", super::record::RECORD))])
            .await?;
    }
    Ok(())
}

async fn act(
    client: &IronicClient,
    uuid: &str,
    want: &Want,
    extra: &Map<String, Value>,
    written: &mut Record,
    last_error: Option<&str>,
) -> Result<Outcome, ironic_client::Error> {
    let media = client.list_virtual_media(uuid).await?;
    let shown = Shown { record: written, inserted: media.iter().any(|m| m.inserted), last_error };
    let moved = decide(want.url.as_deref(), shown);
    let (Move::Attach { record: next, .. }
    | Move::Detach { record: next }
    | Move::Again { record: next }
    | Move::Settled { record: next }) = &moved;
    if next != written {
        update(client, uuid, next.patch(extra)).await?;
        *written = next.clone();
    }
    match moved {
        Move::Attach { url, .. } => {
            tracing::info!("attaching the host's data image");
            client.attach_virtual_media(uuid, VirtualMediaDevice::Cdrom, &url).await?;
            Ok(Outcome::Called)
        }
        Move::Detach { .. } => {
            tracing::info!("ejecting the host's data image");
            client.detach_virtual_media(uuid, VirtualMediaDevice::Cdrom).await?;
            Ok(Outcome::Called)
        }
        Move::Again { .. } => Ok(Outcome::Called),
        Move::Settled { .. } => Ok(Outcome::Settled),
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
