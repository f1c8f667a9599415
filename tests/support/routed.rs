//! A routed-call lab for live tests: `rasgk serve` in socket mode with
//! `call_signalling = "routed"`, two regions of one C-LAN each, and call identifiers as the
//! tests write them and tshark prints them.

#![allow(dead_code)] // each test binary uses a different part of the support modules

use std::net::SocketAddr;
use std::path::PathBuf;

use super::server::Served;

/// Two regions on 127.0.NET.x (region 1: 127.1/16, C-LAN `r1` at .11; region 2: 127.2/16,
/// C-LAN `r2` at .21), directly linked; socket mode, routed calls, TTS for aliases 5*; the
/// admin port on 127.0.NET.1:7000. `name` tells the configuration file from other tests'.
pub fn serve(name: &str, net: u8) -> Served {
    let text = format!(
        r#"
        [gatekeeper]
        discovery = "127.0.{net}.1:1719"
        sockets = "tcp"
        call_signalling = "routed"
        call_setup_timeout_s = 10
        seed = 3

        [admin]
        listen = "127.0.{net}.1:7000"

        [[region]]
        id = 1
        networks = ["127.1.0.0/16"]
        [[region]]
        id = 2
        networks = ["127.2.0.0/16"]
        [[link]]
        regions = [1, 2]
        kind = "direct"

        [[clan]]
        name = "r1"
        region = 1
        address = "127.0.{net}.11:1719"
        [[clan]]
        name = "r2"
        region = 2
        address = "127.0.{net}.21:1719"

        [[tts]]
        aliases = ["5*"]
        "#
    );
    let path: PathBuf =
        std::env::temp_dir().join(format!("rasgk-{name}-{}-{net}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let admin: SocketAddr = format!("127.0.{net}.1:7000").parse().unwrap();
    Served::start(&["--config", path.to_str().unwrap()], admin)
}

/// A call identifier of the tests': a version 4 GUID ending in `n`.
pub fn guid(n: u8) -> [u8; 16] {
    let mut g = [0x5A; 16];
    g[6] = 0x40;
    g[15] = n;
    g
}

/// A GUID as tshark writes it.
pub fn guid_text(g: [u8; 16]) -> String {
    let hex: String = g.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}
