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
//! - [`events`]: Events collected during a reconcile, published after its status write, and
//!   [`series`]: which were said lately, so that one said again continues a series;
//! - [`observe`] and [`jobs`]: how Jobs and workloads are doing, Jobs that run once;
//! - [`discovery`]: whether an optional API (a CRD of another project) is served, cached;
//! - [`cache`]: the watch caches, which keep objects without their `managedFields` (but for the
//!   operator's own apply of a firmware object's spec);
//! - [`fresh`]: the newer of a cached object and what the controller's own write returned;
//! - [`content`], [`names`], [`pod`]: Secret and ConfigMap content, labels and bounded names,
//!   pod parts; [`digest`]: short digests and bounded lists of them.
//!
//! Dependencies point one way: controllers → this kit → `crds` and `ironic-client`.

pub(crate) mod backoff;
pub(crate) mod cache;
pub(crate) mod condition;
pub(crate) mod content;
pub(crate) mod context;
pub(crate) mod digest;
pub(crate) mod discovery;
pub(crate) mod error;
pub(crate) mod events;
pub(crate) mod finalizer;
pub(crate) mod fresh;
pub(crate) mod jobs;
pub(crate) mod label;
pub(crate) mod ledger;
pub(crate) mod metadata;
pub(crate) mod names;
pub(crate) mod observe;
pub(crate) mod pod;
pub(crate) mod progress;
pub(crate) mod runner;
pub(crate) mod scrub;
pub(crate) mod series;
pub(crate) mod status;

pub(crate) use context::{Context, Scope};
pub(crate) use error::{KubeError, Verb};
pub(crate) use events::{Notice, Notices, Publisher};
pub(crate) use ledger::Ledger;
pub(crate) use progress::{Outcome, Progress};
