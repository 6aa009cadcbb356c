//! Power transitions.

use super::PowerState;

/// A power change (`PUT /v1/nodes/{id}/states/power`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PowerTarget {
    /// `power on`.
    On,
    /// `power off` (hard).
    Off,
    /// `rebooting` (hard).
    Reboot,
    /// `soft power off`: an ACPI shutdown, hard off after the timeout.
    SoftOff,
    /// `soft rebooting`.
    SoftReboot,
}

impl PowerTarget {
    /// The `target` string Ironic expects.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::On => "power on",
            Self::Off => "power off",
            Self::Reboot => "rebooting",
            Self::SoftOff => "soft power off",
            Self::SoftReboot => "soft rebooting",
        }
    }

    /// The power state the node settles in once the change is done.
    pub fn settled_state(self) -> PowerState {
        match self {
            Self::On | Self::Reboot | Self::SoftReboot => PowerState::On,
            Self::Off | Self::SoftOff => PowerState::Off,
        }
    }
}

impl std::fmt::Display for PowerTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
