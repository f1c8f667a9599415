//! rasgk: an H.323 RAS gatekeeper emulator.
//!
//! It spreads IP phones over C-LAN interfaces by Avaya Communication Manager's rules and
//! places outbound trunk calls across cluster nodes by Cisco CUCM's "route local" rule.
//!
//! - [`allocator`]: the allocator setting that lets freed reply chunks go back to the system.
//! - [`bench`]: `rasgk bench`, rasgk against the UDP echo ceiling in one run.
//! - [`calls`]: outbound trunk calls (no I/O): digit analysis, route lists, route local.
//! - [`config`]: the TOML configuration, checked into the model the gatekeeper runs on.
//! - [`gatekeeper`]: the protocol core (no I/O): C-LAN choice, registration, AGL, TTS sockets.
//! - [`plan`]: `rasgk plan`, phones against the gatekeeper core in virtual time, charted.
//! - [`phone`]: a simulated phone's side of RAS (no I/O), for tests, examples and storms.
//! - [`ras`]: H.225.0 RAS messages on the wire (ALIGNED PER), generated from `asn1/`.
//! - [`pcap`]: reading and writing captures of UDP datagrams (and TCP segments).
//! - [`q931`]: H.225.0 call signalling on the wire (Q.931 and its `H323-UserInformation`).
//! - [`server`]: the tokio glue: UDP sockets per C-LAN, the admin port, shutdown.
//! - [`status`]: `rasgk status`, the admin port's views as a terminal table.
//! - [`storm`]: `rasgk storm`, a registration storm of simulated phones against any gatekeeper.
//! - [`tpkt`]: TPKT framing (RFC 1006) of what phones send on their signalling sockets.
//! - [`inspect`]: RAS messages of a capture as lines or JSON (`rasgk decode`).
//! - [`replay`]: a capture's requests sent again to a gatekeeper, replies compared
//!   (`rasgk replay`).

pub mod allocator;
pub mod bench;
pub mod calls;
pub mod config;
pub mod gatekeeper;
pub mod inspect;
pub mod pcap;
pub mod phone;
pub mod plan;
pub mod q931;
pub mod ras;
pub mod replay;
pub mod server;
pub mod status;
pub mod storm;
pub mod tpkt;
