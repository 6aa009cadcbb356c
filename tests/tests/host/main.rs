//! The host end-to-end tests, one binary: each module was its own test binary, and every
//! binary links the whole harness (on a 2-core CI the links alone took minutes).

#[path = "../common/mod.rs"]
mod common;
#[path = "../host_common/mod.rs"]
mod host_common;

mod annotations;
mod components;
mod crash_before_status;
mod crash_while_servicing;
mod dataimage;
mod errors;
mod firmware;
mod forged_id;
mod ironic_resource;
mod ironic_restart;
mod lifecycle;
mod modes;
mod power;
mod preprov;
mod refusals;
mod scale;
mod shard_terms;
mod shard_writes;
mod shards;
mod slots;
mod subscription;
