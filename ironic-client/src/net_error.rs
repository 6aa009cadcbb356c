//! Classifying failures below HTTP: TLS, connects, resets, timeouts.
//!
//! reqwest reports them all as one error type; what happened is only visible
//! in its source chain, so we walk it.

use std::error::Error as StdError;
use std::io;

use crate::error::Error;
use crate::metrics::Operation;

/// The typed error for a reqwest failure during `operation`.
pub(crate) fn from_reqwest(operation: Operation, err: &reqwest::Error) -> Error {
    let message = chain_message(err);
    // TLS first: a refused certificate also surfaces as a connect error, and
    // retrying it would only delay the clear answer.
    if find_rustls_error(err).is_some() {
        Error::Tls { operation, message }
    } else if err.is_timeout() {
        Error::Timeout { operation, message }
    } else if is_reset(err) {
        Error::ConnectionReset { operation, message }
    } else if err.is_connect() {
        Error::Connect { operation, message }
    } else {
        Error::Transport { operation, message }
    }
}

/// Every error of the chain, yielding the inner error of custom `io::Error`s
/// too: `io::Error::source` skips over it, and that is where tokio-rustls
/// puts the `rustls::Error`.
fn chain<'a>(err: &'a (dyn StdError + 'static)) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    let mut next = Some(err);
    std::iter::from_fn(move || {
        let current = next?;
        next = match current.downcast_ref::<io::Error>().and_then(io::Error::get_ref) {
            Some(inner) => Some(inner),
            None => current.source(),
        };
        Some(current)
    })
}

fn find_rustls_error(err: &reqwest::Error) -> Option<&rustls::Error> {
    chain(err).find_map(|e| e.downcast_ref::<rustls::Error>())
}

/// Whether the connection broke under the request: a reset (what cheroot
/// does when its listen backlog overflows), an abort, a broken pipe, or the
/// server closing a kept-alive connection just as we reused it.
fn is_reset(err: &reqwest::Error) -> bool {
    chain(err).any(|e| {
        if let Some(io) = e.downcast_ref::<io::Error>() {
            return matches!(
                io.kind(),
                io::ErrorKind::ConnectionReset
                    | io::ErrorKind::ConnectionAborted
                    | io::ErrorKind::BrokenPipe
                    | io::ErrorKind::UnexpectedEof
            );
        }
        e.downcast_ref::<hyper::Error>().is_some_and(hyper::Error::is_incomplete_message)
    })
}

/// "outer: inner: innermost", without the repeats hyper and reqwest produce.
fn chain_message(err: &reqwest::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for e in chain(err) {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
    }
    parts.join(": ")
}
