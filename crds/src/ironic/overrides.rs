//! `spec.overrides`: low-level changes to the generated pods (EXPERIMENTAL in
//! ironic-standalone-operator, where it needs the `Overrides` feature gate).

use k8s_openapi::api::core::v1::{Container, Probe, Toleration, Volume};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Changes applied on top of the pods the operator generates.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Overrides {
    /// IPA kernel/initramfs per architecture instead of the downloaded ramdisk
    /// (`DEPLOY_KERNEL_URL`/`DEPLOY_RAMDISK_URL`, or their `_BY_ARCH` forms). At most one entry
    /// per architecture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_images: Option<Vec<AgentImages>>,
    /// Extra annotations on the pods and upgrade Jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Containers appended to the pod, or replacing the generated container of the same name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containers: Option<Vec<Container>>,
    /// Liveness probe of the httpd container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub httpd_liveness_probe: Option<Probe>,
    /// Readiness probe of the httpd container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub httpd_readiness_probe: Option<Probe>,
    /// Init containers appended, or replacing the generated one of the same name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_containers: Option<Vec<Container>>,
    /// Extra labels on the pods and upgrade Jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Our addition. Tolerations of the Ironic pods, e.g. to run on control-plane nodes
    /// selected with nodeSelector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    /// Extra volumes, for use by extra containers or volume mounts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volumes: Option<Vec<Volume>>,
}

/// IPA images for one architecture. URLs are file://, http(s):// or oci://.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentImages {
    /// CPU architecture these images are for; "" means the default architecture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<CpuArchitecture>,
    /// URL of the initramfs.
    pub initramfs: String,
    /// URL of the kernel.
    pub kernel: String,
}

/// CPU architecture of agent images. Values: "" (default), x86_64, aarch64.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum CpuArchitecture {
    /// The default architecture.
    #[serde(rename = "")]
    Default,
    /// 64-bit x86.
    #[serde(rename = "x86_64")]
    X86_64,
    /// 64-bit ARM.
    #[serde(rename = "aarch64")]
    Aarch64,
}
