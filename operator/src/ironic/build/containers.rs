//! One render function per container of the Ironic pod.

use super::env;
use super::volumes::PodVolumes;
use crate::ironic::resolve::Resolved;
use crds::ironic::Dhcp;
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EnvVar, ExecAction, Probe, SeccompProfile, SecurityContext, VolumeMount,
};

/// uid and gid ironic-image runs as.
const IRONIC_USER: i64 = 997;
const IRONIC_GROUP: i64 = 994;
/// uid and gid of the keepalived image.
const KEEPALIVED_USER: i64 = 65532;

pub(crate) const API_PORT_NAME: &str = "ironic-api";
pub(crate) const IMAGES_PORT_NAME: &str = "image-svc";
pub(crate) const IMAGES_TLS_PORT_NAME: &str = "image-svc-tls";
pub(crate) const METRICS_PORT_NAME: &str = "metrics";

/// A file httpd always serves once the downloader has run.
const KNOWN_IMAGE_PATH: &str = "/images/ironic-python-agent.kernel";

/// Every container runs as its image's non-root user, under the runtime's default seccomp
/// profile, with every capability dropped. Only dnsmasq and keepalived get capabilities back
/// (`add`), and only they may escalate (`escalation`): as a non-root user they gain those
/// capabilities through their binaries' file capabilities, which no_new_privs would block.
fn security(user: i64, group: i64, add: &[&str], escalation: bool) -> SecurityContext {
    SecurityContext {
        run_as_user: Some(user),
        run_as_group: Some(group),
        run_as_non_root: Some(true),
        allow_privilege_escalation: Some(escalation),
        seccomp_profile: Some(SeccompProfile { type_: "RuntimeDefault".to_string(), localhost_profile: None }),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".to_string()]),
            add: (!add.is_empty()).then(|| add.iter().map(|c| c.to_string()).collect()),
        }),
        ..Default::default()
    }
}

fn ironic_security() -> SecurityContext {
    security(IRONIC_USER, IRONIC_GROUP, &[], false)
}

fn port(name: &str, number: i32, host_network: bool) -> ContainerPort {
    ContainerPort {
        name: Some(name.to_string()),
        container_port: number,
        // With host networking the host port is the container port anyway; say so.
        host_port: host_network.then_some(number),
        protocol: Some("TCP".to_string()),
        ..Default::default()
    }
}

fn probe(command: Vec<String>) -> Probe {
    Probe {
        exec: Some(ExecAction { command: Some(command) }),
        initial_delay_seconds: Some(30),
        period_seconds: Some(30),
        timeout_seconds: Some(10),
        success_threshold: Some(1),
        failure_threshold: Some(10),
        ..Default::default()
    }
}

/// curl in the container: an exec probe can trust a self-signed certificate, an httpGet
/// probe cannot.
fn url_probe(https: bool, port: i32, path: &str, require_success: bool) -> Probe {
    let scheme = if https { "https" } else { "http" };
    let mut command: Vec<String> =
        ["curl", "--head", "--insecure", "--silent", "--show-error", "--location", "--output", "/dev/null"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    if require_success {
        command.push("--fail".to_string());
    }
    command.push(format!("{scheme}://127.0.0.1:{port}{path}"));
    probe(command)
}

fn image_container(name: &str, image: &str, command: &str, env: Vec<EnvVar>, mounts: Vec<VolumeMount>) -> Container {
    Container {
        name: name.to_string(),
        image: Some(image.to_string()),
        command: Some(vec![command.to_string()]),
        env: (!env.is_empty()).then_some(env),
        volume_mounts: (!mounts.is_empty()).then_some(mounts),
        security_context: Some(ironic_security()),
        ..Default::default()
    }
}

/// The `ironic` container: API and conductor.
pub(crate) fn ironic(resolved: &Resolved, volumes: &PodVolumes) -> Container {
    let net = &resolved.network;
    let tls = net.serves_tls;
    let mut container = image_container(
        "ironic",
        &resolved.version.ironic_image,
        "/bin/runironic",
        env::ironic(resolved),
        volumes.mounts.clone(),
    );
    if !tls {
        container.ports = Some(vec![port(API_PORT_NAME, net.api_port, net.host_network)]);
    }
    let api_probe = url_probe(tls, net.api_port, "/v1", true);
    container.liveness_probe = Some(api_probe.clone());
    container.readiness_probe = Some(api_probe);
    container
}

/// The `httpd` container: images, iPXE, virtual media, and the TLS front end of the API.
pub(crate) fn httpd(resolved: &Resolved, volumes: &PodVolumes) -> Container {
    let net = &resolved.network;
    let host = net.host_network;
    let mut ports = vec![port(IMAGES_PORT_NAME, net.image_server_port, host)];
    if net.serves_tls {
        ports.push(port(API_PORT_NAME, net.api_port, host));
        if net.serves_vmedia_tls {
            ports.push(port(IMAGES_TLS_PORT_NAME, net.image_server_tls_port, host));
        }
    }
    let mut container = image_container(
        "httpd",
        &resolved.version.ironic_image,
        "/bin/runhttpd",
        env::httpd(resolved),
        volumes.mounts.clone(),
    );
    container.ports = Some(ports);
    // The kernel exists only when the downloader ran and no other agent images are used.
    let probe = url_probe(
        false,
        net.image_server_port,
        KNOWN_IMAGE_PATH,
        resolved.version.downloader_image.is_some() && !resolved.settings.custom_agent_images(),
    );
    let overrides = resolved.settings.overrides.clone().unwrap_or_default();
    container.liveness_probe = Some(overrides.httpd_liveness_probe.unwrap_or_else(|| probe.clone()));
    container.readiness_probe = Some(overrides.httpd_readiness_probe.unwrap_or(probe));
    container
}

/// The `ramdisk-logs` container: prints the logs ramdisks upload.
pub(crate) fn ramdisk_logs(resolved: &Resolved, volumes: &PodVolumes) -> Container {
    image_container(
        "ramdisk-logs",
        &resolved.version.ironic_image,
        "/bin/runlogwatch.sh",
        Vec::new(),
        vec![volumes.shared.clone()],
    )
}

/// The `dnsmasq` container: DHCP and TFTP for network boot.
pub(crate) fn dnsmasq(resolved: &Resolved, dhcp: &Dhcp) -> Container {
    let mut container = image_container(
        "dnsmasq",
        &resolved.version.ironic_image,
        "/bin/rundnsmasq",
        env::dnsmasq(resolved, dhcp),
        Vec::new(),
    );
    container.security_context =
        Some(security(IRONIC_USER, IRONIC_GROUP, &["NET_ADMIN", "NET_BIND_SERVICE", "NET_RAW"], true));
    let listening = probe(vec!["sh".into(), "-c".into(), "ss -lun | grep :67 && ss -lun | grep :69".into()]);
    container.liveness_probe = Some(listening.clone());
    container.readiness_probe = Some(listening);
    container
}

/// The `keepalived` container: holds the provisioning IP (and extra VIPs).
pub(crate) fn keepalived(resolved: &Resolved, image: &str) -> Container {
    let mut security = security(KEEPALIVED_USER, KEEPALIVED_USER, &["NET_ADMIN", "NET_BROADCAST", "NET_RAW"], true);
    security.privileged = Some(false);
    Container {
        name: "keepalived".to_string(),
        image: Some(image.to_string()),
        env: Some(env::keepalived(&resolved.network)),
        security_context: Some(security),
        ..Default::default()
    }
}

/// The `ironic-prometheus-exporter` container.
pub(crate) fn prometheus_exporter(resolved: &Resolved, volumes: &PodVolumes, bind_address: &str) -> Container {
    let port_number = resolved.network.exporter_port;
    let mut container = image_container(
        "ironic-prometheus-exporter",
        &resolved.version.ironic_image,
        "/bin/runironic-exporter",
        vec![env::var("FLASK_RUN_HOST", bind_address), env::var("FLASK_RUN_PORT", port_number.to_string())],
        vec![volumes.shared.clone()],
    );
    container.ports = Some(vec![ContainerPort {
        name: Some(METRICS_PORT_NAME.to_string()),
        container_port: port_number,
        protocol: Some("TCP".to_string()),
        ..Default::default()
    }]);
    container
}

/// The `ramdisk-downloader` init container: fetches the ironic-python-agent images into
/// the shared volume.
pub(crate) fn ramdisk_downloader(resolved: &Resolved, image: &str, volumes: &PodVolumes) -> Container {
    Container {
        name: "ramdisk-downloader".to_string(),
        image: Some(image.to_string()),
        env: Some(env::downloader(resolved)).filter(|e| !e.is_empty()),
        volume_mounts: Some(vec![volumes.shared.clone()]),
        security_context: Some(ironic_security()),
        ..Default::default()
    }
}

/// The container of an upgrade Job: `database-upgrade` (pre) or `online-data-migrations`
/// (post), with a read-only root and writable scratch directories.
pub(crate) fn upgrade_job(script: &str, image: &str, env: Vec<EnvVar>, mounts: Vec<VolumeMount>) -> Container {
    let mut container = image_container(script, image, &format!("/bin/run{script}"), env, mounts);
    if let Some(security) = container.security_context.as_mut() {
        security.read_only_root_filesystem = Some(true);
    }
    // ironic-image's scripts write no termination message; without this the kubelet reports
    // only "Error", and Degraded could not quote why the schema upgrade failed.
    container.termination_message_policy = Some("FallbackToLogsOnError".to_string());
    container
}
