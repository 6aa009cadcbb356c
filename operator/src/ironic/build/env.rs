//! Environment of each container, with the variable names ironic-image reads and the values
//! ironic-standalone-operator derives from the spec.

use super::volumes::{CERTS_DIR, TRUSTED_CA_DIR};
use crate::database::Connection;
use crate::ironic::credentials::HTPASSWD_KEY;
use crate::ironic::resolve::Resolved;
use crate::ironic::resolve::{Network, Settings, VirtualIps};
use crds::ironic::{CpuArchitecture, Dhcp};
use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, ObjectFieldSelector, SecretKeySelector};

/// `name=value`.
pub(crate) fn var(name: &str, value: impl Into<String>) -> EnvVar {
    EnvVar { name: name.to_string(), value: Some(value.into()), value_from: None }
}

/// `name` from a field of the pod, e.g. `status.hostIP`.
fn from_field(name: &str, path: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector { api_version: Some("v1".into()), field_path: path.into() }),
            ..Default::default()
        }),
    }
}

/// `name` from a key of a Secret.
fn from_secret(name: &str, secret: &str, key: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value: None,
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector { name: secret.to_string(), key: key.to_string(), optional: None }),
            ..Default::default()
        }),
    }
}

/// Appends `name=value` unless the value is empty.
fn push_nonempty(env: &mut Vec<EnvVar>, name: &str, value: Option<&str>) {
    if let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) {
        env.push(var(name, value));
    }
}

fn push_joined(env: &mut Vec<EnvVar>, name: &str, values: Option<&Vec<String>>, separator: &str) {
    if let Some(values) = values.filter(|v| !v.is_empty()) {
        env.push(var(name, values.join(separator)));
    }
}

/// Variables every Ironic image container shares (ironic, httpd, dnsmasq).
pub(crate) fn common(resolved: &Resolved) -> Vec<EnvVar> {
    let net = &resolved.network;
    let mut env = vec![
        var("IRONIC_LISTEN_PORT", net.api_port.to_string()),
        var("IRONIC_ACCESS_PORT", net.api_port.to_string()),
        var("HTTP_PORT", net.image_server_port.to_string()),
        var("LISTEN_ALL_INTERFACES", net.listen_all_interfaces.to_string()),
    ];
    let before = env.len();
    push_nonempty(&mut env, "PROVISIONING_IP", net.ip_address.as_deref());
    push_nonempty(&mut env, "PROVISIONING_INTERFACE", net.interface.as_deref());
    push_joined(&mut env, "PROVISIONING_MACS", net.mac_addresses.as_ref(), ",");
    if env.len() == before {
        // Nothing names the provisioning network: use the address the pod runs on.
        let path = if net.host_network { "status.hostIP" } else { "status.podIP" };
        env.push(from_field("PROVISIONING_IP", path));
    }
    if net.serves_tls {
        // httpd terminates TLS and proxies to Ironic on a Unix socket.
        env.push(var("IRONIC_PRIVATE_PORT", "unix"));
        env.push(var("IRONIC_REVERSE_PROXY_SETUP", "true"));
        if net.serves_vmedia_tls {
            env.push(var("VMEDIA_TLS_PORT", net.image_server_tls_port.to_string()));
        }
    }
    let settings = &resolved.settings;
    let ramdisk = &settings.deploy_ramdisk;
    push_nonempty(&mut env, "IRONIC_KERNEL_PARAMS", ramdisk.extra_kernel_params.as_deref());
    push_nonempty(&mut env, "IRONIC_RAMDISK_SSH_KEY", ramdisk.ssh_key.as_deref());
    let inspection = &settings.inspection;
    push_joined(&mut env, "IRONIC_IPA_COLLECTORS", inspection.collectors.as_ref(), ",");
    push_joined(&mut env, "IRONIC_ENABLE_VLAN_INTERFACES", inspection.vlan_interfaces.as_ref(), ",");
    agent_images(&mut env, settings);
    env
}

/// `overrides.agentImages`: the default architecture as `DEPLOY_*_URL`, the others as
/// `arch:url` lists.
fn agent_images(env: &mut Vec<EnvVar>, settings: &Settings) {
    let images = settings.overrides.as_ref().and_then(|o| o.agent_images.clone()).unwrap_or_default();
    let (mut kernels, mut ramdisks) = (Vec::new(), Vec::new());
    for image in &images {
        match image.architecture.unwrap_or(CpuArchitecture::Default) {
            CpuArchitecture::Default => {
                push_nonempty(env, "DEPLOY_KERNEL_URL", Some(&image.kernel));
                push_nonempty(env, "DEPLOY_RAMDISK_URL", Some(&image.initramfs));
            }
            arch => {
                let arch = if arch == CpuArchitecture::X86_64 { "x86_64" } else { "aarch64" };
                kernels.push(format!("{arch}:{}", image.kernel.trim()));
                ramdisks.push(format!("{arch}:{}", image.initramfs.trim()));
            }
        }
    }
    push_joined(env, "DEPLOY_KERNEL_BY_ARCH", Some(&kernels), ",");
    push_joined(env, "DEPLOY_RAMDISK_BY_ARCH", Some(&ramdisks), ",");
}

/// Database client variables (the credentials come from the `/auth/mariadb` mount).
pub(crate) fn database(db: &Connection) -> Vec<EnvVar> {
    vec![var("MARIADB_HOST", db.host_with_port()), var("MARIADB_DATABASE", db.name.clone())]
}

/// The `ironic` container.
pub(crate) fn ironic(resolved: &Resolved) -> Vec<EnvVar> {
    let net = &resolved.network;
    let settings = &resolved.settings;
    let ha = settings.high_availability;
    let tls = net.serves_tls;
    let mut env = common(resolved);
    env.push(var("IRONIC_USE_MARIADB", resolved.database.is_some().to_string()));
    env.push(var("IRONIC_EXPOSE_JSON_RPC", ha.to_string()));
    env.push(var("IRONIC_JSON_RPC_PORT", net.rpc_port.to_string()));
    if let Some(db) = &resolved.database {
        env.extend(database(db));
        // Schema upgrades run in the pre-upgrade Job, never in the serving pods.
        env.push(var("IRONIC_SKIP_DBSYNC", "true"));
    }
    if ha {
        // Needed for JSON RPC authentication between conductors.
        env.push(var("IRONIC_DEPLOYMENT", "Conductor"));
        if settings.insecure_rpc {
            env.push(var("OS_JSON_RPC__INSECURE", "true"));
        }
    }
    // With TLS, httpd authenticates API requests; JSON RPC always needs the password.
    if !tls || ha {
        env.push(from_secret("IRONIC_HTPASSWD", &resolved.names.htpasswd(), HTPASSWD_KEY));
    }
    if let Some(path) = &trusted_ca_path(resolved) {
        env.push(var("WEBSERVER_CACERT_FILE", path.clone()));
    }
    let serving_ca =
        resolved.tls.material.as_ref().and_then(|m| m.ca_pem.as_ref()).map(|_| format!("{CERTS_DIR}/ironic/ca.crt"));
    if let Some(path) = serving_ca.or_else(|| trusted_ca_path(resolved)) {
        env.push(var("IRONIC_CACERT_FILE", path));
    }
    for extra in &settings.extra_config {
        let (Some(name), Some(value)) = (extra.name.as_deref(), extra.value.as_deref()) else { continue };
        if name.is_empty() || value.is_empty() {
            continue;
        }
        let group = extra.group.as_deref().filter(|g| !g.is_empty()).unwrap_or("DEFAULT");
        env.push(var(&format!("OS_{}__{}", group.to_uppercase(), name.to_uppercase()), value));
    }
    push_nonempty(&mut env, "IRONIC_EXTERNAL_IP", net.external_ip.as_deref());
    push_nonempty(&mut env, "IRONIC_EXTERNAL_CALLBACK_URL", net.callback_url.as_deref());
    push_nonempty(&mut env, "IRONIC_EXTERNAL_HTTP_URL", net.image_server_url.as_deref());
    if let Some(exporter) = &settings.exporter {
        env.push(var("SEND_SENSOR_DATA", "true"));
        env.push(var("OS_SENSOR_DATA__INTERVAL", exporter.sensor_collection_interval().to_string()));
    }
    env
}

/// The `httpd` container.
pub(crate) fn httpd(resolved: &Resolved) -> Vec<EnvVar> {
    let mut env = common(resolved);
    if resolved.network.serves_tls {
        env.push(from_secret("IRONIC_HTPASSWD", &resolved.names.htpasswd(), HTPASSWD_KEY));
    }
    env
}

/// `begin,end,prefix-length` of a pool, optionally tagged.
fn dhcp_range(tag: Option<&str>, cidr: Option<&str>, begin: Option<&str>, end: Option<&str>) -> Option<String> {
    let (begin, end) = (begin?, end?);
    let prefix = cidr?.split_once('/')?.1;
    Some(match tag {
        Some(tag) => format!("set:{tag},{begin},{end},{prefix}"),
        None => format!("{begin},{end},{prefix}"),
    })
}

/// The `dnsmasq` container. The main pool and `extraRanges` (tagged `range_<index>`) go in
/// `DHCP_RANGE`, separated by `;`; per-pool gateways in `DHCP_OPTIONS`.
pub(crate) fn dnsmasq(resolved: &Resolved, dhcp: &Dhcp) -> Vec<EnvVar> {
    let mut env = common(resolved);
    let mut ranges: Vec<String> =
        dhcp_range(None, dhcp.network_cidr.as_deref(), dhcp.range_begin.as_deref(), dhcp.range_end.as_deref())
            .into_iter()
            .collect();
    let mut options = Vec::new();
    for (index, extra) in dhcp.extra_ranges.iter().flatten().enumerate() {
        let tag = format!("range_{index}");
        ranges.extend(dhcp_range(
            Some(&tag),
            extra.network_cidr.as_deref(),
            extra.range_begin.as_deref(),
            extra.range_end.as_deref(),
        ));
        if let Some(gateway) = extra.gateway_address.as_deref().filter(|g| !g.is_empty()) {
            options.push(format!("tag:{tag},option:router,{gateway}"));
        }
    }
    push_nonempty(&mut env, "DHCP_RANGE", Some(&ranges.join(";")));
    push_nonempty(&mut env, "DHCP_OPTIONS", Some(&options.join(";")));
    let dns = if dhcp.serve_dns == Some(true) { Some("provisioning") } else { dhcp.dns_address.as_deref() };
    push_nonempty(&mut env, "DNS_IP", dns);
    push_nonempty(&mut env, "GATEWAY_IP", dhcp.gateway_address.as_deref());
    push_joined(&mut env, "DHCP_HOSTS", dhcp.hosts.as_ref(), ";");
    push_joined(&mut env, "DHCP_IGNORE", dhcp.ignore.as_ref(), ",");
    env
}

/// The `keepalived` container: `KEEPALIVED_VIRTUAL_IPS` (`ip,interface[,prefix]`, space
/// separated, the provisioning IP first) in the `keepalived` form, the provisioning IP and
/// interface in the deprecated `ipAddressManager` form.
pub(crate) fn keepalived(network: &Network) -> Vec<EnvVar> {
    match &network.virtual_ips {
        VirtualIps::Keepalived(entries) => vec![var("KEEPALIVED_VIRTUAL_IPS", entries.join(" "))],
        VirtualIps::Provisioning { ip, interface } => {
            vec![var("PROVISIONING_IP", ip.clone()), var("PROVISIONING_INTERFACE", interface.clone())]
        }
    }
}

/// The `ramdisk-downloader` init container.
pub(crate) fn downloader(resolved: &Resolved) -> Vec<EnvVar> {
    let settings = &resolved.downloader;
    let mut env = Vec::new();
    push_nonempty(&mut env, "IPA_BRANCH", resolved.version.agent_branch.as_deref());
    for (name, value) in [
        ("IPA_BASEURI", &settings.base_uri),
        ("IPA_FLAVOR", &settings.flavor),
        ("IPA_ARCH", &settings.arch),
        ("HTTPS_PROXY", &settings.https_proxy),
        ("HTTP_PROXY", &settings.http_proxy),
        ("NO_PROXY", &settings.no_proxy),
    ] {
        push_nonempty(&mut env, name, value.as_deref());
    }
    env
}

/// The upgrade Jobs: just enough for ironic-image's configuration script and the database.
pub(crate) fn upgrade_job(db: &Connection) -> Vec<EnvVar> {
    let mut env = database(db);
    env.push(var("IRONIC_USE_MARIADB", "true"));
    // The configuration script insists on a provisioning IP, though migrations need none.
    env.push(from_field("PROVISIONING_IP", "status.podIP"));
    env
}

/// Where the pods find the trusted CA bundle.
pub(crate) fn trusted_ca_path(resolved: &Resolved) -> Option<String> {
    resolved.trusted_ca.as_ref().map(|(_, key)| trusted_ca_file(key))
}

/// The trusted CA bundle's path inside the pods.
pub(crate) fn trusted_ca_file(key: &str) -> String {
    format!("{TRUSTED_CA_DIR}/{key}")
}
