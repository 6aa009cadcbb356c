//! ferrometal's real-environment test harness.
//!
//! Every test in the workspace stands on real servers started here on
//! loopback: etcd, kube-apiserver and kube-controller-manager
//! ([`control_plane`]), a pod simulator standing in for the kubelet that
//! cannot run on our machines, which runs Job pods of one test image as
//! local processes when asked to ([`pod_simulator`]), Ironic ([`ironic`]),
//! sushy-tools Redfish BMCs ([`sushy`]), MariaDB ([`mariadb`]) and cert-manager's
//! controller ([`cert_manager`]).
//!
//! A [`proxy::TcpProxy`] stands between one client and a server when a test
//! needs to cut that client off (a partition) while others still get through.
//!
//! Servers bind 127.0.0.1 on ports that no other test holds, stop when
//! dropped, and keep their logs (and print their tails) when the test that
//! owns them fails. `design/testing.md` explains the whole environment.

pub mod bench;
pub mod cert_manager;
pub mod clean_stop;
pub mod control_plane;
pub mod env;
pub mod faults;
pub mod http_server;
pub mod ironic;
pub mod lab;
pub mod mariadb;
pub mod netns;
pub mod node;
pub mod olm;
pub mod operator_process;
pub mod pki;
pub mod pod_simulator;
pub mod ports;
pub mod process;
pub mod proxy;
pub mod registry;
pub mod sushy;
pub mod wait;
pub mod workdir;

pub use control_plane::{ControlPlane, ControlPlaneConfig};
pub use pod_simulator::{LOCAL_EXEC_IMAGE, LocalRun, PodFate, PodSimulator};

use std::sync::Once;

/// The harness's error type: setup failures carry their context as text.
pub type Result<T, E = anyhow::Error> = std::result::Result<T, E>;

/// Prepares the process for tests: installs ring as the one rustls crypto
/// provider (kube, reqwest, sqlx and rcgen are all built for ring, and rustls
/// panics when no process default is installed) and a tracing subscriber that
/// honours `RUST_LOG` and writes through the test output capture.
///
/// Call it first in every test; repeated calls are harmless.
pub fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,kube_client=off,hyper=warn"));
        let _ = tracing_subscriber::fmt().with_env_filter(filter).with_test_writer().try_init();
    });
}

/// The apiserver's resource for `kind` of `group`/`version`: for ferrometal's own kinds, with
/// the plural their CRD names (`HostFirmwareSettings`, `HostUpdatePolicy` have none a guess
/// from the kind finds); for any other kind, guessed as kube does.
pub fn api_resource(group: &str, version: &str, kind: &str) -> kube::core::ApiResource {
    let gvk = kube::core::GroupVersionKind::gvk(group, version, kind);
    let ours = crds::all_crds().into_iter().find(|c| c.spec.group == group && c.spec.names.kind == kind);
    match ours {
        Some(crd) => kube::core::ApiResource::from_gvk_with_plural(&gvk, &crd.spec.names.plural),
        None => kube::core::ApiResource::from_gvk(&gvk),
    }
}
