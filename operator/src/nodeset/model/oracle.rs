//! What the users asked for and what the machines went through, kept apart from the code
//! under test: which host may lose its image (a never-used token value for it, or its removal
//! or the NodeSet's deletion under Deprovision), which machine (and provisioning of it) each
//! Job ran on, what succeeded there, which machines serve, and which configuration a Manual
//! rollout acknowledged for each host.

use super::actions::{Action, Token};
use super::fixtures::HOSTNAMES;
use super::world::{Event, World};
use crate::nodeset::consumer::Purpose;
use crate::nodeset::job::{HOSTS_ANNOTATION, SERVICE_ANNOTATION, SERVICE_HASH_ANNOTATION};
use crate::nodeset::plan::Plan;
use crds::nodeset::{RolloutStrategy, host_config_hash_with};
use crds::nodesetservice::run_hash;
use k8s_openapi::api::batch::v1::Job;
use std::collections::{BTreeMap, BTreeSet};

/// What rollouts acknowledged: the services (each listed name with its spec hash), and per host
/// the configuration acknowledged for it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Acked {
    pub services: Option<Vec<(String, String)>>,
    pub hosts: BTreeMap<String, String>,
}

impl Acked {
    /// Everything as it is now.
    fn now(world: &World) -> Self {
        let spec = &world.nodeset.spec;
        let hosts = spec.nodes.iter().flatten().map(|(h, _)| (h.clone(), desired(world, h).unwrap_or_default()));
        Acked { services: Some(services(world)), hosts: hosts.collect() }
    }

    /// True when `hostname`'s configuration and the services, as they are now, were acknowledged.
    pub(super) fn covers(&self, world: &World, hostname: &str) -> bool {
        self.services.as_ref() == Some(&services(world))
            && self.hosts.get(hostname) == desired(world, hostname).as_ref()
    }
}

/// The listed services, each with its spec hash ("missing" for one that does not exist).
fn services(world: &World) -> Vec<(String, String)> {
    let listed = world.nodeset.spec.services.iter().flatten();
    let hash =
        |s: &String| world.services.get(s).map_or_else(|| "missing".into(), |s| run_hash(&s.spec, &world.sources));
    listed.map(|s| (s.clone(), hash(s))).collect()
}

/// `hostname`'s desired config hash, if it is in spec.nodes.
fn desired(world: &World, hostname: &str) -> Option<String> {
    let spec = &world.nodeset.spec;
    let section = spec.nodes.as_ref()?.get(hostname)?;
    Some(host_config_hash_with(hostname, spec.node_template.as_ref(), Some(section), &world.sources))
}

/// A success: machine, service, config hash, service hash.
pub(super) type Success = (String, String, String, String);

#[derive(Default)]
pub(super) struct Oracle {
    pub pre_provisioned: bool,
    /// Every reprovisionToken value each host had, in order.
    pub tokens: BTreeMap<String, Vec<String>>,
    pub fresh: u32,
    /// The one image loss each host may have, and by which kind of write.
    pub grants: BTreeMap<String, Purpose>,
    /// Provisionings of each BareMetalHost so far (a machine is a BareMetalHost and one of them).
    pub provisions: BTreeMap<String, u32>,
    /// Removals of each preProvisioned host (a host added again may be another machine).
    pub removals: BTreeMap<String, u32>,
    /// Each Job's hosts and the machine each ran on.
    pub job_machines: BTreeMap<String, Vec<(String, String)>>,
    pub succeeded: BTreeSet<Success>,
    /// Machines that were fully configured once: a rollout makes them unavailable.
    pub serving: BTreeSet<String>,
    /// What the last rollout token (or Automatic, or a first sight) acknowledged: what a
    /// configured host may get at most.
    pub acked: Acked,
    /// What rollout tokens (or Automatic) approved, as the design promises it: nothing on first
    /// sight, and a host's approval leaves with the host. A host approved so never waits.
    pub approved: Acked,
    /// Every transition out of provisioned, and what caused it.
    pub departures: Vec<(String, String)>,
    pub causes: BTreeMap<String, String>,
    /// A configured host is not at its desired configuration: a rollout is under way.
    pub behind: bool,
}

impl Oracle {
    /// The token value `token` stands for on `hostname`.
    pub(super) fn resolve(&mut self, hostname: &str, token: Token) -> Option<String> {
        match token {
            Token::Clear => None,
            Token::Fresh => {
                self.fresh += 1;
                Some(format!("t{}", self.fresh))
            }
            Token::Reuse(i) => {
                let used = self.tokens.get(hostname).filter(|u| !u.is_empty())?;
                Some(used[usize::from(i) % used.len()].clone())
            }
        }
    }

    /// Records what `action` (with `token` resolved) asks for, before it is performed.
    pub(super) fn asked(&mut self, world: &World, action: &Action, token: Option<&String>) {
        let spec = &world.nodeset.spec;
        let policy = spec.deletion_policy();
        let deprovision = policy == crds::nodeset::DeletionPolicy::Deprovision;
        match action {
            Action::SetToken(h, _) => self.token(world, HOSTNAMES[*h], token),
            // Whatever the policy: a preProvisioned host has no BareMetalHost to deprovision,
            // and one added back may be another machine.
            Action::RemoveHost(h) if self.pre_provisioned => {
                *self.removals.entry(HOSTNAMES[*h].into()).or_default() += 1
            }
            Action::RemoveHost(h) if deprovision => {
                self.grants.insert(HOSTNAMES[*h].into(), Purpose::Deprovision);
            }
            Action::AddHost(h) => {
                self.grants.remove(HOSTNAMES[*h]);
            }
            // A preProvisioned NodeSet deleted under a policy that does not retain its hosts
            // forgets what ran on them (its record goes): a NodeSet recreated under its name
            // starts them anew, as it would other machines.
            Action::DeleteAndRecreate
                if self.pre_provisioned
                    && crate::nodeset::plan::release_policy(&world.nodeset)
                        != crds::nodeset::DeletionPolicy::Retain =>
            {
                for hostname in spec.nodes.iter().flatten().map(|(h, _)| h) {
                    *self.removals.entry(hostname.clone()).or_default() += 1;
                }
            }
            Action::DeleteAndRecreate if deprovision => {
                for hostname in spec.nodes.iter().flatten().map(|(h, _)| h) {
                    self.grants.insert(hostname.clone(), Purpose::Deprovision);
                }
            }
            _ => {}
        }
    }

    fn token(&mut self, world: &World, hostname: &str, token: Option<&String>) {
        let section = world.nodeset.spec.nodes.as_ref().and_then(|n| n.get(hostname));
        let Some(section) = section.filter(|_| !world.nodeset.spec.pre_provisioned()) else { return };
        let current = section.reprovision_token.as_ref().filter(|t| !t.is_empty());
        if token == current {
            return;
        }
        let used = self.tokens.entry(hostname.into()).or_default();
        match token {
            Some(new) if !used.contains(new) => {
                used.push(new.clone());
                self.grants.insert(hostname.into(), Purpose::Reprovision);
            }
            _ if self.grants.get(hostname) == Some(&Purpose::Reprovision) => {
                self.grants.remove(hostname);
            }
            _ => {}
        }
    }

    /// A new rollout token, a switch to Manual, or Automatic: what is, is approved.
    pub(super) fn acknowledge(&mut self, world: &World) {
        self.acked = Acked::now(world);
        self.approved = self.acked.clone();
    }

    /// A first sight (a recreated NodeSet, its status lost): what is may be what someone
    /// approved, but nothing says so.
    pub(super) fn first_sight(&mut self, world: &World) {
        self.acked = Acked::now(world);
        self.approved = Acked { services: None, hosts: BTreeMap::new() };
    }

    /// The approvals of hosts no longer in spec.nodes go with them.
    pub(super) fn forget_removed(&mut self, world: &World) {
        self.approved.hosts.retain(|h, _| desired(world, h).is_some());
    }

    /// Judges the world's events: every image loss must be a grant's (invariant 1).
    pub(super) fn events(&mut self, world: &mut World) -> Result<(), String> {
        for event in std::mem::take(&mut world.events) {
            match event {
                Event::ImageLost { bmh, hostname, label, purpose } => {
                    let cause = format!("a {purpose:?} write for {hostname}");
                    self.causes.insert(bmh.clone(), cause.clone());
                    // The machine it was serves no more, whatever its Jobs still do.
                    self.serving.retain(|m| !m.starts_with(&format!("{bmh}#")));
                    let granted = self.grants.get(&hostname) == Some(&purpose) && label.as_deref() == Some(&hostname);
                    if !granted {
                        return Err(format!(
                            "(1) BareMetalHost {bmh} (labelled for {label:?}) lost its image by {cause}, which no user asked for"
                        ));
                    }
                    self.grants.remove(&hostname);
                }
                Event::ImageSet { bmh } => *self.provisions.entry(bmh).or_default() += 1,
                Event::LeftProvisioned { bmh } => {
                    let cause = self.causes.get(&bmh).cloned().unwrap_or_else(|| "nothing".into());
                    self.departures.push((bmh, cause));
                }
            }
        }
        Ok(())
    }

    /// The machine behind `hostname` in `plan`.
    pub(super) fn machine(&self, plan: &Plan, hostname: &str) -> Option<String> {
        if self.pre_provisioned {
            let removals = self.removals.get(hostname).copied().unwrap_or_default();
            return Some(format!("pre:{hostname}#{removals}"));
        }
        let bmh = plan.hosts.get(hostname)?.bmh.as_ref()?.metadata.name.clone()?;
        Some(format!("{bmh}#{}", self.provisions.get(&bmh).copied().unwrap_or_default()))
    }

    /// A Job ended: a success is recorded per machine.
    pub(super) fn finished(&mut self, job: &Job, succeeded: bool) {
        let (Some(name), Some((service, hash))) = (job.metadata.name.as_ref(), service_of(job)) else { return };
        if !succeeded {
            return;
        }
        for (hostname, machine) in self.job_machines.get(name).into_iter().flatten() {
            let config = job_hosts(job).get(hostname).cloned().unwrap_or_default();
            self.succeeded.insert((machine.clone(), service.clone(), config, hash.clone()));
        }
    }

    /// Marks the machines that run every listed service at their host's desired configuration.
    pub(super) fn update_serving(&mut self, world: &World, plan: &Plan) {
        let spec = &world.nodeset.spec;
        self.behind = false;
        for (hostname, section) in spec.nodes.iter().flatten() {
            let Some(machine) = self.machine(plan, hostname) else { continue };
            let desired = host_config_hash_with(hostname, spec.node_template.as_ref(), Some(section), &world.sources);
            let done = spec.services.iter().flatten().all(|s| {
                let Some(service) = world.services.get(s) else { return false };
                let (run_once, hash) =
                    (service.spec.run_once.unwrap_or(false), run_hash(&service.spec, &world.sources));
                self.succeeded
                    .iter()
                    .any(|(m, n, c, h)| *m == machine && n == s && (run_once || (*c == desired && *h == hash)))
            });
            if done {
                self.serving.insert(machine);
            } else if self.serving.contains(&machine) {
                self.behind = true;
            }
        }
        if spec.rollout.as_ref().and_then(|r| r.strategy).unwrap_or_default() == RolloutStrategy::Automatic {
            self.acknowledge(world);
        }
    }
}

/// A service Job's service and service hash.
pub(super) fn service_of(job: &Job) -> Option<(String, String)> {
    let annotations = job.metadata.annotations.as_ref()?;
    Some((annotations.get(SERVICE_ANNOTATION)?.clone(), annotations.get(SERVICE_HASH_ANNOTATION)?.clone()))
}

/// A service Job's hosts and the config hash each runs with.
pub(super) fn job_hosts(job: &Job) -> BTreeMap<String, String> {
    let hosts = job.metadata.annotations.as_ref().and_then(|a| a.get(HOSTS_ANNOTATION));
    let parsed: BTreeMap<String, serde_json::Value> =
        hosts.and_then(|h| serde_json::from_str(h).ok()).unwrap_or_default();
    parsed.into_iter().map(|(h, ran)| (h, ran["configHash"].as_str().unwrap_or_default().to_string())).collect()
}
