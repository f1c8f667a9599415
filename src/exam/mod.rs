//! `rasgk exam`: grading the endpoint under test against what the gatekeeper expects of it
//! (docs/exam.md). The parts:
//!
//! - [`catalogue`]: the checks, each with its stable id, its expectation and where that
//!   comes from (what `--list` prints);
//! - [`drill`]: which checks run, in which order, how long each waits, the time to live;
//! - [`selector`]: which endpoints (`--endpoint`);
//! - [`sighting`]: a RAS message the gatekeeper received or sent, as the exam sees it;
//! - [`engine`]: the exam with no I/O — what the gatekeeper saw in, the drill's actions
//!   out, every check graded;
//! - [`verdict`]: a check graded — pass, fail or skipped — with what the endpoint did and
//!   the messages that show it;
//! - [`report`] and [`timeline`]: the findings as a table, JSON, JUnit XML and HTML;
//! - [`live`]: the exam against a child `rasgk serve`, over its admin port; [`status`]: its
//!   progress for `/api/exam`; [`simulate`]: simulated phones on real sockets;
//! - [`command`]: the `rasgk exam` command, its options and exit status.

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
