//! Provisioning transitions and what they carry.

use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

use super::JsonObject;
use crate::redact::{REDACTED, Secret};

/// One step of cleaning or servicing: `{interface, step, args}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// The interface that runs it (`deploy`, `bios`, `raid`, `firmware`…).
    pub interface: String,
    /// The step's name (`erase_devices_metadata`, `apply_configuration`…).
    pub step: String,
    /// Its arguments. Always sent, even empty: Ironic's deploy-step schema
    /// requires the member.
    pub args: JsonObject,
}

impl Step {
    /// A step without arguments.
    pub fn new(interface: impl Into<String>, step: impl Into<String>) -> Self {
        Self { interface: interface.into(), step: step.into(), args: Map::new() }
    }

    /// Adds an argument.
    #[must_use]
    pub fn arg(mut self, name: impl Into<String>, value: impl Into<Value>) -> Self {
        self.args.insert(name.into(), value.into());
        self
    }
}

/// A deploy step: a [`Step`] with the priority Ironic requires for them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeployStep {
    /// The step.
    #[serde(flatten)]
    pub step: Step,
    /// Higher runs earlier; 0 disables a built-in step.
    pub priority: u32,
}

/// The structured content of a config drive; Ironic builds the ISO (1.56).
#[derive(Clone, Default, PartialEq, Serialize)]
pub struct ConfigDriveData {
    /// Instance metadata (`uuid`, `name`, `local-hostname`…).
    #[serde(skip_serializing_if = "JsonObject::is_empty")]
    pub meta_data: JsonObject,
    /// User data, usually a cloud-config string. May hold credentials, so it
    /// never shows in `Debug` output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_data: Option<Value>,
    /// Network configuration (OpenStack `network_data.json`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_data: Option<Value>,
    /// Vendor data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vendor_data: Option<Value>,
}

impl fmt::Debug for ConfigDriveData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConfigDriveData")
            .field("meta_data", &self.meta_data)
            .field("user_data", &self.user_data.as_ref().map(|_| REDACTED))
            .field("network_data", &self.network_data)
            .field("vendor_data", &self.vendor_data.as_ref().map(|_| REDACTED))
            .finish()
    }
}

/// A config drive for `active` and `rebuild`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ConfigDrive {
    /// Content Ironic turns into a config drive.
    Json(ConfigDriveData),
    /// A ready image: a URL or a base64 gzipped ISO. Kept secret because it
    /// embeds the user data.
    Image(Secret<String>),
}

/// What a deployment (`active`) or `rebuild` carries.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeployRequest {
    /// The config drive.
    pub configdrive: Option<ConfigDrive>,
    /// Extra deploy steps (1.69).
    pub deploy_steps: Vec<DeployStep>,
}

/// A provisioning transition (`PUT /v1/nodes/{id}/states/provision`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ProvisionTarget {
    /// enroll → manageable (verifies the BMC).
    Manage,
    /// manageable → inspecting → manageable.
    Inspect,
    /// manageable → (cleaning) → available.
    Provide,
    /// available → deploying → active (`active`).
    Deploy(DeployRequest),
    /// active → deleting → (cleaning) → available (`deleted`).
    Undeploy,
    /// active → deploying → active again.
    Rebuild(DeployRequest),
    /// manageable → cleaning → manageable, running the given steps.
    Clean {
        /// The clean steps, in order.
        steps: Vec<Step>,
        /// Run the steps without booting the ramdisk (1.70).
        disable_ramdisk: bool,
    },
    /// manageable → adopting → active, for machines already deployed.
    Adopt,
    /// Stops a waiting or failed operation (`* wait` → `* failed`).
    Abort,
    /// active → servicing → active, running the given steps (1.87).
    Service {
        /// The service steps, in order.
        steps: Vec<Step>,
        /// Run the steps without booting the ramdisk (1.108).
        disable_ramdisk: bool,
    },
    /// active → rescuing → rescue.
    Rescue {
        /// The password of the rescue user.
        password: Secret<String>,
    },
    /// rescue → unrescuing → active.
    Unrescue,
    /// Releases a `* hold` state.
    Unhold,
}

impl ProvisionTarget {
    /// The `target` verb Ironic expects.
    pub fn verb(&self) -> &'static str {
        match self {
            Self::Manage => "manage",
            Self::Inspect => "inspect",
            Self::Provide => "provide",
            Self::Deploy(_) => "active",
            Self::Undeploy => "deleted",
            Self::Rebuild(_) => "rebuild",
            Self::Clean { .. } => "clean",
            Self::Adopt => "adopt",
            Self::Abort => "abort",
            Self::Service { .. } => "service",
            Self::Rescue { .. } => "rescue",
            Self::Unrescue => "unrescue",
            Self::Unhold => "unhold",
        }
    }

    /// The request body, secrets in clear text.
    pub(crate) fn body(&self) -> ProvisionBody<'_> {
        let mut body = ProvisionBody { target: self.verb(), ..ProvisionBody::default() };
        match self {
            Self::Deploy(req) | Self::Rebuild(req) => {
                body.configdrive = req.configdrive.as_ref();
                body.deploy_steps = Some(&req.deploy_steps).filter(|s| !s.is_empty());
            }
            Self::Clean { steps, disable_ramdisk } => {
                body.clean_steps = Some(steps);
                body.disable_ramdisk = disable_ramdisk.then_some(true);
            }
            Self::Service { steps, disable_ramdisk } => {
                body.service_steps = Some(steps);
                body.disable_ramdisk = disable_ramdisk.then_some(true);
            }
            Self::Rescue { password } => body.rescue_password = Some(password.expose()),
            _ => {}
        }
        body
    }
}

/// The body of `PUT /v1/nodes/{id}/states/provision`.
#[derive(Default, Serialize)]
pub(crate) struct ProvisionBody<'a> {
    target: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    configdrive: Option<&'a ConfigDrive>,
    #[serde(skip_serializing_if = "Option::is_none")]
    deploy_steps: Option<&'a Vec<DeployStep>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    clean_steps: Option<&'a Vec<Step>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    service_steps: Option<&'a Vec<Step>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rescue_password: Option<&'a String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    disable_ramdisk: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn body(target: &ProvisionTarget) -> Value {
        serde_json::to_value(target.body()).unwrap()
    }

    #[test]
    fn deploy_body_carries_a_json_configdrive_and_steps() {
        let mut meta = JsonObject::new();
        meta.insert("local-hostname".into(), json!("host-0"));
        let target = ProvisionTarget::Deploy(DeployRequest {
            configdrive: Some(ConfigDrive::Json(ConfigDriveData {
                meta_data: meta,
                user_data: Some(json!("#cloud-config\npassword: s3cret\n")),
                network_data: Some(json!({"links": []})),
                vendor_data: None,
            })),
            deploy_steps: vec![DeployStep {
                step: Step::new("deploy", "install_coreos").arg("ignition", "x"),
                priority: 80,
            }],
        });
        assert_eq!(
            body(&target),
            json!({
                "target": "active",
                "configdrive": {
                    "meta_data": {"local-hostname": "host-0"},
                    "user_data": "#cloud-config\npassword: s3cret\n",
                    "network_data": {"links": []},
                },
                "deploy_steps": [{"interface": "deploy", "step": "install_coreos",
                                  "args": {"ignition": "x"}, "priority": 80}],
            })
        );
        assert!(!format!("{target:?}").contains("s3cret"));
    }

    #[test]
    fn verbs_and_step_bodies() {
        let clean = ProvisionTarget::Clean {
            steps: vec![Step::new("deploy", "erase_devices_metadata")],
            disable_ramdisk: false,
        };
        assert_eq!(
            body(&clean),
            json!({"target": "clean", "clean_steps": [{"interface": "deploy", "step": "erase_devices_metadata", "args": {}}]})
        );
        let service = ProvisionTarget::Service { steps: vec![], disable_ramdisk: true };
        assert_eq!(body(&service), json!({"target": "service", "service_steps": [], "disable_ramdisk": true}));
        let rescue = ProvisionTarget::Rescue { password: Secret::from("pw") };
        assert_eq!(body(&rescue), json!({"target": "rescue", "rescue_password": "pw"}));
        assert!(!format!("{rescue:?}").contains("\"pw\""));
        assert_eq!(body(&ProvisionTarget::Undeploy), json!({"target": "deleted"}));
    }
}
