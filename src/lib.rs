//! rasgk: an H.323 RAS gatekeeper emulator.
//!
//! It spreads IP phones over C-LAN interfaces by Avaya Communication Manager's rules and
//! places outbound trunk calls across cluster nodes by Cisco CUCM's "route local" rule.
//!
//! - [`admin_client`]: the admin port's views read over HTTP (status, storm, bench).
//! - [`allocator`]: the allocator setting that lets freed reply chunks go back to the system.
//! - [`bench`]: `rasgk bench`, rasgk against the UDP echo ceiling in one run.
//! - [`calls`]: outbound trunk calls (no I/O): digit analysis, route lists, route local.
//! - [`config`]: the TOML configuration, checked into the model the gatekeeper runs on.
//! - [`exam`]: grading an endpoint under test (in the making: its checks and reports).
//! - [`gatekeeper`]: the protocol core (no I/O): C-LAN choice, registration, AGL, TTS sockets.
//! - [`plan`]: `rasgk plan`, phones against the gatekeeper core in virtual time, charted.
//! - [`phone`]: a simulated phone's side of RAS (no I/O), for tests, examples and storms.
//! - [`phone_timing`]: how long a simulated phone waits on its call signalling (storm, plan).
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
//! - [`roster`]: which phone is which (region, address, TTS, calls), shared by `rasgk storm`
//!   and `rasgk plan`.
//! - [`sockets`]: UDP sockets with the options a storm needs, and the open-file limit, for
//!   `rasgk serve` and `rasgk storm`.

pub mod admin_client;
pub mod allocator;
pub mod bench;
pub mod calls;
pub mod config;
pub mod exam;
pub mod gatekeeper;
pub mod inspect;
pub mod markup;
pub mod pcap;
pub mod phone;
pub mod phone_timing;
pub mod plan;
pub mod q931;
pub mod ras;
pub mod replay;
pub mod roster;
pub mod server;
pub mod simulated_phone;
pub mod sockets;
pub mod status;
pub mod storm;
pub mod tpkt;
