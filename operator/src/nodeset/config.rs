//! Flags and configuration of the NodeSet controller.

use super::plan::DEFAULT_JOB_HISTORY;
use clap::Args;
use crds::validation::parse_go_duration;
use std::time::Duration;

/// Flags of `ferrometal run` for the NodeSet controller.
#[derive(Debug, Args)]
pub struct NodeSetArgs {
    /// NodeSets reconciled at once, per watched namespace.
    #[arg(long = "nodeset-concurrency", env = "NODESET_CONCURRENCY", default_value_t = 4)]
    pub nodeset_concurrency: u16,

    /// Finished service Jobs kept per NodeSet and service; older ones are deleted once their
    /// outcome is in the NodeSet's status.
    #[arg(long = "nodeset-job-history", env = "NODESET_JOB_HISTORY", default_value_t = DEFAULT_JOB_HISTORY)]
    pub nodeset_job_history: usize,

    /// Every NodeSet is reconciled at least this often, whatever its watches report.
    #[arg(long = "nodeset-resync-interval", env = "NODESET_RESYNC_INTERVAL", default_value = "10m", value_parser = parse_go_duration)]
    pub nodeset_resync_interval: Duration,
}

/// The NodeSet controller's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    pub concurrency: u16,
    pub job_history: usize,
    pub resync_interval: Duration,
    /// First retry after a failed reconcile; doubles per failure up to `backoff_max`.
    pub backoff_base: Duration,
    pub backoff_max: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            concurrency: 4,
            job_history: DEFAULT_JOB_HISTORY,
            resync_interval: Duration::from_secs(600),
            backoff_base: Duration::from_secs(1),
            backoff_max: Duration::from_secs(300),
        }
    }
}

impl From<NodeSetArgs> for Config {
    fn from(args: NodeSetArgs) -> Self {
        Self {
            concurrency: args.nodeset_concurrency.max(1),
            job_history: args.nodeset_job_history,
            resync_interval: args.nodeset_resync_interval,
            ..Config::default()
        }
    }
}
