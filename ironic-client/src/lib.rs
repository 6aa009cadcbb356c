//! A typed async client for the OpenStack Ironic REST API.
//!
//! ```no_run
//! # async fn demo() -> Result<(), ironic_client::Error> {
//! use std::time::Duration;
//! use ironic_client::{DriverInfo, IronicClient, NodeCreate, ProvisionState, WaitOptions};
//!
//! let ironic = IronicClient::builder("https://ironic.example:6385")
//!     .basic_auth("ironic", "secret")
//!     .ca_pem(std::fs::read("/etc/ironic/ca.crt").unwrap_or_default())
//!     .timeout(Duration::from_secs(30))
//!     .max_in_flight(8)
//!     .build()
//!     .await?; // negotiates the API microversion
//!
//! let node = ironic
//!     .create_node(&NodeCreate::new("redfish").name("ns~host-0").driver_info(
//!         DriverInfo::new()
//!             .with("redfish_address", "https://bmc.example")
//!             .with("redfish_system_id", "/redfish/v1/Systems/1")
//!             .with("redfish_username", "admin")
//!             .with("redfish_password", "never printed"),
//!     ))
//!     .await?;
//! ironic.manage(&node.uuid).await?;
//! ironic.wait_for_provision_state(&node.uuid, ProvisionState::Manageable, WaitOptions::default()).await?;
//! for status in ironic.node_statuses().await? {
//!     println!("{} {:?} failed={}", status.uuid, status.provision_state, status.has_failed());
//! }
//! # Ok(()) }
//! ```
//!
//! The crate knows nothing about Kubernetes. Every request carries the
//! negotiated `X-OpenStack-Ironic-API-Version`; retryable failures (node
//! locked, no free conductor workers, connection resets) are retried with
//! jittered exponential backoff; at most `max_in_flight` requests are in
//! flight per client; and secrets never appear in `Debug` output, errors or
//! traces. See `design/ironic-client.md`.

// The product is safe Rust; only the test harness calls libc.
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]
#![warn(missing_docs)]

mod bulk;
mod changes;
mod client;
mod config;
mod error;
mod events;
mod fault;
mod firmware;
mod metrics;
mod net_error;
mod nodes;
mod paging;
mod ports;
mod power;
mod provision;
pub mod redact;
mod retry;
mod tls;
mod transport;
pub mod types;
mod version;
mod vmedia;
mod wait;

pub use changes::{
    ChangeCursor, DEFAULT_FULL_EVERY, MARGIN as CHANGE_MARGIN, RESOLUTION as CHANGE_RESOLUTION, StatusList,
};
pub use client::IronicClient;
pub use config::{Auth, DEFAULT_MAX_IN_FLIGHT, IronicClientBuilder};
pub use error::{ApiError, Error, PagingFault, Result};
pub use metrics::{Metrics, Operation, OperationStats};
pub use redact::Secret;
pub use retry::RetryPolicy;
pub use types::*;
pub use version::{ApiVersion, NegotiationError, ServerVersions, VERSION_HEADER};
pub use wait::WaitOptions;
