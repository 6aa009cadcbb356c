//! Turning Ironic's error answers into typed [`Error`]s.
//!
//! Ironic has three error body formats, all recorded from Ironic 39:
//! - the API's own: `{"error_message": "<JSON string>"}` whose inner document
//!   holds `faultstring` (a JSON document inside a JSON string);
//! - webob's, for 406 and friends: the same wrapper around
//!   `{"code", "title", "description"}`;
//! - the HTTP basic auth middleware's: `{"error": {"message", "code"}}`.
//!
//! The status code alone does not say whether to retry: Ironic's
//! `InvalidState` and `NodeLocked` are both 409 and both subclass `Conflict`,
//! and `InvalidStateRequested` is a 400. The class name never reaches the
//! wire, so the message decides, using the fixed wording of Ironic's
//! exception templates (`ironic/common/exception.py`).

use reqwest::StatusCode;
use serde_json::Value;

use crate::error::{ApiError, Error};
use crate::metrics::Operation;

/// The longest raw body quoted in an error when it is not Ironic's format.
const MAX_RAW_BODY: usize = 512;

/// The human-readable message in an Ironic error body.
pub(crate) fn fault_message(body: &[u8]) -> Option<String> {
    let doc: Value = serde_json::from_slice(body).ok()?;
    if let Some(inner) = doc.get("error_message") {
        return match inner {
            // The usual case: a JSON document serialised into a string.
            Value::String(s) => match serde_json::from_str::<Value>(s) {
                Ok(inner @ Value::Object(_)) => message_in(&inner).or_else(|| Some(s.clone())),
                _ => Some(s.clone()),
            },
            other => message_in(other),
        };
    }
    doc.get("error").and_then(message_in)
}

fn message_in(doc: &Value) -> Option<String> {
    ["faultstring", "description", "message", "title"]
        .iter()
        .find_map(|k| doc.get(*k)?.as_str().filter(|s| !s.is_empty()))
        .map(str::to_owned)
}

/// The message to report for a failed answer: Ironic's fault, else the start
/// of the raw body, else the status reason.
pub(crate) fn message_for(status: StatusCode, body: &[u8]) -> String {
    if let Some(msg) = fault_message(body) {
        return msg;
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return status.canonical_reason().unwrap_or("no message").to_owned();
    }
    let mut end = text.len().min(MAX_RAW_BODY);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// The typed error for a non-success answer.
pub(crate) fn classify(operation: Operation, status: StatusCode, message: String, request_id: Option<String>) -> Error {
    let lower = message.to_ascii_lowercase();
    let api = ApiError { operation, status: status.as_u16(), message, request_id };
    match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Error::Auth(api),
        StatusCode::NOT_FOUND => Error::NotFound(api),
        // NodeLocked: "Node X is locked by host Y, please retry after ..."
        StatusCode::CONFLICT if lower.contains("is locked by host") => Error::NodeLocked(api),
        // Duplicates (name, UUID, MAC): "A node with name X already exists." Matched
        // before the state rule: a name may itself contain "state".
        StatusCode::CONFLICT if lower.contains("already exists") => Error::Conflict(api),
        // Every other 409 that mentions a state is an InvalidState subclass;
        // the rest are conflicts of other kinds.
        StatusCode::CONFLICT if lower.contains("state") => Error::InvalidState(api),
        StatusCode::CONFLICT => Error::Conflict(api),
        // InvalidStateRequested: 'The requested action "x" can not be
        // performed on node "y" while it is in state "z".', and the refusal to
        // delete a provisioned node: 'Can not delete node "x" while it is in
        // provision state "active".'
        StatusCode::BAD_REQUEST
            if lower.contains("can not be performed on node")
                || (lower.contains("can not delete node") && lower.contains("while it is in")) =>
        {
            Error::InvalidState(api)
        }
        StatusCode::SERVICE_UNAVAILABLE if lower.contains("conductor workers") => Error::NoFreeConductorWorkers(api),
        StatusCode::SERVICE_UNAVAILABLE => Error::Unavailable(api),
        s if s.is_server_error() => Error::Server(api),
        _ => Error::BadRequest(api),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_json_string_inside_json() {
        let body = br#"{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"Node nope could not be found.\", \"debuginfo\": null}"}"#;
        assert_eq!(fault_message(body).as_deref(), Some("Node nope could not be found."));
    }

    #[test]
    fn parses_webob_and_basic_auth_formats() {
        let webob = br#"{"error_message": "{\"code\": 406, \"title\": \"Not Acceptable\", \"description\": \"Version 1.999 was requested\"}"}"#;
        assert_eq!(fault_message(webob).as_deref(), Some("Version 1.999 was requested"));
        let basic = br#"{"error":{"message":"Incorrect username or password","code":401}}"#;
        assert_eq!(fault_message(basic).as_deref(), Some("Incorrect username or password"));
    }

    #[test]
    fn falls_back_to_plain_strings_and_raw_bodies() {
        let plain = br#"{"error_message": "something broke"}"#;
        assert_eq!(fault_message(plain).as_deref(), Some("something broke"));
        assert_eq!(message_for(StatusCode::BAD_GATEWAY, b"<html>bad gateway</html>"), "<html>bad gateway</html>");
        assert_eq!(message_for(StatusCode::BAD_GATEWAY, b""), "Bad Gateway");
        let long = "é".repeat(MAX_RAW_BODY);
        assert!(message_for(StatusCode::BAD_GATEWAY, long.as_bytes()).len() <= MAX_RAW_BODY);
    }

    /// Recorded from Ironic 39 (`tests/fixtures/record.sh`): the status each
    /// was answered with and the variant it must become.
    #[test]
    fn recorded_error_answers() {
        macro_rules! recorded {
            ($name:literal) => {
                include_bytes!(concat!("../tests/fixtures/", $name, ".json")).as_slice()
            };
        }
        let cases = [
            (recorded!("error_node_not_found"), 404, "NotFound", "could not be found"),
            (recorded!("error_node_locked"), 409, "NodeLocked", "is locked by host"),
            (recorded!("error_duplicate_name"), 409, "Conflict", "already exists"),
            (recorded!("error_delete_active"), 409, "InvalidState", "Can not delete node"),
            (recorded!("error_invalid_state_requested"), 400, "InvalidState", "can not be performed"),
            (recorded!("error_unauthorized"), 401, "Auth", "Incorrect username or password"),
            (recorded!("error_version_not_acceptable"), 406, "BadRequest", "minor version is not supported"),
        ];
        for (body, status, variant, text) in cases {
            let status = StatusCode::from_u16(status).unwrap();
            let message = message_for(status, body);
            assert!(message.contains(text), "{message}");
            let err = classify(Operation::SetProvisionState, status, message, None);
            assert!(format!("{err:?}").starts_with(&format!("{variant}(")), "{variant}: {err:?}");
            assert_eq!(err.is_retryable(), variant == "NodeLocked", "{err:?}");
        }
    }

    fn kind(status: u16, message: &str) -> Error {
        let status = StatusCode::from_u16(status).unwrap();
        classify(Operation::SetProvisionState, status, message.to_owned(), None)
    }

    #[test]
    fn classifies_by_status_and_message() {
        assert!(matches!(
            kind(409, "Node 1 is locked by host c1, please retry after the current operation is completed."),
            Error::NodeLocked(_)
        ));
        assert!(matches!(
            kind(409, "Can not delete node \"1\" while it is in provision state \"active\"."),
            Error::InvalidState(_)
        ));
        assert!(matches!(kind(409, "A node with name n1 already exists."), Error::Conflict(_)));
        assert!(
            matches!(kind(409, "A node with name metal3~statefulset-0 already exists."), Error::Conflict(_)),
            "a name with \"state\" in it is still a duplicate"
        );
        assert!(matches!(
            kind(400, "Can not delete node \"1\" while it is in provision state \"active\"."),
            Error::InvalidState(_)
        ));
        assert!(matches!(
            kind(
                400,
                "The requested action \"active\" can not be performed on node \"1\" while it is in state \"enroll\"."
            ),
            Error::InvalidState(_)
        ));
        assert!(matches!(kind(400, "Invalid driver_info"), Error::BadRequest(_)));
        assert!(matches!(
            kind(503, "Requested action cannot be performed due to lack of free conductor workers."),
            Error::NoFreeConductorWorkers(_)
        ));
        assert!(matches!(kind(503, "The concurrent action limit has been reached."), Error::Unavailable(_)));
        assert!(matches!(kind(401, "Incorrect username or password"), Error::Auth(_)));
        assert!(matches!(kind(404, "Node x could not be found."), Error::NotFound(_)));
        assert!(matches!(kind(500, "cannot access local variable 'auto_lessee'"), Error::Server(_)));
        assert!(matches!(kind(406, "Version 1.999 was requested"), Error::BadRequest(_)));
    }
}
