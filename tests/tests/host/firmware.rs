//! HostFirmwareSettings and FirmwareSchema against Ironic and emulated Redfish BMCs: a host's
//! BIOS settings read into the settings object of its name and their schema published once for
//! its model; values the schema forbids refused at admission; a valid change detected, and
//! applied by a manual clean while the host is prepared, before it is provisioned.

use crate::host_common::{BMC_PASSWORD, BMC_USER, HostEnv, Options, Recorder, secs, state_of};
use anyhow::Context as _;
use crds::condition::find;
use crds::firmware::{FirmwareSchema, HostFirmwareSettings, HostUpdatePolicy};
use ferrometal_tests::wait;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use std::time::Duration;

/// Waits until the object `name` satisfies `check`. The controllers read a host not ready yet
/// every 30 s, as baremetal-operator does, and a servicing takes a while.
pub(crate) async fn object_until<K>(
    api: &Api<K>,
    name: &str,
    what: &str,
    check: impl Fn(&K) -> bool,
) -> anyhow::Result<K>
where
    K: kube::Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    let check = &check;
    let kind = K::kind(&());
    wait::until_ok(&format!("{kind} {name}: {what}"), secs(240), Duration::from_millis(200), || async move {
        Ok(api.get_opt(name).await?.filter(|o| check(o)))
    })
    .await
}

/// Waits until the settings object `name` satisfies `check`.
async fn settings_until(
    api: &Api<HostFirmwareSettings>,
    name: &str,
    what: &str,
    check: impl Fn(&HostFirmwareSettings) -> bool,
) -> anyhow::Result<HostFirmwareSettings> {
    object_until(api, name, what, check).await
}

fn setting(settings: &HostFirmwareSettings, name: &str) -> Option<String> {
    settings.status.as_ref().and_then(|s| s.settings.get(name).cloned())
}

fn condition(settings: &HostFirmwareSettings, type_: &str) -> Option<(String, String)> {
    let status = settings.status.as_ref()?;
    find(&status.conditions, type_).map(|c| (c.status.clone(), c.reason.clone()))
}

fn merge(settings: serde_json::Value) -> Patch<serde_json::Value> {
    Patch::Merge(json!({"spec": {"settings": settings}}))
}

/// The environment with the operator and its webhooks, and BMC credentials.
pub(crate) async fn with_operator(prefix: &str, systems: usize) -> anyhow::Result<HostEnv> {
    let mut t = HostEnv::start(prefix, Options { sushy_systems: Some(systems), ..Options::default() }).await?;
    let mut config = t.env.operator_config();
    config.host = Some(t.host_config());
    t.env.with_webhooks(&mut config)?;
    t.operator = Some(t.env.start_operator(config).await?);
    t.credentials_secret("bmc", BMC_USER, BMC_PASSWORD).await?;
    Ok(t)
}

async fn started(prefix: &str, systems: usize) -> anyhow::Result<(HostEnv, Api<HostFirmwareSettings>)> {
    let t = with_operator(prefix, systems).await?;
    let api = Api::namespaced(t.env.client(), t.ns());
    Ok((t, api))
}

/// Creates `name`, the first emulated Redfish system booting a live ISO: provisioned without
/// an agent.
pub(crate) async fn live_iso_host(t: &HostEnv, name: &str) -> anyhow::Result<crds::baremetalhost::BareMetalHost> {
    let iso = t.ironic.image_server().write_live_iso("live.iso")?;
    let mut spec = t.redfish_spec(0, "bmc")?;
    spec["image"] = json!({"url": iso, "format": "live-iso"});
    t.create_host(name, spec, json!({})).await
}

/// What a node never goes through while its host is serviced: deployed, cleaned, deleted.
pub(crate) const FORBIDDEN: [&str; 5] = ["deploying", "cleaning", "deleting", "available", "manageable"];

/// Checks that `host` was serviced in place since its node's first `deployed` transitions:
/// active → servicing → active and nothing else, the host never out of `provisioned`, the
/// `Servicing` Event published. Answers the node's transitions since, and where the host's
/// recorded states reach `provisioned`.
pub(crate) async fn serviced_in_place(
    t: &HostEnv,
    recorder: &Recorder,
    host: &str,
    uuid: &str,
    deployed: usize,
) -> anyhow::Result<(Vec<String>, usize)> {
    let since: Vec<String> = t.ironic_transitions(uuid)?.into_iter().skip(deployed).collect();
    assert_eq!(since.first().map(String::as_str), Some("servicing"), "{since:?}");
    assert_eq!(since.last().map(String::as_str), Some("active"), "{since:?}");
    assert!(since.iter().all(|s| !FORBIDDEN.contains(&s.as_str())), "{since:?}");
    let states = recorder.states(host);
    let provisioned_at = states.iter().position(|s| s == "provisioned").context(format!("{states:?}"))?;
    assert!(states[provisioned_at..].iter().all(|s| s == "provisioned"), "never left provisioned: {states:?}");
    t.wait_events(host, &["Servicing"]).await?;
    Ok((since, provisioned_at))
}

/// Creates the `HostUpdatePolicy` of `host` that lets servicing apply `what`
/// (`firmwareSettings` or `firmwareUpdates`) at its reboot.
pub(crate) async fn allow_on_reboot(t: &HostEnv, host: &str, what: &str) -> anyhow::Result<()> {
    let policies: Api<HostUpdatePolicy> = Api::namespaced(t.env.client(), t.ns());
    let policy: HostUpdatePolicy = serde_json::from_value(json!({
        "apiVersion": "metal3.io/v1alpha1", "kind": "HostUpdatePolicy",
        "metadata": {"name": host}, "spec": {what: "onReboot"}
    }))?;
    policies.create(&PostParams::default(), &policy).await?;
    Ok(())
}

fn read(settings: &HostFirmwareSettings) -> bool {
    setting(settings, "ProcTurboMode").is_some()
}

#[tokio::test]
async fn bios_settings_are_read_into_each_hosts_settings_and_one_schema_and_bad_values_are_refused()
-> anyhow::Result<()> {
    let (t, api) = started("host-firmware", 2).await?;
    let host = t.create_host("rf-0", t.redfish_spec(0, "bmc")?, json!({})).await?;
    t.create_host("rf-1", t.redfish_spec(1, "bmc")?, json!({})).await?;

    let rf0 = settings_until(&api, "rf-0", "settings read", read).await?;
    let owner = rf0.owner_references().first().context("owned")?;
    let host_uid = host.uid().unwrap_or_default();
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        ("BareMetalHost", host_uid.as_str(), Some(true))
    );
    assert!(rf0.spec.settings.is_empty(), "the operator writes no wanted setting");
    assert_eq!(setting(&rf0, "ProcTurboMode").as_deref(), Some("Enabled"));
    assert!(rf0.status.iter().flat_map(|s| s.settings.keys()).all(|k| !k.contains("Password")));
    assert_eq!(condition(&rf0, "Ready"), Some(("True".into(), "SettingsMatch".into())));
    assert_eq!(condition(&rf0, "Valid"), Some(("True".into(), "Success".into())));
    assert_eq!(condition(&rf0, "ChangeDetected"), Some(("False".into(), "Success".into())));
    assert_eq!(rf0.status.as_ref().and_then(|s| s.observed_generation), rf0.metadata.generation);

    // Both hosts are one model: one schema, owned by both settings objects.
    let rf1 = settings_until(&api, "rf-1", "settings read", read).await?;
    let name = rf0.status.as_ref().and_then(|s| s.firmware_schema.as_ref()).context("schema named")?.name.clone();
    assert_eq!(
        rf1.status.as_ref().and_then(|s| s.firmware_schema.as_ref()).map(|s| s.name.as_str()),
        Some(name.as_str())
    );
    let schemas: Api<FirmwareSchema> = Api::namespaced(t.env.client(), t.ns());
    let schema = schemas.get(&name).await?;
    let mut owners: Vec<_> = schema.owner_references().iter().map(|o| o.name.as_str()).collect();
    owners.sort_unstable();
    assert_eq!(owners, ["rf-0", "rf-1"], "{schema:?}");
    let turbo = schema.spec.schema.get("ProcTurboMode").context("ProcTurboMode in the schema")?;
    assert_eq!(turbo.allowable_values.as_deref(), Some(&["Enabled".to_string(), "Disabled".to_string()][..]));

    // What the schema forbids is refused at admission, with the field and the reason.
    let params = PatchParams::default();
    let refused = api.patch("rf-0", &params, &merge(json!({"ProcTurboMode": "Sometimes"}))).await;
    let message = refused.err().context("an enumeration's unknown value is refused")?.to_string();
    assert!(message.contains("spec.settings[ProcTurboMode]") && message.contains("Sometimes"), "{message}");
    let refused = api.patch("rf-0", &params, &merge(json!({"NumCores": 12}))).await;
    assert!(refused.err().context("a read-only setting is refused")?.to_string().contains("read-only"));
    let refused = api.patch("rf-0", &params, &merge(json!({"AdminPassword": "secret"}))).await;
    assert!(refused.err().context("a password is refused")?.to_string().contains("password"));

    // A valid change is detected (and the host controller takes it from there: the next test).
    api.patch("rf-0", &params, &merge(json!({"ProcTurboMode": "Disabled"}))).await?;
    let changed = settings_until(&api, "rf-0", "the change detected", |s| {
        condition(s, "ChangeDetected").is_some_and(|c| c.0 == "True")
    })
    .await?;
    assert_eq!(condition(&changed, "Ready"), Some(("False".into(), "ChangeDetected".into())));
    // Events of the host and of its settings object (both named rf-0).
    t.wait_events("rf-0", &["SettingsRead", "ChangeDetected"]).await?;
    Ok(())
}

/// Out of band, by a manual clean of the bios interface.
#[tokio::test]
async fn settings_written_before_the_host_are_applied_before_it_is_provisioned() -> anyhow::Result<()> {
    let (t, api) = started("host-firmware-apply", 1).await?;
    // Written by the user before the host, as baremetal-operator allows: left to the user.
    let early: HostFirmwareSettings = serde_json::from_value(json!({
        "apiVersion": "metal3.io/v1alpha1", "kind": "HostFirmwareSettings",
        "metadata": {"name": "rf-0"}, "spec": {"settings": {"ProcTurboMode": "Disabled"}}
    }))?;
    api.create(&PostParams::default(), &early).await?;
    live_iso_host(&t, "rf-0").await?;

    t.wait_provisioned("rf-0", secs(300)).await?;
    let uuid = t.node_uuid("rf-0").await?;
    let client = t.ironic_client().await?;
    let bios = client.list_bios_settings(&uuid).await?;
    let turbo = bios.iter().find(|s| s.name == "ProcTurboMode").and_then(|s| s.value.as_deref());
    assert_eq!(turbo, Some("Disabled"), "applied before provisioning");
    let transitions = t.ironic_transitions(&uuid)?;
    // The manual clean waits once for the BMC (`clean wait`); `provide` passes through
    // `cleaning` too, with nothing to do (automated cleaning is disabled).
    let cleaned = transitions.iter().position(|s| s == "clean wait").context(format!("{transitions:?}"))?;
    let deployed = transitions.iter().position(|s| s == "deploying").context(format!("{transitions:?}"))?;
    assert!(cleaned < deployed, "the clean came first: {transitions:?}");
    assert_eq!(transitions.iter().filter(|s| *s == "clean wait").count(), 1, "one manual clean: {transitions:?}");

    let settled = settings_until(&api, "rf-0", "the settings applied", |s| {
        condition(s, "ChangeDetected").is_some_and(|c| c.0 == "False")
    })
    .await?;
    assert!(settled.owner_references().is_empty(), "made by the user, left to the user");
    assert_eq!(setting(&settled, "ProcTurboMode").as_deref(), Some("Disabled"));
    assert_eq!(condition(&settled, "Ready"), Some(("True".into(), "SettingsMatch".into())));
    t.wait_events("rf-0", &["FirmwareSettings", "SettingsMatch"]).await?;
    Ok(())
}

/// A provisioned host: serviced for its settings at its reboot once its policy allows, a failed
/// servicing aborted once its value is no longer wanted, and never deprovisioned, deployed or
/// cleaned for them.
#[tokio::test]
async fn a_provisioned_host_is_serviced_in_place_at_its_reboot_once_its_policy_allows_and_a_failure_aborted()
-> anyhow::Result<()> {
    let (t, api) = started("host-firmware-service", 1).await?;
    let recorder = t.record().await?;
    live_iso_host(&t, "rf-0").await?;
    t.wait_provisioned("rf-0", secs(300)).await?;
    let uuid = t.node_uuid("rf-0").await?;
    let deployed = t.ironic_transitions(&uuid)?.len();
    settings_until(&api, "rf-0", "settings read", read).await?;

    // Without a policy the change waits, and says why.
    api.patch("rf-0", &PatchParams::default(), &merge(json!({"ProcTurboMode": "Disabled"}))).await?;
    let refused = settings_until(&api, "rf-0", "the reason servicing waits", |s| {
        condition(s, "Ready").is_some_and(|c| c.1 == "ServicingNotAllowed")
    })
    .await?;
    assert_eq!(setting(&refused, "ProcTurboMode").as_deref(), Some("Enabled"));
    // A reboot without a policy is a reboot: no servicing.
    t.patch_host("rf-0", json!({"metadata": {"annotations": {"reboot.metal3.io": ""}}})).await?;
    t.wait_for("rf-0", "rebooted (the annotation consumed, on again)", secs(120), |h| {
        !h.annotations().contains_key("reboot.metal3.io") && h.status.as_ref().is_some_and(|s| s.powered_on)
    })
    .await?;
    let rebooted: Vec<String> = t.ironic_transitions(&uuid)?.into_iter().skip(deployed).collect();
    assert!(rebooted.is_empty(), "no provision state change at a reboot without a policy: {rebooted:?}");
    let bios = t.ironic_client().await?.list_bios_settings(&uuid).await?;
    let turbo = bios.iter().find(|s| s.name == "ProcTurboMode").and_then(|s| s.value.as_deref());
    assert_eq!(turbo, Some("Enabled"), "the BIOS untouched");

    // With one, the reboot the user asks for services the host.
    allow_on_reboot(&t, "rf-0", "firmwareSettings").await?;
    t.patch_host("rf-0", json!({"metadata": {"annotations": {"reboot.metal3.io": ""}}})).await?;
    let applied = settings_until(&api, "rf-0", "the settings applied by servicing", |s| {
        condition(s, "Ready").is_some_and(|c| c.1 == "SettingsMatch")
    })
    .await?;
    assert_eq!(setting(&applied, "ProcTurboMode").as_deref(), Some("Disabled"));
    let host = t.wait_provisioned("rf-0", secs(120)).await?;
    assert_eq!(host.status.as_ref().map(|s| s.operational_status), Some(crds::baremetalhost::OperationalStatus::Ok));

    let (_, provisioned_at) = serviced_in_place(&t, &recorder, "rf-0", &uuid, deployed).await?;

    // A value the BMC refuses: a servicing error, the host still provisioned; once the value is
    // no longer wanted, the failed servicing is aborted and the host is OK again, in place.
    api.patch("rf-0", &PatchParams::default(), &merge(json!({"L2Cache": "refused-by-bmc"}))).await?;
    settings_until(&api, "rf-0", "the new change", |s| condition(s, "Ready").is_some_and(|c| c.1 == "AwaitingReboot"))
        .await?;
    t.patch_host("rf-0", json!({"metadata": {"annotations": {"reboot.metal3.io": ""}}})).await?;
    let failed = t
        .wait_for("rf-0", "a servicing error", secs(180), |h| {
            h.status.as_ref().is_some_and(|s| s.error_type == Some(crds::baremetalhost::ErrorType::Servicing))
        })
        .await?;
    assert_eq!(state_of(&failed), "provisioned");
    assert_eq!(t.node("rf-0").await?.context("node")?["provision_state"], "service failed");
    api.patch("rf-0", &PatchParams::default(), &merge(json!({"L2Cache": null}))).await?;
    let recovered = t
        .wait_for("rf-0", "the servicing aborted and the host OK", secs(180), |h| {
            h.status.as_ref().is_some_and(|s| s.error_type.is_none() && s.powered_on)
        })
        .await?;
    assert_eq!(state_of(&recovered), "provisioned");
    assert_eq!(t.node("rf-0").await?.context("node")?["provision_state"], "active");
    let since: Vec<String> = t.ironic_transitions(&uuid)?.into_iter().skip(deployed).collect();
    assert!(since.iter().all(|s| !FORBIDDEN.contains(&s.as_str())), "{since:?}");
    let states = recorder.states("rf-0");
    assert!(states[provisioned_at..].iter().all(|s| s == "provisioned"), "never left provisioned: {states:?}");
    t.wait_events("rf-0", &["ServicingError", "ServicingAborted"]).await?;
    Ok(())
}
