//! Starts a control plane with the pod simulator and keeps it running until
//! Ctrl-C, printing a KUBECONFIG for kubectl. For poking at the environment.

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cp = ferrometal_tests::ControlPlane::start().await?;
    let _sim = ferrometal_tests::PodSimulator::start(cp.client()).await?;
    println!("export KUBECONFIG={}", cp.kubeconfig().display());
    tokio::signal::ctrl_c().await?;
    Ok(())
}
