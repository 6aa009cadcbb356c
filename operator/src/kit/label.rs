//! Metric labels derived from the error variants' names: `Dereference` is `dereference`,
//! `WriteStatus` is `write_status`. [`metric_labels!`](crate::metric_labels) implements
//! [`MetricLabel`](super::runner::MetricLabel) for an error enum from its variants' names, and
//! its match is exhaustive, so a new variant cannot go without its label.

/// Length of `name` in snake case.
pub(crate) const fn snake_len(name: &str) -> usize {
    let bytes = name.as_bytes();
    let (mut i, mut len) = (0, 0);
    while i < bytes.len() {
        if i > 0 && bytes[i].is_ascii_uppercase() {
            len += 1;
        }
        len += 1;
        i += 1;
    }
    len
}

/// `name` (a CamelCase identifier) in snake case, as bytes; `N` is [`snake_len`] of it.
pub(crate) const fn snake<const N: usize>(name: &str) -> [u8; N] {
    let bytes = name.as_bytes();
    let mut out = [0u8; N];
    let (mut i, mut j) = (0, 0);
    while i < bytes.len() && j < N {
        let byte = bytes[i];
        if byte.is_ascii_uppercase() {
            if i > 0 && j + 1 < N {
                out[j] = b'_';
                j += 1;
            }
            out[j] = byte.to_ascii_lowercase();
        } else {
            out[j] = byte;
        }
        i += 1;
        j += 1;
    }
    out
}

/// A CamelCase identifier in snake case, computed at compile time.
macro_rules! snake_case {
    ($name:ident) => {{
        const NAME: &str = stringify!($name);
        const BYTES: [u8; $crate::kit::label::snake_len(NAME)] = $crate::kit::label::snake(NAME);
        const LABEL: &str = match ::core::str::from_utf8(&BYTES) {
            Ok(label) => label,
            Err(_) => panic!("an identifier is ASCII"),
        };
        LABEL
    }};
}
pub(crate) use snake_case;

/// Implements `MetricLabel` for an error enum: each variant's label is its name in snake case.
/// Every variant must be listed (the match is exhaustive).
///
/// `metric_labels!(Error: Dereference, Validate, Apply)` beside the enum.
macro_rules! metric_labels {
    ($error:ty: $($variant:ident),+ $(,)?) => {
        impl $crate::kit::runner::MetricLabel for $error {
            fn metric_label(&self) -> &'static str {
                match self {
                    $(Self::$variant { .. } => $crate::kit::label::snake_case!($variant),)+
                }
            }
        }
    };
}
pub(crate) use metric_labels;

#[cfg(test)]
mod tests {
    #[test]
    fn variant_names_become_snake_case_labels() {
        assert_eq!(crate::kit::label::snake_case!(Dereference), "dereference");
        assert_eq!(crate::kit::label::snake_case!(WriteStatus), "write_status");
        assert_eq!(crate::kit::label::snake_case!(A), "a");
        assert_eq!(crate::kit::label::snake_case!(VersionChange), "version_change");
    }
}
