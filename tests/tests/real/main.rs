//! The end-to-end tests on the real node, one binary: each module was its own test binary, and
//! every binary links the whole harness. The machine has one node (`scripts/node.sh`), so
//! `.config/nextest.toml` runs this binary's tests one after the other (test group `real-node`).

#[path = "../common/mod.rs"]
mod common;
#[path = "../install_common/mod.rs"]
mod install_common;
#[path = "../mariadb_common/mod.rs"]
mod mariadb_common;
#[path = "../real_ironic/mod.rs"]
mod real_ironic;

mod database;
mod dhcp;
mod install;
mod ironic;
mod ironic_tls;
mod lab;
mod node;
