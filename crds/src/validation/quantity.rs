//! Just enough of Kubernetes' resource quantities to compare storage sizes.

use thiserror::Error;

/// Why a quantity could not be read.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum QuantityError {
    /// The text is not `<number><suffix>`.
    #[error("{0:?} is not a quantity such as 10Gi or 500M")]
    Malformed(String),
    /// The value does not fit in 128 bits.
    #[error("{0:?} is too large")]
    Overflow(String),
}

/// Reads a storage quantity (`10Gi`, `500M`, `1e9`, `1073741824`) as a whole number of bytes,
/// rounding fractions up as Kubernetes does for storage.
pub fn parse_quantity_bytes(s: &str) -> Result<u128, QuantityError> {
    let s = s.trim();
    let malformed = || QuantityError::Malformed(s.to_string());
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    if number.is_empty() {
        return Err(malformed());
    }
    // (multiplier numerator, power of ten) keeps the arithmetic exact for decimal exponents.
    let (multiplier, exp10): (u128, i32) = match suffix {
        "" => (1, 0),
        "Ki" => (1 << 10, 0),
        "Mi" => (1 << 20, 0),
        "Gi" => (1 << 30, 0),
        "Ti" => (1 << 40, 0),
        "Pi" => (1 << 50, 0),
        "Ei" => (1 << 60, 0),
        "k" => (1, 3),
        "M" => (1, 6),
        "G" => (1, 9),
        "T" => (1, 12),
        "P" => (1, 15),
        "E" => (1, 18),
        other => {
            let exp = other.strip_prefix('e').or_else(|| other.strip_prefix('E')).ok_or_else(malformed)?;
            (1, exp.parse().map_err(|_| malformed())?)
        }
    };
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if frac.contains('.') || (whole.is_empty() && frac.is_empty()) {
        return Err(malformed());
    }
    let digits: u128 = format!("{whole}{frac}").parse().map_err(|_| QuantityError::Overflow(s.to_string()))?;
    // The exponent is the user's (`1.5e-2147483648`): saturating, since a number that small
    // rounds up to one byte either way.
    let exp = exp10.saturating_sub(i32::try_from(frac.len()).unwrap_or(i32::MAX));
    let overflow = || QuantityError::Overflow(s.to_string());
    let scaled = digits.checked_mul(multiplier).ok_or_else(overflow)?;
    if exp >= 0 {
        let pow = 10u128.checked_pow(exp.unsigned_abs()).ok_or_else(overflow)?;
        scaled.checked_mul(pow).ok_or_else(overflow)
    } else {
        match 10u128.checked_pow(exp.unsigned_abs()) {
            Some(pow) => Ok(scaled.div_ceil(pow)),
            // A divisor past 128 bits is larger than any `scaled`: less than a byte, rounded up.
            None => Ok(u128::from(scaled > 0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_and_decimal_suffixes() {
        assert_eq!(parse_quantity_bytes("10Gi"), Ok(10 * (1 << 30)));
        assert_eq!(parse_quantity_bytes("500M"), Ok(500_000_000));
        assert_eq!(parse_quantity_bytes("1.5Gi"), Ok(3 * (1 << 29)));
        assert_eq!(parse_quantity_bytes("1e3"), Ok(1000));
        assert_eq!(parse_quantity_bytes("2048"), Ok(2048));
        assert_eq!(parse_quantity_bytes("0.5k"), Ok(500));
    }

    #[test]
    fn tiny_quantities_round_up_to_a_byte_whatever_their_exponent() {
        assert_eq!(parse_quantity_bytes("1.5e-2147483648"), Ok(1));
        assert_eq!(parse_quantity_bytes("1e-39"), Ok(1));
        assert_eq!(parse_quantity_bytes("1e-38"), Ok(1));
        assert_eq!(parse_quantity_bytes("0.0e-2147483648"), Ok(0));
        assert_eq!(parse_quantity_bytes("15e-1"), Ok(2));
    }

    #[test]
    fn malformed_quantities_are_rejected() {
        assert!(parse_quantity_bytes("Gi").is_err());
        assert!(parse_quantity_bytes("10GB").is_err());
        assert!(parse_quantity_bytes("1.2.3Gi").is_err());
        assert!(parse_quantity_bytes("").is_err());
    }
}
