//! Ironic's database: a managed MariaDB with upgrade-safe version changes, or an external
//! database checked before Ironic relies on it. See `design/database.md`.
//!
//! The Ironic controller calls [`reconcile`] once per reconcile of an `Ironic`, after it
//! validated the spec and before it resolves and builds its own objects, with a view of its
//! ledger scoped to the database's objects. It returns a [`DatabaseOutcome`]: the
//! [`Connection`] Ironic's pods use, `status.database` (already written), the DatabaseReady
//! condition, the content of the Secrets Ironic's pods mount, and a [`crate::kit::Progress`]
//! that says whether Ironic may roll out and run its schema Job now.
//!
//! It imports nothing from the Ironic controller: only the kit, `pki` and `crds`.
//!
//! The pipeline, as everywhere in the operator:
//! - resolve: [`connection`] (the seam with Ironic's builders), [`credentials`], [`tls`]
//!   (and [`tls_switch`], when a running server may start to require it), [`account`] (the
//!   maintenance and upgrade accounts, `root` on the socket: the server's init file);
//! - build: [`build`], one pure render function per object;
//! - apply and observe: `managed` and `external`, on the shared run state `run`
//!   ([`observe`] reads the StatefulSet and its pod); [`reconcile`] is the entry;
//! - check with sqlx: [`check`] (connectivity, authentication, TLS, version, the slow
//!   shutdown flag), [`schema`] (Ironic's alembic revision);
//! - sequence a MariaDB version change: [`sequence`] (pure state machine), driven by
//!   `upgrade`; [`clean_stop`], the new pod's check that the old server stopped cleanly;
//! - report: [`outcome`] (DatabaseReady and the progress from one source), [`status`]
//!   (reasons, merge patches of `status.database`), [`error`] (what a failure means).

pub(crate) mod account;
pub(crate) mod build;
pub(crate) mod check;
pub(crate) mod clean_stop;
pub(crate) mod config;
pub(crate) mod connection;
pub(crate) mod credentials;
pub(crate) mod error;
mod external;
mod managed;
pub(crate) mod names;
pub(crate) mod observe;
pub(crate) mod outcome;
pub(crate) mod reconcile;
mod run;
pub(crate) mod schema;
pub(crate) mod sequence;
pub(crate) mod status;
pub(crate) mod tls;
pub(crate) mod tls_switch;
mod upgrade;
pub(crate) mod version;

pub(crate) use config::{Config, DatabaseArgs};
pub(crate) use connection::{Connection, resolve_external};
pub(crate) use error::Error;
pub(crate) use outcome::DatabaseOutcome;
pub(crate) use reconcile::reconcile;
pub(crate) use schema::SchemaPlan;
