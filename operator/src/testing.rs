//! What ferrometal's own end-to-end tests (`tests/`) reach inside the operator, and nothing
//! else: not an API for anyone else, and it changes with the code it re-exports.
//!
//! The controllers, the kit and the webhook are `pub(crate)`; a test that drives one of them
//! in-process (the database pipeline against a real MariaDB, a leader election against the
//! apiserver) or checks a rendered object against a constant of the operator's imports it from
//! here, under the path it has in the operator (`testing::database::check` for
//! `database::check`). So the compiler's `unreachable_pub` and dead-code lints see the rest of
//! the crate, and this file is the list of what the tests depend on.

/// The managed and external database's pipeline, driven in-process by `tests/tests/database`.
pub mod database {
    pub use crate::database::config::{Address, Config};
    pub use crate::database::outcome::DatabaseOutcome;
    pub use crate::database::reconcile::reconcile;
    pub use crate::database::schema::{SchemaPlan, SchemaRevision};
    pub use crate::database::sequence::RETRY_ANNOTATION;

    /// The three accounts and the init file.
    pub mod account {
        pub use crate::database::account::{
            INIT_KEY, MAINTENANCE_USER, UPGRADE_USER, UpgradeAccount, init_sql, password_hash,
        };
    }

    /// The rendered server, its volumes and its Jobs.
    pub mod build {
        pub use crate::database::build::{CLIENT_CA_DIR, CONTAINER, ClaimSettings, INIT_DIR, Inputs, SERVER_TLS_DIR};

        /// The upgrade and backup Jobs' scripts.
        pub mod jobs {
            pub use crate::database::build::jobs::{BACKUP_DIR, backup_script, upgrade_script};
        }

        /// The StatefulSet's hooks and probes.
        pub mod stateful_set {
            pub use crate::database::build::stateful_set::{PRE_STOP, READINESS};
        }
    }

    /// The server checked as Ironic reaches it.
    pub mod check {
        pub use crate::database::check::{
            Error, Target, Tls, check, connect, drop_upgrade_account, fast_shutdown, prepare_for_version_change,
            read_version,
        };
    }

    /// The clean-stop check in the server's init container.
    pub mod clean_stop {
        pub use crate::database::clean_stop::{EXIT_UNCLEAN, INIT_CONTAINER, SCRIPT, SERIES_MARKER};
    }

    /// The generated passwords.
    pub mod credentials {
        pub use crate::database::credentials::{Credentials, Password, from_secret};
    }

    /// The database objects' names.
    pub mod names {
        pub use crate::database::names::{JOB_LABEL, Names};
    }

    /// Ironic's schema against the server's.
    pub mod schema {
        pub use crate::database::schema::{SchemaPlan, SchemaRevision, plan};
    }

    /// The database conditions' reasons.
    pub mod status {
        pub use crate::database::status::reasons;
    }

    /// The database's TLS material.
    pub mod tls {
        pub use crate::database::tls::Material;
    }

    /// MariaDB's version and series.
    pub mod version {
        pub use crate::database::version::Flavor;
    }
}

/// The host controller's settings.
pub mod host {
    pub use crate::host::config::{CaSource, Config, CredentialsSource, EndpointConfig, IronicSource};
    pub use crate::host::shard::Shards;
}

/// The install manifests and the OLM bundle, as generated.
pub mod install {
    pub use crate::install::{
        CERT_MANAGER_SECRET, DEFAULT_NAMESPACE, Layout, MOUNTED_CERT_DIR, NAME, WebhookCertificates, image,
    };

    /// The OLM bundle.
    pub mod bundle {
        pub use crate::install::bundle::{Variant, files, files_of};

        /// The CSVs' packages, channel and examples.
        pub mod csv {
            pub use crate::install::bundle::csv::{CHANNEL, EXAMPLES, PACKAGE, SHARDED_PACKAGE};
        }
    }

    /// The rendered install objects.
    pub mod manifests {
        /// The webhook's configuration and certificate.
        pub mod webhook {
            pub use crate::install::manifests::webhook::{CERTIFICATE, configuration};
        }

        /// The operator's Deployment.
        pub mod workload {
            pub use crate::install::manifests::workload::{RUN_AS, deployment};
        }
    }

    /// The table of permissions.
    pub mod rbac {
        pub use crate::install::rbac::{Feature, render};
    }
}

/// The Ironic controller's settings, names and TLS.
pub mod ironic {
    pub use crate::ironic::config::Config;

    /// The rendered objects.
    pub mod build {
        /// The optional ServiceMonitor.
        pub mod service_monitor {
            pub use crate::ironic::build::service_monitor::api_resource;
        }
    }

    /// The ServiceMonitor's condition.
    pub mod monitor {
        pub use crate::ironic::monitor::SERVICE_MONITOR_READY;
    }

    /// The names, labels and annotations of an Ironic's objects.
    pub mod names {
        pub use crate::ironic::names::{
            CONTENT_HASH_ANNOTATION, FINALIZER, UPGRADE_PHASE_LABEL, VERSION_LABEL, database_scope,
        };
    }

    /// The TLS modes.
    pub mod tls {
        pub use crate::pki::SubjectAltNames;

        /// The operator-managed CA's renewal.
        pub mod auto {
            pub use crate::ironic::tls::auto::Renewal;
        }

        /// cert-manager's Certificate.
        pub mod cert_manager {
            pub use crate::ironic::tls::cert_manager::api_resource;
        }
    }
}

/// The controller kit, for a reconcile driven without the runtime.
pub mod kit {
    pub use crate::kit::context::Context;
    pub use crate::kit::events::{Notice, Notices, Publisher};
    pub use crate::kit::ledger::Ledger;
    pub use crate::kit::progress::Progress;

    /// The apply ledger's record of a write.
    pub mod ledger {
        pub use crate::kit::ledger::Written;
    }

    /// What a Deployment's status says of its rollout.
    pub mod observe {
        pub use crate::kit::observe::deployment_rollout;
    }
}

/// The operator's metrics.
pub mod metrics {
    pub use crate::metrics::Metrics;
}

/// The NodeSet controller's settings and the annotations of its Jobs.
pub mod nodeset {
    pub use crate::nodeset::config::Config;
    pub use crate::nodeset::{HOSTS_ANNOTATION, INVENTORY_KEY, SERVICE_ANNOTATION};
}

/// Certificates as the operator issues and reads them.
pub mod pki {
    pub use crate::pki::SubjectAltNames;
    pub use crate::pki::certificate::{CertifiedPem, inspect, issue_serving};

    /// Keys and signing requests.
    pub mod request {
        pub use crate::pki::request::{new_key, signing_request};
    }
}

/// Leader election and its Lease.
pub mod runtime {
    /// Why the runtime stopped.
    pub mod error {
        pub use crate::runtime::error::Error;
    }

    /// The election.
    pub mod leader {
        pub use crate::runtime::leader::{LeaderElection, Loss};
    }

    /// The Lease's timing.
    pub mod lease {
        pub use crate::runtime::lease::LeaseTiming;
    }
}

/// The webhook server's settings and limits.
pub mod webhook {
    pub use crate::serve::Limits;
    pub use crate::webhook::{BODY_BUDGET, MAX_REVIEW_BYTES, PARSING};
    pub use crate::webhook::{CONFIGURATION_NAME, ClientConfig};
    pub use crate::webhook::{Certificates, Config, MAX_PARSE_COST};
}
