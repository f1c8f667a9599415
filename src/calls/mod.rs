//! Outbound calls through trunks (docs/rules.md §10): which node of the cluster places a call.
//!
//! Pure rules and their bookkeeping, no I/O and no clock; the gatekeeper core asks them when
//! an ARQ's `destinationInfo` is no registered alias.
//!
//! ```text
//!  dialled digits ──pattern──▶ route pattern ──▶ trunk ─────────────┐ calling node = phone's
//!                                          └──▶ route list ─groups─▶┤ calling node = list's
//!                                                                   ▼
//!                                    route local: the calling node if the trunk is active
//!                                    there, else one of the trunk's nodes at random
//! ```
//!
//! - [`pattern`]: digit analysis (`X`, `!`, `.`, literals) and the most specific match.
//! - [`route`]: the calling node, route-group distribution (top-down, circular) and the
//!   route-local rule.
//! - [`book`]: the calls in progress, keyed by endpoint and `callIdentifier`, and the
//!   counts per trunk and node and of intra-cluster hops.
//! - [`members`]: H.323 gateways registered by RRQ, trunk members whose `supportedPrefixes`
//!   are route patterns, and the calls routed to them.
//!
//! This follows Cisco's description of how CUCM (8.x and later) picks the node for SIP
//! trunk and H.323 gateway calls, including "Run on all active Unified CM nodes".

pub mod book;
pub mod members;
pub mod pattern;
pub mod route;

pub use book::{ActiveCall, CallKey, Calls, NoRoute, TrunkCount};
pub use members::{Member, MemberCall, TrunkMembers};
pub use pattern::{best_match, DigitPattern};
pub use route::{calling_node, pick_trunk, route_local, Route};
