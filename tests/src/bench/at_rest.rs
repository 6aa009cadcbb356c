//! A change cursor brought to where an operator's poller is at rest, so that a benchmark's
//! looks at what changed cost what the poller's do, not what a fresh cursor's first looks do.

use ironic_client::{CHANGE_MARGIN, ChangeCursor, IronicClient};
use std::time::Instant;

/// Brings `cursor`, whose first full list started at `listed`, to rest: a look starts a margin
/// before the newest write (reading every node written in that margin, or every node sharing
/// that time) until a look with the margin, started a margin or more after that write was
/// first seen, found it unmoved; from then on a look starts after it. So this waits out the
/// margin and makes that one look.
pub async fn settle(client: &IronicClient, cursor: &mut ChangeCursor, listed: Instant) -> crate::Result<()> {
    tokio::time::sleep_until((listed + CHANGE_MARGIN).into()).await;
    client.node_status_changes(cursor, false).await?;
    Ok(())
}
