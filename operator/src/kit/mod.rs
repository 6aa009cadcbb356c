//! The controller kit: what every controller (Ironic, database, host, NodeSet) uses to talk to
//! Kubernetes, so that none carries its own copy.
//!
//! - [`context`]: the shared client, metrics and identity, and the watched [`context::Scope`]s;
//! - [`runner`]: one kube-runtime controller per scope, a span, metrics and a per-object
//!   [`backoff`] per reconcile;
//! - [`ledger`]: every write a reconcile makes for an owner (server-side apply, create-once,
//!   prune), and [`status`] for the status subresource;
//! - [`error`]: the one Kubernetes error (verb, kind, name) and what a failure means;
//! - [`progress`]: where work stands (done, waiting, failed), and [`condition`]: the
//!   conditions it becomes;
//! - [`events`]: Events collected during a reconcile, published after its status write;
//! - [`observe`] and [`jobs`]: how Jobs and workloads are doing, Jobs that run once;
//! - [`discovery`]: whether an optional API (a CRD of another project) is served, cached;
//! - [`cache`]: the watch caches, which keep objects without their `managedFields`;
//! - [`fresh`]: the newer of a cached object and what the controller's own write returned;
//! - [`content`], [`names`], [`pod`]: Secret and ConfigMap content, labels and bounded names,
//!   pod parts.
//!
//! Dependencies point one way: controllers → this kit → `crds` and `ironic-client`.

pub mod backoff;
pub mod cache;
pub mod condition;
pub mod content;
pub mod context;
pub mod discovery;
pub mod error;
pub mod events;
pub mod finalizer;
pub mod fresh;
pub mod jobs;
pub mod label;
pub mod ledger;
pub mod metadata;
pub mod names;
pub mod observe;
pub mod pod;
pub mod progress;
pub mod runner;
pub mod scrub;
pub mod status;

pub use context::{Context, Scope};
pub use error::{KubeError, Verb};
pub use events::{Notice, Notices, Publisher, Severity};
pub use ledger::Ledger;
pub use progress::{Outcome, Progress};
