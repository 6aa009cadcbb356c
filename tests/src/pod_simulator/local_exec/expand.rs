//! Kubernetes' `$(VAR)` references in commands, arguments and environment
//! values, expanded as the kubelet expands them.

/// Expands `$(NAME)` with `lookup`; a reference to an unknown name stays as
/// written, `$$` is a literal `$`, and any other `$` is kept.
pub(super) fn expand(input: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('(') {
            match inner.find(')') {
                Some(end) => {
                    let name = &inner[..end];
                    out.push_str(&lookup(name).unwrap_or_else(|| format!("$({name})")));
                    rest = &inner[end + 1..];
                }
                None => {
                    out.push_str("$(");
                    rest = inner;
                }
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// Whether `name` may be an environment variable: the kubelet skips the
/// `envFrom` keys that may not (`[-._a-zA-Z][-._a-zA-Z0-9]*`).
pub(super) fn valid_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    let word = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
    chars.next().is_some_and(|c| word(c) && !c.is_ascii_digit()) && chars.all(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "A" => Some("alpha".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn references_expand_and_unknown_ones_stay() {
        assert_eq!(expand("$(A)/x", env), "alpha/x");
        assert_eq!(expand("[$(EMPTY)]", env), "[]");
        assert_eq!(expand("$(B) and $(A)", env), "$(B) and alpha");
        assert_eq!(expand("no references", env), "no references");
    }

    #[test]
    fn dollars_escape_and_stray_dollars_stay() {
        assert_eq!(expand("$$(A)", env), "$(A)");
        assert_eq!(expand("cost: 5$", env), "cost: 5$");
        assert_eq!(expand("$HOME $1", env), "$HOME $1");
        assert_eq!(expand("$(A", env), "$(A");
        assert_eq!(expand("é$(A)é", env), "éalphaé");
    }

    #[test]
    fn environment_names_follow_the_kubelet() {
        assert!(valid_env_name("LOG_LEVEL"));
        assert!(valid_env_name("my.key-1"));
        assert!(!valid_env_name("1KEY"));
        assert!(!valid_env_name(""));
        assert!(!valid_env_name("A=B"));
    }
}
