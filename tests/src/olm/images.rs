//! The images an OLM install pulls, pushed to a loopback [`Registry`]: OLM's own (the
//! operators, and the `cp` and `cpb` its bundle unpack Job runs), opm's (the unpack Job's
//! `opm alpha bundle extract`), a bundle image from a bundle directory as its
//! `bundle.Dockerfile` describes it, and a file-based catalog rendered by opm from bundle
//! images, served by `opm serve` with `grpc_health_probe` beside it (the registry pod's probes).

use super::registry::{ImageConfig, Registry};
use crate::Result;
use anyhow::Context;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

/// The references of OLM's images in the registry.
#[derive(Debug, Clone)]
pub struct OlmImages {
    /// `/bin/olm`, `/bin/catalog`, `/bin/cpb` and `/bin/cp`: the operators and the unpack
    /// Job's utility image, as upstream's one OLM image.
    pub olm: String,
    /// `/bin/opm` and `/bin/grpc_health_probe`.
    pub opm: String,
    /// The opm image's root file system: a catalog image is it with a catalog beside.
    opm_root: std::path::PathBuf,
}

impl OlmImages {
    /// Pushes OLM's and opm's images, built from the binaries `scripts/build-olm.sh` cached;
    /// `work` holds their root file systems.
    pub fn push(registry: &Registry, work: &Path) -> Result<Self> {
        let olm = rootfs(work, "olm", &["olm", "catalog", "cpb", "cp"])?;
        let opm = rootfs(work, "opm", &["opm", "grpc_health_probe"])?;
        Ok(Self {
            olm: registry.push(&olm, &format!("olm:{}", super::VERSION), &ImageConfig::default())?,
            opm: registry.push(
                &opm,
                &format!("opm:{}", super::REGISTRY_VERSION),
                &ImageConfig { entrypoint: vec!["/bin/opm".into()], ..Default::default() },
            )?,
            opm_root: opm,
        })
    }
}

/// A root file system of `binaries` in `/bin` and a writable `/tmp`, in `work/name`.
fn rootfs(work: &Path, name: &str, binaries: &[&str]) -> Result<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let root = work.join(name);
    std::fs::create_dir_all(root.join("bin"))?;
    std::fs::create_dir_all(root.join("tmp"))?;
    std::fs::set_permissions(root.join("tmp"), std::fs::Permissions::from_mode(0o1777))?;
    for binary in binaries {
        let target = root.join("bin").join(binary);
        if !target.exists() {
            std::fs::copy(super::bin(binary)?, &target)?;
        }
    }
    Ok(root)
}

/// Pushes the bundle `dir` under `root` (`<dir>/manifests`, `<dir>/metadata` and
/// `<dir>.Dockerfile`, as `ferrometal bundle` writes them: `bundle` or `bundle-sharded`) as
/// `name`, with the Dockerfile's labels and its layout (the two directories at the image's
/// root).
pub fn push_bundle(registry: &Registry, root: &Path, dir: &str, name: &str) -> Result<String> {
    let dockerfile = std::fs::read_to_string(root.join(format!("{dir}.Dockerfile")))?;
    let labels = dockerfile
        .lines()
        .filter_map(|l| l.strip_prefix("LABEL "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect::<Vec<_>>();
    anyhow::ensure!(!labels.is_empty(), "no LABEL in {}/{dir}.Dockerfile", root.display());
    registry.push(&root.join(dir), name, &ImageConfig { labels, ..Default::default() })
}

/// One channel entry: a bundle's CSV name with the upgrade edges its CSV declares.
#[derive(Debug, Clone)]
pub struct Entry {
    pub bundle_image: String,
    pub csv: String,
    pub replaces: Option<String>,
    pub skip_range: Option<String>,
}

/// One package of a catalog: its name, its one channel, and that channel's entries.
#[derive(Debug, Clone, Copy)]
pub struct Package<'a> {
    pub name: &'a str,
    pub channel: &'a str,
    pub entries: &'a [Entry],
}

/// Renders a file-based catalog of `packages`, each with one channel holding its entries (each
/// bundle rendered by `opm render` from its image in the registry), checks it with
/// `opm validate`, and pushes it as the catalog image `name`.
pub fn push_catalog(
    registry: &Registry,
    images: &OlmImages,
    work: &Path,
    packages: &[Package<'_>],
    name: &str,
) -> Result<String> {
    let root = work.join(name.replace(['/', ':'], "_"));
    let home = policy_home(work)?;
    for package in packages {
        let configs = root.join("configs").join(package.name);
        std::fs::create_dir_all(&configs)?;
        std::fs::write(configs.join("catalog.json"), package_configs(&home, package)?)?;
    }
    opm(&home, &["validate", &root.join("configs").display().to_string()])?;
    // The catalog image: opm's image with the catalog in /configs, served as upstream's
    // generated Dockerfile serves it (no pre-built cache: opm builds one in /tmp at start).
    copy_tree(&images.opm_root, &root)?;
    let config = ImageConfig {
        entrypoint: vec!["/bin/opm".into()],
        cmd: vec!["serve".into(), "/configs".into()],
        labels: vec![("operators.operatorframework.io.index.configs.v1".into(), "/configs".into())],
    };
    registry.push(&root, name, &config)
}

/// The file-based catalog documents of one package: the package, its bundles, its channel.
fn package_configs(home: &Path, package: &Package<'_>) -> Result<String> {
    let Package { name: package, channel, entries } = *package;
    let mut documents = vec![opm(home, &["init", package, "--default-channel", channel, "-o", "json"])?];
    for entry in entries {
        documents.push(opm(home, &["render", &entry.bundle_image, "--use-http", "-o", "json"])?);
    }
    let channel_entries: Vec<Value> = entries
        .iter()
        .map(|e| {
            let mut entry = json!({"name": e.csv});
            if let Some(replaces) = &e.replaces {
                entry["replaces"] = json!(replaces);
            }
            if let Some(range) = &e.skip_range {
                entry["skipRange"] = json!(range);
            }
            entry
        })
        .collect();
    documents.push(
        json!({"schema": "olm.channel", "package": package, "name": channel, "entries": channel_entries}).to_string(),
    );
    Ok(documents.join("\n"))
}

/// A home directory whose containers policy accepts any image: `opm render` pulls bundle
/// images through containers/image, which refuses to pull without a policy.
fn policy_home(work: &Path) -> Result<std::path::PathBuf> {
    let home = work.join("opm-home");
    let dir = home.join(".config/containers");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("policy.json"), r#"{"default":[{"type":"insecureAcceptAnything"}]}"#)?;
    Ok(home)
}

/// Runs opm with `home` as its home; its standard output.
fn opm(home: &Path, args: &[&str]) -> Result<String> {
    let output = Command::new(super::bin("opm")?)
        .args(args)
        .env("HOME", home)
        .env("TMPDIR", home)
        .output()
        .context("running opm")?;
    anyhow::ensure!(
        output.status.success(),
        "opm {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Copies the files of `from` into `to` (`cp -a`).
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    let status = Command::new("cp").arg("-a").arg(format!("{}/.", from.display())).arg(to).status()?;
    anyhow::ensure!(status.success(), "copying {} to {}", from.display(), to.display());
    Ok(())
}
