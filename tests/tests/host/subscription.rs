//! BMCEventSubscription against Ironic and an emulated Redfish BMC (whose EventService keeps
//! subscriptions in memory): bad specs refused at admission; a subscription made on the host's
//! BMC with its headers and never showing them; one made before a crash (on the BMC, in no
//! status) taken rather than made twice; a changed destination, then changed headers, making
//! it anew (the old one deleted); the host refused as a change; a destination the BMC refuses
//! reported (never with a header's value, in the status or an Event) and fixed; a deletion
//! removing it from the BMC.

use super::firmware::{object_until, with_operator};
use crate::host_common::{HostEnv, secs};
use anyhow::Context as _;
use crds::bmceventsubscription::BMCEventSubscription;
use crds::condition::find;
use ironic_client::EventSubscriptionCreate;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const SECRET_VALUE: &str = "Bearer never-shown-5c4b3a";

fn ready_reason(s: &BMCEventSubscription) -> Option<String> {
    s.status.as_ref().and_then(|s| find(&s.conditions, "Ready")).map(|c| c.reason.clone())
}

fn id_of(s: &BMCEventSubscription) -> String {
    s.status.as_ref().map(|s| s.subscription_id.clone()).unwrap_or_default()
}

fn subscription(name: &str, spec: Value) -> anyhow::Result<BMCEventSubscription> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "metal3.io/v1alpha1", "kind": "BMCEventSubscription",
        "metadata": {"name": name}, "spec": spec
    }))?)
}

/// The emulated BMC's own view of a subscription (`None` once gone).
async fn on_the_bmc(t: &HostEnv, id: &str) -> anyhow::Result<Option<Value>> {
    let sushy = t.sushy.as_ref().context("sushy")?;
    let url = format!("{}/redfish/v1/EventService/Subscriptions/{id}", sushy.endpoint());
    let mut request = reqwest::Client::builder().danger_accept_invalid_certs(true).build()?.get(url);
    if let Some((user, password)) = sushy.credentials() {
        request = request.basic_auth(user, Some(password));
    }
    let response = request.send().await?;
    if response.status() == reqwest::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    Ok(Some(response.error_for_status()?.json().await?))
}

#[tokio::test]
async fn a_bmc_event_subscription_is_made_once_moved_when_edited_reported_when_refused_and_deleted_from_the_bmc()
-> anyhow::Result<()> {
    let t = with_operator("host-events", 1).await?;
    let api: Api<BMCEventSubscription> = Api::namespaced(t.env.client(), t.ns());
    let mut spec = t.redfish_spec(0, "bmc")?;
    spec["externallyProvisioned"] = json!(true);
    spec["image"] = json!({"url": t.ironic.image_server().write_live_iso("live.iso")?, "format": "live-iso"});
    t.create_host("ev-0", spec, json!({})).await?;
    t.wait_state("ev-0", "externally provisioned", secs(240)).await?;
    let uuid = t.node_uuid("ev-0").await?;
    let ironic = t.ironic_client().await?;

    // What baremetal-operator refuses is refused at admission, with the field.
    let destination = "https://events.example/hook";
    for (spec, field) in [
        (json!({"destination": destination}), "spec.hostName"),
        (json!({"hostName": "ev-0", "destination": "https://events.example"}), "spec.destination"),
        (
            json!({"hostName": "ev-0", "destination": destination, "httpHeadersRef": {"name": "h", "namespace": "kube-system"}}),
            "spec.httpHeadersRef.namespace",
        ),
    ] {
        let refused = api.create(&PostParams::default(), &subscription("bad", spec)?).await;
        assert!(format!("{refused:?}").contains(field), "{field}: {refused:?}");
    }

    // One made before a crash: on the BMC, in no status.
    let orphan = EventSubscriptionCreate {
        destination: destination.into(),
        context: "rack-7".into(),
        protocol: "Redfish".into(),
        http_headers: Vec::new(),
    };
    let orphan = ironic.create_event_subscription(&uuid, &orphan).await?.id;

    t.data_secret("hook-headers", "Authorization", SECRET_VALUE).await?;
    let spec = json!({"hostName": "ev-0", "destination": destination, "context": "rack-7",
        "httpHeadersRef": {"name": "hook-headers", "namespace": t.ns()}});
    api.create(&PostParams::default(), &subscription("events-0", spec)?).await?;
    let made =
        object_until(&api, "events-0", "subscribed", |s| ready_reason(s).as_deref() == Some("Subscribed")).await?;
    assert_eq!(id_of(&made), orphan, "the subscription made before the crash is taken, not made twice");
    assert!(made.finalizers().iter().any(|f| f == "bmceventsubscription.metal3.io"));
    assert_eq!(ironic.event_subscription_ids(&uuid).await?, vec![orphan.clone()]);

    // Edited: the subscription moves, with the headers now (the BMC shows their names only).
    let moved = "https://events.example/other";
    api.patch("events-0", &PatchParams::default(), &Patch::Merge(json!({"spec": {"destination": moved}}))).await?;
    let edited = object_until(&api, "events-0", "moved", |s| {
        ready_reason(s).as_deref() == Some("Subscribed") && id_of(s) != orphan
    })
    .await?;
    let id = id_of(&edited);
    assert_eq!(ironic.event_subscription_ids(&uuid).await?, vec![id.clone()], "the old one deleted");
    let bmc = on_the_bmc(&t, &id).await?.context("on the BMC")?;
    assert_eq!((bmc["Destination"].as_str(), bmc["Context"].as_str()), (Some(moved), Some("rack-7")));
    assert_eq!(bmc["Oem"]["Ferrometal"]["HeaderNames"], json!(["Authorization"]));

    // The host cannot change under a subscription (its id is the old BMC's).
    let renamed =
        api.patch("events-0", &PatchParams::default(), &Patch::Merge(json!({"spec": {"hostName": "ev-1"}}))).await;
    assert!(format!("{renamed:?}").contains("spec.hostName"), "{renamed:?}");

    // Other headers: the BMC cannot show them, so the edit makes the subscription anew.
    t.data_secret("other-headers", "X-Tenant", SECRET_VALUE).await?;
    let headers = json!({"spec": {"httpHeadersRef": {"name": "other-headers", "namespace": t.ns()}}});
    api.patch("events-0", &PatchParams::default(), &Patch::Merge(headers)).await?;
    let edited = object_until(&api, "events-0", "made anew", |s| {
        ready_reason(s).as_deref() == Some("Subscribed") && id_of(s) != id
    })
    .await?;
    let id = id_of(&edited);
    let bmc = on_the_bmc(&t, &id).await?.context("on the BMC")?;
    assert_eq!(bmc["Oem"]["Ferrometal"]["HeaderNames"], json!(["X-Tenant"]));
    assert_eq!(ironic.event_subscription_ids(&uuid).await?, vec![id.clone()], "the old one deleted");

    // A destination the BMC refuses: reported, never with the header's value; then fixed.
    let refused = "https://refused-by-bmc.example/hook";
    api.patch("events-0", &PatchParams::default(), &Patch::Merge(json!({"spec": {"destination": refused}}))).await?;
    let failed =
        object_until(&api, "events-0", "refused", |s| ready_reason(s).as_deref() == Some("SubscriptionFailed")).await?;
    let shown = serde_json::to_string(&failed.status)?;
    assert!(!shown.contains("never-shown"), "{shown}");
    assert!(!failed.status.as_ref().map(|s| s.error.is_empty()).unwrap_or(true));
    api.patch("events-0", &PatchParams::default(), &Patch::Merge(json!({"spec": {"destination": destination}})))
        .await?;
    let fixed = object_until(&api, "events-0", "subscribed again", |s| {
        ready_reason(s).as_deref() == Some("Subscribed") && s.status.as_ref().is_some_and(|st| st.error.is_empty())
    })
    .await?;
    assert_eq!(ironic.event_subscription_ids(&uuid).await?, vec![id_of(&fixed)]);
    let events = t.event_reasons("events-0").await?;
    assert!(events.iter().any(|r| r == "Subscribed") && events.iter().any(|r| r == "SubscriptionFailed"), "{events:?}");
    let notes: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(t.env.client(), t.ns());
    let shown = serde_json::to_string(&notes.list(&Default::default()).await?.items)?;
    assert!(!shown.contains("never-shown"), "no Event shows a header's value");

    // Deleted: gone from the BMC first, then the object.
    api.delete("events-0", &DeleteParams::default()).await?;
    ferrometal_tests::wait::until_ok("the subscription gone", secs(120), secs(1), || async {
        Ok(api.get_opt("events-0").await?.is_none().then_some(()))
    })
    .await?;
    assert!(ironic.event_subscription_ids(&uuid).await?.is_empty());
    assert!(on_the_bmc(&t, &id_of(&fixed)).await?.is_none());
    Ok(())
}
