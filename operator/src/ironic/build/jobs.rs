//! The upgrade Jobs: the schema upgrade before the new pods roll (`pre`), the online data
//! migrations after (`post`). Only with a database: SQLite lives and dies with the pod.

use super::meta::meta;
use super::volumes::{self, SHARED_DIR, SHARED_VOLUME};
use super::{containers, env, pod};
use crate::database::Connection;
use crate::ironic::names::{self, UPGRADE_PHASE_LABEL};
use crate::ironic::resolve::Resolved;
use crate::ironic::upgrade::UpgradeVersions;
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{PodSpec, PodTemplateSpec};
use kube::api::ObjectMeta;

/// Which Job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// `/bin/rundatabase-upgrade`, before the rollout.
    Pre,
    /// `/bin/runonline-data-migrations`, once the new pods run.
    Post,
}

impl Phase {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Pre => "pre",
            Self::Post => "post",
        }
    }

    fn script(self) -> &'static str {
        match self {
            Self::Pre => "database-upgrade",
            Self::Post => "online-data-migrations",
        }
    }

    /// For messages: "pre-upgrade Job".
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Self::Pre => "pre-upgrade Job (database schema upgrade)",
            Self::Post => "post-upgrade Job (online data migrations)",
        }
    }
}

/// Directories ironic-image writes to, which a read-only root needs as volumes.
const SCRATCH: [(&str, &str); 3] = [("ironic-conf", "/conf"), ("ironic-data", "/data"), ("ironic-tmp", "/tmp")];

pub(crate) fn render(resolved: &Resolved, db: &Connection, versions: &UpgradeVersions, phase: Phase) -> Job {
    let name = resolved.names.upgrade_job(phase.label(), versions.from.as_deref(), &versions.to);
    let mut labels = names::common_labels(&resolved.names.ironic, &versions.to);
    labels.insert(UPGRADE_PHASE_LABEL.to_string(), phase.label().to_string());

    let (mut pod_volumes, mut mounts) = volumes::database(db);
    pod_volumes.push(volumes::empty_dir(SHARED_VOLUME));
    mounts.push(volumes::mount(SHARED_VOLUME, SHARED_DIR, false));
    for (volume, path) in SCRATCH {
        pod_volumes.push(volumes::empty_dir(volume));
        mounts.push(volumes::mount(volume, path, false));
    }
    let settings = &resolved.settings;
    let overrides = settings.overrides.clone().unwrap_or_default();
    let mut template_meta = ObjectMeta { labels: Some(labels.clone()), ..Default::default() };
    pod::merge_under(&mut template_meta.labels, overrides.labels.as_ref());
    pod::merge_under(&mut template_meta.annotations, overrides.annotations.as_ref());
    let template = PodTemplateSpec {
        metadata: Some(template_meta),
        spec: Some(PodSpec {
            containers: vec![containers::upgrade_job(
                phase.script(),
                &resolved.version.ironic_image,
                env::upgrade_job(db),
                mounts,
            )],
            volumes: Some(pod_volumes),
            restart_policy: Some("Never".to_string()),
            automount_service_account_token: Some(false),
            node_selector: settings.node_selector.clone(),
            tolerations: overrides.tolerations.clone().filter(|t| !t.is_empty()),
            ..Default::default()
        }),
    };
    Job {
        metadata: meta(resolved, name, labels),
        spec: Some(JobSpec {
            backoff_limit: Some(resolved.upgrade_job_backoff_limit),
            // A migration that hangs (a lock held by a crashed server) would otherwise hold
            // the upgrade forever; past the deadline the Job fails and the upgrade says so.
            active_deadline_seconds: Some(resolved.upgrade_job_deadline_seconds),
            template,
            ..Default::default()
        }),
        status: None,
    }
}
