//! The ferrometal operator: controllers for `Ironic`, `BareMetalHost` and
//! friends, their validating webhooks, and the runtime that hosts them
//! (leader election, health probes, metrics).
//!
//! Each controller is a pipeline of named steps (dereference → validate → build, pure → apply
//! → status) on the shared controller kit (`kit`); dependencies point one way: controllers
//! → kit → `crds` and `ironic-client`. `design/architecture.md` draws the modules.

// The product is safe Rust; only the test harness calls libc.
#![forbid(unsafe_code)]
// Everything `pub` is reachable from outside: the rest says `pub(crate)`.
#![warn(unreachable_pub)]

pub mod cli;
mod config;
mod database;
mod host;
mod install;
mod ironic;
mod kit;
mod metrics;
mod nodeset;
mod pki;
mod runtime;
mod serve;
#[cfg(test)]
mod source_tree;
pub mod telemetry;
pub mod testing;
mod webhook;

// What the binary and a program embedding the operator use; the end-to-end tests reach the
// rest through [`testing`].
pub use config::OperatorConfig;
pub use install::Error as InstallError;
pub use kit::error::chain as error_chain;
pub use runtime::{Operator, run_until_signal};

/// The one field manager for every server-side apply the operator makes.
pub const FIELD_MANAGER: &str = "ferrometal";
