//! A change cursor brought to where an operator's poller is at rest, so that a benchmark's
//! looks at what changed cost what the poller's do, not what a fresh cursor's first looks do.

use ironic_client::{CHANGE_MARGIN, ChangeCursor, IronicClient};
use std::time::{Duration, Instant};

/// The longest the cursor is given to come to rest: Ironic's newest write moving again and
/// again (a conductor writing nodes) keeps it from resting.
const LIMIT: Duration = Duration::from_secs(120);

/// Brings `cursor`, whose first full list started at `listed`, to rest
/// ([`ChangeCursor::at_rest`]): a look starts a margin before the newest write (reading every
/// node written in that margin, or every node sharing that time) until a look with the
/// margin, started a margin or more after that write was first seen, found it unmoved; from
/// then on a look starts after it, and while nothing is written later it is the newest node's
/// read alone, which sets its next first page to the least. So this waits out the margin,
/// then looks (a second apart while the start is not settled) until the cursor is at rest.
/// Says on stderr when it did not come to rest in time: the looks measured after are then a
/// cursor's not at rest.
pub async fn settle(client: &IronicClient, cursor: &mut ChangeCursor, listed: Instant) -> crate::Result<()> {
    tokio::time::sleep_until((listed + CHANGE_MARGIN).into()).await;
    let deadline = Instant::now() + LIMIT;
    while !cursor.at_rest() {
        if Instant::now() >= deadline {
            let why = "Ironic's newest write kept moving";
            eprintln!("[bench] the change cursor did not come to rest in {LIMIT:?}: {why}");
            break;
        }
        client.node_status_changes(cursor, false).await?;
        if !cursor.at_rest() {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    Ok(())
}
