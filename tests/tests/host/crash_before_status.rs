//! The operator dies after Ironic did what a host's state asked, before the status saying so
//! was written: the restarted operator finds the work done and records it, never asks Ironic
//! to do it again. The real apiserver refuses the status write (a ValidatingAdmissionPolicy
//! of this namespace), so the operator is killed exactly in that window, however long it
//! retries (`refusals`); the policy is lifted before the next operator starts.

use super::refusals::{Kind, Refusal, Refusals, host_status, kill, until_ironic_did};
use crate::host_common::{HostEnv, Options, secs, state_of};
use serde_json::json;

/// Every write that records an inspection's start: the one right after the operator called
/// `inspect`, and every later one, so that the operator stays in that window.
fn inspection_recorded() -> Refusal {
    Refusal {
        name: "inspection-start",
        kind: Kind::Host,
        condition: "has(object.status.provisioning) && has(object.status.operationHistory) \
                    && has(object.status.operationHistory.inspect) && has(object.status.operationHistory.inspect.start)",
        probe: host_status("inspecting", json!({"operationHistory": {"inspect": {"start": "2026-01-01T00:00:00Z"}}})),
    }
}

/// The write of `provisioned`, once Ironic deployed the host.
fn deployment_recorded() -> Refusal {
    Refusal {
        name: "provisioned",
        kind: Kind::Host,
        condition: "has(object.status.provisioning) && object.status.provisioning.state == 'provisioned'",
        probe: host_status("provisioned", json!({})),
    }
}

/// Once the operator was killed: imposes `next`, lifts `lifted` and starts it again.
async fn restart(t: &mut HostEnv, refusals: &Refusals, lifted: &Refusal, next: Option<&Refusal>) -> anyhow::Result<()> {
    if let Some(next) = next {
        refusals.impose(next).await?;
    }
    refusals.lift(lifted).await?;
    t.start_operator(t.host_config()).await
}

#[tokio::test]
async fn an_operator_killed_before_recording_an_inspection_or_a_deployment_starts_neither_again() -> anyhow::Result<()>
{
    let mut t = HostEnv::start("host-crash", Options::default()).await?;
    let refusals = Refusals::of(&t).await?;
    let (inspection, deployment) = (inspection_recorded(), deployment_recorded());
    refusals.impose(&inspection).await?;
    t.start_operator(t.host_config()).await?;
    let iso = t.ironic.image_server().write_live_iso("live.iso")?;
    let mut spec = t.fake_spec("crash-0");
    spec["image"] = json!({"url": iso, "format": "live-iso"});
    t.create_host("crash-0", spec, json!({})).await?;

    // Inspected in Ironic, its start never recorded in the host's status (every write since
    // that would record it refused, the same operator retrying in the window): it dies there.
    let uuid = until_ironic_did(&t, "crash-0", "inspecting", "manageable", secs(90)).await?;
    kill(&mut t);
    let host = t.hosts.get("crash-0").await?;
    assert_eq!(state_of(&host), "inspecting");
    let history = host.status.and_then(|s| s.operation_history).and_then(|h| h.inspect);
    assert!(history.is_none_or(|m| m.start.is_none()), "the inspection's start was refused");
    restart(&mut t, &refusals, &inspection, Some(&deployment)).await?;

    // Deployed in Ironic, not in the host's status: it dies there again.
    until_ironic_did(&t, "crash-0", "deploying", "active", secs(90)).await?;
    kill(&mut t);
    assert_eq!(state_of(&t.hosts.get("crash-0").await?), "provisioning", "the write of provisioned was refused");
    restart(&mut t, &refusals, &deployment, None).await?;

    let host = t.wait_provisioned("crash-0", secs(60)).await?;
    let moves = t.ironic_transitions(&uuid)?;
    let count = |state: &str| moves.iter().filter(|m| *m == state).count();
    assert_eq!((count("inspecting"), count("deploying")), (1, 1), "one inspection and one deployment: {moves:?}");
    assert_eq!(host.status.map(|s| s.provisioning.id), Some(uuid), "the node it had, no other");
    assert_eq!(t.node_count().await?, 1, "the paused probe has none; the host has one");
    Ok(())
}
