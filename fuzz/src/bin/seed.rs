//! Writes the seed corpus of the `decode` target: the encodings of the messages the benches
//! measure, plus the UDP payloads of the RAS captures given on the command line.
//!
//! `cargo run --bin seed -- <corpus dir> <capture.pcap>...` (see `fuzz/seed`).

use std::path::PathBuf;

use rasgk::ras::encode;

#[path = "../../../benches/support/messages.rs"]
mod messages;
use messages::messages;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1);
    let dir = PathBuf::from(
        args.next()
            .ok_or("usage: seed <corpus dir> <capture.pcap>...")?,
    );
    std::fs::create_dir_all(&dir)?;
    let mut written = 0;
    for (name, message) in messages() {
        std::fs::write(dir.join(format!("seed-{name}")), encode(&message)?)?;
        written += 1;
    }
    for capture in args {
        let capture = PathBuf::from(capture);
        let stem = capture
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let datagrams = rasgk::pcap::read_file(&capture)?.datagrams;
        for datagram in &datagrams {
            let file = dir.join(format!("pcap-{stem}-{:05}", datagram.frame));
            std::fs::write(file, &datagram.payload)?;
            written += 1;
        }
        eprintln!("{}: {} datagrams", capture.display(), datagrams.len());
    }
    eprintln!("{written} seeds in {}", dir.display());
    Ok(())
}
