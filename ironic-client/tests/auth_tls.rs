//! Credentials and TLS against a real Ironic: HTTP basic auth accepted and
//! refused, a custom CA accepted, and refused without it.

mod common;

use ferrometal_tests::ironic::{IronicAuth, IronicConfig, IronicServer};
use ironic_client::{Error, IronicClient, NodeListQuery, Operation};

#[tokio::test]
async fn basic_auth_is_accepted_and_wrong_credentials_get_a_typed_error() -> anyhow::Result<()> {
    ferrometal_tests::init();
    let ironic = IronicServer::start(IronicConfig {
        auth: IronicAuth::Basic { username: "ferrometal".into(), password: "correct-horse".into() },
        ..IronicConfig::default()
    })
    .await?;

    let good = common::client(&ironic).await?;
    let node = common::fake_node(&good, "auth-0").await?;
    assert_eq!(good.get_node("auth-0").await?.uuid, node.uuid);

    // Version discovery is public in Ironic, so building succeeds; the first
    // real call is refused, with a typed error that is not retried.
    let wrong = IronicClient::builder(ironic.endpoint()).basic_auth("ferrometal", "wrong-password").build().await?;
    let refused = wrong.list_nodes(&NodeListQuery::new()).await;
    let Err(Error::Auth(api)) = &refused else { panic!("expected Auth, got {refused:?}") };
    assert_eq!(api.status, 401);
    assert!(api.message.contains("Incorrect username or password"), "{api}");
    assert!(!refused.as_ref().unwrap_err().is_retryable());
    assert_eq!(wrong.metrics().requests(Operation::ListNodes), 1, "auth failures are not retried");
    assert!(!format!("{refused:?}").contains("wrong-password"));

    let anonymous = IronicClient::builder(ironic.endpoint()).build().await?;
    let refused = anonymous.get_node("auth-0").await;
    assert!(matches!(refused, Err(Error::Auth(ref api)) if api.status == 401), "{refused:?}");
    Ok(())
}

#[tokio::test]
async fn tls_with_the_custom_ca_is_accepted_and_refused_without_it() -> anyhow::Result<()> {
    ferrometal_tests::init();
    let ironic = IronicServer::start(IronicConfig { tls: true, ..IronicConfig::default() }).await?;
    assert!(ironic.endpoint().starts_with("https://"));
    let ca = ironic.ca_pem().expect("a TLS server has a CA");

    let trusted = IronicClient::builder(ironic.endpoint()).ca_pem(ca).build().await?;
    let node = common::fake_node(&trusted, "tls-0").await?;
    assert_eq!(trusted.get_node("tls-0").await?.uuid, node.uuid);

    // Without the CA only the system store is trusted, which does not know
    // the test CA: the handshake fails with a typed, non-retried TLS error.
    let untrusted = IronicClient::builder(ironic.endpoint()).build().await;
    let Err(Error::Tls { operation, message }) = &untrusted else {
        panic!("expected a TLS error, got {untrusted:?}");
    };
    assert_eq!(*operation, Operation::Discover);
    assert!(message.to_lowercase().contains("certificate"), "{message}");

    // Insecure mode skips verification (for labs).
    let insecure = IronicClient::builder(ironic.endpoint()).insecure(true).build().await?;
    assert_eq!(insecure.get_node("tls-0").await?.uuid, node.uuid);
    Ok(())
}
