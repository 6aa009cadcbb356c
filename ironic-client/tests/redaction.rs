//! Secrets (BMC passwords, rescue passwords, config-drive user data, API
//! credentials) never appear in `Debug` output, errors or traces, even when
//! a real Ironic quotes the offending input back in its error.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use ferrometal_tests::ironic::{IronicAuth, IronicConfig, IronicServer};
use ironic_client::{
    ConfigDrive, ConfigDriveData, DeployRequest, DriverInfo, Error, IronicClient, NodeCreate, PatchOperation,
    ProvisionState, ProvisionTarget, Secret,
};
use serde_json::json;

const BMC_PASSWORD: &str = "bmc-pw-Zq81x";
const API_PASSWORD: &str = "api-pw-Kd02m";
const USER_DATA_SECRET: &str = "root:ud-pw-Lp44r";
const RESCUE_PASSWORD: &str = "rescue-pw-Wt63v";

/// Everything the client logs while the guard lives, at TRACE level.
#[derive(Clone, Default)]
struct CapturedLogs(Arc<Mutex<Vec<u8>>>);

impl Write for CapturedLogs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl CapturedLogs {
    fn install(&self) -> tracing::dispatcher::DefaultGuard {
        let writer = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
    }
}

fn assert_clean(what: &str, text: &str) {
    for secret in [BMC_PASSWORD, API_PASSWORD, USER_DATA_SECRET, RESCUE_PASSWORD] {
        assert!(!text.contains(secret), "{what} leaks {secret}:\n{text}");
    }
}

// A current-thread runtime keeps every poll on this thread, under the
// thread-local log capture.
#[tokio::test(flavor = "current_thread")]
async fn secrets_never_appear_in_debug_errors_or_traces() -> anyhow::Result<()> {
    ferrometal_tests::init();
    let ironic = IronicServer::start(IronicConfig {
        auth: IronicAuth::Basic { username: "ferrometal".into(), password: API_PASSWORD.into() },
        ..IronicConfig::default()
    })
    .await?;
    let logs = CapturedLogs::default();
    let _guard = logs.install();

    let client = common::client(&ironic).await?;
    assert_clean("client Debug", &format!("{client:?}"));
    assert_clean("builder Debug", &format!("{:?}", common::builder(&ironic)));

    let create = NodeCreate::new("fake-hardware")
        .name("secret-0")
        .driver_info(DriverInfo::new().with("fake_username", "admin").with("fake_password", BMC_PASSWORD));
    assert_clean("NodeCreate Debug", &format!("{create:?}"));
    let node = client.create_node(&create).await?;
    assert_clean("Node Debug", &format!("{node:?}"));
    let patch = [PatchOperation::replace("/driver_info/fake_password", BMC_PASSWORD)];
    assert_clean("patch Debug", &format!("{patch:?}"));
    client.update_node(&node.uuid, &patch).await?;

    // A config drive Ironic rejects: its schema error prints the whole
    // drive, user data included. The client must scrub it.
    client.manage(&node.uuid).await?;
    client.wait_for_provision_state(&node.uuid, ProvisionState::Manageable, common::fast()).await?;
    client.provide(&node.uuid).await?;
    client.wait_for_provision_state(&node.uuid, ProvisionState::Available, common::fast()).await?;
    let drive = ConfigDriveData {
        user_data: Some(json!(format!("#cloud-config\nchpasswd: {{list: '{USER_DATA_SECRET}'}}\n"))),
        vendor_data: Some(json!("must-be-an-object")),
        ..ConfigDriveData::default()
    };
    let request = DeployRequest { configdrive: Some(ConfigDrive::Json(drive)), deploy_steps: vec![] };
    assert_clean("DeployRequest Debug", &format!("{request:?}"));
    let rejected = client.deploy(&node.uuid, request).await;
    let Err(err @ Error::BadRequest(api)) = &rejected else { panic!("expected BadRequest, got {rejected:?}") };
    assert!(api.message.contains("Invalid configdrive format"), "{api}");
    assert!(api.message.contains("<redacted>"), "Ironic quoted the drive and it was scrubbed: {api}");
    assert_clean("error Display", &err.to_string());
    assert_clean("error Debug", &format!("{err:?}"));

    let rescue = ProvisionTarget::Rescue { password: Secret::from(RESCUE_PASSWORD) };
    assert_clean("rescue Debug", &format!("{rescue:?}"));
    let refused = client.set_provision_state(&node.uuid, &rescue).await;
    assert!(matches!(refused, Err(Error::InvalidState(_))), "rescue needs an active node: {refused:?}");
    assert_clean("rescue error", &format!("{refused:?}"));

    // The traces saw every request body, redacted.
    let text = logs.text();
    assert!(text.contains("Ironic request body") && text.contains("<redacted>"), "{text}");
    assert_clean("traces", &text);

    // And the secrets did reach Ironic: the node answers to the patched one.
    let check = IronicClient::builder(ironic.endpoint()).basic_auth("ferrometal", API_PASSWORD).build().await?;
    assert!(check.get_node(&node.uuid).await?.driver_info.secret("fake_password").is_some());
    Ok(())
}
