//! `PreprovisioningImage` (baremetal-operator's): the deploy image each host boots to be
//! inspected, cleaned or deployed, with image building on (`--build-preprov-image`).
//!
//! - `judge`: the spec a host asks for, whether the image built is one it can boot, and the
//!   `driver_info` that boots it (pure);
//! - `gate`: before a step that boots the deploy image, the host's image made or updated and
//!   judged;
//! - `builder`: our image builder, baremetal-operator's built-in one: it serves the operator's
//!   deploy images (pure); `controller`, `reconcile`: its controller.

mod builder;
mod controller;
mod gate;
mod judge;
mod reconcile;

pub(super) use controller::run;
pub(crate) use gate::{boots_deploy_image, deploy_image};
pub(crate) use judge::{DeployImage, driver_info_ops};
