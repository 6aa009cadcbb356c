//! Flags and configuration of the host controller.
//!
//! Ironic is found the way baremetal-operator users expect: from an
//! `Ironic` resource (`--ironic-name`, like BMO's `IRONIC_NAME` and
//! `IRONIC_NAMESPACE`), or from an explicit endpoint (`IRONIC_ENDPOINT`)
//! with credentials read from files under `/opt/metal3/auth/ironic` or from
//! a Secret, a CA file (`IRONIC_CACERT_FILE`) and `IRONIC_INSECURE`.

use crate::host::shard::Shards;
use crds::validation::parse_go_duration;
use ironic_client::Secret;
use std::path::PathBuf;
use std::time::Duration;

/// Flags of the host controller.
#[derive(Debug, clap::Args)]
pub struct HostArgs {
    /// The `Ironic` resource whose API the hosts are provisioned through, as
    /// `namespace/name` (or `name` with --ironic-namespace).
    #[arg(long = "ironic-name", env = "IRONIC_NAME", conflicts_with = "ironic_endpoint")]
    pub ironic_name: Option<String>,
    /// Namespace of --ironic-name when it names no namespace.
    #[arg(long = "ironic-namespace", env = "IRONIC_NAMESPACE")]
    pub ironic_namespace: Option<String>,
    /// With --ironic-name: connect to this address (`ip:port`) instead of resolving the
    /// Ironic's Service name, for an operator outside the cluster. The URL and the name its
    /// certificate must carry stay the Service's.
    #[arg(long = "ironic-connect-address", env = "IRONIC_CONNECT_ADDRESS", requires = "ironic_name")]
    pub ironic_connect_address: Option<std::net::SocketAddr>,
    /// Ironic's API endpoint, e.g. `https://ironic.metal3.svc:6385` (a
    /// trailing `/v1` is accepted). Without it and --ironic-name, hosts report
    /// that no provisioner is configured.
    #[arg(long = "ironic-endpoint", env = "IRONIC_ENDPOINT")]
    pub ironic_endpoint: Option<String>,
    /// Directory with `username` and `password` files for HTTP basic auth to
    /// --ironic-endpoint; noauth when the files are absent.
    #[arg(long = "ironic-auth-dir", env = "IRONIC_AUTH_DIR", default_value = "/opt/metal3/auth/ironic")]
    pub ironic_auth_dir: PathBuf,
    /// Secret (`namespace/name`) with `username` and `password` for
    /// --ironic-endpoint, instead of --ironic-auth-dir.
    #[arg(long = "ironic-credentials-secret", env = "IRONIC_CREDENTIALS_SECRET")]
    pub ironic_credentials_secret: Option<String>,
    /// PEM bundle of the CA that signed Ironic's certificate.
    #[arg(long = "ironic-ca-file", env = "IRONIC_CACERT_FILE")]
    pub ironic_ca_file: Option<PathBuf>,
    /// Accept any certificate from Ironic (labs only).
    #[arg(long = "ironic-insecure", env = "IRONIC_INSECURE", action = clap::ArgAction::SetTrue, value_parser = clap::builder::BoolishValueParser::new())]
    pub ironic_insecure: bool,
    /// How long one Ironic request may take.
    #[arg(long = "ironic-client-timeout", env = "IRONIC_CLIENT_TIMEOUT", default_value = "30s", value_parser = parse_go_duration)]
    pub ironic_client_timeout: Duration,
    /// Hosts reconciled at once (default: the CPU count, between 2 and 8).
    #[arg(long = "host-concurrency", env = "BMO_CONCURRENCY")]
    pub concurrency: Option<u16>,
    /// Hosts inspecting, provisioning or deprovisioning at once.
    #[arg(long = "provisioning-limit", env = "PROVISIONING_LIMIT", default_value_t = DEFAULT_PROVISIONING_LIMIT)]
    pub provisioning_limit: usize,
    /// Interval of the bulk Ironic poll while any host is mid-transition.
    #[arg(long = "host-fast-poll-interval", env = "HOST_FAST_POLL_INTERVAL", default_value = "3s", value_parser = parse_go_duration)]
    pub fast_poll_interval: Duration,
    /// Interval of the bulk Ironic poll in steady state.
    #[arg(long = "host-slow-poll-interval", env = "HOST_SLOW_POLL_INTERVAL", default_value = "60s", value_parser = parse_go_duration)]
    pub slow_poll_interval: Duration,
    /// Every host is reconciled at least this often, even when nothing
    /// changed (a safety net; it makes no Ironic call).
    #[arg(long = "host-resync-interval", env = "HOST_RESYNC_INTERVAL", default_value = "10m", value_parser = parse_go_duration)]
    pub resync_interval: Duration,
    /// First retry delay after a host error; it doubles with every further
    /// error (with jitter, up to twice the value).
    #[arg(long = "host-error-backoff", env = "HOST_ERROR_BACKOFF", default_value = "60s", value_parser = parse_go_duration)]
    pub error_backoff_base: Duration,
    /// Longest retry delay after host errors, before jitter.
    #[arg(long = "host-error-backoff-max", env = "HOST_ERROR_BACKOFF_MAX", default_value = "256m", value_parser = parse_go_duration)]
    pub error_backoff_max: Duration,
    /// Deploy ramdisk kernel (`driver_info.deploy_kernel`).
    #[arg(long = "deploy-kernel-url", env = "DEPLOY_KERNEL_URL")]
    pub deploy_kernel_url: Option<String>,
    /// Deploy ramdisk initramfs (`driver_info.deploy_ramdisk`).
    #[arg(long = "deploy-ramdisk-url", env = "DEPLOY_RAMDISK_URL")]
    pub deploy_ramdisk_url: Option<String>,
    /// Deploy ramdisk as an ISO, for virtual media (`driver_info.deploy_iso`).
    #[arg(long = "deploy-iso-url", env = "DEPLOY_ISO_URL")]
    pub deploy_iso_url: Option<String>,
    /// Boot each host from the image its `PreprovisioningImage` names, made for it and built
    /// by an image builder (ours serves the deploy images above), instead of the deploy images
    /// themselves (baremetal-operator's `--build-preprov-image`).
    #[arg(long = "build-preprov-image", env = "BUILD_PREPROV_IMAGE")]
    pub build_preprov_image: bool,
    /// The shards the hosts are divided into, the same list on every replica (DNS labels,
    /// comma-separated): each host belongs to one, by its namespace and name, and its Ironic
    /// node carries it. Empty: no shards, one replica serves every host.
    #[arg(long = "shards", env = "SHARDS", value_delimiter = ',', default_value = "")]
    pub shards: Vec<String>,
    /// The shards of --shards this replica serves (default: all of them). Replicas serving
    /// different shards lead each under their own lease, and split --provisioning-limit.
    #[arg(long = "serve-shards", env = "SERVE_SHARDS", value_delimiter = ',', default_value = "")]
    pub serve_shards: Vec<String>,
    /// With --shards and --leader-elect: one Lease per shard instead of one leader lease.
    /// Every replica may serve every shard; each takes up to a fair share (the shards divided
    /// by the replicas alive, rounded up), and they take over a failed replica's once its
    /// Leases expire.
    #[arg(long = "shard-leases", env = "SHARD_LEASES", conflicts_with = "serve_shards")]
    pub shard_leases: bool,
}

/// baremetal-operator's default `PROVISIONING_LIMIT`.
pub(crate) const DEFAULT_PROVISIONING_LIMIT: usize = 20;

/// Where the controller finds Ironic.
#[derive(Clone, Debug, Default)]
pub enum IronicSource {
    /// Nowhere: hosts report that no provisioner is configured.
    #[default]
    NotConfigured,
    /// The API of an `Ironic` resource: its Service, credentials Secret and CA, derived from
    /// its spec and names and never taken from its status.
    Resource {
        namespace: String,
        name: String,
        /// Connect here instead of resolving the Service's name (`--ironic-connect-address`).
        connect_to: Option<std::net::SocketAddr>,
    },
    /// An explicit endpoint.
    Endpoint(EndpointConfig),
}

/// An explicitly configured Ironic endpoint.
#[derive(Clone, Debug)]
pub struct EndpointConfig {
    pub url: String,
    pub credentials: CredentialsSource,
    pub ca: Option<CaSource>,
    pub insecure: bool,
}

/// Where the basic-auth credentials of an explicit endpoint come from.
#[derive(Clone, Debug, Default)]
pub enum CredentialsSource {
    /// noauth.
    #[default]
    None,
    /// `username` and `password` files in this directory; noauth when absent.
    Directory(PathBuf),
    /// A Secret with `username` and `password`.
    Secret { namespace: String, name: String },
    /// Given directly (tests, embedding).
    Inline { username: String, password: Secret<String> },
}

/// The CA of an explicit endpoint.
#[derive(Clone, Debug)]
pub enum CaSource {
    File(PathBuf),
    Pem(String),
}

/// The host controller's configuration. Tests build it directly with small
/// intervals; `ferrometal run` builds it from [`HostArgs`].
#[derive(Clone, Debug)]
pub struct Config {
    pub ironic: IronicSource,
    /// Timeout of one Ironic request.
    pub ironic_timeout: Duration,
    /// Hosts reconciled at once.
    pub concurrency: u16,
    /// Hosts inspecting, provisioning or deprovisioning at once.
    pub provisioning_limit: usize,
    /// Bulk poll interval while anything is mid-transition.
    pub fast_poll_interval: Duration,
    /// Bulk poll interval in steady state.
    pub slow_poll_interval: Duration,
    /// Longest time between two reconciles of an idle host.
    pub resync_interval: Duration,
    /// First retry delay after a host error.
    pub error_backoff_base: Duration,
    /// Longest retry delay (before jitter).
    pub error_backoff_max: Duration,
    /// Deploy ramdisk locations put into every node's `driver_info`.
    pub deploy_kernel_url: Option<String>,
    pub deploy_ramdisk_url: Option<String>,
    pub deploy_iso_url: Option<String>,
    /// Hosts boot the image of their `PreprovisioningImage` (`--build-preprov-image`).
    pub build_preprov_image: bool,
    /// Where BMC addresses and `file://` images may make Ironic reach (the webhook applies the
    /// same lists).
    pub access: crds::baremetalhost::access::HostAccess,
    /// The shards this replica serves, when the hosts are divided into shards.
    pub shards: Option<Shards>,
    /// The shards served are those whose Lease this replica holds (`--shard-leases`).
    pub shard_leases: bool,
}

impl Config {
    /// Whether this replica serves the host `namespace/name`: every host, without shards.
    pub(crate) fn serves(&self, namespace: &str, name: &str) -> bool {
        self.shards.as_ref().is_none_or(|shards| shards.serves(namespace, name))
    }

    /// The shard whose `shard` a host's node carries; `None` without shards.
    pub(crate) fn shard_of(&self, namespace: &str, name: &str) -> Option<String> {
        self.shards.as_ref().map(|shards| shards.shard_of(namespace, name).to_string())
    }

    /// This replica's provisioning limit: with shards, its shards' share of the limit.
    pub(crate) fn own_provisioning_limit(&self) -> usize {
        self.shards.as_ref().map_or(self.provisioning_limit, |shards| shards.share_of(self.provisioning_limit))
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            ironic: IronicSource::NotConfigured,
            ironic_timeout: Duration::from_secs(30),
            concurrency: default_concurrency(),
            provisioning_limit: DEFAULT_PROVISIONING_LIMIT,
            fast_poll_interval: Duration::from_secs(3),
            slow_poll_interval: Duration::from_secs(60),
            resync_interval: Duration::from_secs(600),
            error_backoff_base: Duration::from_secs(60),
            error_backoff_max: Duration::from_secs(256 * 60),
            deploy_kernel_url: None,
            deploy_ramdisk_url: None,
            deploy_iso_url: None,
            build_preprov_image: false,
            access: Default::default(),
            shards: None,
            shard_leases: false,
        }
    }
}

/// baremetal-operator's `BMO_CONCURRENCY` default: the CPU count, 2 to 8.
fn default_concurrency() -> u16 {
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
    u16::try_from(cpus.clamp(2, 8)).unwrap_or(2)
}

/// Splits `namespace/name`; a bare `name` takes `default_namespace`.
pub(crate) fn split_namespaced(value: &str, default_namespace: Option<&str>) -> Option<(String, String)> {
    let value = value.trim();
    match value.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Some((ns.to_string(), name.to_string()))
        }
        Some(_) => None,
        None if value.is_empty() => None,
        None => default_namespace.filter(|ns| !ns.is_empty()).map(|ns| (ns.to_string(), value.to_string())),
    }
}

/// Flags that name where Ironic is, but not in a form that can be used. The operator refuses
/// to start: falling back to no provisioner, or to no authentication, would hide the mistake
/// behind hosts that never progress, or send requests unauthenticated.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("--ironic-name {0:?} must be namespace/name (or a name with --ironic-namespace)")]
    IronicName(String),
    #[error("--ironic-credentials-secret {0:?} must be namespace/name")]
    CredentialsSecret(String),
    #[error("--ironic-credentials-secret needs --ironic-endpoint; with --ironic-name the credentials are the Ironic's")]
    CredentialsWithoutEndpoint,
    #[error(transparent)]
    Shards(#[from] crate::host::shard::Error),
    #[error(
        "a replica serving some of the shards (--serve-shards) runs the host controller alone \
         (--controllers host): the Ironic and NodeSet controllers would run once per set of shards"
    )]
    ShardsWithOtherControllers,
    #[error("--shard-leases needs --shards (the shards to take Leases of) and --leader-elect (their timing)")]
    ShardLeasesWithoutShards,
}

impl TryFrom<HostArgs> for Config {
    type Error = Error;

    fn try_from(args: HostArgs) -> Result<Self, Error> {
        let given = |v: &Option<String>| v.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(str::to_string);
        let (name, endpoint, secret) =
            (given(&args.ironic_name), given(&args.ironic_endpoint), given(&args.ironic_credentials_secret));
        let ironic = if let Some(name) = name {
            if secret.is_some() {
                return Err(Error::CredentialsWithoutEndpoint);
            }
            let (namespace, name) = split_namespaced(&name, args.ironic_namespace.as_deref())
                .ok_or_else(|| Error::IronicName(name.clone()))?;
            IronicSource::Resource { namespace, name, connect_to: args.ironic_connect_address }
        } else if let Some(url) = endpoint {
            let credentials = match secret {
                Some(secret) => {
                    let (namespace, name) =
                        split_namespaced(&secret, None).ok_or_else(|| Error::CredentialsSecret(secret.clone()))?;
                    CredentialsSource::Secret { namespace, name }
                }
                None => CredentialsSource::Directory(args.ironic_auth_dir),
            };
            IronicSource::Endpoint(EndpointConfig {
                url,
                credentials,
                ca: args.ironic_ca_file.map(CaSource::File),
                insecure: args.ironic_insecure,
            })
        } else if secret.is_some() {
            return Err(Error::CredentialsWithoutEndpoint);
        } else {
            IronicSource::NotConfigured
        };
        let shards = Shards::parse(&args.shards, &args.serve_shards)?;
        Ok(Self {
            ironic,
            ironic_timeout: args.ironic_client_timeout,
            concurrency: args.concurrency.filter(|c| *c > 0).unwrap_or_else(default_concurrency),
            provisioning_limit: args.provisioning_limit.max(1),
            fast_poll_interval: args.fast_poll_interval,
            slow_poll_interval: args.slow_poll_interval,
            resync_interval: args.resync_interval,
            error_backoff_base: args.error_backoff_base,
            error_backoff_max: args.error_backoff_max,
            deploy_kernel_url: args.deploy_kernel_url,
            deploy_ramdisk_url: args.deploy_ramdisk_url,
            deploy_iso_url: args.deploy_iso_url,
            build_preprov_image: args.build_preprov_image,
            // The operator-wide flags, set by `OperatorConfig`.
            access: Default::default(),
            shards,
            shard_leases: args.shard_leases,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn try_parse(args: &[&str]) -> Result<Config, Error> {
        let mut argv = vec!["ferrometal", "run"];
        argv.extend_from_slice(args);
        let cli = Cli::try_parse_from(argv).expect("flags parse");
        let Command::Run(run) = cli.command else { panic!("not run") };
        run.host.try_into()
    }

    fn parse(args: &[&str]) -> Config {
        try_parse(args).expect("a valid configuration")
    }

    #[test]
    fn unusable_ironic_flags_stop_the_operator_instead_of_falling_back() {
        assert_eq!(try_parse(&["--ironic-name", "ironic"]).err(), Some(Error::IronicName("ironic".into())));
        assert_eq!(
            try_parse(&["--ironic-endpoint", "https://i:6385", "--ironic-credentials-secret", "creds"]).err(),
            Some(Error::CredentialsSecret("creds".into())),
        );
        assert_eq!(
            try_parse(&["--ironic-credentials-secret", "metal3/creds"]).err(),
            Some(Error::CredentialsWithoutEndpoint),
            "credentials for no endpoint are a mistake, not noauth"
        );
        let config = parse(&["--ironic-endpoint", "https://i:6385", "--ironic-credentials-secret", "metal3/creds"]);
        let IronicSource::Endpoint(endpoint) = config.ironic else { panic!("not an endpoint") };
        assert!(matches!(endpoint.credentials, CredentialsSource::Secret { ref name, .. } if name == "creds"));
    }

    #[test]
    fn defaults_match_baremetal_operator() {
        let config = parse(&[]);
        assert!(matches!(config.ironic, IronicSource::NotConfigured));
        assert_eq!(config.provisioning_limit, 20);
        assert_eq!(config.fast_poll_interval, Duration::from_secs(3));
        assert_eq!(config.slow_poll_interval, Duration::from_secs(60));
        assert!((2..=8).contains(&config.concurrency));
    }

    #[test]
    fn an_endpoint_reads_credentials_from_the_auth_directory() {
        let config = parse(&["--ironic-endpoint", "http://127.0.0.1:6385", "--ironic-insecure"]);
        let IronicSource::Endpoint(endpoint) = config.ironic else { panic!("not an endpoint") };
        assert_eq!(endpoint.url, "http://127.0.0.1:6385");
        assert!(endpoint.insecure);
        assert!(matches!(endpoint.credentials, CredentialsSource::Directory(ref d) if d.ends_with("auth/ironic")));
    }

    #[test]
    fn an_ironic_resource_is_namespaced() {
        let config = parse(&["--ironic-name", "metal3/ironic", "--provisioning-limit", "5"]);
        assert!(matches!(config.ironic, IronicSource::Resource { ref namespace, ref name, connect_to: None }
            if namespace == "metal3" && name == "ironic"));
        assert_eq!(config.provisioning_limit, 5);
        let config = parse(&["--ironic-name", "ironic", "--ironic-namespace", "metal3"]);
        assert!(matches!(config.ironic, IronicSource::Resource { ref namespace, .. } if namespace == "metal3"));
    }

    #[test]
    fn shard_flags_choose_the_hosts_served_and_bad_ones_stop_the_operator() {
        let config = parse(&["--shards", "a,b,c,d", "--serve-shards", "a,b", "--provisioning-limit", "20"]);
        assert_eq!(config.own_provisioning_limit(), 10);
        let served = (0..100).filter(|i| config.serves("ns", &format!("h{i}"))).count();
        assert!((30..=70).contains(&served), "about half: {served}");
        let unsharded = parse(&[]);
        assert!(unsharded.serves("ns", "h0") && unsharded.shard_of("ns", "h0").is_none());
        assert!(matches!(try_parse(&["--serve-shards", "a"]), Err(Error::Shards(_))));
        assert!(matches!(try_parse(&["--shards", "A"]), Err(Error::Shards(_))));
    }

    #[test]
    fn namespaced_names_split() {
        assert_eq!(split_namespaced("a/b", None), Some(("a".into(), "b".into())));
        assert_eq!(split_namespaced("b", Some("a")), Some(("a".into(), "b".into())));
        assert_eq!(split_namespaced("b", None), None);
        assert_eq!(split_namespaced("a/b/c", None), None);
        assert_eq!(split_namespaced("/b", None), None);
    }
}
