//! Which BareMetalHosts a host of a NodeSet may claim (pure): free and healthy, matching the
//! template's and the host's label selectors, with the inspected hardware `hardwareReqs` asks
//! for; and, when none fits, why, in words a user can act on.

use crds::baremetalhost::annotations::{DETACHED, PAUSED};
use crds::baremetalhost::{BareMetalHost, DiskType, HardwareDetails, ProvisioningState};
use crds::nodeset::{HardwareReqs, NODESET_LABEL};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::ResourceExt;
use kube::core::{Selector, SelectorExt};
use std::collections::BTreeMap;

const MIB_PER_GIB: i64 = 1024;
const BYTES_PER_GIB: i64 = 1024 * 1024 * 1024;

/// True when `labels` satisfy `selector` (no selector selects everything). A selector that
/// does not parse selects nothing: the webhook refuses such selectors, so it can only be an
/// object that got in while the webhook was down, and claiming at random would be worse.
pub(super) fn selector_matches(selector: Option<&LabelSelector>, labels: &BTreeMap<String, String>) -> bool {
    match selector {
        None => true,
        Some(selector) => Selector::try_from(selector.clone()).is_ok_and(|s| s.matches(labels)),
    }
}

/// Why a free host is not good enough, most basic first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Shortfall {
    /// Not inspected: no hardware details to compare.
    NoHardwareData,
    Arch(String),
    CpuCount(i32),
    CpuMhz(i32),
    Memory(i32),
    Disk {
        gib: Option<i32>,
        kind: Option<DiskType>,
    },
}

impl Shortfall {
    /// "none has …", completed.
    pub(super) fn describe(&self) -> String {
        match self {
            Self::NoHardwareData => "has hardware details (none was inspected)".to_string(),
            Self::Arch(arch) => format!("has CPU architecture {arch}"),
            Self::CpuCount(n) => format!("has at least {n} CPUs"),
            Self::CpuMhz(mhz) => format!("has CPUs of at least {mhz} MHz"),
            Self::Memory(gib) => format!("has at least {gib} GiB of memory"),
            Self::Disk { gib, kind } => {
                let what = kind.map(|k| format!("an {} disk", disk_type_name(k))).unwrap_or_else(|| "a disk".into());
                match gib {
                    Some(gib) => format!("has {what} of at least {gib} GiB"),
                    None => format!("has {what}"),
                }
            }
        }
    }
}

fn disk_type_name(kind: DiskType) -> &'static str {
    match kind {
        DiskType::Hdd => "HDD",
        DiskType::Ssd => "SSD",
        DiskType::Nvme => "NVME",
    }
}

/// Compares inspected hardware with `reqs`; the first requirement it misses.
pub(super) fn hardware_fits(reqs: Option<&HardwareReqs>, hardware: Option<&HardwareDetails>) -> Result<(), Shortfall> {
    let Some(reqs) = reqs else {
        return Ok(());
    };
    if *reqs == HardwareReqs::default() {
        return Ok(());
    }
    let Some(hw) = hardware else {
        return Err(Shortfall::NoHardwareData);
    };
    let cpu = hw.cpu.as_ref();
    if let Some(arch) = reqs.cpu_arch.as_deref()
        && cpu.and_then(|c| c.arch.as_deref()) != Some(arch)
    {
        return Err(Shortfall::Arch(arch.to_string()));
    }
    if let Some(count) = reqs.min_cpu_count
        && cpu.and_then(|c| c.count).unwrap_or(0) < count
    {
        return Err(Shortfall::CpuCount(count));
    }
    if let Some(mhz) = reqs.min_cpu_mhz
        && cpu.and_then(|c| c.clock_megahertz).unwrap_or(0.0) < f64::from(mhz)
    {
        return Err(Shortfall::CpuMhz(mhz));
    }
    if let Some(gib) = reqs.min_memory_gib
        && hw.ram_mebibytes.unwrap_or(0) < i64::from(gib).saturating_mul(MIB_PER_GIB)
    {
        return Err(Shortfall::Memory(gib));
    }
    if reqs.min_disk_gib.is_some() || reqs.disk_type.is_some() {
        let needed = i64::from(reqs.min_disk_gib.unwrap_or(0)).saturating_mul(BYTES_PER_GIB);
        let fits = hw.storage.iter().flatten().any(|disk| {
            disk.size_bytes.unwrap_or(0) >= needed && reqs.disk_type.is_none_or(|kind| disk.type_ == Some(kind))
        });
        if !fits {
            return Err(Shortfall::Disk { gib: reqs.min_disk_gib, kind: reqs.disk_type });
        }
    }
    Ok(())
}

/// Why a host is not free to be claimed; `None` when it is.
pub(super) fn not_free(host: &BareMetalHost) -> Option<String> {
    let status = host.status.as_ref();
    let state = status.map(|s| s.provisioning.state).unwrap_or_default();
    let annotations = host.annotations();
    if host.metadata.deletion_timestamp.is_some() {
        return Some("being deleted".into());
    }
    if host.spec.consumer_ref.is_some() || host.labels().contains_key(NODESET_LABEL) {
        return Some("in use".into());
    }
    if host.spec.image.as_ref().is_some_and(|i| !i.url.is_empty()) || host.spec.custom_deploy.is_some() {
        return Some("has an image".into());
    }
    if host.spec.externally_provisioned == Some(true) {
        return Some("externally provisioned".into());
    }
    if annotations.contains_key(DETACHED) || annotations.contains_key(PAUSED) {
        return Some("detached or paused".into());
    }
    if status.is_some_and(|s| s.error_type.is_some()) {
        return Some("in error".into());
    }
    if !matches!(state, ProvisioningState::Available | ProvisioningState::Ready) {
        let state = if state == ProvisioningState::None { "not registered yet" } else { state.as_str() };
        return Some(state.to_string());
    }
    None
}

/// Label selectors parsed once, for many BareMetalHosts.
#[derive(Clone, Debug)]
pub(super) struct Matcher {
    /// Parsed selectors; `None` when one does not parse (it selects nothing, as in
    /// `selector_matches`).
    selectors: Option<Vec<Selector>>,
}

impl Matcher {
    pub(super) fn new(selectors: &[Option<&LabelSelector>]) -> Self {
        let parsed = selectors.iter().flatten().map(|s| Selector::try_from((*s).clone()).ok()).collect();
        Self { selectors: parsed }
    }

    pub(super) fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.selectors.as_ref().is_some_and(|all| all.iter().all(|s| s.matches(labels)))
    }
}

/// Whether a BareMetalHost may be claimed for a host of a NodeSet (`Ok`, else why not), from
/// what is worked out once per BareMetalHost: its labels and why it is not free (`not_free`).
pub(super) fn candidate_with(
    matcher: &Matcher,
    labels: &BTreeMap<String, String>,
    not_free: Option<&str>,
    reqs: Option<&HardwareReqs>,
    hardware: Option<&HardwareDetails>,
) -> Result<(), Rejection> {
    if !matcher.matches(labels) {
        return Err(Rejection::Selector);
    }
    if let Some(why) = not_free {
        return Err(Rejection::NotFree(why.to_string()));
    }
    hardware_fits(reqs, hardware).map_err(Rejection::Hardware)
}

/// Why one BareMetalHost was not a candidate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Rejection {
    Selector,
    NotFree(String),
    Hardware(Shortfall),
}

/// What the BareMetalHosts of the namespace were rejected for, counted: one tally serves every
/// host with the same selectors, so explaining costs nothing per pair of host and machine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Tally {
    /// Rejected by a label selector.
    pub selector: usize,
    /// Not free, by why (in order, so the message is always the same).
    pub busy: BTreeMap<String, usize>,
    /// Free but short of the requirements, in order of first appearance (ties broken the same
    /// way every time).
    pub short: Vec<(Shortfall, usize)>,
}

impl Tally {
    pub(super) fn add(&mut self, rejection: Rejection) {
        match rejection {
            Rejection::Selector => self.selector = self.selector.saturating_add(1),
            Rejection::NotFree(why) => {
                let n = self.busy.entry(why).or_default();
                *n = n.saturating_add(1);
            }
            Rejection::Hardware(shortfall) => match self.short.iter_mut().find(|(s, _)| *s == shortfall) {
                Some((_, n)) => *n = n.saturating_add(1),
                None => self.short.push((shortfall, 1)),
            },
        }
    }

    /// Rejections that matched the selectors.
    fn matching(&self) -> usize {
        let busy: usize = self.busy.values().fold(0, |a, n| a.saturating_add(*n));
        self.short.iter().fold(busy, |a, (_, n)| a.saturating_add(*n))
    }
}

impl FromIterator<Rejection> for Tally {
    fn from_iter<I: IntoIterator<Item = Rejection>>(rejections: I) -> Self {
        let mut tally = Tally::default();
        rejections.into_iter().for_each(|r| tally.add(r));
        tally
    }
}

/// The message of a host for which nothing could be claimed, from what each BareMetalHost of
/// the namespace was rejected for, and how many candidates other hosts of the set took.
pub(super) fn explain(namespace: &str, tally: &Tally, taken: usize) -> String {
    let matching = tally.matching();
    let total = tally.selector.saturating_add(matching).saturating_add(taken);
    if total == 0 {
        return format!("there is no BareMetalHost in namespace {namespace}");
    }
    if matching == 0 && taken == 0 {
        return format!("none of the {total} BareMetalHosts in namespace {namespace} matches the selectors");
    }
    let free = tally.short.iter().map(|(_, n)| n).fold(taken, |a, n| a.saturating_add(*n));
    let mut message = format!("{} BareMetalHosts match the selectors", matching.saturating_add(taken));
    if !tally.busy.is_empty() {
        let states: Vec<String> = tally.busy.iter().map(|(why, n)| format!("{n} {why}")).collect();
        message.push_str(&format!(" ({})", states.join(", ")));
    }
    if free == 0 {
        message.push_str("; none is available");
        return message;
    }
    let most = tally.short.iter().map(|(_, n)| *n).max().unwrap_or(0);
    if let Some((shortfall, _)) = tally.short.iter().find(|(_, n)| *n == most) {
        message.push_str(&format!("; of the {free} available, none {}", shortfall.describe()));
        if taken > 0 {
            message.push_str(&format!(" except {taken} claimed for other hosts of this NodeSet"));
        }
        return message;
    }
    message.push_str(&format!("; the {taken} available are claimed for other hosts of this NodeSet"));
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `host` may be claimed for a host of a NodeSet with these selectors and
    /// requirements: `Ok` when it may, else why not.
    pub(super) fn candidate(
        host: &BareMetalHost,
        selectors: &[Option<&LabelSelector>],
        reqs: Option<&HardwareReqs>,
        hardware: Option<&HardwareDetails>,
    ) -> Result<(), Rejection> {
        candidate_with(&Matcher::new(selectors), host.labels(), not_free(host).as_deref(), reqs, hardware)
    }
    use crds::baremetalhost::{BareMetalHostStatus, Cpu, ProvisionStatus, Storage};
    use serde_json::json;

    fn reqs(value: serde_json::Value) -> HardwareReqs {
        serde_json::from_value(value).expect("reqs")
    }

    fn hardware(cpus: i32, memory_gib: i64, disk_gib: i64, disk: DiskType) -> HardwareDetails {
        HardwareDetails {
            cpu: Some(Cpu {
                arch: Some("x86_64".into()),
                count: Some(cpus),
                clock_megahertz: Some(2400.0),
                ..Default::default()
            }),
            ram_mebibytes: Some(memory_gib * 1024),
            storage: Some(vec![Storage {
                size_bytes: Some(disk_gib * BYTES_PER_GIB),
                type_: Some(disk),
                ..Default::default()
            }]),
            ..Default::default()
        }
    }

    fn host(name: &str, labels: serde_json::Value, state: ProvisioningState) -> BareMetalHost {
        let mut host: BareMetalHost = serde_json::from_value(json!({
            "apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
            "metadata": {"name": name, "namespace": "metal3", "labels": labels},
            "spec": {"online": true}
        }))
        .expect("host");
        host.status = Some(BareMetalHostStatus {
            provisioning: ProvisionStatus { state, ..Default::default() },
            ..Default::default()
        });
        host
    }

    #[test]
    fn a_host_without_requirements_fits_anything_even_uninspected() {
        assert_eq!(hardware_fits(None, None), Ok(()));
        assert_eq!(hardware_fits(Some(&HardwareReqs::default()), None), Ok(()));
    }

    #[test]
    fn each_requirement_names_what_is_missing() {
        let hw = hardware(8, 32, 100, DiskType::Hdd);
        let case = |value| hardware_fits(Some(&reqs(value)), Some(&hw));
        assert_eq!(case(json!({"minCpuCount": 8, "minMemoryGiB": 32, "minDiskGiB": 100})), Ok(()));
        assert_eq!(case(json!({"cpuArch": "aarch64"})), Err(Shortfall::Arch("aarch64".into())));
        assert_eq!(case(json!({"minCpuCount": 16})), Err(Shortfall::CpuCount(16)));
        assert_eq!(case(json!({"minCpuMhz": 3000})), Err(Shortfall::CpuMhz(3000)));
        assert_eq!(case(json!({"minMemoryGiB": 64})), Err(Shortfall::Memory(64)));
        assert_eq!(case(json!({"minDiskGiB": 200})), Err(Shortfall::Disk { gib: Some(200), kind: None }));
        assert_eq!(case(json!({"diskType": "SSD"})), Err(Shortfall::Disk { gib: None, kind: Some(DiskType::Ssd) }));
        assert_eq!(hardware_fits(Some(&reqs(json!({"minCpuCount": 1}))), None), Err(Shortfall::NoHardwareData));
    }

    #[test]
    fn huge_requirements_saturate_instead_of_overflowing() {
        let hw = hardware(8, 32, 100, DiskType::Ssd);
        let huge = reqs(json!({"minMemoryGiB": i32::MAX, "minDiskGiB": i32::MAX}));
        assert_eq!(hardware_fits(Some(&huge), Some(&hw)), Err(Shortfall::Memory(i32::MAX)));
    }

    #[test]
    fn only_free_healthy_available_hosts_can_be_claimed() {
        assert_eq!(not_free(&host("a", json!({}), ProvisioningState::Available)), None);
        assert_eq!(not_free(&host("a", json!({}), ProvisioningState::Ready)), None, "ready is available's old name");
        assert_eq!(not_free(&host("a", json!({}), ProvisioningState::Inspecting)).as_deref(), Some("inspecting"));
        let mut used = host("a", json!({}), ProvisioningState::Available);
        used.spec.consumer_ref = Some(Default::default());
        assert_eq!(not_free(&used).as_deref(), Some("in use"));
        let retained = host("a", json!({NODESET_LABEL: "other"}), ProvisioningState::Available);
        assert_eq!(not_free(&retained).as_deref(), Some("in use"), "another NodeSet's retained host");
        let mut imaged = host("a", json!({}), ProvisioningState::Available);
        imaged.spec.image = Some(crds::baremetalhost::Image { url: "http://x".into(), ..Default::default() });
        assert_eq!(not_free(&imaged).as_deref(), Some("has an image"));
    }

    #[test]
    fn selectors_of_the_template_and_the_host_must_both_match() {
        let h = host("a", json!({"rack": "r1", "serial": "X"}), ProvisioningState::Available);
        let rack: LabelSelector = serde_json::from_value(json!({"matchLabels": {"rack": "r1"}})).expect("s");
        let serial: LabelSelector = serde_json::from_value(json!({"matchExpressions": [
            {"key": "serial", "operator": "In", "values": ["Y"]}]}))
        .expect("s");
        assert_eq!(candidate(&h, &[Some(&rack), None], None, None), Ok(()));
        assert_eq!(candidate(&h, &[Some(&rack), Some(&serial)], None, None), Err(Rejection::Selector));
    }

    #[test]
    fn the_explanation_says_how_many_match_and_what_they_lack() {
        let memory = Rejection::Hardware(Shortfall::Memory(64));
        let message =
            explain("metal3", &[Rejection::Selector, memory.clone(), memory.clone(), memory].into_iter().collect(), 0);
        assert_eq!(
            message,
            "3 BareMetalHosts match the selectors; of the 3 available, none has at least 64 GiB of memory"
        );
        let message = explain("metal3", &[Rejection::Selector, Rejection::Selector].into_iter().collect(), 0);
        assert_eq!(message, "none of the 2 BareMetalHosts in namespace metal3 matches the selectors");
        let message = explain(
            "metal3",
            &[Rejection::NotFree("provisioned".into()), Rejection::NotFree("inspecting".into())].into_iter().collect(),
            0,
        );
        assert_eq!(message, "2 BareMetalHosts match the selectors (1 inspecting, 1 provisioned); none is available");
        let message = explain("metal3", &Tally::default(), 2);
        assert_eq!(
            message,
            "2 BareMetalHosts match the selectors; the 2 available are claimed for other hosts of this NodeSet"
        );
        assert_eq!(explain("metal3", &Tally::default(), 0), "there is no BareMetalHost in namespace metal3");
        let disk = Shortfall::Disk { gib: Some(200), kind: Some(DiskType::Ssd) };
        assert_eq!(disk.describe(), "has an SSD disk of at least 200 GiB");
        assert_eq!(Shortfall::Disk { gib: Some(200), kind: None }.describe(), "has a disk of at least 200 GiB");
    }
}
