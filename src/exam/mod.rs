//! `rasgk exam`, in the making: grading the endpoint under test against what the gatekeeper
//! expects of it. What is here so far is the vocabulary every part of the exam shares:
//!
//! - [`catalogue`]: the checks, each with its stable id, its expectation and where that
//!   comes from (what `--list` will print);
//! - [`verdict`]: a check graded — pass, fail or skipped — with what the endpoint did and
//!   the messages that show it;
//! - [`report`]: the exam's findings per endpoint, written as a terminal table, JSON and
//!   JUnit XML.
//!
//! The drill that runs the checks against a gatekeeper, and the `rasgk exam` command, are
//! not built yet; nothing here is reachable from the command line.

pub mod catalogue;
pub mod command;
pub mod drill;
pub mod engine;
pub mod live;
pub mod report;
pub mod selector;
pub mod sighting;
pub mod simulate;
pub mod status;
pub mod timeline;
pub mod verdict;
