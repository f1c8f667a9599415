//! The gatekeeper's configuration: the TOML file of domain.md §8 and the checked model the
//! core runs on.

mod model;

pub use model::*;
