//! A real node beside a [`ControlPlane`](crate::ControlPlane): `scripts/node.sh` runs Debian's
//! containerd, a kubelet, kube-proxy and CoreDNS as plain processes, with a CNI bridge on this
//! machine (design/testing.md, "A real node"). Pods bound to it really run; the pod simulator
//! never touches them (it acts only on its own simulated node).
//!
//! One node per machine (kube-proxy owns the host's `KUBE-*` iptables chains): a node holds a
//! lock for its whole life, so a second one waits for the first to stop, in this process or
//! another. nextest runs the tests that start one in a group of one thread.

use crate::env;
use crate::operator_process::repo_root;
use crate::workdir::WorkDir;
use anyhow::{Context, bail};
use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Held while a node runs; another process's node waits for it.
const LOCK: &str = "/run/ferrometal-node.harness.lock";

/// The images the node holds besides the sandbox's: each an archive `install-node.sh` built.
pub const PROBE_IMAGE: &str = "ferrometal.local/probe:1";
/// Debian's python3 with a wheel from PyPI (`scripts/node/debian-image.sh`).
pub const DEBIAN_PYTHON_IMAGE: &str = "ferrometal.local/debian-python:1";
/// ferrometal's MariaDB images (`images/mariadb`): Debian bookworm's 10.11 and trixie's 11.8,
/// each with the archive it is cached in.
pub const MARIADB_IMAGES: [(&str, &str); 2] =
    [("ferrometal.local/mariadb:10.11", "mariadb-10.11.tar"), ("ferrometal.local/mariadb:11.8", "mariadb-11.8.tar")];
/// The archive of the Ironic image (`scripts/node/ironic-image.sh`), named by
/// [`ironic_image`].
pub const IRONIC_IMAGE_ARCHIVE: &str = "ironic.tar";

/// The name of the Ironic image `scripts/node/ironic-image.sh` builds
/// (`ferrometal.local/ironic:<Ironic's version>`), as that script says.
pub fn ironic_image() -> crate::Result<String> {
    let script = repo_root().join("scripts/node/ironic-image.sh");
    let output =
        Command::new(&script).arg("--name").output().with_context(|| format!("running {}", script.display()))?;
    if !output.status.success() {
        bail!("{} --name failed: {}", script.display(), String::from_utf8_lossy(&output.stderr));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// A fresh directory of this machine (under `/var/tmp`), owned by `uid` with mode 0700, as a
/// `hostPath` PersistentVolume `name` (10 GiB, ReadWriteOnce, Retain) that
/// kube-controller-manager's binder gives the first claim that fits: a StatefulSet's data on the
/// node. The directory goes when the returned handle is dropped.
pub async fn host_path_volume(client: &kube::Client, name: &str, uid: u32) -> crate::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    let data = tempfile::Builder::new().prefix("ferrometal-volume-").tempdir_in("/var/tmp")?;
    // A hostPath volume gets no fsGroup: the directory must already be the server's.
    std::os::unix::fs::chown(data.path(), Some(uid), Some(uid))?;
    std::fs::set_permissions(data.path(), std::fs::Permissions::from_mode(0o700))?;
    let volume = serde_json::json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
        "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "hostPath": {"path": data.path(), "type": "Directory"}}});
    let volumes: kube::Api<k8s_openapi::api::core::v1::PersistentVolume> = kube::Api::all(client.clone());
    volumes.create(&kube::api::PostParams::default(), &serde_json::from_value(volume)?).await?;
    Ok(data)
}

/// A running node. Dropping it stops every process of it and undoes what it did to the host.
pub struct RealNode {
    name: String,
    dir: PathBuf,
    work: WorkDir,
    _lock: File,
}

impl RealNode {
    /// Starts a node registered with the apiserver `kubeconfig` names (a cluster admin's), and
    /// waits until it is Ready. Waits first for any other node of this machine to stop.
    pub async fn start(kubeconfig: &Path) -> crate::Result<Self> {
        let lock = tokio::task::spawn_blocking(lock_machine).await.context("the lock task")??;
        let work = WorkDir::new("real-node")?;
        let dir = work.path().join("node");
        let output = tokio::task::spawn_blocking({
            let (dir, kubeconfig) = (dir.clone(), kubeconfig.to_path_buf());
            // Holding the machine's lock, any node still running was left by a harness process
            // that died without stopping it (SIGKILL, a runner's timeout): it is stopped first.
            move || node_sh_with(&["start".as_ref(), dir.as_os_str(), kubeconfig.as_os_str()], &[(TAKEOVER, "1")])
        })
        .await
        .context("the start task")??;
        let name = output.lines().last().unwrap_or_default().trim().to_string();
        if name.is_empty() {
            bail!("scripts/node.sh start printed no node name");
        }
        Ok(Self { name, dir, work, _lock: lock })
    }

    /// The Node's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The pod network's gateway address: this machine as the pods see it (the bridge's).
    pub fn gateway(&self) -> crate::Result<Ipv4Addr> {
        let path = self.dir.join("gateway");
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        text.trim().parse().with_context(|| format!("the gateway address in {}", path.display()))
    }

    /// Lets the pods reach a server of this machine that listens on loopback only (the
    /// apiserver, an Ironic): forwards the gateway's `port` to `127.0.0.1:port` until dropped.
    /// The proxy runs on a thread of its own, so a test that blocks its runtime (waiting for
    /// kubectl, say) does not stall the pods' connections.
    pub fn forward_from_pods(&self, port: u16) -> crate::Result<PodForward> {
        let listen = SocketAddr::from((self.gateway()?, port));
        let target = SocketAddr::from(([127, 0, 0, 1], port));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (bound, bind_result) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new().name(format!("pod-forward-{port}")).spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(runtime) => runtime,
                Err(err) => return drop(bound.send(Err(anyhow::Error::from(err)))),
            };
            runtime.block_on(async move {
                match crate::proxy::TcpProxy::start_on(listen, target).await {
                    Ok(proxy) => {
                        let _ = bound.send(Ok(()));
                        let _ = stopped.await;
                        drop(proxy);
                    }
                    Err(err) => drop(bound.send(Err(err))),
                }
            });
        })?;
        bind_result.recv().context("the forwarding thread")??;
        Ok(PodForward { addr: listen, stop: Some(stop), thread: Some(thread) })
    }

    /// Imports an image archive (`ctr images import`) into the node's containerd.
    pub fn import(&self, archive: &Path) -> crate::Result<()> {
        node_sh(&["import".as_ref(), self.dir.as_os_str(), archive.as_os_str()]).map(drop)
    }

    /// Runs `ctr` against the node's containerd, in Kubernetes' namespace (`k8s.io`): what a
    /// test does to a container behind the kubelet's back (kill its task). Its output.
    pub fn ctr(&self, args: &[&str]) -> crate::Result<String> {
        let socket = self.dir.join("containerd/containerd.sock");
        let output = Command::new("ctr")
            .arg("--address")
            .arg(&socket)
            .args(["--namespace", "k8s.io"])
            .args(args)
            .output()
            .context("running ctr")?;
        if !output.status.success() {
            bail!("ctr {args:?} failed ({}): {}", output.status, String::from_utf8_lossy(&output.stderr));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// The host's pid of a container's main process; `id` as a pod's status gives it
    /// (`containerd://<id>`) or bare.
    pub fn container_pid(&self, id: &str) -> crate::Result<u32> {
        let id = id.strip_prefix("containerd://").unwrap_or(id);
        let listed = self.ctr(&["tasks", "ls"])?;
        // TASK PID STATUS
        let pid = listed.lines().find_map(|line| {
            let mut fields = line.split_whitespace();
            (fields.next() == Some(id)).then(|| fields.next()?.parse().ok()).flatten()
        });
        pid.with_context(|| format!("no running task {id} on the node:\n{listed}"))
    }

    /// The archive of an image `scripts/install-node.sh` built, by file name
    /// (`debian-python.tar`).
    pub fn cached_image(file: &str) -> crate::Result<PathBuf> {
        let path = env::cache_dir().join("node").join(file);
        if !path.is_file() {
            bail!("no {}: run scripts/install-node.sh", path.display());
        }
        Ok(path)
    }
}

/// A port of the gateway forwarded to the same port on loopback ([`RealNode::forward_from_pods`]).
pub struct PodForward {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PodForward {
    /// Where pods connect: the gateway's address and the port.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for PodForward {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for RealNode {
    fn drop(&mut self) {
        if let Err(err) = node_sh(&["stop".as_ref(), self.dir.as_os_str()]) {
            eprintln!("---- real-node: stopping the node failed: {err:#}");
        }
        // The node's logs where the work directory prints and keeps logs: at its top level.
        if let Ok(entries) = std::fs::read_dir(self.dir.join("logs")) {
            for entry in entries.flatten() {
                let _ = std::fs::copy(entry.path(), self.work.path().join(entry.file_name()));
            }
        }
    }
}

/// Runs `scripts/node.sh ARGS`; its standard output, or an error with what it said.
fn node_sh(args: &[&std::ffi::OsStr]) -> crate::Result<String> {
    node_sh_with(args, &[])
}

/// Tells `scripts/node.sh start` that its caller holds the harness's machine lock.
const TAKEOVER: &str = "FERROMETAL_NODE_TAKEOVER";

/// [`node_sh`] with variables added to its environment.
fn node_sh_with(args: &[&std::ffi::OsStr], env: &[(&str, &str)]) -> crate::Result<String> {
    let script = repo_root().join("scripts/node.sh");
    let output = Command::new(&script)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .with_context(|| format!("running {}", script.display()))?;
    if !output.status.success() {
        bail!(
            "scripts/node.sh {:?} failed ({}):\n{}{}",
            args.first().unwrap_or(&"".as_ref()),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Takes the machine's node lock, waiting up to ten minutes for another node to stop.
fn lock_machine() -> crate::Result<File> {
    let deadline = std::time::Instant::now() + Duration::from_secs(600);
    loop {
        if let Some(file) = crate::ports::try_lock(Path::new(LOCK))? {
            return Ok(file);
        }
        if std::time::Instant::now() > deadline {
            bail!("another test's node held {LOCK} for ten minutes");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
