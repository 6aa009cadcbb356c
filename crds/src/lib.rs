//! ferrometal's API types. Pure data, validation and schema generation; no I/O.
//!
//! Four API surfaces live here:
//! - [`ironic::Ironic`] (`ironic.metal3.io/v1alpha1`), compatible with metal3's
//!   ironic-standalone-operator v0.11 plus our additions (TLS modes, managed MariaDB, tolerations);
//! - [`baremetalhost::BareMetalHost`] and [`hardwaredata::HardwareData`] (`metal3.io/v1alpha1`),
//!   compatible with metal3's baremetal-operator;
//! - [`nodeset::NodeSet`] and [`nodesetservice::NodeSetService`] (`ferrometal.io/v1alpha1`), our own.
//!
//! Every kind has pure validation functions returning [`FieldError`]s, used by the validating
//! webhook and again by the controllers. [`all_crds`] and [`render_yaml`] produce the CRDs
//! that `ferrometal crds` prints and that are checked in under `crds/generated/`.

// The product is safe Rust; only the test harness calls libc.
#![forbid(unsafe_code)]
// No `unreachable_pub` here: every module is the public API, and kube's `KubeSchema` derive
// makes a private copy of each struct with CEL rules, which that lint would flag.

pub mod baremetalhost;
pub mod bmceventsubscription;
pub mod condition;
pub mod dataimage;
pub mod firmware;
mod generate;
pub mod hardwaredata;
pub mod ironic;
pub mod nodeset;
pub mod nodesetservice;
pub mod preprovisioningimage;
pub mod samples;
mod schema_util;
pub mod validation;

pub use generate::{CrdRenderError, all_crds, crd_file_name, render_crd_yaml, render_value_yaml, render_yaml};
pub use validation::FieldError;
