//! The properties of every parser and every pure function of `crds` that takes user input,
//! written once as functions of their input and run by two drivers: the proptest tests of
//! this test target (a bounded number of random cases in every `cargo test`), and the
//! coverage-guided fuzz targets in `fuzz/` (`make fuzz`), which include this folder by path.
//! Each check panics when its property does not hold. Structured input is drawn from bytes
//! through `arbitrary::Unstructured`, so both drivers explore the same space and any input
//! either finds replays in the other; a generator that runs out of bytes returns an error,
//! which is no case rather than a failure.

pub mod annotations;
pub mod hashes;
pub mod pools;
pub mod schema;
pub mod text;
pub mod valid;
pub mod validation;
