//! Boot devices (`/v1/nodes/{id}/management/boot_device`).

use serde::{Deserialize, Serialize};

string_enum! {
    /// A boot device.
    BootDevice {
        /// Network boot.
        Pxe => "pxe",
        /// The local disk.
        Disk => "disk",
        /// The (virtual) CD drive.
        Cdrom => "cdrom",
        /// The firmware setup.
        Bios => "bios",
        /// Safe mode.
        Safe => "safe",
        /// UEFI HTTP boot.
        UefiHttp => "uefihttp",
        /// WAN boot.
        Wanboot => "wanboot",
        /// iSCSI boot.
        IscsiBoot => "iscsiboot",
        /// Floppy.
        Floppy => "floppy",
    }
}

/// The boot device a node is set to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootDeviceState {
    /// The device; `None` when the BMC cannot tell.
    pub boot_device: Option<BootDevice>,
    /// Whether it applies to every boot or only the next; `None` if unknown.
    pub persistent: Option<bool>,
}
