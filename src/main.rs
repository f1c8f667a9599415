//! The `rasgk` command: one binary, one subcommand per job.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use rasgk::{inspect, pcap};

#[derive(Parser)]
#[command(
    name = "rasgk",
    version,
    about = "H.323 RAS gatekeeper emulator",
    long_about = "rasgk emulates an H.323 RAS gatekeeper: it spreads IP phones over C-LAN \
                  interfaces by Avaya Communication Manager's rules (GCF choice, AGL, TTS \
                  sockets) and places outbound trunk calls across cluster nodes by Cisco \
                  CUCM's route-local rule."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the RAS messages of a capture (pcap or pcapng), one line or one JSON object each.
    ///
    /// UDP datagrams to or from port 1718 or 1719 (and any --port) are taken as RAS; other
    /// packets are skipped and counted on standard error. A RAS datagram that does not decode
    /// is printed with the reason. Exit status 0 when every RAS datagram decoded, 1 when some
    /// did not, 2 when the file cannot be read.
    ///
    /// Examples:
    ///   rasgk decode capture.pcap
    ///   rasgk decode --json capture.pcapng | jq 'select(.type == "RCF") | .seq'
    Decode {
        /// The capture file.
        file: PathBuf,
        /// One JSON object per message (frame, time, src, dst, type, seq, message), with the
        /// whole message in the ASN.1 JSON encoding rules (X.697).
        #[arg(long)]
        json: bool,
        /// Also take UDP datagrams on this port as RAS (repeatable).
        #[arg(long = "port", value_name = "PORT")]
        ports: Vec<u16>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Decode { file, json, ports } => decode(&file, json, &ports),
    }
}

fn decode(file: &std::path::Path, json: bool, ports: &[u16]) -> ExitCode {
    let capture = match pcap::read_file(file) {
        Ok(capture) => capture,
        Err(error) => {
            eprintln!("rasgk decode: {}: {error}", file.display());
            return ExitCode::from(2);
        }
    };
    let report = inspect::entries(&capture, ports);
    let start = report.entries.first().map(|e| e.time).unwrap_or_default();
    let mut out = std::io::stdout().lock();
    for entry in &report.entries {
        let text = if json {
            inspect::json(entry).to_string()
        } else {
            inspect::line(entry, start)
        };
        if writeln!(out, "{text}").is_err() {
            return ExitCode::SUCCESS; // reader went away (e.g. `| head`)
        }
    }
    let undecodable = report.undecodable();
    eprintln!(
        "{}: {} RAS messages, {} undecodable, {} other packets skipped",
        file.display(),
        report.entries.len() - undecodable,
        undecodable,
        report.skipped
    );
    if undecodable > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
