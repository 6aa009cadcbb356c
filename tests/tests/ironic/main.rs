//! The ironic end-to-end tests, one binary: each module was its own test binary, and every
//! binary links the whole harness (on a 2-core CI the links alone took minutes).

#[path = "../common/mod.rs"]
mod common;
#[path = "../ironic_common/mod.rs"]
mod ironic_common;
#[path = "../mariadb_common/mod.rs"]
mod mariadb_common;

mod database;
mod deploy;
mod service_monitor;
mod tls;
mod tls_csr;
mod upgrade;
