//! Provision and power states.

string_enum! {
    /// A node's provision state (`ironic/common/states.py`).
    ProvisionState {
        /// Registered, BMC not verified yet.
        Enroll => "enroll",
        /// BMC credentials being verified (`manage`).
        Verifying => "verifying",
        /// Verified; ready for inspection, cleaning or `provide`.
        Manageable => "manageable",
        /// Ready to deploy.
        Available => "available",
        /// Deployed.
        Active => "active",
        /// Deploying.
        Deploying => "deploying",
        /// Waiting for the ramdisk agent during a deployment.
        DeployWait => "wait call-back",
        /// The deployment failed.
        DeployFailed => "deploy failed",
        /// A deployment paused on a hold step.
        DeployHold => "deploy hold",
        /// Tearing a deployment down.
        Deleting => "deleting",
        /// The target of an undeploy (reported as a target only).
        Deleted => "deleted",
        /// Cleaning.
        Cleaning => "cleaning",
        /// Waiting for the ramdisk agent during cleaning.
        CleanWait => "clean wait",
        /// Cleaning failed.
        CleanFailed => "clean failed",
        /// Cleaning paused on a hold step.
        CleanHold => "clean hold",
        /// Undeploy or another operation failed unrecoverably.
        Error => "error",
        /// Target of a rebuild (reported as a target only).
        Rebuild => "rebuild",
        /// Inspecting.
        Inspecting => "inspecting",
        /// Waiting for out-of-band or agent inspection data.
        InspectWait => "inspect wait",
        /// Inspection failed.
        InspectFailed => "inspect failed",
        /// Adopting an already deployed machine.
        Adopting => "adopting",
        /// Adoption failed.
        AdoptFailed => "adopt failed",
        /// Booting the rescue ramdisk.
        Rescuing => "rescuing",
        /// Waiting for the rescue ramdisk.
        RescueWait => "rescue wait",
        /// Running the rescue ramdisk.
        Rescue => "rescue",
        /// Rescue failed.
        RescueFailed => "rescue failed",
        /// Leaving rescue.
        Unrescuing => "unrescuing",
        /// Leaving rescue failed.
        UnrescueFailed => "unrescue failed",
        /// Running service steps on a deployed node.
        Servicing => "servicing",
        /// Waiting for the ramdisk agent during servicing.
        ServiceWait => "service wait",
        /// Servicing failed.
        ServiceFailed => "service failed",
        /// Servicing paused on a hold step.
        ServiceHold => "service hold",
    }
}

impl ProvisionState {
    /// A failure state: every `* failed` state and `error`.
    pub fn is_failure(&self) -> bool {
        match self {
            Self::DeployFailed
            | Self::CleanFailed
            | Self::InspectFailed
            | Self::AdoptFailed
            | Self::RescueFailed
            | Self::UnrescueFailed
            | Self::ServiceFailed
            | Self::Error => true,
            Self::Other(s) => s.ends_with(" failed"),
            _ => false,
        }
    }

    /// One of Ironic's stable states, where a node rests until asked to move.
    pub fn is_stable(&self) -> bool {
        matches!(self, Self::Enroll | Self::Manageable | Self::Available | Self::Active | Self::Error | Self::Rescue)
    }
}

string_enum! {
    /// A node's power state, or the target of a power change.
    PowerState {
        /// Powered on.
        On => "power on",
        /// Powered off.
        Off => "power off",
        /// Rebooting (as a target).
        Rebooting => "rebooting",
        /// Soft rebooting (as a target).
        SoftRebooting => "soft rebooting",
        /// Soft power off (as a target).
        SoftPowerOff => "soft power off",
        /// The power state could not be determined.
        Error => "error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_known_and_unknown_states() {
        let s: ProvisionState = serde_json::from_str("\"wait call-back\"").unwrap();
        assert_eq!(s, ProvisionState::DeployWait);
        let s: ProvisionState = serde_json::from_str("\"frobnicating\"").unwrap();
        assert_eq!(s, ProvisionState::Other("frobnicating".into()));
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"frobnicating\"");
        assert_eq!(format!("{:?}", ProvisionState::CleanFailed), "\"clean failed\"");
    }

    #[test]
    fn failures() {
        assert!(ProvisionState::DeployFailed.is_failure());
        assert!(ProvisionState::Error.is_failure());
        assert!(ProvisionState::Other("future failed".into()).is_failure());
        assert!(!ProvisionState::Enroll.is_failure());
        assert!(!ProvisionState::CleanWait.is_failure());
    }
}
