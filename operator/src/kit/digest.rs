//! Short SHA-256 digests, by which a value is remembered or compared without being kept (a
//! token, a confirmation, a password's hash), and bounded lists of them, newest last.

use sha2::{Digest, Sha256};

/// The first `bytes` bytes (at most 32) of the SHA-256 of `data`, in hex.
pub(crate) fn short(data: &[u8], bytes: usize) -> String {
    let digest = Sha256::digest(data);
    hex::encode(&digest[..bytes.min(digest.len())])
}

/// `list` after `added` (in order): each added entry moved to the end (once), empty entries
/// dropped, then only the newest `kept`.
pub(crate) fn remember<'a>(list: impl IntoIterator<Item = &'a str>, added: &[&'a str], kept: usize) -> Vec<String> {
    let mut remembered: Vec<&str> = list.into_iter().filter(|d| !d.is_empty() && !added.contains(d)).collect();
    for entry in added {
        if !entry.is_empty() && !remembered.contains(entry) {
            remembered.push(entry);
        }
    }
    let skip = remembered.len().saturating_sub(kept);
    remembered[skip..].iter().map(|d| (*d).to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_digest_is_the_hex_of_the_first_bytes_and_never_more_than_the_whole() {
        assert_eq!(short(b"abc", 4), "ba7816bf");
        assert_eq!(short(b"abc", 64).len(), 64);
        assert_eq!(short(b"abc", 0), "");
    }

    #[test]
    fn a_remembered_entry_moves_to_the_end_and_the_oldest_go_past_the_bound() {
        assert_eq!(remember(["a", "b", "c"], &["a"], 8), ["b", "c", "a"]);
        assert_eq!(remember(["a", "b", "c"], &["d", "e"], 3), ["c", "d", "e"]);
        assert_eq!(remember(["", "a"], &[""], 8), ["a"]);
        assert_eq!(remember([], &["a", "a"], 8), ["a"]);
    }
}
