//! The ferrometal operator: controllers for `Ironic`, `BareMetalHost` and
//! friends, their validating webhooks, and the runtime that hosts them
//! (leader election, health probes, metrics).
//!
//! Each resource module is a pipeline: validate → build the desired objects
//! (pure functions) → apply them with server-side apply → compute status.

pub mod apply;
pub mod cli;
pub mod config;
pub mod context;
pub mod database;
pub mod error;
pub mod events;
pub mod host;
pub mod ironic;
pub mod metrics;
pub mod runtime;
pub mod telemetry;
pub mod webhook;

pub use config::OperatorConfig;
pub use runtime::Operator;

/// The one field manager for every server-side apply the operator makes.
pub const FIELD_MANAGER: &str = "ferrometal";
