//! Registers one phone with a gatekeeper and prints what it answered: GRQ to the discovery
//! address, RRQ at the C-LAN the GCF names.
//!
//! ```sh
//! rasgk serve &                                        # the embedded default topology
//! cargo run --example register -- 127.1.0.5 50001      # a phone of region 1, extension 50001
//! cargo run --example register -- 127.3.0.9 7001 127.0.0.1:1719
//! cargo run --example register -- 127.1.0.5 50001 --password change-me   # [[password]]
//! ```
//!
//! With `--password SECRET` the RRQ carries an H.235 `cryptoEPPwdHash` token for the
//! extension, as a gatekeeper with a `[[password]]` for it requires.
//!
//! The phone sends from port 1719 of PHONE-IP, the RAS port phones use, so running it again
//! is the same endpoint registering again (its registration, and its endpoint identifier,
//! are kept), not a second endpoint claiming the extension from another address, which a
//! gatekeeper refuses (`duplicateAlias`).

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::process::ExitCode;
use std::time::Duration;

use rasgk::phone::{Answer, Phone};

fn ask(socket: &UdpSocket, to: SocketAddr, datagram: &[u8]) -> Result<Answer, String> {
    let seq = rasgk::ras::peek_request_seq_num(datagram).unwrap_or(0);
    let mut buffer = [0u8; 4096];
    for _ in 0..3 {
        socket
            .send_to(datagram, to)
            .map_err(|e| format!("send to {to}: {e}"))?;
        while let Ok((len, _)) = socket.recv_from(&mut buffer) {
            let answer = Answer::read(&buffer[..len]).map_err(|e| format!("reply: {e}"))?;
            if answer.seq() == seq {
                return Ok(answer);
            }
        }
    }
    Err(format!("no answer from {to} after 3 tries"))
}

fn run() -> Result<(), String> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: register PHONE-IP EXTENSION [DISCOVERY] [--password SECRET]   \
                 (e.g. 127.1.0.5 50001)";
    let password = match args.iter().position(|a| a == "--password") {
        Some(at) => {
            if at + 1 >= args.len() {
                return Err(format!("--password needs a value\n{usage}"));
            }
            let secret = args.remove(at + 1);
            args.remove(at);
            Some(secret)
        }
        None => None,
    };
    let mut args = args.into_iter();
    let ip: IpAddr = args
        .next()
        .ok_or(usage)?
        .parse()
        .map_err(|e| format!("PHONE-IP: {e}"))?;
    let extension: u32 = args
        .next()
        .ok_or(usage)?
        .parse()
        .map_err(|e| format!("EXTENSION: {e}"))?;
    let discovery: SocketAddr = args
        .next()
        .unwrap_or_else(|| "127.0.0.1:1719".into())
        .parse()
        .map_err(|e| format!("DISCOVERY: {e}"))?;
    let socket = UdpSocket::bind((ip, 1719)).map_err(|e| {
        format!("bind {ip}:1719: {e} (is another phone on that address? give another PHONE-IP)")
    })?;
    socket
        .set_read_timeout(Some(Duration::from_secs(1)))
        .map_err(|e| e.to_string())?;
    let mut phone = Phone::extension(extension, socket.local_addr().map_err(|e| e.to_string())?);
    phone.password = password;

    let grq = phone.grq();
    let gcf = ask(&socket, discovery, &grq)?;
    println!("GRQ → {discovery}: {gcf:?}");
    let Answer::Gcf {
        ras_address: Some(clan),
        ..
    } = gcf
    else {
        return Err("no GCF: nothing to register at".into());
    };
    let rrq = phone.rrq();
    let rcf = ask(&socket, clan, &rrq)?;
    println!("RRQ → {clan}: {rcf:?}");
    if let Answer::Rcf { agl, .. } = &rcf {
        println!("registered at {clan}; AGL:");
        for (priority, entry) in agl.iter().enumerate() {
            println!("  priority {priority}: {entry}");
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("register: {error}");
            ExitCode::FAILURE
        }
    }
}
