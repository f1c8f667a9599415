//! Helpers shared by the integration tests.

pub mod captures;
pub mod messages;
pub mod server;
pub mod tshark;
