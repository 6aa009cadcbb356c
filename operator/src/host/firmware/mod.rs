//! The `HostFirmwareSettings` controller, beside the host controller and through its Ironic
//! connection: it reads each host's BIOS settings from Ironic into the status of the
//! `HostFirmwareSettings` of the host's name, publishes their schema as a `FirmwareSchema`
//! shared by the machines of one model, and says whether the wanted settings are valid and
//! differ from the host's (baremetal-operator's `Valid` and `ChangeDetected`). It never
//! changes a BIOS itself: it tells the host controller what each host waits for, and the host
//! controller applies it by a manual clean when it prepares the host (`design/hosts.md`).
//!
//! - `controller`: the watch per scope, woken by changes of the spec only;
//! - `reconcile`: the steps: dereference the host → read Ironic → publish the schema → status;
//! - `read`: Ironic's list as settings and schema, and the schema's name (pure);
//! - `schema`: the shared `FirmwareSchema`, owned by every settings object that uses it;
//! - `status`: the status, conditions and Events from what was read (pure);
//! - `create`: the empty `HostFirmwareSettings` the host controller makes for a host it
//!   registers, as baremetal-operator does;
//! - `gate`: whether a host being prepared must wait for its settings to be read;
//! - `wanted`: what each host waits for from its firmware objects (settings, updates), which
//!   the host controller applies;
//! - `target`: the host of a firmware object and its Ironic node, shared with the
//!   `HostFirmwareComponents` controller (`host::components`).

mod controller;
mod create;
mod gate;
mod read;
mod reconcile;
mod schema;
mod status;
pub(super) mod target;
mod wanted;

pub(super) use controller::{named_after, run, runner, watch};
pub(super) use create::{create_for_host, ensure_settings};
pub(super) use gate::{BiosFacts, Moment, bios_facts, updates_on_reboot};
pub(super) use wanted::{Look, ReadAgain, ReadMark, Settings, Wanted, WantedUpdates, status_digest};
