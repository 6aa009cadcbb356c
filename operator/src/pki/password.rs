//! Generated passwords.

use rand::seq::IndexedRandom;

/// Length of generated passwords.
const PASSWORD_LENGTH: usize = 32;
/// ironic-standalone-operator's alphabet: safe in URLs, shells and config files.
const PASSWORD_ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_";

/// A random password of 32 characters from ironic-standalone-operator's alphabet.
pub(crate) fn generate_password() -> String {
    let mut rng = rand::rng();
    (0..PASSWORD_LENGTH).filter_map(|_| PASSWORD_ALPHABET.choose(&mut rng).map(|b| *b as char)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_long_random_and_url_safe() {
        let (a, b) = (generate_password(), generate_password());
        assert_eq!(a.len(), PASSWORD_LENGTH);
        assert_ne!(a, b);
        assert!(a.bytes().all(|c| PASSWORD_ALPHABET.contains(&c)));
    }
}
