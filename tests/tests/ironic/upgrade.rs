//! Ironic version changes with a database, end to end: the pre-upgrade Job, the rollout and
//! the post-upgrade Job in that order; a failed Job; a refused downgrade. The database is a
//! real MariaDB on loopback (the operator checks it before it rolls anything), with Ironic's
//! schema made by `ironic-dbsync`; the Jobs themselves are completed by the pod simulator.

use crate::common::{Env, POLL};
use crate::ironic_common::*;
use crds::ironic::status::UpgradePhase;
use ferrometal_tests::{PodFate, wait};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::runtime::watcher;
use serde_json::json;
use std::sync::{Arc, Mutex};

const OLD_IMAGE: &str = "quay.io/metal3-io/ironic:release-37.0";
const NEW_IMAGE: &str = "quay.io/metal3-io/ironic:release-38.0";

/// An Ironic at `version` on a real external MariaDB, which must outlive the test's use of it.
async fn ironic_with_database(env: &Env, version: &str) -> anyhow::Result<ExternalDatabase> {
    let database = external_database(env, "ironic-db", false).await?;
    create_ironic(
        env,
        json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic", "metadata": {"name": "ironic"},
            "spec": {"version": version, "database": database.spec()}}),
    )
    .await?;
    Ok(database)
}

async fn set_version(env: &Env, version: &str) -> anyhow::Result<()> {
    let patch = json!({"spec": {"version": version}});
    ironics(env).patch("ironic", &PatchParams::default(), &Patch::Merge(&patch)).await?;
    Ok(())
}

fn template_image(replica_set: &ReplicaSet) -> Option<String> {
    replica_set.spec.as_ref()?.template.as_ref()?.spec.as_ref()?.containers.first()?.image.clone()
}

fn pod_ready(pod: &Pod) -> bool {
    pod.status.iter().flat_map(|s| s.conditions.iter().flatten()).any(|c| c.type_ == "Ready" && c.status == "True")
}

fn job_complete(job: &Job) -> bool {
    job.status.iter().flat_map(|s| s.conditions.iter().flatten()).any(|c| c.type_ == "Complete" && c.status == "True")
}

/// What the recorder saw first, by etcd revision. Every object of one etcd shares one
/// revision counter, so resource versions order events across kinds.
#[derive(Default, Debug)]
struct Firsts {
    pre_complete: Option<u64>,
    new_replica_set: Option<u64>,
    new_pod_ready: Option<u64>,
    post_created: Option<u64>,
    post_complete: Option<u64>,
}

fn revision(meta: &kube::api::ObjectMeta) -> Option<u64> {
    meta.resource_version.as_deref()?.parse().ok()
}

fn first(slot: &mut Option<u64>, value: Option<u64>) {
    if slot.is_none() {
        *slot = value;
    }
}

enum Seen {
    Job(Box<Job>),
    Set(Box<ReplicaSet>),
    Pod(Box<Pod>),
    /// A watch finished its initial list.
    Synced,
}

fn seen<K>(event: Result<watcher::Event<K>, watcher::Error>, wrap: fn(K) -> Seen) -> Option<Seen> {
    match event {
        Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => Some(wrap(o)),
        Ok(watcher::Event::InitDone) => Some(Seen::Synced),
        _ => None,
    }
}

/// Watches Jobs, ReplicaSets and Pods and records when each step first showed. Returns once
/// the three watches listed what exists, so that later changes arrive as they happen.
async fn record(env: &Env) -> anyhow::Result<Arc<Mutex<Firsts>>> {
    let firsts = Arc::new(Mutex::new(Firsts::default()));
    let jobs = watcher::watcher(api::<Job>(env), watcher::Config::default())
        .filter_map(|e| std::future::ready(seen(e, |o| Seen::Job(Box::new(o)))));
    let sets = watcher::watcher(api::<ReplicaSet>(env), watcher::Config::default())
        .filter_map(|e| std::future::ready(seen(e, |o| Seen::Set(Box::new(o)))));
    let pods = watcher::watcher(api::<Pod>(env), watcher::Config::default())
        .filter_map(|e| std::future::ready(seen(e, |o| Seen::Pod(Box::new(o)))));
    let mut all = futures::stream::select_all([jobs.boxed(), sets.boxed(), pods.boxed()]);
    let state = firsts.clone();
    let (synced_tx, synced_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let mut synced = 0;
        let mut synced_tx = Some(synced_tx);
        while let Some(event) = all.next().await {
            let mut f = state.lock().unwrap_or_else(|e| e.into_inner());
            match event {
                Seen::Synced => {
                    synced += 1;
                    if synced == 3
                        && let Some(tx) = synced_tx.take()
                    {
                        let _ = tx.send(());
                    }
                }
                Seen::Job(job) => {
                    let name = job.metadata.name.clone().unwrap_or_default();
                    if name == "ironic-pre-37.0-to-38.0" && job_complete(&job) {
                        first(&mut f.pre_complete, revision(&job.metadata));
                    }
                    if name == "ironic-post-37.0-to-38.0" {
                        first(&mut f.post_created, revision(&job.metadata));
                        if job_complete(&job) {
                            first(&mut f.post_complete, revision(&job.metadata));
                        }
                    }
                }
                Seen::Set(set) if template_image(&set).as_deref() == Some(NEW_IMAGE) => {
                    first(&mut f.new_replica_set, revision(&set.metadata));
                }
                Seen::Pod(pod)
                    if pod_ready(&pod)
                        && pod.spec.as_ref().and_then(|s| s.containers.first()).and_then(|c| c.image.as_deref())
                            == Some(NEW_IMAGE) =>
                {
                    first(&mut f.new_pod_ready, revision(&pod.metadata));
                }
                _ => {}
            }
        }
    });
    tokio::time::timeout(STEP, synced_rx).await??;
    Ok(firsts)
}

#[tokio::test]
async fn an_upgrade_runs_the_pre_job_then_rolls_then_runs_the_post_job_and_a_downgrade_is_refused() -> anyhow::Result<()>
{
    let env = Env::start("ironic-upgrade").await?;
    let _operator = start(&env).await?;
    let _database = ironic_with_database(&env, "37.0").await?;
    wait_ready(&env, "ironic", "37.0").await?;
    let firsts = record(&env).await?;

    set_version(&env, "38.0").await?;
    let ironic = wait_ready(&env, "ironic", "38.0").await?;
    let upgrade = ironic.status.and_then(|s| s.upgrade).expect("upgrade status");
    assert_eq!(upgrade.phase, Some(UpgradePhase::Completed));
    assert_eq!((upgrade.from_version.as_deref(), upgrade.to_version.as_deref()), (Some("37.0"), Some("38.0")));

    let seen = wait::until("the recorder to see the post Job complete", STEP, POLL, || async {
        let f = firsts.lock().unwrap_or_else(|e| e.into_inner());
        f.post_complete.map(|_| format!("{f:?}"))
    })
    .await?;
    let order = {
        let f = firsts.lock().unwrap_or_else(|e| e.into_inner());
        [f.pre_complete, f.new_replica_set, f.new_pod_ready, f.post_created, f.post_complete]
    };
    assert!(order.iter().all(Option::is_some), "every step was seen: {seen}");
    assert!(order.windows(2).all(|w| w[0] < w[1]), "pre Job done < new pods created < ready < post Job < done: {seen}");
    // The first installation's Jobs are gone once this upgrade completed.
    let jobs = api::<Job>(&env);
    wait::until_ok("the first installation's Jobs to be deleted", STEP, POLL, || async {
        let names: Vec<String> =
            jobs.list(&ListParams::default()).await?.items.into_iter().filter_map(|j| j.metadata.name).collect();
        Ok((!names.iter().any(|n| n.contains("none-to-37.0"))).then_some(()))
    })
    .await?;

    // Back to 37.0: refused; 38.0 keeps running.
    set_version(&env, "37.0").await?;
    let refused = wait_condition(&env, "ironic", "Degraded", "True", "DowngradeRejected").await?;
    let status = refused.status.expect("status");
    assert_eq!(status.installed_version.as_deref(), Some("38.0"));
    assert_eq!(status.requested_version.as_deref(), Some("37.0"));
    let ready = condition_of(&crate::ironic_common::ironics(&env).get("ironic").await?, "Ready").expect("Ready");
    assert_eq!((ready.status.as_str(), ready.reason.as_str()), ("False", "DeploymentFailed"));
    let note = wait_event(&env, "ironic", "DowngradeRejected").await?;
    assert!(note.contains("38.0") && note.contains("37.0"), "{note}");
    let containers = template_containers(&deployment(&env, "ironic-service").await?);
    assert_eq!(container(&containers, "ironic").image.as_deref(), Some(NEW_IMAGE));
    let names: Vec<String> =
        jobs.list(&ListParams::default()).await?.items.into_iter().filter_map(|j| j.metadata.name).collect();
    assert!(!names.iter().any(|n| n.ends_with("to-37.0")), "no Job for the downgrade: {names:?}");
    Ok(())
}

#[tokio::test]
async fn a_failed_pre_upgrade_job_keeps_the_old_version_running_sets_degraded_and_a_retry_completes()
-> anyhow::Result<()> {
    let env = Env::start("ironic-upgrade-fail").await?;
    let _operator = start(&env).await?;
    let _database = ironic_with_database(&env, "37.0").await?;
    wait_ready(&env, "ironic", "37.0").await?;
    let pod = the_one_pod(&env, "ironic").await?;
    let before = deployment(&env, "ironic-service").await?;

    let job = "ironic-pre-37.0-to-38.0";
    env.sim.set_job_fate(
        &env.ns,
        job,
        PodFate::Failed { exit_code: 3, message: "alembic: Can't locate revision identified by 'f1e2'".into() },
    );
    set_version(&env, "38.0").await?;
    let failed = wait_condition(&env, "ironic", "Degraded", "True", "UpgradeJobFailed").await?;
    let degraded = condition_of(&failed, "Degraded").expect("Degraded");
    assert!(degraded.message.contains(job), "{}", degraded.message);
    assert!(degraded.message.contains("exited with code 3"), "{}", degraded.message);
    assert!(degraded.message.contains("Can't locate revision identified by 'f1e2'"), "{}", degraded.message);
    let ready = condition_of(&failed, "Ready").expect("Ready");
    assert_eq!((ready.status.as_str(), ready.reason.as_str()), ("False", "DeploymentFailed"));
    let status = failed.status.expect("status");
    assert_eq!(status.installed_version.as_deref(), Some("37.0"));
    assert_eq!(status.upgrade.and_then(|u| u.phase), Some(UpgradePhase::Failed));
    wait_event(&env, "ironic", "UpgradeJobFailed").await?;

    // Nothing was deleted or rolled: the failed Job stays for inspection, 37.0 keeps serving.
    let jobs: Api<Job> = api(&env);
    assert!(jobs.get(job).await?.status.and_then(|s| s.failed).unwrap_or(0) >= 1);
    assert!(jobs.get_opt("ironic-post-37.0-to-38.0").await?.is_none());
    let after = deployment(&env, "ironic-service").await?;
    assert_eq!(after.metadata.generation, before.metadata.generation);
    assert_eq!(container(&template_containers(&after), "ironic").image.as_deref(), Some(OLD_IMAGE));
    assert_eq!(the_one_pod(&env, "ironic").await?, pod, "the old pod still runs");

    // What a user does: fix the cause, delete the Job; the operator runs it again.
    env.sim.set_job_fate(&env.ns, job, PodFate::Succeeded);
    jobs.delete(job, &DeleteParams::background()).await?;
    wait_ready(&env, "ironic", "38.0").await?;
    let containers = template_containers(&deployment(&env, "ironic-service").await?);
    assert_eq!(container(&containers, "ironic").image.as_deref(), Some(NEW_IMAGE));
    Ok(())
}
