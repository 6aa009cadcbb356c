//! A pod's volumes, materialised in its scratch directory: Secrets and
//! ConfigMaps written out key by key (or by their `items`), emptyDirs as
//! empty directories, projected volumes as the kubelet projects them.

use super::prepare::Blocker;
use super::sources::{Kind, Sources};
use k8s_openapi::api::core::v1::{KeyToPath, PodSpec, ProjectedVolumeSource, Volume};
use std::collections::{HashMap, HashSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

/// The Kubernetes default mode of Secret and ConfigMap volume files.
const DEFAULT_MODE: i32 = 0o644;

/// A volume the kubelet cannot mount yet waits in this reason.
const MOUNTING: &str = "ContainerCreating";

/// Writes every volume to `<scratch>/<volume name>/` and returns where each
/// went. A volume of a kind the simulator cannot make fails the pod when a
/// container mounts it; one nobody mounts is left out.
pub(super) async fn materialize(
    spec: &PodSpec,
    scratch: &Path,
    sources: &mut Sources,
) -> Result<HashMap<String, PathBuf>, Blocker> {
    let mounted: HashSet<&str> = spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
        .flat_map(|c| c.volume_mounts.iter().flatten())
        .map(|m| m.name.as_str())
        .collect();
    let mut dirs = HashMap::new();
    for volume in spec.volumes.iter().flatten() {
        let dir = scratch.join(&volume.name);
        fresh_dir(&dir)?;
        if let Some(secret) = &volume.secret {
            let name = secret.secret_name.as_deref().unwrap_or_default();
            let source = Source { kind: Kind::Secret, name, items: &secret.items, optional: secret.optional };
            source.write(&volume.name, &dir, secret.default_mode, sources).await?;
        } else if let Some(map) = &volume.config_map {
            let source = Source { kind: Kind::ConfigMap, name: &map.name, items: &map.items, optional: map.optional };
            source.write(&volume.name, &dir, map.default_mode, sources).await?;
        } else if let Some(projected) = &volume.projected {
            project(&volume.name, &dir, projected, spec, sources).await?;
        } else if volume.empty_dir.is_none() {
            if mounted.contains(volume.name.as_str()) {
                return Err(Blocker::Fail(format!(
                    "volume {} is a {} volume; the pod simulator makes only secret, configMap, projected and emptyDir volumes",
                    volume.name,
                    kind_of(volume)
                )));
            }
            continue;
        }
        dirs.insert(volume.name.clone(), dir);
    }
    Ok(dirs)
}

/// A projected volume, as the kubelet makes the one every pod gets for its API access
/// (`kube-api-access-*`): Secret and ConfigMap items, the namespace from the downward API, and a
/// service account token from the TokenRequest API.
async fn project(
    volume: &str,
    dir: &Path,
    projected: &ProjectedVolumeSource,
    spec: &PodSpec,
    sources: &mut Sources,
) -> Result<(), Blocker> {
    let mode = projected.default_mode;
    for source in projected.sources.iter().flatten() {
        if let Some(secret) = &source.secret {
            let from =
                Source { kind: Kind::Secret, name: &secret.name, items: &secret.items, optional: secret.optional };
            from.write(volume, dir, mode, sources).await?;
        }
        if let Some(map) = &source.config_map {
            let from = Source { kind: Kind::ConfigMap, name: &map.name, items: &map.items, optional: map.optional };
            from.write(volume, dir, mode, sources).await?;
        }
        for item in source.downward_api.iter().flat_map(|d| d.items.iter().flatten()) {
            let field = item.field_ref.as_ref().map(|f| f.field_path.as_str());
            if field != Some("metadata.namespace") {
                return Err(Blocker::Fail(format!(
                    "volume {volume}: the pod simulator projects only metadata.namespace from the downward API"
                )));
            }
            let path = relative(&item.path).map_err(|e| Blocker::Fail(format!("volume {volume}: {e}")))?;
            write_file(&dir.join(path), sources.namespace().as_bytes(), item.mode.unwrap_or(DEFAULT_MODE))?;
        }
        if let Some(token) = &source.service_account_token {
            let account = spec.service_account_name.as_deref().unwrap_or("default");
            let issued = sources.token(account, token.audience.as_deref(), token.expiration_seconds).await;
            let issued = issued.map_err(|e| Blocker::Wait {
                reason: MOUNTING,
                message: format!("MountVolume.SetUp failed for volume \"{volume}\" : token for {account}: {e}"),
            })?;
            let path = relative(&token.path).map_err(|e| Blocker::Fail(format!("volume {volume}: {e}")))?;
            write_file(&dir.join(path), issued.as_bytes(), mode.unwrap_or(DEFAULT_MODE))?;
        }
    }
    Ok(())
}

/// The kind of a volume: the one source field it sets.
fn kind_of(volume: &Volume) -> String {
    let fields = serde_json::to_value(volume).ok();
    let kinds = fields.as_ref().and_then(|v| v.as_object()).map(|o| o.keys().filter(|k| *k != "name").cloned());
    kinds.into_iter().flatten().collect::<Vec<_>>().join(", ")
}

struct Source<'a> {
    kind: Kind,
    name: &'a str,
    items: &'a Option<Vec<KeyToPath>>,
    optional: Option<bool>,
}

impl Source<'_> {
    async fn write(&self, volume: &str, dir: &Path, mode: Option<i32>, sources: &mut Sources) -> Result<(), Blocker> {
        let optional = self.optional == Some(true);
        let failed = |message: String| Blocker::Wait {
            reason: MOUNTING,
            message: format!("MountVolume.SetUp failed for volume \"{volume}\" : {message}"),
        };
        let content = match sources.get(self.kind, self.name).await {
            Ok(Some(content)) => content,
            Ok(None) if optional => return Ok(()),
            Ok(None) => return Err(failed(format!("{} \"{}\" not found", self.kind.lower(), self.name))),
            Err(e) => return Err(failed(format!("reading {} {}: {e}", self.kind, self.name))),
        };
        let default_mode = mode.unwrap_or(DEFAULT_MODE);
        let files: Vec<(&str, &[u8], i32)> = match self.items {
            None => content.iter().map(|(key, value)| (key.as_str(), value.as_slice(), default_mode)).collect(),
            Some(items) => {
                let mut files = Vec::new();
                for item in items {
                    match content.get(&item.key) {
                        Some(value) => {
                            files.push((item.path.as_str(), value.as_slice(), item.mode.unwrap_or(default_mode)))
                        }
                        None if optional => {}
                        None => {
                            let what = if self.kind == Kind::Secret { "secret" } else { "config" };
                            let kind = self.kind.lower();
                            return Err(failed(format!("{kind} references non-existent {what} key: {}", item.key)));
                        }
                    }
                }
                files
            }
        };
        for (path, value, mode) in files {
            let relative = relative(path).map_err(|e| Blocker::Fail(format!("volume {volume}: {e}")))?;
            write_file(&dir.join(relative), value, mode)?;
        }
        Ok(())
    }
}

/// `path` as a path below a volume: relative, without `..`.
pub(super) fn relative(path: &str) -> Result<&Path, String> {
    let relative = Path::new(path);
    let below = relative.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if path.is_empty() || !below {
        return Err(format!("path {path:?} does not stay inside the volume"));
    }
    Ok(relative)
}

fn fresh_dir(dir: &Path) -> Result<(), Blocker> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| io_failure(dir, e))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| io_failure(dir, e))
}

fn write_file(file: &Path, value: &[u8], mode: i32) -> Result<(), Blocker> {
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_failure(parent, e))?;
    }
    std::fs::write(file, value).map_err(|e| io_failure(file, e))?;
    let mode = u32::try_from(mode & 0o777).unwrap_or(0o644);
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(mode)).map_err(|e| io_failure(file, e))
}

fn io_failure(path: &Path, error: std::io::Error) -> Blocker {
    Blocker::Fail(format!("writing {}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_paths_stay_inside_the_volume() {
        assert!(relative("password").is_ok());
        assert!(relative("nested/dir/key").is_ok());
        assert!(relative("/etc/passwd").is_err());
        assert!(relative("../escape").is_err());
        assert!(relative("a/../../b").is_err());
        assert!(relative("").is_err());
    }

    #[test]
    fn a_file_gets_its_mode() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("a/b/key");
        write_file(&file, b"v", 0o400).expect("written");
        assert_eq!(std::fs::read(&file).expect("read"), b"v");
        let mode = std::fs::metadata(&file).expect("metadata").permissions().mode();
        assert_eq!(mode & 0o777, 0o400);
    }
}
