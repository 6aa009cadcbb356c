//! Every input that ever broke a property, here or under the fuzzer, as a plain test.

use crate::checks;

#[test]
fn a_quantity_with_a_fraction_and_the_smallest_exponent() {
    checks::text::quantity("1.5e-2147483648");
}
