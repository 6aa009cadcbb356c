//! The fault harness: the operator as `ferrometal run` processes a test SIGKILLs and restarts
//! ([`replicas`], at seeded random moments with [`kills`]), a recorder that lists Ironic and
//! the apiserver throughout and keeps every state of every machine and every NodeSet service
//! Job ([`recorder`], [`record`], [`jobs`]), Ironic's own log as the exact record of its state
//! changes and requests ([`ironic_log`]), and the [`Figures`] every scenario computes from the
//! record ([`job_figures`] for the Jobs) and checks with [`Figures::assert_clean`].
//!
//! Lengths: a scenario runs short by default (CI: few hosts, one or two faults) and at full
//! length with `FERROMETAL_FAULTS_FULL=1`; random moments come from a seed that is printed and
//! that `FERROMETAL_FAULT_SEED` replays; with `FERROMETAL_FAULTS_TABLE=<file>` each scenario
//! appends its figures' row to that file (`make faults` prints it as one table).

pub mod figures;
pub mod ironic_log;
pub mod job_figures;
pub mod jobs;
pub mod kills;
pub mod nodeset;
pub mod record;
pub mod recorder;
pub mod replicas;

pub use figures::{Convergence, Figures};
pub use ironic_log::IronicLog;
pub use kills::KillRound;
pub use record::Record;
pub use recorder::{IronicProbe, Recorder};
pub use replicas::{Launch, Replicas};

use kube::api::{Api, DynamicObject};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::Value;
use std::io::Write as _;
use std::time::Duration;
use tokio::time::Instant;

/// True for the full-length run (`FERROMETAL_FAULTS_FULL=1`).
pub fn full() -> bool {
    std::env::var("FERROMETAL_FAULTS_FULL").is_ok_and(|v| v == "1")
}

/// `short` in CI, `long` in the full run.
pub fn length<T>(short: T, long: T) -> T {
    if full() { long } else { short }
}

/// The seed of this run's random moments: `FERROMETAL_FAULT_SEED`, or a fresh one. Printed,
/// so that a failing run can be replayed.
pub fn seed(scenario: &str) -> u64 {
    let seed = std::env::var("FERROMETAL_FAULT_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    println!("{scenario}: FERROMETAL_FAULT_SEED={seed}");
    seed
}

/// Prints the figures (header and row) and, with `FERROMETAL_FAULTS_TABLE`, appends the row
/// to that file (the header first when it is empty); then asserts them clean.
pub fn report(figures: &Figures) {
    println!("{}\n{figures}", Figures::HEADER);
    if let Ok(path) = std::env::var("FERROMETAL_FAULTS_TABLE")
        && let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(path)
    {
        if file.metadata().is_ok_and(|m| m.len() == 0) {
            let _ = writeln!(file, "{}", Figures::HEADER);
        }
        let _ = writeln!(file, "{figures}");
    }
    figures.assert_clean();
}

/// Waits until every BareMetalHost of `namespace` (there must be `hosts` of them) satisfies
/// `converged`, for at most `timeout`; the time is measured from `since` (the end of the
/// last fault). Listing errors count as not converged yet.
pub async fn converge(
    client: &kube::Client,
    namespace: &str,
    hosts: usize,
    since: Instant,
    timeout: Duration,
    converged: impl Fn(&Value) -> bool,
) -> Convergence {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("metal3.io", "v1alpha1", "BareMetalHost"));
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    wait_converged(since, timeout, hosts, async || {
        let list = api.list(&Default::default()).await.ok()?;
        let done = list.items.into_iter().filter(|h| converged(&serde_json::to_value(h).unwrap_or_default())).count();
        Some(hosts.saturating_sub(done))
    })
    .await
}

/// Asks `unconverged` every 250 ms how many are not converged yet (`None`: it could not
/// tell, the last answer stands; `initial` before any) until none are or `timeout` has
/// passed since `since`.
pub async fn wait_converged(
    since: Instant,
    timeout: Duration,
    initial: usize,
    unconverged: impl AsyncFn() -> Option<usize>,
) -> Convergence {
    let mut not_converged = initial;
    while since.elapsed() < timeout {
        if let Some(n) = unconverged().await {
            not_converged = n;
            if n == 0 {
                return Convergence { not_converged, time: Some(since.elapsed()) };
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Convergence { not_converged, time: None }
}

/// A host's `status.provisioning.state`.
pub fn host_state(host: &Value) -> &str {
    host["status"]["provisioning"]["state"].as_str().unwrap_or_default()
}
