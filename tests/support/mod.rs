//! Helpers shared by the integration tests.

pub mod captures;
pub mod messages;
pub mod tshark;
