//! The ferrometal operator: controllers for `Ironic`, `BareMetalHost` and
//! friends, their validating webhooks, and the runtime that hosts them
//! (leader election, health probes, metrics).
//!
//! Each controller is a pipeline of named steps (dereference → validate → build, pure → apply
//! → status) on the shared controller kit ([`kit`]); dependencies point one way: controllers
//! → kit → `crds` and `ironic-client`. `design/architecture.md` draws the modules.

// The product is safe Rust; only the test harness calls libc.
#![forbid(unsafe_code)]

pub mod cli;
pub mod config;
pub mod database;
pub mod host;
pub mod install;
pub mod ironic;
pub mod kit;
pub mod metrics;
pub mod nodeset;
pub mod pki;
pub mod runtime;
pub mod serve;
#[cfg(test)]
mod source_tree;
pub mod telemetry;
pub mod webhook;

pub use config::OperatorConfig;
pub use runtime::Operator;

/// The one field manager for every server-side apply the operator makes.
pub const FIELD_MANAGER: &str = "ferrometal";
