//! The NodeSet promise's model-based test in its short form, end to end (issue 23): a seeded
//! random sequence of user and world actions against the real operator, apiserver and Ironic
//! (fake hardware), checked after every step against the invariants the pure model checks
//! (`operator/src/nodeset/model`): no machine is deployed again unless a never-used
//! `reprovisionToken` asked for exactly that host; no `runOnce` service runs twice on an
//! installation; no two Jobs of one service run on one host at once; no more hosts in running
//! Jobs than `maxUnavailable`; every claimed machine stays `active`.
//!
//! The actions: edit the MTU (in place), edit a service, remove a host (Retain) and add it back,
//! add a new host, a new token and an undo to an old one, strip the machine's ferrometal
//! annotations, lose the NodeSet's status, kill the operator mid-rollout and start it again,
//! delete and recreate the NodeSet. `FERROMETAL_MODEL_SEED` replays a sequence (the seed is
//! printed); `FERROMETAL_MODEL_STEPS` makes it longer (`make fuzz` runs 40 steps).

use crate::host_common::secs;
use crate::nodeset_common::{JobRecorder, NodeSetEnv, Setup, names, settle};
use anyhow::Context as _;
use crds::nodeset::{PROVISIONED_HASH_ANNOTATION, SERVICES_COMPLETED_ANNOTATION};
use kube::api::{Patch, PatchParams};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

const NODESET: &str = "computes";
const HOSTS: [&str; 3] = ["compute-0", "compute-1", "compute-2"];
const MAX_UNAVAILABLE: usize = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    EditMtu,
    EditService,
    RemoveHost,
    AddHost,
    NewToken,
    UndoToken,
    StripAnnotations,
    LoseStatus,
    KillMidRollout,
    Recreate,
}

const STEPS: [Step; 10] = [
    Step::EditMtu,
    Step::EditService,
    Step::RemoveHost,
    Step::AddHost,
    Step::NewToken,
    Step::UndoToken,
    Step::StripAnnotations,
    Step::LoseStatus,
    Step::KillMidRollout,
    Step::Recreate,
];

/// What the user asked for so far, and so what the world may show.
#[derive(Default)]
struct Oracle {
    members: BTreeSet<String>,
    removed: BTreeSet<String>,
    /// Token values given per host, in order.
    tokens: BTreeMap<String, Vec<String>>,
    mtu: u32,
    service_version: u32,
    /// The machine that backs each host, once it has one.
    machine_of: BTreeMap<String, String>,
    /// Deployments each machine may have had: one per host it backed, one per asked reprovision.
    allowed_deploys: BTreeMap<String, usize>,
    /// Runs of the runOnce service each host may have had: one per installation.
    allowed_bootstraps: BTreeMap<String, usize>,
}

impl Oracle {
    fn spec(&self, env: &NodeSetEnv) -> Value {
        let nodes: serde_json::Map<String, Value> = self
            .members
            .iter()
            .map(|h| {
                let index = HOSTS.iter().position(|x| x == h).unwrap_or(0);
                let mut node =
                    json!({"networks": [{"name": "ctlplane", "addresses": [format!("192.0.2.{}/24", 10 + index)]}]});
                if let Some(token) = self.tokens.get(h).and_then(|t| t.last()) {
                    node["reprovisionToken"] = json!(token);
                }
                (h.clone(), node)
            })
            .collect();
        let mut spec = env.spec(&[], &["bootstrap", "configure"]);
        spec["nodes"] = Value::Object(nodes);
        spec["nodeTemplate"]["networks"][0]["mtu"] = json!(self.mtu);
        spec["rollout"] = json!({"maxUnavailable": MAX_UNAVAILABLE});
        spec["deletionPolicy"] = json!("Retain");
        spec
    }

    /// The machines the NodeSet's status names now: a host seen with a machine for the first
    /// time may deploy it once. A host never gets another machine: nothing here asks for one
    /// (a token reprovisions the same machine; a host removed under Retain and added back, a
    /// recreated NodeSet, a lost status all adopt the machine the host had).
    fn learn_machines(&mut self, nodeset: &crds::nodeset::NodeSet) -> anyhow::Result<()> {
        for (host, machine) in NodeSetEnv::bmh_names(nodeset) {
            match self.machine_of.get(&host) {
                Some(had) => anyhow::ensure!(*had == machine, "{host} moved from {had} to {machine}"),
                None => {
                    *self.allowed_deploys.entry(machine.clone()).or_default() += 1;
                    *self.allowed_bootstraps.entry(host.clone()).or_default() += 1;
                    self.machine_of.insert(host, machine);
                }
            }
        }
        Ok(())
    }
}

/// Draws a step that makes sense now (a host to remove, a token to undo, ...).
fn draw(rng: &mut StdRng, oracle: &Oracle) -> Step {
    loop {
        let step = STEPS[rng.random_range(0..STEPS.len())];
        let possible = match step {
            Step::RemoveHost => oracle.members.len() > 1,
            Step::AddHost => oracle.members.len() < HOSTS.len(),
            Step::UndoToken => oracle.tokens.iter().any(|(h, t)| oracle.members.contains(h) && t.len() >= 2),
            _ => true,
        };
        if possible {
            return step;
        }
    }
}

fn pick<'a>(rng: &mut StdRng, from: impl Iterator<Item = &'a String>) -> Option<String> {
    let all: Vec<&String> = from.collect();
    (!all.is_empty()).then(|| all[rng.random_range(0..all.len())].clone())
}

async fn apply_spec(env: &NodeSetEnv, oracle: &Oracle) -> anyhow::Result<()> {
    let mut spec = oracle.spec(env);
    // A merge patch: hosts no longer listed are removed with null.
    for host in &oracle.removed {
        spec["nodes"][host] = Value::Null;
    }
    env.patch_spec(NODESET, spec).await?;
    Ok(())
}

/// Performs `step`; returns what it did, for the log.
async fn perform(env: &mut NodeSetEnv, oracle: &mut Oracle, rng: &mut StdRng, step: Step) -> anyhow::Result<String> {
    Ok(match step {
        Step::EditMtu => {
            oracle.mtu = if oracle.mtu == 1500 { 9000 } else { 1500 };
            apply_spec(env, oracle).await?;
            format!("MTU {}", oracle.mtu)
        }
        Step::EditService => {
            oracle.service_version += 1;
            let image = format!("configure:{}", oracle.service_version);
            let edit = json!({"spec": {"job": {"image": image}}});
            env.services.patch("configure", &PatchParams::default(), &Patch::Merge(&edit)).await?;
            format!("service configure runs {image}")
        }
        Step::RemoveHost => {
            let host = pick(rng, oracle.members.iter()).context("a member")?;
            oracle.members.remove(&host);
            oracle.removed.insert(host.clone());
            apply_spec(env, oracle).await?;
            format!("removed {host} (Retain)")
        }
        Step::AddHost => {
            let absent: Vec<String> =
                HOSTS.iter().map(|h| h.to_string()).filter(|h| !oracle.members.contains(h)).collect();
            let host =
                pick(rng, oracle.removed.iter()).or_else(|| pick(rng, absent.iter())).context("a host to add")?;
            oracle.removed.remove(&host);
            oracle.members.insert(host.clone());
            apply_spec(env, oracle).await?;
            format!("added {host}")
        }
        Step::NewToken => {
            let host = pick(rng, oracle.members.iter()).context("a member")?;
            let tokens = oracle.tokens.entry(host.clone()).or_default();
            let token = format!("t{}", tokens.len() + 1);
            tokens.push(token.clone());
            if let Some(machine) = oracle.machine_of.get(&host) {
                *oracle.allowed_deploys.entry(machine.clone()).or_default() += 1;
            }
            *oracle.allowed_bootstraps.entry(host.clone()).or_default() += 1;
            apply_spec(env, oracle).await?;
            format!("{host}: reprovisionToken {token}")
        }
        Step::UndoToken => {
            let candidates: Vec<String> = oracle
                .tokens
                .iter()
                .filter(|(h, t)| oracle.members.contains(*h) && t.len() >= 2)
                .map(|(h, _)| h.clone())
                .collect();
            let host = pick(rng, candidates.iter()).context("a host with two tokens")?;
            let tokens = oracle.tokens.entry(host.clone()).or_default();
            let old = tokens[tokens.len() - 2].clone();
            tokens.push(old.clone());
            apply_spec(env, oracle).await?;
            format!("{host}: reprovisionToken back to {old} (an undo, not a request)")
        }
        Step::StripAnnotations => {
            let host = pick(rng, oracle.members.iter()).context("a member")?;
            let machine = oracle.machine_of.get(&host).context("its machine")?.clone();
            let strip = json!({"metadata": {"annotations": {PROVISIONED_HASH_ANNOTATION: null, SERVICES_COMPLETED_ANNOTATION: null}}});
            env.t.hosts.patch(&machine, &PatchParams::default(), &Patch::Merge(&strip)).await?;
            format!("stripped the ferrometal annotations of {machine} ({host})")
        }
        Step::LoseStatus => {
            let lost = json!({"status": null});
            env.nodesets.patch_status(NODESET, &PatchParams::default(), &Patch::Merge(&lost)).await?;
            "lost the NodeSet's status".into()
        }
        Step::KillMidRollout => {
            oracle.mtu = if oracle.mtu == 1500 { 9000 } else { 1500 };
            apply_spec(env, oracle).await?;
            tokio::time::sleep(std::time::Duration::from_millis(rng.random_range(0..1500))).await;
            env.kill_operator();
            env.start_operator().await?;
            format!("MTU {}, the operator killed mid-rollout and started again", oracle.mtu)
        }
        Step::Recreate => {
            env.delete_nodeset(NODESET).await?;
            oracle.removed.clear();
            env.create_nodeset(NODESET, oracle.spec(env)).await?;
            "deleted and recreated the NodeSet (Retain)".into()
        }
    })
}

/// Checks every invariant after a step. `bring_up`: the NodeSet's first hosts came up in it,
/// all at once (a bring-up takes no `maxUnavailable` slot).
async fn check(
    env: &NodeSetEnv,
    oracle: &mut Oracle,
    jobs: &JobRecorder,
    machines: &[String],
    bring_up: bool,
) -> anyhow::Result<()> {
    let nodeset = env.wait_ready(NODESET, secs(180)).await?;
    oracle.learn_machines(&nodeset)?;
    let transitions = env.node_transitions(machines).await?;
    for machine in machines {
        // Each deployment ends in `active` once, however many steps it took.
        let deploys = transitions[machine].iter().filter(|s| *s == "active").count();
        let allowed = oracle.allowed_deploys.get(machine).copied().unwrap_or(0);
        anyhow::ensure!(deploys <= allowed, "{machine} was deployed {deploys} times, {allowed} asked for");
    }
    let claimed: Vec<String> = oracle.machine_of.values().cloned().collect::<BTreeSet<_>>().into_iter().collect();
    env.nodes_active(&claimed).await.context("every machine a host has (or had, retained) stays active")?;
    for (host, allowed) in &oracle.allowed_bootstraps {
        let runs = jobs.runs("bootstrap", host);
        anyhow::ensure!(runs <= *allowed, "runOnce bootstrap ran {runs} times on {host}, {allowed} installations");
    }
    anyhow::ensure!(jobs.max_same_host_and_service() <= 1, "two Jobs of one service ran on one host at once");
    let running = jobs.max_running_hosts();
    anyhow::ensure!(
        bring_up || running <= MAX_UNAVAILABLE,
        "{running} hosts in running Jobs at once, maxUnavailable {MAX_UNAVAILABLE}"
    );
    jobs.reset_maxima();
    Ok(())
}

#[tokio::test]
async fn random_user_and_world_actions_never_deploy_rerun_or_double_what_nobody_asked_for() -> anyhow::Result<()> {
    let seed: u64 = std::env::var("FERROMETAL_MODEL_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
    });
    let steps: usize = std::env::var("FERROMETAL_MODEL_STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(8);
    println!("FERROMETAL_MODEL_SEED={seed} FERROMETAL_MODEL_STEPS={steps}");
    let mut rng = StdRng::seed_from_u64(seed);

    let mut env = NodeSetEnv::start("nset-model", Setup::default()).await?;
    let machines = names("server", 4);
    env.free_hosts(&machines, json!({})).await?;
    env.service("bootstrap", true, "bootstrap:1").await?;
    env.service("configure", false, "configure:0").await?;
    let mut oracle = Oracle { mtu: 1500, ..Oracle::default() };
    oracle.members.extend(HOSTS[..2].iter().map(|h| h.to_string()));
    let jobs = env.record_jobs().await?;
    env.create_nodeset(NODESET, oracle.spec(&env)).await?;
    check(&env, &mut oracle, &jobs, &machines, true).await.context("the first bring-up")?;

    for i in 0..steps {
        let step = draw(&mut rng, &oracle);
        let did = perform(&mut env, &mut oracle, &mut rng, step).await?;
        println!("step {i}: {did}");
        settle(&env).await?;
        check(&env, &mut oracle, &jobs, &machines, false)
            .await
            .with_context(|| format!("after step {i} ({did}); replay with FERROMETAL_MODEL_SEED={seed}"))?;
    }
    Ok(())
}
