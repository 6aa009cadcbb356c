//! Faults survived, in figures: the operator SIGKILLed, Ironic restarted, the apiserver
//! stopped, the leader killed or cut off, the webhook gone, while hosts register and
//! provision; the operator SIGKILLed while a NodeSet brings hosts up and rolls an edit out;
//! MariaDB killed during a managed version change. Every scenario records every state of
//! every machine and every NodeSet service Job, and asserts the same figures clean
//! (`ferrometal_tests::faults`): no duplicate Ironic node, no node leaving `active`, no
//! reprovision, no duplicate Job, no rerun of completed work, no lost finalizer, every host
//! converged, no panic.
//!
//! Short by default (CI); `FERROMETAL_FAULTS_FULL=1` runs the full length (`make faults`).
//! Random moments are seeded: the seed is printed, `FERROMETAL_FAULT_SEED` replays it.

mod common;
mod install_common;
mod mariadb_common;

#[path = "faults/apiserver_restart.rs"]
mod apiserver_restart;
#[path = "faults/cluster.rs"]
mod cluster;
#[path = "faults/database_kill.rs"]
mod database_kill;
#[path = "faults/ironic_restarts.rs"]
mod ironic_restarts;
#[path = "faults/leader_failover.rs"]
mod leader_failover;
#[path = "faults/nodeset_kills.rs"]
mod nodeset_kills;
#[path = "faults/operator_kills.rs"]
mod operator_kills;
#[path = "faults/webhook_down.rs"]
mod webhook_down;
