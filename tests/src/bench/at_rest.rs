//! A change cursor brought to where an operator's poller is at rest, so that a benchmark's
//! looks at what changed cost what the poller's do, not what a fresh cursor's first looks do.

use ironic_client::{CHANGE_MARGIN, ChangeCursor, IronicClient};
use std::time::Instant;

/// Looks that bring a look's first page down to its least: each look that one page sufficed
/// halves it, from at most a page of 1000 (what a long look found) to 20.
const SHRINK: usize = 7;

/// Brings `cursor`, whose first full list started at `listed`, to rest: a look starts a margin
/// before the newest write (reading every node written in that margin, or every node sharing
/// that time) until a look with the margin, started a margin or more after that write was
/// first seen, found it unmoved; from then on a look starts after it, and its first page
/// shrinks look by look. So this waits out the margin and makes that look, then the looks
/// that shrink the page.
pub async fn settle(client: &IronicClient, cursor: &mut ChangeCursor, listed: Instant) -> crate::Result<()> {
    tokio::time::sleep_until((listed + CHANGE_MARGIN).into()).await;
    for _ in 0..=SHRINK {
        client.node_status_changes(cursor, false).await?;
    }
    Ok(())
}
