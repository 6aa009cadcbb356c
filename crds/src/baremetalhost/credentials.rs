//! The content of a host's BMC credentials Secret (`spec.bmc.credentialsName`): a `username`
//! and a `password`, as baremetal-operator requires them. Messages name the keys, never the
//! values.

use k8s_openapi::ByteString;
use std::collections::BTreeMap;
use thiserror::Error;

/// Key of the user name in a BMC credentials Secret.
pub const USERNAME_KEY: &str = "username";
/// Key of the password in a BMC credentials Secret.
pub const PASSWORD_KEY: &str = "password";

/// Why a BMC credentials Secret cannot be used.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum BmcCredentialsError {
    /// A key is absent.
    #[error("the BMC credentials Secret has no {0}")]
    Missing(&'static str),
    /// A key is present but empty (the user name: blank).
    #[error("the BMC credentials Secret has an empty {0}")]
    Empty(&'static str),
    /// A value is not UTF-8 text.
    #[error("the {0} in the BMC credentials Secret is not UTF-8 text")]
    NotText(&'static str),
}

/// Checks the `data` of a BMC credentials Secret: both keys present, UTF-8, the user name not
/// blank and the password not empty (baremetal-operator refuses an empty password before
/// calling Ironic; a password of spaces is a password). Returns the first problem.
pub fn validate_bmc_credentials(data: &BTreeMap<String, ByteString>) -> Result<(), BmcCredentialsError> {
    for key in [USERNAME_KEY, PASSWORD_KEY] {
        let value = data.get(key).ok_or(BmcCredentialsError::Missing(key))?;
        let text = std::str::from_utf8(&value.0).map_err(|_| BmcCredentialsError::NotText(key))?;
        let empty = if key == USERNAME_KEY { text.trim().is_empty() } else { text.is_empty() };
        if empty {
            return Err(BmcCredentialsError::Empty(key));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Secret's keys and values.
    type Pairs<'a> = &'a [(&'a str, &'a [u8])];

    fn data(pairs: Pairs<'_>) -> BTreeMap<String, ByteString> {
        pairs.iter().map(|(k, v)| (k.to_string(), ByteString(v.to_vec()))).collect()
    }

    #[test]
    fn credentials_need_a_user_name_and_a_non_empty_password() {
        use BmcCredentialsError::*;
        let cases: [(&str, Pairs<'_>, Result<(), BmcCredentialsError>); 8] = [
            ("both set", &[("username", b"admin"), ("password", b"pw")], Ok(())),
            ("a password of spaces is a password", &[("username", b"admin"), ("password", b"  ")], Ok(())),
            ("empty password", &[("username", b"admin"), ("password", b"")], Err(Empty("password"))),
            ("no password", &[("username", b"admin")], Err(Missing("password"))),
            ("blank user name", &[("username", b" "), ("password", b"pw")], Err(Empty("username"))),
            ("no user name", &[("password", b"pw")], Err(Missing("username"))),
            ("binary password", &[("username", b"admin"), ("password", &[0xff, 0xfe])], Err(NotText("password"))),
            ("nothing", &[], Err(Missing("username"))),
        ];
        for (case, pairs, expected) in cases {
            assert_eq!(validate_bmc_credentials(&data(pairs)), expected, "{case}");
        }
    }

    #[test]
    fn messages_never_carry_the_values() {
        let err = validate_bmc_credentials(&data(&[("username", b"admin"), ("password", b"")])).expect_err("empty");
        assert_eq!(err.to_string(), "the BMC credentials Secret has an empty password");
    }
}
