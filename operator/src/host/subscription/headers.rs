//! The HTTP headers a subscription's BMC sends with every event, from the Secret its spec names
//! in its own namespace: each key a header name, each value its value. Their values are secret
//! (an `Authorization` header): they go to Ironic and never into a status, an Event or a log.

use crate::kit::KubeError;
use crate::kit::error::Verb;
use crds::bmceventsubscription::BMCEventSubscriptionSpec;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use std::collections::BTreeMap;

crate::install::rbac::require_access!(crate::install::rbac::table::HOST, Secret: Get);

/// At most this many headers, of at most this many bytes together: a BMC holds them.
const MAX_HEADERS: usize = 32;
const MAX_BYTES: usize = 8 << 10;

/// The headers, or why there are none to send.
pub(super) enum Headers {
    Read(Vec<BTreeMap<String, String>>),
    /// For the user: the Secret is missing, or holds what is no HTTP header.
    Unusable(String),
}

impl Headers {
    /// The values, to scrub from anything Ironic answers.
    pub(super) fn values(&self) -> Vec<&str> {
        match self {
            Headers::Read(headers) => headers.iter().flat_map(|h| h.values().map(String::as_str)).collect(),
            Headers::Unusable(_) => Vec::new(),
        }
    }
}

/// The headers of `spec`, read from `namespace` only, whatever namespace the reference names
/// (the webhook refuses another; an object admitted without it cannot reach across).
pub(super) async fn read(
    client: &kube::Client,
    namespace: &str,
    spec: &BMCEventSubscriptionSpec,
) -> Result<Headers, KubeError> {
    let Some(name) = spec.http_headers_ref.as_ref().and_then(|r| r.name.clone()).filter(|n| !n.is_empty()) else {
        return Ok(Headers::Read(Vec::new()));
    };
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let Some(secret) = api.get_opt(&name).await.map_err(KubeError::of::<Secret>(Verb::Get, &name))? else {
        return Ok(Headers::Unusable(format!("the Secret {name} of the HTTP headers is not in this namespace")));
    };
    let data = secret.data.unwrap_or_default();
    let pairs = data.iter().map(|(k, v)| (k.as_str(), v.0.as_slice()));
    Ok(match checked(pairs) {
        Ok(headers) => Headers::Read(headers),
        Err(problem) => Headers::Unusable(format!("the Secret {name} holds no usable HTTP headers: {problem}")),
    })
}

/// The headers, one map per header as Ironic takes them, or what is wrong (naming keys only,
/// never values).
fn checked<'a>(pairs: impl Iterator<Item = (&'a str, &'a [u8])>) -> Result<Vec<BTreeMap<String, String>>, String> {
    let mut headers = Vec::new();
    let mut bytes = 0usize;
    for (name, value) in pairs {
        if name.is_empty() || !name.bytes().all(is_token) {
            return Err(format!("{name:?} is not an HTTP header name"));
        }
        // Visible ASCII, spaces and tabs only: a line break would forge headers, and anything
        // else Python's repr (in Ironic's error) would escape past any scrubbing.
        if !value.iter().all(|b| matches!(b, b' ' | b'\t' | 0x21..=0x7e)) {
            return Err(format!("the value of {name} holds a character other than visible ASCII, spaces and tabs"));
        }
        let value = String::from_utf8_lossy(value);
        bytes = bytes.saturating_add(name.len()).saturating_add(value.len());
        headers.push(BTreeMap::from([(name.to_string(), value.to_string())]));
    }
    if headers.len() > MAX_HEADERS || bytes > MAX_BYTES {
        return Err(format!("at most {MAX_HEADERS} headers of {MAX_BYTES} bytes together"));
    }
    Ok(headers)
}

/// RFC 9110's `tchar`.
fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(pairs: &[(&str, &str)]) -> Result<Vec<BTreeMap<String, String>>, String> {
        checked(pairs.iter().map(|(k, v)| (*k, v.as_bytes())))
    }

    #[test]
    fn each_key_is_one_header() {
        let headers = check(&[("Authorization", "Bearer abc"), ("X-Tenant", "7")]).expect("valid");
        assert_eq!(headers.len(), 2);
        assert_eq!(headers[0].get("Authorization").map(String::as_str), Some("Bearer abc"));
    }

    #[test]
    fn what_would_forge_or_break_a_request_is_refused_without_showing_the_value() {
        for pairs in
            [[("Bad Name", "secret")], [("", "secret")], [("X-A", "secret\r\nX-Evil: 1")], [("X-A", "secret\u{a0}x")]]
        {
            let problem = check(&pairs).expect_err("refused");
            assert!(!problem.contains("secret"), "{problem}");
        }
        let many: Vec<(String, String)> = (0..=MAX_HEADERS).map(|i| (format!("X-{i}"), "v".into())).collect();
        assert!(checked(many.iter().map(|(k, v)| (k.as_str(), v.as_bytes()))).is_err());
    }
}
