//! Records `fixtures/avaya/ccms.pcap`: the GRQ and the full RRQ of an Avaya phone as
//! rasgk's phone simulator writes them (`Phone::avaya`): extension 4712 at 127.1.0.60:1719,
//! MAC address 00:00:5e:00:53:01 (from the range RFC 7042 sets aside for documentation),
//! the GRQ to the default configuration's discovery address, the RRQ to `clan-1a`, where
//! the GCF sends it. Their `nonStandardData` is Avaya's CCMS under 2.16.840.1.113778.4.2.1:
//! the discovery request `85 01 40`, and a login request laid out as `ras::avaya` models it.
//! Virtual timestamps from 2024-01-01T00:00:00Z, so the file is the same on every run.
//!
//! ```sh
//! cargo run --example record_avaya_fixture -- fixtures/avaya/ccms.pcap
//! ```

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use rasgk::pcap::{self, Datagram};
use rasgk::phone::Phone;
use rasgk::ras::avaya::Mac;

/// 2024-01-01T00:00:00Z.
const EPOCH: Duration = Duration::from_secs(1_704_067_200);

fn run() -> Result<(), String> {
    let out = std::env::args()
        .nth(1)
        .ok_or("usage: record_avaya_fixture OUT.pcap   (e.g. fixtures/avaya/ccms.pcap)")?;
    let config = rasgk::config::embedded_default();
    let discovery = config.gatekeeper.discovery;
    let clan = config
        .clans
        .iter()
        .find(|clan| clan.name == "clan-1a")
        .ok_or("the default configuration has no clan-1a")?
        .address;
    let mut phone = Phone::extension(4712, SocketAddr::from(([127, 1, 0, 60], 1719)));
    phone.avaya = Some(Mac([0x00, 0x00, 0x5e, 0x00, 0x53, 0x01]));
    let datagrams = [(discovery, phone.grq()), (clan, phone.rrq())]
        .into_iter()
        .enumerate()
        .map(|(n, (dst, payload))| Datagram {
            frame: 0,
            time: EPOCH + Duration::from_millis(100 * n as u64),
            src: phone.ras_address,
            dst,
            payload,
        })
        .collect::<Vec<_>>();
    pcap::write_file(&out, &datagrams).map_err(|e| format!("{out}: {e}"))?;
    println!("{out}: GRQ to {discovery}, RRQ to {clan}");
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("record_avaya_fixture: {error}");
            ExitCode::FAILURE
        }
    }
}
