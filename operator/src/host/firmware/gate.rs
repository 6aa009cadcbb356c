//! Whether a host must wait in preparing for its `HostFirmwareSettings` to be read: as
//! baremetal-operator waits, a host whose settings object wants something is not let on to
//! provisioning before the wanted settings were compared with what Ironic read for the spec's
//! current generation. The firmware controller's memory of what hosts wait for is the fast
//! path; this read is for when it knows nothing of the host (its first read has not happened,
//! or the operator restarted in between).

use super::reconcile::NO_SETTINGS;
use super::status::{CHANGE_DETECTED, VALID};
use super::wanted::{Settings, Wanted};
use crate::host::wake::HostKey;
use crate::kit::KubeError;
use crate::kit::error::Verb;
use crds::baremetalhost::BareMetalHost;
use crds::condition::{READY, find, is_true};
use crds::firmware::{HostFirmwareSettings, HostUpdatePolicy};
use kube::ResourceExt;
use kube::api::Api;

crate::install::rbac::require_access!(crate::install::rbac::table::FIRMWARE, [HostFirmwareSettings, HostUpdatePolicy]: Get);

/// What the host controller knows of a host's BIOS settings in one reconcile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct BiosFacts {
    /// What the host waits for (empty: nothing).
    pub settings: Settings,
    /// The host must wait for its settings object to be read before it moves on
    /// ([`must_wait`]).
    pub pending: bool,
    /// A provisioned host may be serviced for them ([`settings_on_reboot`]).
    pub on_reboot: bool,
}

/// Where a host is, as far as its BIOS settings go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Moment {
    /// Being prepared, or available and about to be provisioned: the last chance to apply
    /// settings before the host runs its image.
    BeforeProvisioning,
    /// Provisioned, its node in `service failed`: tried again or aborted.
    ServicingFailed,
    /// Provisioned otherwise.
    Provisioned,
    /// Anywhere else.
    Other,
}

/// The BIOS facts of `host` at `moment`. The settings object is read by name only at the
/// moments that decide something (before provisioning; a failed servicing; a provisioned host
/// with settings waiting), the policy only for a provisioned host with settings waiting: the
/// hosts at other moments cost nothing. When the firmware controller has not told what the host
/// waits for (its first read, after a restart, has not happened yet), those moments wait for
/// it. A settings object deleted since the controller read it takes what it wanted with it (the
/// controller is not told of deletions).
pub(crate) async fn bios_facts(
    client: &kube::Client,
    host: &BareMetalHost,
    key: &HostKey,
    wanted: &Wanted,
    moment: Moment,
) -> Result<BiosFacts, KubeError> {
    let mut settings = wanted.of(key);
    let deciding = match moment {
        Moment::BeforeProvisioning | Moment::ServicingFailed => true,
        Moment::Provisioned => !settings.is_empty(),
        Moment::Other => false,
    };
    if !deciding {
        return Ok(BiosFacts { settings, pending: false, on_reboot: false });
    }
    // Marked before the read: a read of the object that ends after ours wakes the host.
    let holds = moment != Moment::Provisioned && settings.is_empty();
    if holds {
        wanted.hold(key);
    }
    let object = settings_of(client, host).await?;
    if object.is_none() && !settings.is_empty() {
        wanted.forget(key);
        settings.clear();
    }
    let pending = moment != Moment::Provisioned && settings.is_empty() && must_wait(object.as_ref());
    if !pending {
        wanted.unhold(key);
    }
    let provisioned = matches!(moment, Moment::Provisioned | Moment::ServicingFailed);
    let on_reboot = provisioned && !settings.is_empty() && settings_on_reboot(client, host).await?;
    Ok(BiosFacts { settings, pending, on_reboot })
}

/// The reasons of `Ready` after a read of the host's settings.
const READ: [&str; 3] = ["SettingsMatch", "ChangeDetected", "InvalidSettings"];

/// The host's settings object, read now.
pub(crate) async fn settings_of(
    client: &kube::Client,
    host: &BareMetalHost,
) -> Result<Option<HostFirmwareSettings>, KubeError> {
    let name = host.name_any();
    let api: Api<HostFirmwareSettings> = Api::namespaced(client.clone(), &host.namespace().unwrap_or_default());
    api.get_opt(&name).await.map_err(KubeError::of::<HostFirmwareSettings>(Verb::Get, &name))
}

/// Whether the host's `HostUpdatePolicy` (of its name, in its namespace) lets a provisioned
/// host have its settings applied by servicing at its next reboot. Without one, no: changes
/// wait for the host's next `preparing`, as in baremetal-operator.
pub(crate) async fn settings_on_reboot(client: &kube::Client, host: &BareMetalHost) -> Result<bool, KubeError> {
    Ok(policy_of(client, host).await?.is_some_and(|p| p.spec.settings_on_reboot()))
}

/// Whether the host's `HostUpdatePolicy` lets a provisioned host have its firmware updates
/// flashed by servicing at its next reboot.
pub(crate) async fn updates_on_reboot(client: &kube::Client, host: &BareMetalHost) -> Result<bool, KubeError> {
    Ok(policy_of(client, host).await?.is_some_and(|p| p.spec.updates_on_reboot()))
}

/// The host's `HostUpdatePolicy` (of its name, in its namespace), read now.
async fn policy_of(client: &kube::Client, host: &BareMetalHost) -> Result<Option<HostUpdatePolicy>, KubeError> {
    let name = host.name_any();
    let api: Api<HostUpdatePolicy> = Api::namespaced(client.clone(), &host.namespace().unwrap_or_default());
    api.get_opt(&name).await.map_err(KubeError::of::<HostUpdatePolicy>(Verb::Get, &name))
}

/// Whether preparing must wait: the object wants settings, and either they were not yet read
/// for its current generation, or they were and some wait to be applied (which the firmware
/// controller is about to tell the host controller). Invalid wanted settings do not hold the
/// host, as in baremetal-operator: the object's conditions say why they are not applied.
pub(crate) fn must_wait(settings: Option<&HostFirmwareSettings>) -> bool {
    let Some(settings) = settings.filter(|s| !s.spec.settings.is_empty()) else { return false };
    let Some(status) = &settings.status else { return true };
    let current = |type_: &str| {
        find(&status.conditions, type_).is_some_and(|c| c.observed_generation == settings.metadata.generation)
    };
    let ready = find(&status.conditions, READY);
    if ready.is_some_and(|c| c.reason == NO_SETTINGS) && current(READY) {
        // The driver gives no settings: nothing to wait for (the object's `Ready` says why).
        return false;
    }
    let read = ready.is_some_and(|c| READ.contains(&c.reason.as_str()));
    if !(read && current(READY) && current(CHANGE_DETECTED) && current(VALID)) {
        return true;
    }
    is_true(&status.conditions, CHANGE_DETECTED) && is_true(&status.conditions, VALID)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::condition::Condition;
    use crds::firmware::{HostFirmwareSettingsSpec, HostFirmwareSettingsStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    use k8s_openapi::jiff::Timestamp;

    fn settings(wanted: bool, generation: i64, conditions: &[(&str, &str, &str, i64)]) -> HostFirmwareSettings {
        let wanted = wanted.then(|| ("ProcTurboMode".to_string(), IntOrString::String("Disabled".into())));
        let mut s = HostFirmwareSettings::new("h", HostFirmwareSettingsSpec { settings: wanted.into_iter().collect() });
        s.metadata.generation = Some(generation);
        let conditions = conditions
            .iter()
            .map(|(type_, status, reason, seen)| Condition {
                type_: type_.to_string(),
                status: status.to_string(),
                reason: reason.to_string(),
                message: String::new(),
                observed_generation: Some(*seen),
                last_transition_time: Time(Timestamp::UNIX_EPOCH),
            })
            .collect();
        s.status = Some(HostFirmwareSettingsStatus { conditions, ..Default::default() });
        s
    }

    fn read(change: &str, valid: &str, ready: &str, seen: i64) -> Vec<(&'static str, String, String, i64)> {
        vec![
            ("ChangeDetected", change.into(), "Success".into(), seen),
            ("Valid", valid.into(), "x".into(), seen),
            ("Ready", "x".into(), ready.into(), seen),
        ]
    }

    fn with(
        wanted: bool,
        generation: i64,
        conditions: Vec<(&'static str, String, String, i64)>,
    ) -> HostFirmwareSettings {
        let borrowed: Vec<_> = conditions.iter().map(|(t, s, r, g)| (*t, s.as_str(), r.as_str(), *g)).collect();
        settings(wanted, generation, &borrowed)
    }

    #[test]
    fn no_object_or_nothing_wanted_never_holds_a_host() {
        assert!(!must_wait(None));
        assert!(!must_wait(Some(&with(false, 1, Vec::new()))));
    }

    #[test]
    fn wanted_settings_not_yet_read_for_this_generation_hold_it() {
        assert!(must_wait(Some(&with(true, 1, Vec::new()))), "never read");
        assert!(must_wait(Some(&with(true, 2, read("False", "True", "SettingsMatch", 1)))), "read for the old spec");
        assert!(must_wait(Some(&with(true, 1, read("True", "True", "NotRead", 1)))), "Ironic has not read them yet");
    }

    #[test]
    fn a_driver_without_settings_holds_nothing() {
        assert!(!must_wait(Some(&with(true, 1, read("True", "True", "NoSettings", 1)))));
        assert!(
            must_wait(Some(&with(true, 2, read("True", "True", "NoSettings", 1)))),
            "but a newer spec is read first"
        );
    }

    #[test]
    fn once_read_only_a_valid_change_holds_it() {
        assert!(!must_wait(Some(&with(true, 1, read("False", "True", "SettingsMatch", 1)))));
        assert!(must_wait(Some(&with(true, 1, read("True", "True", "ChangeDetected", 1)))));
        assert!(!must_wait(Some(&with(true, 1, read("True", "False", "InvalidSettings", 1)))), "invalid: not applied");
    }
}
