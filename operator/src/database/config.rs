//! The database module's configuration: its flags (part of the Ironic controller's) and the
//! address its own connections to a managed database may go to instead of the Service.

use super::connection::host_port;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A `host:port` the operator connects to instead of a managed database's Service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Address {
    pub host: String,
    pub port: u16,
}

impl FromStr for Address {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || format!("{s:?} must be HOST:PORT, e.g. 127.0.0.1:3306 or [::1]:3306");
        let (host, port) = s.trim().rsplit_once(':').ok_or_else(err)?;
        let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
        if host.is_empty() || (host.contains(':') && !s.contains('[')) {
            return Err(err());
        }
        Ok(Self { host: host.to_string(), port: port.parse().map_err(|_| err())? })
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&host_port(&self.host, self.port))
    }
}

/// Flags of the database module; the binary flattens them into `ferrometal run`.
#[derive(Debug, clap::Args)]
pub struct DatabaseArgs {
    /// Connect the operator's own checks of managed databases to HOST:PORT instead of the
    /// database's Service, e.g. when the operator runs outside the cluster behind a
    /// port-forward, or in tests. Ironic's pods still use the Service.
    #[arg(long = "database-address-override", env = "DATABASE_ADDRESS_OVERRIDE")]
    pub address_override: Option<Address>,

    /// Limit, in seconds, for connecting to a database and for each query of a check.
    #[arg(long = "database-connect-timeout-seconds", env = "DATABASE_CONNECT_TIMEOUT_SECONDS", default_value_t = 10)]
    pub connect_timeout_seconds: u64,

    /// How long, in seconds, a step of a MariaDB version change may meet errors that may pass
    /// (an unreachable server, a crash-looping or unpullable container) before it fails.
    #[arg(long = "database-step-timeout-seconds", env = "DATABASE_STEP_TIMEOUT_SECONDS", default_value_t = 900)]
    pub step_timeout_seconds: u64,

    /// Retries of a backup or mariadb-upgrade Job's pod before the Job fails.
    #[arg(long = "database-job-backoff-limit", env = "DATABASE_JOB_BACKOFF_LIMIT", default_value_t = 2)]
    pub job_backoff_limit: i32,

    /// How long, in seconds, a backup or mariadb-upgrade Job may run.
    #[arg(long = "database-job-deadline-seconds", env = "DATABASE_JOB_DEADLINE_SECONDS", default_value_t = 3600)]
    pub job_deadline_seconds: u64,
}

/// The database module's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where the operator's sqlx connections to managed databases go instead of the Service.
    pub address_override: Option<Address>,
    /// The cluster's DNS domain, for the Service's name (take the Ironic controller's).
    pub cluster_domain: String,
    pub connect_timeout: Duration,
    pub step_timeout: Duration,
    pub job_backoff_limit: i32,
    pub job_deadline: Duration,
    /// Look again this soon while waiting (watches usually come first).
    pub progress_interval: Duration,
    /// Look again this soon while halted or after a refused check.
    pub retry_interval: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            address_override: None,
            cluster_domain: "cluster.local".to_string(),
            connect_timeout: Duration::from_secs(10),
            step_timeout: Duration::from_secs(900),
            job_backoff_limit: 2,
            job_deadline: Duration::from_secs(3600),
            progress_interval: Duration::from_secs(10),
            retry_interval: Duration::from_secs(60),
        }
    }
}

impl From<DatabaseArgs> for Config {
    fn from(args: DatabaseArgs) -> Self {
        Self {
            address_override: args.address_override,
            connect_timeout: Duration::from_secs(args.connect_timeout_seconds.max(1)),
            step_timeout: Duration::from_secs(args.step_timeout_seconds.max(30)),
            job_backoff_limit: args.job_backoff_limit.max(0),
            job_deadline: Duration::from_secs(args.job_deadline_seconds.max(60)),
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
        database: DatabaseArgs,
    }

    #[test]
    fn flags_default_to_a_working_configuration() {
        let config = Config::from(Flags::try_parse_from(["test"]).expect("parses").database);
        assert_eq!(config.address_override, None);
        assert_eq!(config.step_timeout, Duration::from_secs(900));
        assert_eq!(config.job_backoff_limit, 2);
    }

    #[test]
    fn the_address_override_takes_host_and_port() {
        let flags = Flags::try_parse_from(["test", "--database-address-override", "127.0.0.1:23306"]).expect("parses");
        let address = Config::from(flags.database).address_override.expect("set");
        assert_eq!(address, Address { host: "127.0.0.1".into(), port: 23306 });
        assert_eq!("[::1]:3306".parse::<Address>().map(|a| a.to_string()), Ok("[::1]:3306".to_string()));
        assert!("db".parse::<Address>().is_err());
        assert!("db:x".parse::<Address>().is_err());
        assert!("::1:3306".parse::<Address>().is_err());
        assert!(Flags::try_parse_from(["test", "--database-address-override", "nope"]).is_err());
    }
}
