//! The `tooltap` binary (to be written).
fn main() {}
