//! The Ironic controller's configuration: its flags (environment names follow
//! ironic-standalone-operator's where it has one) and what tests build directly.

use crds::ironic::IronicValidationOptions;
use std::time::Duration;

/// Flags of the Ironic controller. Environment names follow ironic-standalone-operator's
/// where it has one.
#[derive(Debug, clap::Args)]
pub struct IronicArgs {
    /// Ironic image for every Ironic that sets no spec.images.ironic, instead of the
    /// version's default (quay.io/metal3-io/ironic:<release>).
    #[arg(long = "ironic-image", env = "IRONIC_IMAGE")]
    pub ironic_image: Option<String>,

    /// ramdisk-downloader image when spec.images.deployRamdiskDownloader is unset.
    #[arg(long = "ironic-ramdisk-downloader-image", env = "RAMDISK_DOWNLOADER_IMAGE")]
    pub ramdisk_downloader_image: Option<String>,

    /// Keepalived image when spec.images.keepalived is unset.
    #[arg(long = "ironic-keepalived-image", env = "KEEPALIVED_IMAGE")]
    pub keepalived_image: Option<String>,

    /// Where the ramdisk downloader fetches ironic-python-agent (IPA_BASEURI).
    #[arg(long = "ironic-ipa-base-uri", env = "IPA_BASEURI")]
    pub ipa_base_uri: Option<String>,

    /// ironic-python-agent flavor the downloader fetches (IPA_FLAVOR).
    #[arg(long = "ironic-ipa-flavor", env = "IPA_FLAVOR")]
    pub ipa_flavor: Option<String>,

    /// ironic-python-agent architecture the downloader fetches (IPA_ARCH).
    #[arg(long = "ironic-ipa-arch", env = "IPA_ARCH")]
    pub ipa_arch: Option<String>,

    /// HTTPS proxy of the ramdisk downloader.
    #[arg(long = "ironic-ipa-https-proxy", env = "IPA_HTTPS_PROXY")]
    pub ipa_https_proxy: Option<String>,

    /// HTTP proxy of the ramdisk downloader.
    #[arg(long = "ironic-ipa-http-proxy", env = "IPA_HTTP_PROXY")]
    pub ipa_http_proxy: Option<String>,

    /// Hosts the ramdisk downloader reaches without proxy.
    #[arg(long = "ironic-ipa-no-proxy", env = "IPA_NO_PROXY")]
    pub ipa_no_proxy: Option<String>,

    /// The cluster's DNS domain, for the Service names serving certificates cover.
    #[arg(long = "ironic-cluster-domain", env = "CLUSTER_DOMAIN", default_value = "cluster.local")]
    pub cluster_domain: String,

    /// Retries of an upgrade Job before it counts as failed.
    #[arg(long = "ironic-upgrade-job-backoff-limit", env = "IRONIC_UPGRADE_JOB_BACKOFF_LIMIT", default_value_t = 2)]
    pub upgrade_job_backoff_limit: i32,

    /// How long, in seconds, an upgrade Job (the database schema migration) may run before
    /// Kubernetes stops it and the upgrade counts as failed.
    #[arg(
        long = "ironic-upgrade-job-deadline-seconds",
        env = "IRONIC_UPGRADE_JOB_DEADLINE_SECONDS",
        default_value_t = 1800
    )]
    pub upgrade_job_deadline_seconds: u64,

    /// Seconds between reconciles of an Ironic nothing changed.
    #[arg(long = "ironic-resync-seconds", env = "IRONIC_RESYNC_SECONDS", default_value_t = 600)]
    pub resync_seconds: u64,

    /// The database module's flags (`--database-*`).
    #[command(flatten)]
    pub database: crate::database::DatabaseArgs,
}

/// Images that replace the per-version defaults for every Ironic.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageDefaults {
    pub ironic: Option<String>,
    pub ramdisk_downloader: Option<String>,
    pub keepalived: Option<String>,
}

/// Environment of the ramdisk downloader.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DownloaderSettings {
    pub base_uri: Option<String>,
    pub flavor: Option<String>,
    pub arch: Option<String>,
    pub https_proxy: Option<String>,
    pub http_proxy: Option<String>,
    pub no_proxy: Option<String>,
}

/// The Ironic controller's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    pub images: ImageDefaults,
    pub downloader: DownloaderSettings,
    /// DNS domain of the cluster (`cluster.local`).
    pub cluster_domain: String,
    /// `backoffLimit` of the upgrade Jobs.
    pub upgrade_job_backoff_limit: i32,
    /// `activeDeadlineSeconds` of the upgrade Jobs.
    pub upgrade_job_deadline_seconds: i64,
    /// ironic-standalone-operator's feature gates.
    pub validation: IronicValidationOptions,
    /// Reconcile an unchanged Ironic this often.
    pub resync_interval: Duration,
    /// Look again this soon while work is under way (watches usually come first).
    pub progress_interval: Duration,
    /// Retry this soon after an error (then exponentially later, per Ironic).
    pub retry_interval: Duration,
    /// Retry at least this often while errors go on.
    pub retry_max_interval: Duration,
    /// How long an answer of API discovery (is the ServiceMonitor's API installed?) is
    /// trusted: how soon the Prometheus operator installed later is noticed, at the cost of
    /// one discovery request per interval for all Ironics together.
    pub api_discovery_refresh: Duration,
    /// The database module: managed MariaDBs and checks of external databases.
    pub database: crate::database::Config,
    /// When an Auto CA gets its successor, and how long each step of that renewal waits.
    pub auto_ca_renewal: crate::ironic::tls::auto::Renewal,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            images: ImageDefaults::default(),
            downloader: DownloaderSettings::default(),
            cluster_domain: "cluster.local".to_string(),
            upgrade_job_backoff_limit: 2,
            upgrade_job_deadline_seconds: 1800,
            validation: IronicValidationOptions::default(),
            resync_interval: Duration::from_secs(600),
            progress_interval: Duration::from_secs(30),
            retry_interval: Duration::from_secs(10),
            retry_max_interval: Duration::from_secs(300),
            api_discovery_refresh: Duration::from_secs(300),
            database: crate::database::Config::default(),
            auto_ca_renewal: crate::ironic::tls::auto::Renewal::default(),
        }
    }
}

impl From<IronicArgs> for Config {
    fn from(args: IronicArgs) -> Self {
        Self {
            images: ImageDefaults {
                ironic: args.ironic_image,
                ramdisk_downloader: args.ramdisk_downloader_image,
                keepalived: args.keepalived_image,
            },
            downloader: DownloaderSettings {
                base_uri: args.ipa_base_uri,
                flavor: args.ipa_flavor,
                arch: args.ipa_arch,
                https_proxy: args.ipa_https_proxy,
                http_proxy: args.ipa_http_proxy,
                no_proxy: args.ipa_no_proxy,
            },
            database: crate::database::Config {
                cluster_domain: args.cluster_domain.clone(),
                ..crate::database::Config::from(args.database)
            },
            cluster_domain: args.cluster_domain,
            upgrade_job_backoff_limit: args.upgrade_job_backoff_limit.max(0),
            upgrade_job_deadline_seconds: i64::try_from(args.upgrade_job_deadline_seconds.max(60)).unwrap_or(i64::MAX),
            resync_interval: Duration::from_secs(args.resync_seconds.max(10)),
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Flags {
        #[command(flatten)]
        ironic: IronicArgs,
    }

    #[test]
    fn flags_default_to_a_working_configuration() {
        let flags = Flags::try_parse_from(["test"]).expect("parses");
        let config = Config::from(flags.ironic);
        assert_eq!(config.cluster_domain, "cluster.local");
        assert_eq!(config.upgrade_job_backoff_limit, 2);
        assert_eq!(config.upgrade_job_deadline_seconds, 1800);
        assert_eq!(config.images, ImageDefaults::default());
    }

    #[test]
    fn image_flags_become_defaults() {
        let flags = Flags::try_parse_from(["test", "--ironic-image", "registry/ironic:pinned"]).expect("parses");
        assert_eq!(Config::from(flags.ironic).images.ironic.as_deref(), Some("registry/ironic:pinned"));
    }
}
