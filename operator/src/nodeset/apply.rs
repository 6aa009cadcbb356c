//! Apply: the plan's writes. BareMetalHosts first (claims, then what each machine gets), with
//! the one field manager; then the service Jobs and their inventory Secrets through a ledger
//! owned by the NodeSet, and the pruning of old finished Jobs.
//!
//! A guarded write that meets a conflict lost a race (another NodeSet claimed the host, or the
//! cache was behind): it is not an error, the next reconcile sees the truth and picks again. A
//! write the apiserver refuses (invalid, forbidden) is the user's to fix and goes to status.
//! Anything else is retried with the runner's backoff.

use super::claims::Owner;
use super::consumer::{Body, Purpose};
use super::firmware::parts::Kind;
use super::job::COMPONENT;
use super::memory::Memory;
use super::plan::{NetworkData, Plan};
use crate::FIELD_MANAGER;
use crate::kit::error::{KubeError, Verb};
use crate::kit::ledger::{Ledger, Unstored, apply_params};
use crate::kit::names::COMPONENT_LABEL;
use crds::baremetalhost::BareMetalHost;
use crds::firmware::{HostFirmwareComponents, HostFirmwareSettings};
use crds::nodeset::{DeletionPolicy, NODESET_LABEL, NodeSet};
use k8s_openapi::ByteString;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use kube::{Client, Resource, ResourceExt};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Why applying failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum Error {
    #[error(transparent)]
    Kube(#[from] KubeError),
    #[error(transparent)]
    Unstored(#[from] Unstored),
}

/// What applying did.
#[derive(Clone, Debug, Default)]
pub(super) struct Applied {
    /// Hosts whose claim was written.
    pub claims_won: BTreeSet<String>,
    /// Hosts whose image and first-boot data were written.
    pub provisioned: BTreeSet<String>,
    /// Hosts whose image was cleared for a reprovision.
    pub reprovisioned: BTreeSet<String>,
    /// Hosts released.
    pub released: BTreeSet<String>,
    /// Hosts whose write the apiserver refused, and its words.
    pub refused: BTreeMap<String, String>,
    /// The BareMetalHosts as the writes returned them, by hostname.
    pub written: BTreeMap<String, Arc<BareMetalHost>>,
    pub jobs_created: Vec<String>,
    /// Jobs (or their inventory Secrets) the apiserver refused, or that someone else's object
    /// of the same name stands in the way of, and why: the person's to fix.
    pub jobs_refused: BTreeMap<String, String>,
    /// Hosts rebooted to be serviced with their BIOS settings.
    pub rebooted: BTreeSet<String>,
    /// Hosts whose firmware objects were written with the NodeSet's settings or updates.
    pub firmware_written: BTreeSet<String>,
    /// A guarded write lost a race: look again soon.
    pub conflicts: bool,
}

/// Applies `plan` for `nodeset`.
pub(super) async fn run(client: &Client, nodeset: &NodeSet, plan: &Plan, memory: &Memory) -> Result<Applied, Error> {
    let mut applied = Applied::default();
    for data in &plan.network_data {
        if let Err(err) = network_data(client, data).await {
            match err.user_facing() {
                Some(message) => {
                    let hostname =
                        plan.writes.iter().find(|w| w.host == data.owner.name_any()).map(|w| w.hostname.clone());
                    applied.refused.insert(hostname.unwrap_or_default(), message);
                }
                None => return Err(err.into()),
            }
        }
    }
    apply_host_writes(client, plan, memory, &mut applied).await?;
    apply_firmware(client, plan, memory, &mut applied).await?;
    // What ran is recorded before status stops carrying it (status carried it before records).
    for record in &plan.records {
        let name = record.name_any();
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &nodeset.namespace().unwrap_or_default());
        let stored =
            api.patch(&name, &apply_params(), &Patch::Apply(record))
                .await
                .map_err(KubeError::of::<ConfigMap>(Verb::Apply, &name))?;
        memory.records.remember(stored);
    }
    if !plan.jobs.is_empty() || !plan.prune.is_empty() {
        apply_jobs(client, nodeset, plan, memory, &mut applied).await?;
    }
    Ok(applied)
}

/// Applies only the BareMetalHost writes of `plan` (a deletion).
pub(super) async fn apply_host_writes(
    client: &Client,
    plan: &Plan,
    memory: &Memory,
    applied: &mut Applied,
) -> Result<(), Error> {
    for write in &plan.writes {
        if applied.refused.contains_key(&write.hostname) {
            continue;
        }
        // The promise, checked once more where it is kept: only the two explicit requests
        // ever clear a machine's image, by a patch or by an apply that leaves it out. The
        // planner's tests prove it; this makes sure.
        if write.forbidden(plan.hosts.get(&write.hostname).and_then(|h| h.bmh.as_deref())) {
            tracing::error!(host = %write.host, purpose = ?write.purpose, "refusing a write that would deprovision a machine");
            continue;
        }
        let api: Api<BareMetalHost> = Api::namespaced(client.clone(), &write.namespace);
        let result = match &write.body {
            Body::Apply(body) => api.patch(&write.host, &apply_params(), &Patch::Apply(body)).await,
            Body::Merge(body) => {
                let params = PatchParams { field_manager: Some(FIELD_MANAGER.to_string()), ..Default::default() };
                api.patch(&write.host, &params, &Patch::Merge(body)).await
            }
        };
        match result.map_err(KubeError::of::<BareMetalHost>(Verb::Patch, &write.host)) {
            Ok(stored) => {
                let stored = memory.hosts.remember(stored);
                match write.purpose {
                    Purpose::Claim => {
                        applied.claims_won.insert(write.hostname.clone());
                    }
                    Purpose::Provision => {
                        applied.provisioned.insert(write.hostname.clone());
                    }
                    Purpose::Reprovision => {
                        applied.reprovisioned.insert(write.hostname.clone());
                    }
                    Purpose::Detach | Purpose::Deprovision => {
                        applied.released.insert(write.hostname.clone());
                    }
                    Purpose::FirmwareReboot => {
                        applied.rebooted.insert(write.hostname.clone());
                    }
                    Purpose::Update => {}
                }
                applied.written.insert(write.hostname.clone(), stored);
            }
            Err(err) if err.is_conflict() => {
                tracing::info!(host = %write.host, purpose = ?write.purpose, "the BareMetalHost changed under this write; looking again");
                if write.purpose == Purpose::Claim
                    && let Some(host) = plan.hosts.get(&write.hostname).and_then(|h| h.bmh.as_ref())
                {
                    memory.lost(host);
                }
                applied.conflicts = true;
            }
            Err(err) => match err.user_facing() {
                Some(message) => {
                    applied.refused.insert(write.hostname.clone(), message);
                }
                None => return Err(err.into()),
            },
        }
    }
    for release in plan.releases.iter().filter(|r| r.policy == DeletionPolicy::Retain) {
        applied.released.insert(release.hostname.clone());
    }
    // Detach of an already detached host writes nothing and is released as well.
    for release in &plan.releases {
        let written = plan.writes.iter().any(|w| w.hostname == release.hostname);
        if release.policy == DeletionPolicy::Detach && !written {
            applied.released.insert(release.hostname.clone());
        }
    }
    Ok(())
}

/// Hands the NodeSet's BIOS settings and firmware updates over to the firmware objects of its
/// hosts (`firmware`): applied with the one field manager, forced, so they are the NodeSet's;
/// a user's other settings stay. A write the apiserver refuses is the host's message.
async fn apply_firmware(client: &Client, plan: &Plan, memory: &Memory, applied: &mut Applied) -> Result<(), Error> {
    for write in &plan.firmware.writes {
        let result = match write.kind {
            Kind::Settings => {
                let api: Api<HostFirmwareSettings> = Api::namespaced(client.clone(), &write.namespace);
                let stored = api.patch(&write.name, &apply_params(), &Patch::Apply(write.body())).await;
                let stored = stored.map_err(KubeError::of::<HostFirmwareSettings>(Verb::Apply, &write.name));
                stored.map(|s| drop(memory.settings.remember(s)))
            }
            Kind::Components => {
                let api: Api<HostFirmwareComponents> = Api::namespaced(client.clone(), &write.namespace);
                let stored = api.patch(&write.name, &apply_params(), &Patch::Apply(write.body())).await;
                let stored = stored.map_err(KubeError::of::<HostFirmwareComponents>(Verb::Apply, &write.name));
                stored.map(|s| drop(memory.components.remember(s)))
            }
        };
        match result {
            Ok(()) => {
                applied.firmware_written.insert(write.hostname.clone());
            }
            Err(err) => match err.user_facing() {
                Some(message) => {
                    applied.refused.insert(write.hostname.clone(), message);
                }
                None => return Err(err.into()),
            },
        }
    }
    Ok(())
}

/// Writes generated network data, owned by the BareMetalHost it is for: it lives as long as
/// the machine, not as long as the NodeSet.
async fn network_data(client: &Client, data: &NetworkData) -> Result<(), KubeError> {
    let mut owner = data.owner.controller_owner_ref(&()).unwrap_or_default();
    owner.controller = None;
    owner.block_owner_deletion = None;
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(data.name.clone()),
            namespace: Some(data.namespace.clone()),
            labels: Some(BTreeMap::from([(
                crate::kit::names::MANAGED_BY_LABEL.to_string(),
                crate::kit::names::MANAGED_BY.to_string(),
            )])),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "networkData".to_string(),
            ByteString(serde_json::to_vec_pretty(&data.content).unwrap_or_default()),
        )])),
        type_: Some("Opaque".into()),
        ..Default::default()
    };
    let api: Api<Secret> = Api::namespaced(client.clone(), &data.namespace);
    // Not forced: a Secret of this name whose content someone else wrote is theirs, and a
    // conflict says so instead of writing over it.
    let params = PatchParams::apply(crate::FIELD_MANAGER);
    match api.patch(&data.name, &params, &Patch::Apply(&secret)).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => {
            Err(KubeError::in_the_way("Secret", &data.name, ("BareMetalHost", &data.owner.name_any())))
        }
        Err(err) => Err(KubeError::new(Verb::Apply, "Secret", &data.name, err)),
    }
}

/// The ledger of a NodeSet's service Jobs and inventory Secrets.
pub(super) fn ledger(client: &Client, nodeset: &NodeSet) -> Result<Ledger, Unstored> {
    let owner = Owner::of(nodeset);
    Ledger::new(
        client.clone(),
        nodeset,
        BTreeMap::from([
            (NODESET_LABEL.to_string(), owner.label),
            (COMPONENT_LABEL.to_string(), COMPONENT.to_string()),
        ]),
    )
}

async fn apply_jobs(
    client: &Client,
    nodeset: &NodeSet,
    plan: &Plan,
    memory: &Memory,
    applied: &mut Applied,
) -> Result<(), Error> {
    let ledger = ledger(client, nodeset)?;
    for name in &plan.keep {
        ledger.keep("Job", name);
        ledger.keep("Secret", name);
    }
    for run in &plan.jobs {
        let name = run.job.name_any();
        let result = match ledger.apply(run.secret.clone()).await {
            Ok(_) => ledger.create_once(run.job.clone()).await,
            Err(err) => Err(err),
        };
        match result {
            Ok((job, created)) => {
                if created {
                    applied.jobs_created.push(job.name_any());
                }
                memory.jobs.remember(job);
            }
            // Refused (restricted Pod Security, a quota, a webhook) or in the way: one Job's
            // problem goes to status; the other Jobs and the status write go on.
            Err(err) => match err.user_facing() {
                Some(message) => {
                    applied.jobs_refused.insert(name, message);
                }
                None => return Err(err.into()),
            },
        }
    }
    if !plan.prune.is_empty() {
        for name in ledger.prune::<Job>().await? {
            memory.jobs.forget(ledger.namespace(), &name);
        }
        ledger.prune::<Secret>().await?;
    }
    Ok(())
}
