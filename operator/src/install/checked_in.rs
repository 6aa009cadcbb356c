//! The checked-in `config/`, `bundle/`, `bundle-sharded/` and their Dockerfiles are what the
//! generators write: these tests fail when they are stale. `FERROMETAL_UPDATE_MANIFESTS=1`
//! rewrites them (as `ferrometal manifests` and `ferrometal bundle --version <this version>` do).

use super::{File, Layout, bundle, manifests, write};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    crate::source_tree::manifest_dir().parent().map(Path::to_path_buf).unwrap_or_default()
}

fn files_below(dir: &Path, root: &Path, out: &mut BTreeSet<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_below(&path, root, out);
        } else if let Ok(relative) = path.strip_prefix(root) {
            out.insert(relative.to_path_buf());
        }
    }
}

/// Compares `files` with what is below `root` in `owned` directories (and single files
/// named by `files` outside them); rewrites them when asked.
fn check(root: &Path, owned: &[&str], files: &[File], command: &str) {
    if std::env::var_os("FERROMETAL_UPDATE_MANIFESTS").is_some() {
        write(root, owned, files).expect("write the generated files");
        return;
    }
    let mut stale = Vec::new();
    for file in files {
        let on_disk = std::fs::read_to_string(root.join(&file.path)).unwrap_or_default();
        if on_disk != file.content {
            stale.push(format!("{} differs", file.path.display()));
        }
    }
    let generated: BTreeSet<PathBuf> = files.iter().map(|f| f.path.clone()).collect();
    let mut present = BTreeSet::new();
    for dir in owned {
        files_below(&root.join(dir), root, &mut present);
    }
    for extra in present.difference(&generated) {
        stale.push(format!("{} is not generated", extra.display()));
    }
    assert!(
        stale.is_empty(),
        "stale; run `{command}` (or FERROMETAL_UPDATE_MANIFESTS=1 cargo nextest run -p operator --lib checked_in):\n{}",
        stale.join("\n")
    );
}

#[test]
fn config_is_what_ferrometal_manifests_writes() {
    let root = repo_root().join("config");
    let files = manifests::tree(&Layout::default()).expect("tree");
    check(&root, manifests::OWNED_DIRS, &files, "ferrometal manifests --out config");
}

#[test]
fn the_bundle_is_what_ferrometal_bundle_writes_for_this_version() {
    let files = bundle::files(env!("CARGO_PKG_VERSION")).expect("bundle");
    check(&repo_root(), bundle::OWNED_DIRS, &files, "ferrometal bundle --version <the workspace version>");
}
