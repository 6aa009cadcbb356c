//! The install end-to-end tests, one binary: each module was its own test binary, and every
//! binary links the whole harness (on a 2-core CI the links alone took minutes).

#[path = "../install_common/mod.rs"]
mod install_common;

mod least_privilege;
mod manifests;
mod olm;
mod release;
