//! The MariaDB StatefulSet: one replica, its data on a claim from the template, and a
//! shutdown that leaves nothing for the next version to recover.

use super::{
    CONTAINER, DATA_DIR, INIT_DIR, Inputs, SERVER_TLS_DIR, container_security, env, mount, pod_security, secret_env,
    secret_volume,
};
use crate::database::account::INIT_KEY;
use crate::database::clean_stop;
use crate::database::connection::{MANAGED_DATABASE_NAME, MARIADB_PORT, PASSWORD_KEY, USERNAME_KEY};
use crate::database::names::{ACCOUNT_HASH_ANNOTATION, DATA_VOLUME, TLS_HASH_ANNOTATION};
use crate::pki::CA_CERT_KEY;
use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec, StatefulSetUpdateStrategy};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, ExecAction, Lifecycle, LifecycleHandler, PersistentVolumeClaim,
    PersistentVolumeClaimSpec, PodSpec, PodTemplateSpec, Probe, Volume, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::ObjectMeta;

const TLS_VOLUME: &str = "tls";
/// The argument that makes MariaDB refuse clear text on the network.
pub(crate) const REQUIRE_TLS_ARG: &str = "--require-secure-transport=ON";
/// The argument of the served certificate: the server offers TLS.
pub(crate) const SERVE_TLS_ARG_PREFIX: &str = "--ssl-cert=";
const INIT_VOLUME: &str = "init";

/// The preStop hook. A normal shutdown (`innodb_fast_shutdown = 1`, MariaDB's default) leaves
/// purge and change-buffer work in the data files; a newer major version may refuse them, or
/// the redo log of an unclean stop. `0` makes InnoDB finish all of it and write every dirty
/// page before it stops, which is what MariaDB asks for before a version change. The server
/// starts with `--innodb-fast-shutdown=0`; the hook sets it once more over the local socket
/// (for a server started from an older template) and asks the server to shut down. If setting
/// the variable fails the shutdown is asked all the same.
///
/// The hook asks and returns (`SHUTDOWN` answers as the shutdown begins); it must not wait for
/// the end. The server is the container's first process: when it exits, every other process
/// of the container dies with it, a hook still waiting too, and the kubelet reports such a hook
/// as failed (`FailedPreStopHook`, exit 137), measured on a real node with `mariadb-admin
/// shutdown`, which waits. The grace period covers the rest: the kubelet's SIGTERM after the
/// hook meets a server already stopping slowly and starts no second shutdown, and the
/// container is killed only if the slow shutdown outlasts the grace period.
pub const PRE_STOP: &str = r#"export MYSQL_PWD="$MARIADB_ROOT_PASSWORD"
if ! mariadb --protocol=socket --user=root --execute='SET GLOBAL innodb_fast_shutdown = 0'; then
  echo 'preStop: could not set innodb_fast_shutdown = 0; shutting down anyway' >&2
fi
exec mariadb --protocol=socket --user=root --execute='SHUTDOWN'
"#;

/// Readiness: the server accepts connections on its socket. It does so only once InnoDB has
/// finished starting (crash recovery included). No liveness probe: restarting a MariaDB that
/// is slow to recover or to upgrade would only make things worse.
pub const READINESS: &str =
    r#"MYSQL_PWD="$MARIADB_ROOT_PASSWORD" exec mariadb-admin --protocol=socket --user=root ping"#;

/// The StatefulSet.
pub(crate) fn render(inputs: &Inputs<'_>) -> StatefulSet {
    let (names, managed) = (inputs.names, inputs.managed);
    let wiring = wiring(inputs);
    let template_meta =
        ObjectMeta { labels: Some(names.labels()), annotations: Some(wiring.annotations), ..Default::default() };
    StatefulSet {
        metadata: inputs.meta(names.stateful_set(), names.labels()),
        spec: Some(StatefulSetSpec {
            replicas: Some(1),
            service_name: Some(names.service()),
            selector: LabelSelector { match_labels: Some(names.selector()), ..Default::default() },
            pod_management_policy: Some("OrderedReady".to_string()),
            update_strategy: Some(StatefulSetUpdateStrategy {
                type_: Some("RollingUpdate".to_string()),
                ..Default::default()
            }),
            template: PodTemplateSpec {
                metadata: Some(template_meta),
                spec: Some(PodSpec {
                    // Before the server: it must not open a directory a crash left to another series.
                    init_containers: Some(vec![clean_stop::init_container(inputs)]),
                    containers: vec![container(inputs, wiring.args, wiring.mounts)],
                    volumes: Some(wiring.volumes),
                    security_context: Some(pod_security()),
                    automount_service_account_token: Some(false),
                    enable_service_links: Some(false),
                    // Covers the preStop hook's slow shutdown; see DEFAULT_DATABASE_TERMINATION_GRACE_PERIOD_SECONDS
                    // and design/database.md for why 300 s is the default.
                    termination_grace_period_seconds: Some(managed.termination_grace_period_seconds()),
                    ..Default::default()
                }),
            },
            volume_claim_templates: Some(vec![data_claim(inputs)]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The server's arguments, volumes and mounts, and the template annotations whose change
/// restarts it (the accounts' digest, the TLS material's).
struct Wiring {
    args: Vec<String>,
    volumes: Vec<Volume>,
    mounts: Vec<VolumeMount>,
    annotations: std::collections::BTreeMap<String, String>,
}

fn wiring(inputs: &Inputs<'_>) -> Wiring {
    let mut args = vec![
        "--skip-name-resolve".to_string(),
        // Every stop is the slow, complete one (the preStop hook's too), so the operator only
        // reads the flag before a version change and needs no SUPER to set it.
        "--innodb-fast-shutdown=0".to_string(),
        // The accounts, at every start: root kept to the socket, the maintenance account.
        format!("--init-file={INIT_DIR}/{INIT_KEY}"),
    ];
    let mut volumes = vec![secret_volume(INIT_VOLUME, &inputs.names.init())];
    let mut mounts = vec![mount(DATA_VOLUME, DATA_DIR, false), mount(INIT_VOLUME, INIT_DIR, true)];
    let mut annotations = std::collections::BTreeMap::new();
    annotations.insert(ACCOUNT_HASH_ANNOTATION.to_string(), inputs.account_digest.clone());
    if let Some(tls) = inputs.tls {
        volumes.push(secret_volume(TLS_VOLUME, &tls.serving_secret));
        mounts.push(mount(TLS_VOLUME, SERVER_TLS_DIR, true));
        args.extend([
            format!("--ssl-cert={SERVER_TLS_DIR}/tls.crt"),
            format!("--ssl-key={SERVER_TLS_DIR}/tls.key"),
            format!("--ssl-ca={SERVER_TLS_DIR}/{CA_CERT_KEY}"),
        ]);
        if inputs.require_tls {
            // Network clients must use TLS; the socket (probe, preStop) stays available.
            args.push(REQUIRE_TLS_ARG.to_string());
        }
        annotations.insert(TLS_HASH_ANNOTATION.to_string(), tls.digest.clone());
    }
    Wiring { args, volumes, mounts, annotations }
}

/// MariaDB's container: its accounts from the Secrets, probed and stopped on the socket.
fn container(inputs: &Inputs<'_>, args: Vec<String>, mounts: Vec<VolumeMount>) -> Container {
    let names = inputs.names;
    let shell = |script: &str| vec!["bash".to_string(), "-c".to_string(), script.to_string()];
    Container {
        name: CONTAINER.to_string(),
        image: Some(inputs.image.to_string()),
        args: Some(args),
        env: Some(vec![
            secret_env("MARIADB_ROOT_PASSWORD", &names.admin(), PASSWORD_KEY),
            // root on the socket only: the network accounts are the init file's.
            env("MARIADB_ROOT_HOST", "localhost"),
            env("MARIADB_DATABASE", MANAGED_DATABASE_NAME),
            secret_env("MARIADB_USER", &names.credentials(), USERNAME_KEY),
            secret_env("MARIADB_PASSWORD", &names.credentials(), PASSWORD_KEY),
        ]),
        ports: Some(vec![ContainerPort {
            name: Some("mysql".to_string()),
            container_port: i32::from(MARIADB_PORT),
            protocol: Some("TCP".to_string()),
            ..Default::default()
        }]),
        volume_mounts: Some(mounts),
        readiness_probe: Some(Probe {
            exec: Some(ExecAction { command: Some(shell(READINESS)) }),
            initial_delay_seconds: Some(5),
            period_seconds: Some(10),
            timeout_seconds: Some(5),
            failure_threshold: Some(3),
            ..Default::default()
        }),
        lifecycle: Some(Lifecycle {
            pre_stop: Some(LifecycleHandler {
                exec: Some(ExecAction { command: Some(shell(PRE_STOP)) }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        resources: inputs.managed.resources.clone(),
        security_context: Some(container_security()),
        ..Default::default()
    }
}

/// The data volume's claim template (immutable once the StatefulSet exists).
fn data_claim(inputs: &Inputs<'_>) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(DATA_VOLUME.to_string()),
            labels: Some(inputs.names.labels()),
            ..Default::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".to_string()]),
            resources: Some(VolumeResourceRequirements {
                requests: Some([("storage".to_string(), inputs.claim.size.clone())].into()),
                ..Default::default()
            }),
            storage_class_name: inputs.claim.storage_class.clone(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The container port's name, for the Service's target port.
pub(crate) fn port_name() -> IntOrString {
    IntOrString::String("mysql".to_string())
}
