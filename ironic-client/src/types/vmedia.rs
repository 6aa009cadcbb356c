//! Virtual media as Ironic reports and takes it.

use serde::Deserialize;

string_enum! {
    /// A device virtual media can be attached as (Ironic's `VMEDIA_DEVICES`).
    VirtualMediaDevice {
        /// A CD or DVD drive.
        Cdrom => "cdrom",
        /// A disk (USB stick).
        Disk => "disk",
        /// A floppy drive.
        Floppy => "floppy",
    }
}

/// One virtual CD or DVD of a node, as its BMC reports it.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct VirtualMedia {
    /// The Redfish media types the device takes (`CD`, `DVD`, …).
    pub media_types: Vec<String>,
    /// Whether an image is inserted.
    pub inserted: bool,
    /// The image's URL as the BMC has it: Ironic's own copy, never the URL it was given.
    pub image: Option<String>,
}
