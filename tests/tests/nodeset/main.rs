//! The nodeset end-to-end tests, one binary: each module was its own test binary, and every
//! binary links the whole harness (on a 2-core CI the links alone took minutes).

#[path = "../common/mod.rs"]
mod common;
#[path = "../host_common/mod.rs"]
mod host_common;
#[path = "../nodeset_common/mod.rs"]
mod nodeset_common;

mod firmware;
#[cfg(feature = "local-exec")]
mod inventory;
mod lifecycle;
mod locks;
mod model;
mod restart;
mod rollout;
mod scale;
