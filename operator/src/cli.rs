//! Command-line flags. Every flag also reads an environment variable, so
//! that a Deployment (or OLM's CSV) can configure the operator either way.

use crate::config::OperatorConfig;
use crate::telemetry::LogFormat;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::net::SocketAddr;
use std::time::Duration;

/// ferrometal: a Kubernetes operator for OpenStack Ironic and bare metal.
#[derive(Debug, Parser)]
#[command(name = "ferrometal", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the controllers and webhooks against the cluster in KUBECONFIG,
    /// or the in-cluster configuration.
    Run(Box<RunArgs>),
    /// Print every CustomResourceDefinition as multi-document YAML.
    Crds,
    /// Write the kustomize tree (`config/`): CRDs, RBAC, Deployment, webhook.
    Manifests(crate::install::manifests::args::ManifestsArgs),
    /// Write the OLM bundle (`bundle/`, `bundle.Dockerfile`) of a version.
    Bundle(crate::install::bundle::args::BundleArgs),
}

/// A controller the operator can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ControllerKind {
    /// `Ironic`: deployments of Ironic, with their databases.
    Ironic,
    /// `BareMetalHost`: hosts driven through Ironic.
    Host,
    /// `NodeSet`: groups of hosts claimed, provisioned and configured in place.
    #[value(name = "nodeset")]
    NodeSet,
}

/// Flags of `ferrometal run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Namespaces to watch, comma-separated; empty means all namespaces.
    /// OLM passes its target namespaces here.
    #[arg(long, env = "WATCH_NAMESPACE", value_delimiter = ',', default_value = "")]
    pub namespaces: Vec<String>,

    /// Log line format.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Address of the health (/healthz, /readyz) and metrics (/metrics) server.
    #[arg(long, env = "HEALTH_ADDR", default_value = "0.0.0.0:8081")]
    pub health_addr: SocketAddr,

    /// Which controllers to run.
    #[arg(long, env = "CONTROLLERS", value_enum, value_delimiter = ',', default_value = "ironic,host,nodeset")]
    pub controllers: Vec<ControllerKind>,

    /// This replica's identity, for leader election and event reports.
    /// Defaults to the pod name (POD_NAME) or the host name.
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,

    /// Seconds the controllers get to finish their reconciles on shutdown before
    /// they are aborted (and the process exits with an error).
    #[arg(long, env = "SHUTDOWN_GRACE_SECONDS", default_value_t = 20)]
    pub shutdown_grace_seconds: u64,

    /// Feature gates, `Name=true|false` separated by commas: HighAvailability and Overrides
    /// (ironic-standalone-operator's), both on by default, and PrivilegedOverrides (ours, off:
    /// overrides may not add privileged containers, capabilities or host paths to Ironic's
    /// host-network pods). The Ironic controller and the webhook apply the same gates.
    #[arg(long = "feature-gates", env = "FEATURE_GATES", default_value = "",
          value_parser = crds::ironic::IronicValidationOptions::from_feature_gates)]
    pub feature_gates: crds::ironic::IronicValidationOptions,

    /// The namespaces where an `Ironic` may run, separated by commas (`*` for every namespace
    /// the operator watches); by default the operator's own namespace (`--pod-namespace`). An
    /// Ironic's workload needs rights an admin grants per namespace (design/install.md); the
    /// controller and the webhook refuse an Ironic anywhere else.
    #[arg(long = "ironic-namespaces", env = "IRONIC_NAMESPACES", default_value = "")]
    pub ironic_namespaces: crds::ironic::IronicNamespaces,

    /// Where BMC addresses may point, separated by commas: address blocks (`10.0.0.0/16`),
    /// addresses, host names and `*.domain`s; any address when empty. Ironic's conductor
    /// connects there with the host's credentials (design/hosts.md, "What a host may reach").
    #[arg(long = "bmc-networks", env = "BMC_NETWORKS", default_value = "")]
    pub bmc_networks: crds::baremetalhost::access::BmcNetworks,

    /// Directories of Ironic's host that `file://` images and checksums may be read from,
    /// separated by commas; none by default, so `file://` images are refused.
    #[arg(long = "file-image-dirs", env = "FILE_IMAGE_DIRS", default_value = "")]
    pub file_image_dirs: crds::baremetalhost::access::FileImageDirs,

    /// Host pools opened to NodeSets of other namespaces, `NODESET_NAMESPACE=BMH_NAMESPACE`
    /// separated by commas. A NodeSet claims BareMetalHosts of its own namespace only, unless
    /// its namespace and its `bmhNamespace` are listed here; the controller and the webhook
    /// apply the same list (design/install.md, the tenancy model).
    #[arg(long = "nodeset-host-pools", env = "NODESET_HOST_POOLS", default_value = "")]
    pub nodeset_host_pools: crds::nodeset::HostPools,

    /// The namespace the operator runs in (the Deployment sets it from the pod).
    #[arg(long = "pod-namespace", env = "POD_NAMESPACE")]
    pub pod_namespace: Option<String>,

    /// The ServiceAccount the operator runs as (the Deployment sets it from the pod). No
    /// NodeSetService may run as it: its rights reach every namespace the operator serves.
    #[arg(long = "pod-service-account", env = "POD_SERVICE_ACCOUNT")]
    pub pod_service_account: Option<String>,

    #[command(flatten)]
    pub leader: crate::runtime::leader::LeaderArgs,

    #[command(flatten)]
    pub webhook: crate::webhook::WebhookArgs,

    #[command(flatten)]
    pub ironic: crate::ironic::IronicArgs,

    #[command(flatten)]
    pub host: crate::host::HostArgs,

    #[command(flatten)]
    pub nodeset: crate::nodeset::NodeSetArgs,
}

/// `ferrometal run`'s flags as the runtime's configuration: the one place flags become it, so
/// that neither the configuration nor the runtime knows the command line.
impl TryFrom<RunArgs> for OperatorConfig {
    type Error = crate::host::config::Error;

    /// Fails on flags that name something in a form that cannot be used.
    fn try_from(args: RunArgs) -> Result<Self, Self::Error> {
        let identity = args.identity.clone().unwrap_or_else(default_identity);
        let enabled = |kind| args.controllers.contains(&kind);
        let host_access = crds::baremetalhost::access::HostAccess {
            bmc_networks: args.bmc_networks.clone(),
            file_image_dirs: args.file_image_dirs.clone(),
        };
        let host = enabled(ControllerKind::Host)
            .then(|| crate::host::Config::try_from(args.host))
            .transpose()?
            .map(|host| crate::host::Config { access: host_access.clone(), ..host });
        // Replicas serving different shards each need a leader: one lease per served set. A
        // replica serving every shard keeps the lease of an unsharded one, so that turning
        // shards on in a running Deployment never makes two leaders.
        let shards = host.as_ref().and_then(|host| host.shards.as_ref());
        let by_lease = host.as_ref().is_some_and(|host| host.shard_leases);
        if by_lease && (shards.is_none() || !args.leader.enabled) {
            return Err(crate::host::config::Error::ShardLeasesWithoutShards);
        }
        let partial = by_lease || shards.is_some_and(|s| s.partial());
        if partial && (enabled(ControllerKind::Ironic) || enabled(ControllerKind::NodeSet)) {
            return Err(crate::host::config::Error::ShardsWithOtherControllers);
        }
        let leader_election = args.leader.into_config().map(|election| match shards.filter(|s| s.partial()) {
            Some(shards) => crate::runtime::leader::LeaderElection {
                lease: format!("{}-{}", election.lease, shards.group()),
                ..election
            },
            None => election,
        });
        Ok(Self {
            namespaces: args.namespaces.into_iter().map(|n| n.trim().to_string()).filter(|n| !n.is_empty()).collect(),
            health_addr: Some(args.health_addr),
            health_limits: crate::serve::Limits::HEALTH,
            leader_election,
            webhook: args.webhook.into_config(),
            ironic: enabled(ControllerKind::Ironic).then(|| args.ironic.into()),
            host,
            nodeset: enabled(ControllerKind::NodeSet).then(|| args.nodeset.into()),
            shutdown_grace: Duration::from_secs(args.shutdown_grace_seconds),
            features: args.feature_gates,
            ironic_namespaces: args.ironic_namespaces.or_operator_namespace(args.pod_namespace.as_deref()),
            host_pools: args.nodeset_host_pools,
            host_access,
            reserved_account: match (args.pod_namespace, args.pod_service_account) {
                (Some(namespace), Some(name)) => Some(crds::nodesetservice::ReservedAccount { namespace, name }),
                _ => None,
            },
            identity,
        })
    }
}

fn default_identity() -> String {
    std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| format!("ferrometal-{}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_flag_definitions_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_needs_no_flags() {
        let cli = Cli::try_parse_from(["ferrometal", "run"]).expect("default flags parse");
        let Command::Run(args) = cli.command else { panic!("not run") };
        assert_eq!(args.namespaces, vec![String::new()]);
        assert_eq!(args.controllers, vec![ControllerKind::Ironic, ControllerKind::Host, ControllerKind::NodeSet]);
    }

    #[test]
    fn controllers_are_chosen_by_name() {
        let cli = Cli::try_parse_from(["ferrometal", "run", "--controllers", "host,nodeset"]).expect("parse");
        let Command::Run(args) = cli.command else { panic!("not run") };
        assert_eq!(args.controllers, vec![ControllerKind::Host, ControllerKind::NodeSet]);
    }

    #[test]
    fn namespaces_are_comma_separated() {
        let cli = Cli::try_parse_from(["ferrometal", "run", "--namespaces", "a,b"]).expect("parse");
        let Command::Run(args) = cli.command else { panic!("not run") };
        assert_eq!(args.namespaces, vec!["a", "b"]);
    }

    fn config(args: &[&str]) -> OperatorConfig {
        let cli = Cli::try_parse_from(["ferrometal", "run"].iter().chain(args)).expect("parse");
        let Command::Run(args) = cli.command else { panic!("not run") };
        OperatorConfig::try_from(*args).expect("valid")
    }

    #[test]
    fn replicas_serving_different_shards_lead_under_different_leases() {
        let lease = |args: &[&str]| config(args).leader_election.map(|e| e.lease);
        assert_eq!(lease(&["--leader-elect"]), Some("ferrometal-leader".into()));
        let all = ["--leader-elect", "--controllers", "host", "--shards", "a,b,c"];
        assert_eq!(lease(&all), Some("ferrometal-leader".into()), "every shard: the unsharded replica's lease");
        let some = [&all[..], &["--serve-shards", "c,a"]].concat();
        assert_eq!(lease(&some), Some("ferrometal-leader-a.c".into()));
        let everything = ["--shards", "a,b", "--serve-shards", "a"];
        let cli = Cli::try_parse_from(["ferrometal", "run"].iter().chain(&everything)).expect("parse");
        let Command::Run(args) = cli.command else { panic!("not run") };
        assert_eq!(
            OperatorConfig::try_from(*args).err(),
            Some(crate::host::config::Error::ShardsWithOtherControllers),
            "the Ironic and NodeSet controllers would run once per served set"
        );
        let no_host = ["--leader-elect", "--controllers", "ironic", "--shards", "a"];
        assert_eq!(lease(&no_host), Some("ferrometal-leader".into()), "shards divide hosts only");
    }
}
