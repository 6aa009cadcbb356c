//! A host's firmware objects as the firmware step sees them (pure): its `HostFirmwareSettings`
//! and `HostFirmwareComponents`, each reduced to what the NodeSet wants in it, whether it says
//! so, whether it was read for that, and its `Ready` condition; and what the NodeSet wants of
//! each host, from the template and the host's own fields.

use super::FirmwareHost;
use crate::nodeset::basis::Basis;
use crate::nodeset::facts::Facts;
use crate::nodeset::plan::{HostPhase, HostPlan};
use crate::nodeset::rollout::HostWork;
use crds::condition::{Condition, READY, find};
use crds::firmware::{FirmwareUpdate, HostFirmwareComponents, HostFirmwareSettings, setting_text};
use crds::nodeset::{FirmwareSettings, NodeSetSpec, firmware_hash, host_firmware_settings, host_firmware_updates};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Which firmware object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(in crate::nodeset) enum Kind {
    Settings,
    Components,
}

impl Kind {
    pub(in crate::nodeset) fn name(self) -> &'static str {
        match self {
            Kind::Settings => "HostFirmwareSettings",
            Kind::Components => "HostFirmwareComponents",
        }
    }
}

/// One firmware object of a host.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::nodeset) struct Part {
    pub kind: Kind,
    /// The object exists (it is created at registration; the NodeSet never creates one).
    pub exists: bool,
    /// The spec the NodeSet applies: only its own fields.
    pub wanted: Value,
    /// The object says what the NodeSet wants, and nothing else the NodeSet handed over before.
    pub in_sync: bool,
    /// Its status was written for its spec's generation.
    pub read: bool,
    /// Its `Ready`: status, reason, message.
    pub ready: Option<(bool, String, String)>,
}

/// What the NodeSet wants of one host: settings and updates, merged.
pub(in crate::nodeset) fn wanted(spec: &NodeSetSpec, hostname: &str) -> (FirmwareSettings, Vec<FirmwareUpdate>) {
    let template = spec.baremetal_set_template.as_ref();
    let own = spec.nodes.as_ref().and_then(|n| n.get(hostname));
    let settings = host_firmware_settings(
        template.and_then(|t| t.firmware_settings.as_ref()),
        own.and_then(|s| s.firmware_settings.as_ref()),
    );
    let updates = host_firmware_updates(
        template.and_then(|t| t.firmware_updates.as_deref()),
        own.and_then(|s| s.firmware_updates.as_deref()),
    );
    (settings, updates)
}

/// The hash of what the NodeSet wants of one host (`None`: nothing).
pub(in crate::nodeset) fn desired(spec: &NodeSetSpec, hostname: &str) -> Option<String> {
    let (settings, updates) = wanted(spec, hostname);
    firmware_hash(&settings, &updates)
}

/// Each claimed host of `hosts` as the firmware step sees it (`work`: the same hosts as the
/// service rollout sees them, for whether each one's machine runs).
pub(in crate::nodeset) fn hosts<'a>(
    basis: &Basis,
    facts: &Facts,
    hosts: &'a BTreeMap<String, HostPlan>,
    work: &[HostWork],
) -> Vec<FirmwareHost<'a>> {
    hosts
        .iter()
        .filter_map(|(name, host)| {
            let HostPhase::Machine(_) = &host.phase else { return None };
            let bmh = host.bmh.as_deref()?;
            let (settings, updates) = wanted(basis.spec, name);
            let previous = basis.previous.get(name);
            // What was applied counts for the machine it was applied on only.
            let same_machine = previous.and_then(|p| p.bmh_ref.as_ref()).is_some_and(|r| r.uid == bmh.uid());
            let objects = (facts.firmware.get(&bmh.name_any()), facts.components.get(&bmh.name_any()));
            let parts = [settings_part(objects.0.map(|o| o.as_ref()), &settings)]
                .into_iter()
                .chain([components_part(objects.1.map(|o| o.as_ref()), &updates)])
                .flatten()
                .collect();
            Some(FirmwareHost {
                name,
                bmh,
                desired: host.firmware.desired.clone(),
                approved: host.firmware.approved.clone(),
                applied: previous.filter(|_| same_machine).and_then(|p| p.applied_firmware_hash.clone()),
                serving: work.iter().any(|w| w.name == *name && w.ready),
                parts,
            })
        })
        .collect()
}

/// The settings object's part: present when the NodeSet wants settings, or takes back those it
/// handed over before.
pub(in crate::nodeset) fn settings_part(
    object: Option<&HostFirmwareSettings>,
    wanted: &FirmwareSettings,
) -> Option<Part> {
    let owned = object.map(|o| owned(&o.metadata, "f:settings")).unwrap_or_default();
    if wanted.is_empty() && owned.is_empty() {
        return None;
    }
    let says = |o: &HostFirmwareSettings| {
        wanted.iter().all(|(k, v)| o.spec.settings.get(k).is_some_and(|have| setting_text(have) == setting_text(v)))
    };
    Some(Part {
        kind: Kind::Settings,
        exists: object.is_some(),
        wanted: json!({"settings": wanted}),
        in_sync: object.is_some_and(says) && owned.iter().all(|k| wanted.contains_key(k)),
        read: object.is_some_and(|o| read(&o.metadata, o.status.as_ref().and_then(|s| s.observed_generation))),
        ready: object.and_then(|o| ready(o.status.as_ref().map(|s| s.conditions.as_slice()))),
    })
}

/// The components object's part: present when the NodeSet wants updates, or takes back the
/// list it handed over before (a list is owned whole).
pub(in crate::nodeset) fn components_part(
    object: Option<&HostFirmwareComponents>,
    wanted: &[FirmwareUpdate],
) -> Option<Part> {
    let owned = object.is_some_and(|o| owned(&o.metadata, "f:updates").any());
    if wanted.is_empty() && !owned {
        return None;
    }
    let says = |o: &HostFirmwareComponents| match wanted.is_empty() {
        true => !owned,
        false => o.spec.updates == wanted,
    };
    Some(Part {
        kind: Kind::Components,
        exists: object.is_some(),
        wanted: match wanted.is_empty() {
            true => json!({}),
            false => json!({"updates": wanted}),
        },
        in_sync: object.is_some_and(says),
        read: object.is_some_and(|o| read(&o.metadata, o.status.as_ref().and_then(|s| s.observed_generation))),
        ready: object.and_then(|o| ready(o.status.as_ref().map(|s| s.conditions.as_slice()))),
    })
}

/// What the operator's field manager applied under `spec.<field>` (`managedFields`, its apply
/// entry): the map's keys, or, for a list, one entry (`Some` of none) when it owns the list.
fn owned(meta: &ObjectMeta, field: &str) -> Owned {
    let found = meta
        .managed_fields
        .iter()
        .flatten()
        .filter(|e| crate::kit::cache::is_own_apply(e))
        .filter_map(|e| e.fields_v1.as_ref()?.0.get("f:spec")?.get(field)?.as_object().cloned())
        .collect::<Vec<_>>();
    Owned { present: !found.is_empty(), keys: found.into_iter().flat_map(|m| m.into_iter().map(|(k, _)| k)).collect() }
}

/// What the operator owns of a field.
#[derive(Default)]
struct Owned {
    present: bool,
    keys: Vec<String>,
}

impl Owned {
    /// The map keys owned (`f:` taken off).
    fn iter(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().filter_map(|k| k.strip_prefix("f:"))
    }

    fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The field is owned at all (a list is owned whole).
    fn any(&self) -> bool {
        self.present
    }
}

fn read(meta: &ObjectMeta, observed: Option<i64>) -> bool {
    observed.is_some() && observed == meta.generation
}

fn ready(conditions: Option<&[Condition]>) -> Option<(bool, String, String)> {
    let c = find(conditions?, READY)?;
    Some((c.status == "True", c.reason.clone(), c.message.clone()))
}

#[cfg(test)]
pub(in crate::nodeset) fn owned_settings(object: &HostFirmwareSettings) -> Vec<String> {
    owned(&object.metadata, "f:settings").iter().map(str::to_string).collect()
}
