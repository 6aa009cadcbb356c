//! Flags of `ferrometal bundle`.

use clap::Args;
use std::path::PathBuf;

/// Flags of `ferrometal bundle`.
#[derive(Debug, Args)]
pub struct BundleArgs {
    /// The operator version the bundle installs (X.Y.Z); the image is tagged with it.
    #[arg(long)]
    pub version: String,
    /// The repository root: `bundle/`, `bundle-sharded/` and their Dockerfiles are written there.
    #[arg(long, default_value = ".")]
    pub out: PathBuf,
}

impl BundleArgs {
    /// Generates and writes the bundle.
    pub fn run(&self) -> Result<(), crate::install::Error> {
        let files = super::files(&self.version)?;
        crate::install::write(&self.out, super::OWNED_DIRS, &files)
    }
}
