//! Helpers shared by the CLI tests.

#[path = "../../../sparsec/tests/common/shared_data.rs"]
mod shared_data;
pub use shared_data::shared_data;
