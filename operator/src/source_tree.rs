//! Where the operator's sources are, for tests that read files beside them (golden files,
//! checked-in manifests, the design notes, the image's scripts).

use std::path::PathBuf;

/// The `operator/` folder of the checkout under test. Read at run time first: every clone on
/// a machine shares one cargo target directory, and cargo reuses a test binary built in another
/// clone when the sources match, so the path compiled in may name that other clone.
pub(crate) fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}
