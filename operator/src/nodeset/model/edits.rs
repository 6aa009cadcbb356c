//! The users' edits and the world's moves, on the world. Edits that make no sense in the
//! world's state (removing the last host, a token on a preProvisioned NodeSet, which the
//! webhook refuses) are skipped: the action's reconcile still runs.

use super::actions::{Action, Annotation, Policy};
use super::fixtures::{self, HOSTNAMES, SERVICE_LISTS, SERVICES};
use super::world::World;
use crds::nodeset::{
    HOSTNAME_LABEL, NODESET_LABEL, PROVISIONED_HASH_ANNOTATION, REPROVISION_TOKEN_ANNOTATION,
    SERVICES_COMPLETED_ANNOTATION,
};
use serde_json::{Value, json};
use std::sync::Arc;

const ROLES: [&str; 3] = ["compute", "hci", "edge"];
const TIMEZONES: [&str; 3] = ["UTC", "Europe/Paris", "Asia/Tokyo"];

/// Changes the NodeSet's spec as a user would (a new generation).
pub(super) fn edit_spec(world: &mut World, edit: impl FnOnce(&mut Value)) {
    let mut spec = serde_json::to_value(&world.nodeset.spec).expect("spec");
    edit(&mut spec);
    world.nodeset.spec = serde_json::from_value(spec).expect("an edited spec");
    let generation = world.nodeset.metadata.generation.unwrap_or(1);
    world.nodeset.metadata.generation = Some(generation + 1);
}

/// True when `hostname` is in `spec.nodes`.
pub(super) fn has_host(world: &World, hostname: &str) -> bool {
    world.nodeset.spec.nodes.as_ref().is_some_and(|n| n.contains_key(hostname))
}

/// Sets `hostname`'s reprovisionToken (`None` removes it).
pub(super) fn set_token(world: &mut World, hostname: &str, token: Option<String>) {
    if !has_host(world, hostname) || world.nodeset.spec.pre_provisioned() {
        return;
    }
    edit_spec(world, |s| match token {
        Some(t) => s["nodes"][hostname]["reprovisionToken"] = json!(t),
        None => drop(s["nodes"][hostname].as_object_mut().map(|o| o.remove("reprovisionToken"))),
    });
}

/// Performs every action but SetToken, DeleteAndRecreate and Settle (the harness's).
pub(super) fn perform(world: &mut World, action: &Action) {
    let pre_provisioned = world.nodeset.spec.pre_provisioned();
    match action {
        Action::EditMtu(jumbo) => {
            edit_spec(world, |s| s["nodeTemplate"]["networks"][0]["mtu"] = json!(if *jumbo { 9000 } else { 1500 }))
        }
        Action::EditNetworks(storage) => edit_spec(world, |s| {
            let networks = s["nodeTemplate"]["networks"].as_array_mut().expect("networks");
            networks.truncate(1);
            if *storage {
                networks.push(json!({"name": "storage", "interface": "eno2", "vlan": 30, "mtu": 9000}));
            }
        }),
        Action::EditVariables(None, v) => {
            edit_spec(world, |s| s["nodeTemplate"]["variables"]["timezone"] = json!(TIMEZONES[usize::from(*v)]))
        }
        Action::EditVariables(Some(h), v) if has_host(world, HOSTNAMES[*h]) => {
            edit_spec(world, |s| s["nodes"][HOSTNAMES[*h]]["variables"] = json!({"role": ROLES[usize::from(*v)]}))
        }
        Action::EditImage(v) if !pre_provisioned => edit_spec(world, |s| {
            s["baremetalSetTemplate"]["image"]["url"] = json!(format!("http://images/os-{}.qcow2", v + 1))
        }),
        Action::AddHost(h) if !has_host(world, HOSTNAMES[*h]) => {
            edit_spec(world, |s| s["nodes"][HOSTNAMES[*h]] = fixtures::node(*h))
        }
        Action::RemoveHost(h) if has_host(world, HOSTNAMES[*h]) && hosts(world) > 1 => {
            edit_spec(world, |s| drop(s["nodes"].as_object_mut().map(|o| o.remove(HOSTNAMES[*h]))))
        }
        Action::EditSource(v) => world.sources = fixtures::sources(*v),
        Action::EditServices(i) => edit_spec(world, |s| s["services"] = json!(SERVICE_LISTS[*i])),
        Action::EditServiceSpec(i, v) => {
            world.services.insert(SERVICES[*i].into(), Arc::new(fixtures::service(SERVICES[*i], u32::from(*v))));
        }
        Action::SetManual(manual) => {
            edit_spec(world, |s| s["rollout"]["strategy"] = json!(if *manual { "Manual" } else { "Automatic" }))
        }
        Action::SetRolloutToken(v) => edit_spec(world, |s| s["rollout"]["token"] = json!(format!("r{v}"))),
        Action::SetMaxUnavailable(v) => edit_spec(world, |s| {
            s["rollout"]["maxUnavailable"] = [json!(1), json!(2), json!("50%")][usize::from(*v)].clone()
        }),
        Action::SetDeletionPolicy(p) => edit_spec(world, |s| s["deletionPolicy"] = json!(policy_name(*p))),
        Action::StripAnnotation(m, a) => {
            let key = match a {
                Annotation::ProvisionedHash => PROVISIONED_HASH_ANNOTATION,
                Annotation::ServicesCompleted => SERVICES_COMPLETED_ANNOTATION,
                Annotation::ReprovisionToken => REPROVISION_TOKEN_ANNOTATION,
            };
            world.user_remove(&format!("server-{m}"), &["metadata", "annotations", key]);
        }
        Action::StripLabels(m) => {
            for label in [NODESET_LABEL, HOSTNAME_LABEL] {
                world.user_remove(&format!("server-{m}"), &["metadata", "labels", label]);
            }
        }
        Action::LoseStatus => world.nodeset.status = None,
        Action::FinishJob(..) | Action::BmoStep | Action::Restart | Action::CrashBeforeStatus => {}
        Action::SetToken(..) | Action::DeleteAndRecreate | Action::Settle => {}
        Action::EditVariables(..) | Action::EditImage(_) | Action::AddHost(_) | Action::RemoveHost(_) => {}
    }
}

fn hosts(world: &World) -> usize {
    world.nodeset.spec.nodes.as_ref().map_or(0, |n| n.len())
}

pub(super) fn policy_name(policy: Policy) -> &'static str {
    match policy {
        Policy::Retain => "Retain",
        Policy::Detach => "Detach",
        Policy::Deprovision => "Deprovision",
    }
}
