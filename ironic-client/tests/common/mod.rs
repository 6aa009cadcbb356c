//! Shared helpers of the integration tests, which run against the real
//! Ironic and sushy-tools the `ferrometal-tests` harness starts.

#![allow(dead_code)] // each test binary uses its own subset

use std::time::Duration;

use ferrometal_tests::ironic::{IronicConfig, IronicServer};
use ironic_client::{IronicClient, IronicClientBuilder, Node, NodeCreate, ProvisionState, WaitOptions};

/// A builder for `ironic`'s endpoint, with its CA and credentials.
pub fn builder(ironic: &IronicServer) -> IronicClientBuilder {
    let mut builder = IronicClient::builder(ironic.endpoint());
    if let Some(ca) = ironic.ca_pem() {
        builder = builder.ca_pem(ca);
    }
    if let Some((user, password)) = ironic.credentials() {
        builder = builder.basic_auth(user, password);
    }
    builder
}

/// A client for `ironic`.
pub async fn client(ironic: &IronicServer) -> anyhow::Result<IronicClient> {
    Ok(builder(ironic).build().await?)
}

/// Prepares the test process, starts an Ironic and connects a client.
pub async fn start(config: IronicConfig) -> anyhow::Result<(IronicServer, IronicClient)> {
    ferrometal_tests::init();
    let ironic = IronicServer::start(config).await?;
    let client = client(&ironic).await?;
    Ok((ironic, client))
}

/// Polling tuned for fake hardware, whose transitions take well under a
/// second on loopback.
pub fn fast() -> WaitOptions {
    WaitOptions::new(Duration::from_secs(120), Duration::from_millis(100))
}

/// Creates a fake-hardware node called `name`.
pub async fn fake_node(client: &IronicClient, name: &str) -> anyhow::Result<Node> {
    Ok(client.create_node(&NodeCreate::new("fake-hardware").name(name)).await?)
}

/// Creates a fake-hardware node and moves it to `manageable`; its UUID.
pub async fn manageable_node(client: &IronicClient, name: &str) -> anyhow::Result<String> {
    let id = fake_node(client, name).await?.uuid;
    client.manage(&id).await?;
    client.wait_for_provision_state(&id, ProvisionState::Manageable, fast()).await?;
    Ok(id)
}

/// Creates a fake-hardware node and moves it to `available`; its UUID.
pub async fn available_node(client: &IronicClient, name: &str) -> anyhow::Result<String> {
    let id = manageable_node(client, name).await?;
    client.provide(&id).await?;
    client.wait_for_provision_state(&id, ProvisionState::Available, fast()).await?;
    Ok(id)
}
