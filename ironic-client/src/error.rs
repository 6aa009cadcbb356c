//! The error taxonomy of the client.
//!
//! Ironic answers most failures with a status code whose meaning depends on
//! the message (409 is both "node locked, retry" and "invalid state, don't"),
//! so [`crate::fault`] turns each answer into one of these variants, and
//! callers match on the variant, never on text. Every message is scrubbed of
//! the secrets the request carried before it is stored here.

use std::fmt;
use std::time::Duration;

use crate::metrics::Operation;
use crate::types::{PowerState, ProvisionState};
use crate::version::{ApiVersion, NegotiationError};

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What Ironic said when it refused a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The call that failed.
    pub operation: Operation,
    /// The HTTP status.
    pub status: u16,
    /// Ironic's `faultstring` (or the closest thing the body held).
    pub message: String,
    /// Ironic's `x-openstack-request-id`, to find the call in its logs.
    pub request_id: Option<String>,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} returned HTTP {}: {}", self.operation, self.status, self.message)?;
        if let Some(id) = &self.request_id {
            write!(f, " (request {id})")?;
        }
        Ok(())
    }
}

/// Everything that can go wrong talking to Ironic.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The client was configured wrongly (bad URL, unreadable CA bundle…).
    #[error("invalid Ironic client configuration: {0}")]
    Config(String),
    /// No microversion both sides support.
    #[error(transparent)]
    Version(#[from] NegotiationError),
    /// The call needs a newer microversion than the one negotiated.
    #[error("{feature} needs Ironic API {required}, but the server only offers {negotiated}")]
    Unsupported {
        /// What was asked for.
        feature: &'static str,
        /// The microversion it needs.
        required: ApiVersion,
        /// The microversion in use.
        negotiated: ApiVersion,
    },
    /// The TLS handshake failed: untrusted certificate, wrong name, protocol.
    #[error("TLS handshake with Ironic failed during {operation}: {message}")]
    Tls {
        /// The call that failed.
        operation: Operation,
        /// What rustls reported.
        message: String,
    },
    /// No connection could be made (refused, unreachable, DNS).
    #[error("cannot connect to Ironic during {operation}: {message}")]
    Connect {
        /// The call that failed.
        operation: Operation,
        /// The underlying error chain.
        message: String,
    },
    /// The connection broke before an answer came: Ironic's cheroot server
    /// resets connections once its small listen backlog overflows.
    #[error("connection to Ironic was reset during {operation}: {message}")]
    ConnectionReset {
        /// The call that failed.
        operation: Operation,
        /// The underlying error chain.
        message: String,
    },
    /// The request timed out.
    #[error("Ironic did not answer {operation} in time: {message}")]
    Timeout {
        /// The call that failed.
        operation: Operation,
        /// The underlying error chain.
        message: String,
    },
    /// Any other HTTP-level failure.
    #[error("HTTP failure during {operation}: {message}")]
    Transport {
        /// The call that failed.
        operation: Operation,
        /// The underlying error chain.
        message: String,
    },
    /// 401 or 403: the credentials were refused.
    #[error("Ironic refused the credentials: {0}")]
    Auth(ApiError),
    /// 404: no such node, port or endpoint.
    #[error("not found: {0}")]
    NotFound(ApiError),
    /// 409 NodeLocked: a conductor holds the node's lock. Retryable.
    #[error("node is locked: {0}")]
    NodeLocked(ApiError),
    /// Another 409: a duplicate name, UUID or MAC address. Not retryable.
    #[error("conflict: {0}")]
    Conflict(ApiError),
    /// The node's state does not allow the call (Ironic's InvalidState 409
    /// and InvalidStateRequested 400).
    #[error("invalid state: {0}")]
    InvalidState(ApiError),
    /// 503 NoFreeConductorWorker: the conductor is saturated. Retryable.
    #[error("no free conductor workers: {0}")]
    NoFreeConductorWorkers(ApiError),
    /// Another 503 (a concurrency limit, a temporary failure). Retryable.
    #[error("Ironic is temporarily unavailable: {0}")]
    Unavailable(ApiError),
    /// Any other 4xx: the request itself is wrong.
    #[error("request rejected: {0}")]
    BadRequest(ApiError),
    /// A 5xx other than 503, with Ironic's faultstring.
    #[error("Ironic server error: {0}")]
    Server(ApiError),
    /// A 2xx answer that could not be parsed.
    #[error("unexpected answer to {operation}: {message}")]
    Decode {
        /// The call whose answer was bad.
        operation: Operation,
        /// What was wrong with it.
        message: String,
    },
    /// The node ended in a failure state while we waited for another.
    #[error("node {node} failed: provision state {state}, last error: {}", last_error.as_deref().unwrap_or("none"))]
    ProvisionFailed {
        /// The node waited on.
        node: String,
        /// Where it ended up.
        state: ProvisionState,
        /// Ironic's `last_error`.
        last_error: Option<String>,
    },
    /// A power change ended without reaching the wanted power state.
    #[error("power change of node {node} failed: power state {}, last error: {}",
        state.as_ref().map_or("unknown", |s| s.as_str()), last_error.as_deref().unwrap_or("none"))]
    PowerFailed {
        /// The node waited on.
        node: String,
        /// Its power state now.
        state: Option<PowerState>,
        /// Ironic's `last_error`.
        last_error: Option<String>,
    },
    /// A listing did not end: the server kept sending `next` links that led
    /// back to a page already read, or more pages than any real collection has.
    #[error("listing for {operation} did not end: {fault}")]
    Paging {
        /// The listing.
        operation: Operation,
        /// How it failed to end.
        fault: PagingFault,
    },
    /// The node did not reach the wanted state in time.
    #[error("node {node} did not reach {wanted} within {waited:?}; last seen {current}")]
    WaitTimeout {
        /// The node waited on.
        node: String,
        /// The state waited for.
        wanted: String,
        /// The state last observed.
        current: String,
        /// How long we waited.
        waited: Duration,
    },
}

/// Why a paginated listing was abandoned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PagingFault {
    /// Page `page` ended with `marker`, which an earlier page had ended with:
    /// following it would read the same pages again, forever.
    #[error("page {page} ended with marker {marker}, as an earlier page did")]
    RepeatedMarker {
        /// The repeated marker (an Ironic UUID).
        marker: String,
        /// Which page repeated it, from 1.
        page: usize,
    },
    /// Still more pages after `limit` of them.
    #[error("still more pages after {limit}")]
    TooManyPages {
        /// The page limit that was reached.
        limit: usize,
    },
}

impl Error {
    /// Whether the same call may succeed if simply sent again later. The
    /// client already retried these with backoff before giving up.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::NodeLocked(_)
                | Error::NoFreeConductorWorkers(_)
                | Error::Unavailable(_)
                | Error::Connect { .. }
                | Error::ConnectionReset { .. }
        )
    }

    /// Whether the failure is one of Ironic or of the way to it, not of the request or the
    /// node: the caller should send the request again soon rather than report it as the
    /// node's failure. That is every retryable error (the client gave up retrying it), and
    /// what the client must not repeat on its own but a caller that looks again may:
    /// a timeout or a broken exchange (the call may have been carried out: the caller looks at
    /// the node before deciding again), a 500 (Ironic's own bug or a database hiccup), and a
    /// conflict (someone created the same name, UUID or MAC address at the same moment:
    /// looking it up again finds it).
    ///
    /// Everything else (invalid state, refused credentials, a bad request, a missing node, a
    /// TLS failure, a failed wait) says something about the request or the node that sending
    /// it again cannot change.
    pub fn is_transient(&self) -> bool {
        self.is_retryable()
            || matches!(self, Error::Timeout { .. } | Error::Transport { .. } | Error::Server(_) | Error::Conflict(_))
    }

    /// Whether this is a 404.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound(_))
    }

    /// What Ironic answered, when the error is an API answer.
    pub fn api_error(&self) -> Option<&ApiError> {
        match self {
            Error::Auth(e)
            | Error::NotFound(e)
            | Error::NodeLocked(e)
            | Error::Conflict(e)
            | Error::InvalidState(e)
            | Error::NoFreeConductorWorkers(e)
            | Error::Unavailable(e)
            | Error::BadRequest(e)
            | Error::Server(e) => Some(e),
            _ => None,
        }
    }

    /// The HTTP status, when the error is an API answer.
    pub fn status(&self) -> Option<u16> {
        self.api_error().map(|e| e.status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(status: u16) -> ApiError {
        ApiError { operation: Operation::CreateNode, status, message: "m".into(), request_id: None }
    }

    fn io(operation: Operation) -> (Operation, String) {
        (operation, "broken".to_string())
    }

    #[test]
    fn retryable_errors_are_transient_and_so_are_timeouts_500s_and_conflicts() {
        let (operation, message) = io(Operation::SetProvisionState);
        let transient = [
            Error::NodeLocked(api(409)),
            Error::NoFreeConductorWorkers(api(503)),
            Error::Unavailable(api(503)),
            Error::Connect { operation, message: message.clone() },
            Error::ConnectionReset { operation, message: message.clone() },
            Error::Timeout { operation, message: message.clone() },
            Error::Transport { operation, message: message.clone() },
            Error::Server(api(500)),
            Error::Conflict(api(409)),
        ];
        for err in transient {
            assert!(err.is_transient(), "{err:?}");
        }
    }

    #[test]
    fn failures_of_the_request_or_the_node_are_not_transient() {
        let (operation, message) = io(Operation::SetProvisionState);
        let lasting = [
            Error::InvalidState(api(409)),
            Error::Auth(api(401)),
            Error::NotFound(api(404)),
            Error::BadRequest(api(400)),
            Error::Tls { operation, message: message.clone() },
            Error::Decode { operation, message: message.clone() },
            Error::Config("bad".into()),
            Error::ProvisionFailed { node: "n".into(), state: ProvisionState::DeployFailed, last_error: None },
            Error::WaitTimeout {
                node: "n".into(),
                wanted: "active".into(),
                current: "deploying".into(),
                waited: Duration::from_secs(1),
            },
        ];
        for err in lasting {
            assert!(!err.is_transient(), "{err:?}");
            assert!(!err.is_retryable(), "{err:?}");
        }
    }

    #[test]
    fn what_the_client_retries_itself_is_a_subset_of_what_is_transient() {
        let (operation, message) = io(Operation::GetNode);
        let timeout = Error::Timeout { operation, message };
        assert!(timeout.is_transient() && !timeout.is_retryable(), "a timeout may have acted: never resent blindly");
        assert!(Error::Conflict(api(409)).is_transient() && !Error::Conflict(api(409)).is_retryable());
    }
}
