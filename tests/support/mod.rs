//! Helpers shared by the integration tests.

pub mod messages;
pub mod tshark;
