//! The database end-to-end tests, one binary: each module was its own test binary, and every
//! binary links the whole harness (on a 2-core CI the links alone took minutes).

#[path = "../common/mod.rs"]
mod common;
#[path = "../mariadb_common/mod.rs"]
mod mariadb_common;

mod account;
mod checks;
mod clean_stop;
mod e2e;
mod schema;
mod shutdown;
