//! Writes the seed corpora of the three targets into `<corpus dir>/decode`,
//! `<corpus dir>/handle` and `<corpus dir>/q931`:
//!
//! - `decode`: the encodings of the messages the benches measure, plus the UDP payloads of
//!   the RAS captures given on the command line;
//! - `q931`: every message the `rasgk::q931` builders write (each Release Complete reason),
//!   a relayed Setup, and the same with 1- and 0-octet call references;
//! - `handle`: scripts (see `rasgk_fuzz`) of phones registering, keeping alive, calling and
//!   unregistering, a C-LAN fault, a GRQ flood and bad datagrams — each made by running the
//!   script's phones against the fuzz configuration, so every RRQ goes to the C-LAN its GCF
//!   named. Every script is run through the target's checks once before it is written.
//!
//! `cargo run --bin seed -- <corpus dir> <capture.pcap>...` (see `fuzz/seed`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rasgk::gatekeeper::Gatekeeper;
use rasgk::phone::{Answer, Phone};
use rasgk::q931::{self, CallReference, Release, Setup};
use rasgk::ras::{encode, Alias};
use rasgk_fuzz::Step;

#[path = "../../../benches/support/messages.rs"]
mod messages;
use messages::messages;

/// A script being written: the gatekeeper it runs against, so replies steer the phones.
struct Script {
    gatekeeper: Gatekeeper,
    locals: Vec<SocketAddr>,
    now: Instant,
    steps: Vec<Step>,
}

impl Script {
    fn new() -> Script {
        let gatekeeper = Gatekeeper::new(rasgk_fuzz::config()).expect("the fuzz config starts");
        let locals = gatekeeper.local_addresses();
        Script {
            gatekeeper,
            locals,
            now: Instant::now(),
            steps: Vec::new(),
        }
    }

    /// Sends `payload` from source octet `source` to `local` after `advance` × 50 ms; the
    /// replies.
    fn send(
        &mut self,
        source: u8,
        local: SocketAddr,
        advance: u8,
        payload: Vec<u8>,
    ) -> Vec<Answer> {
        self.now += Duration::from_millis(50 * u64::from(advance));
        if self
            .gatekeeper
            .poll_timeout()
            .is_some_and(|due| due <= self.now)
        {
            let _ = self.gatekeeper.handle_timeout(self.now);
        }
        let index = self
            .locals
            .iter()
            .position(|&l| l == local)
            .expect("a local address");
        let out = self
            .gatekeeper
            .handle(self.now, local, rasgk_fuzz::source(source), &payload);
        self.steps.push(Step {
            source,
            local: index as u8,
            advance,
            payload,
        });
        out.iter()
            .filter_map(|t| Answer::read(&t.payload).ok())
            .collect()
    }

    fn toggle(&mut self, clan: u8) {
        let _ = self
            .gatekeeper
            .set_in_service(self.now, usize::from(clan), false);
        self.steps.push(Step {
            source: 0,
            local: 0x80 | clan,
            advance: 1,
            payload: Vec::new(),
        });
    }

    /// GRQ and RRQ at the C-LAN the GCF names; the phone learns its endpoint id.
    fn register(&mut self, source: u8, phone: &mut Phone) {
        let discovery = self.locals[0];
        let grq = phone.grq();
        for answer in self.send(source, discovery, 1, grq) {
            phone.learn(&answer);
            if let Answer::Gcf {
                ras_address: Some(clan),
                ..
            } = answer
            {
                let rrq = phone.rrq();
                for answer in self.send(source, clan, 1, rrq) {
                    phone.learn(&answer);
                }
            }
        }
    }
}

fn phone(source: u8, extension: u32) -> Phone {
    Phone::extension(extension, rasgk_fuzz::source(source))
}

fn handle_seeds() -> Vec<(&'static str, Vec<Step>)> {
    let mut seeds = Vec::new();

    // One phone's life: register, retransmit, keep alive, call, unregister.
    let mut s = Script::new();
    let mut p = phone(1, 60001);
    s.register(1, &mut p);
    let clan = s.locals[1];
    let rrq = p.rrq();
    s.send(1, clan, 0, rrq.clone());
    s.send(1, clan, 2, rrq);
    if let Some(keep_alive) = p.keep_alive() {
        s.send(1, clan, 200, keep_alive);
    }
    if let Some(arq) = p.arq("960001", [7; 16]) {
        s.send(1, clan, 1, arq);
    }
    if let Some(drq) = p.drq([7; 16]) {
        s.send(1, clan, 1, drq);
    }
    let urq = p.urq();
    s.send(1, clan, 1, urq);
    seeds.push(("life", s.steps));

    // Phones of three regions fill C-LANs; one goes out of service; they come back.
    let mut s = Script::new();
    let mut phones: Vec<(u8, Phone)> = (0..12u8)
        .map(|i| (i, phone(i, 50000 + u32::from(i) * 7)))
        .collect();
    for (source, p) in &mut phones {
        s.register(*source, p);
    }
    s.toggle(0);
    for (source, p) in phones.iter_mut().take(4) {
        s.register(*source, p);
    }
    seeds.push(("fault", s.steps));

    // A flood of GRQs from one source, over its rate, then a late RRQ.
    let mut s = Script::new();
    let mut p = phone(9, 60009);
    for _ in 0..30 {
        let grq = p.grq();
        s.send(9, s.locals[0], 0, grq);
    }
    let rrq = p.rrq();
    s.send(9, s.locals[1], 40, rrq);
    seeds.push(("flood", s.steps));

    // Bad datagrams: nothing, garbage, a GRQ cut short, a GRQ with a trailing octet.
    let mut s = Script::new();
    let mut p = phone(2, 60002);
    let grq = p.grq();
    for payload in [
        Vec::new(),
        vec![0xff; 3],
        grq[..grq.len() / 2].to_vec(),
        [grq.clone(), vec![0]].concat(),
    ] {
        s.send(2, s.locals[0], 1, payload);
    }
    s.register(2, &mut p);
    seeds.push(("bad", s.steps));
    seeds
}

fn write_decode_seeds(
    dir: &Path,
    captures: &[PathBuf],
) -> Result<usize, Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir)?;
    let mut written = 0;
    for (name, message) in messages() {
        std::fs::write(dir.join(format!("seed-{name}")), encode(&message)?)?;
        written += 1;
    }
    for capture in captures {
        let stem = capture
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let datagrams = rasgk::pcap::read_file(capture)?.datagrams;
        for datagram in &datagrams {
            let file = dir.join(format!("pcap-{stem}-{:05}", datagram.frame));
            std::fs::write(file, &datagram.payload)?;
            written += 1;
        }
        eprintln!("{}: {} datagrams", capture.display(), datagrams.len());
    }
    Ok(written)
}

/// Every message the call-signalling builders write, a relayed Setup, and shorter call
/// references, with their names.
fn q931_seeds() -> Vec<(String, Vec<u8>)> {
    let (call_id, conference_id) = ([0x5d; 16], [0x11; 16]);
    let caller = CallReference::from_originator(0x1234);
    let callee = CallReference::to_originator(0x0042);
    let source = [
        Alias::dialled_digits("50001").expect("digits"),
        Alias::h323_id("Zoë").expect("a name"),
    ];
    let destination = [Alias::dialled_digits("50002").expect("digits")];
    let setup = q931::setup(&Setup {
        call_reference: caller,
        call_identifier: call_id,
        conference_id,
        source: &source,
        destination: &destination,
        display: Some("Zoe"),
        endpoint_identifier: None,
    })
    .expect("the Setup is valid");
    let mut seeds = vec![
        ("setup".to_string(), setup.to_vec()),
        (
            "call-proceeding".to_string(),
            q931::call_proceeding(callee, call_id).to_vec(),
        ),
        (
            "alerting".to_string(),
            q931::alerting(callee, call_id).to_vec(),
        ),
        (
            "connect".to_string(),
            q931::connect(callee, call_id, conference_id).to_vec(),
        ),
    ];
    for release in Release::ALL {
        let octets = q931::release_complete(caller.reversed(), Some(call_id), release);
        seeds.push((format!("release-{release:?}"), octets.to_vec()));
    }
    let relayed = q931::with_call_reference(&setup, callee.reversed()).expect("a Setup");
    seeds.push(("setup-relayed".to_string(), relayed.to_vec()));
    // The Setup with a 1-octet and a 0-octet call reference (header 08 LL [CRV] 05 …).
    let rest = &setup[4..];
    seeds.push((
        "setup-crv1".to_string(),
        [&[0x08, 0x01, 0x05][..], rest].concat(),
    ));
    seeds.push(("setup-crv0".to_string(), [&[0x08, 0x00][..], rest].concat()));
    seeds
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1);
    let dir = PathBuf::from(
        args.next()
            .ok_or("usage: seed <corpus dir> <capture.pcap>...")?,
    );
    let captures: Vec<PathBuf> = args.map(PathBuf::from).collect();
    let decode = write_decode_seeds(&dir.join("decode"), &captures)?;
    eprintln!("{decode} seeds in {}", dir.join("decode").display());
    let handle_dir = dir.join("handle");
    std::fs::create_dir_all(&handle_dir)?;
    let seeds = handle_seeds();
    for (name, steps) in &seeds {
        let data = rasgk_fuzz::write(steps);
        assert_eq!(
            &rasgk_fuzz::parse(&data),
            steps,
            "{name}: a script reads back"
        );
        rasgk_fuzz::run(&data);
        std::fs::write(handle_dir.join(format!("script-{name}")), data)?;
    }
    eprintln!("{} seeds in {}", seeds.len(), handle_dir.display());
    let q931_dir = dir.join("q931");
    std::fs::create_dir_all(&q931_dir)?;
    let seeds = q931_seeds();
    for (name, octets) in &seeds {
        q931::facts(octets).map_err(|e| format!("seed {name} does not read: {e}"))?;
        std::fs::write(q931_dir.join(format!("seed-{name}")), octets)?;
    }
    eprintln!("{} seeds in {}", seeds.len(), q931_dir.display());
    Ok(())
}
