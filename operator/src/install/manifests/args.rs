//! Flags of `ferrometal manifests`.

use crate::install::{DEFAULT_NAMESPACE, Layout, image};
use clap::Args;
use std::path::PathBuf;

/// Flags of `ferrometal manifests`.
#[derive(Debug, Args)]
pub struct ManifestsArgs {
    /// Directory to write the tree to (its generated subdirectories are replaced).
    #[arg(long, default_value = "config")]
    pub out: PathBuf,
    /// The operator's namespace.
    #[arg(long, default_value = DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// Namespaces to watch, comma-separated; none watches the whole cluster. With a list the
    /// operator gets Roles only, one per namespace.
    #[arg(long, value_delimiter = ',')]
    pub watch_namespaces: Vec<String>,
    /// Namespaces where an `Ironic` may run, comma-separated (`*` for every watched namespace);
    /// none means the operator's own. Its workload role is bound in each.
    #[arg(long, default_value = "")]
    pub ironic_namespaces: crds::ironic::IronicNamespaces,
    /// The operator image (default: this version's release image).
    #[arg(long)]
    pub image: Option<String>,
    /// The shards of `shards/`, the install whose host controller replicas divide the hosts
    /// among them by shard Lease (comma-separated DNS labels).
    #[arg(long, value_delimiter = ',', default_value = "0,1,2,3")]
    pub shards: Vec<String>,
}

impl ManifestsArgs {
    pub fn layout(&self) -> Layout {
        Layout {
            namespace: self.namespace.clone(),
            watch_namespaces: self
                .watch_namespaces
                .iter()
                .map(|n| n.trim().to_string())
                .filter(|n| !n.is_empty())
                .collect(),
            ironic_namespaces: self.ironic_namespaces.clone(),
            image: self.image.clone().unwrap_or_else(|| image(env!("CARGO_PKG_VERSION"))),
            shards: self.shards.iter().map(|n| n.trim().to_string()).filter(|n| !n.is_empty()).collect(),
        }
    }

    /// Generates and writes the tree.
    pub fn run(&self) -> Result<(), crate::install::Error> {
        if let Err(err) = crate::host::shard::Shards::parse(&self.shards, &[]) {
            return Err(crate::install::Error::Shards(err));
        }
        let files = super::tree(&self.layout())?;
        crate::install::write(&self.out, super::OWNED_DIRS, &files)
    }
}
