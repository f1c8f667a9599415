//! Helpers shared by the integration tests.

pub mod browser;
pub mod captures;
pub mod core;
pub mod exam_world;
pub mod fixtures;
pub mod lab;
pub mod messages;
pub mod netns;
pub mod rate;
pub mod routed;
pub mod server;
pub mod strict;
pub mod tcp;
pub mod tshark;
