//! Records `fixtures/replay/storm-20.pcap`: 20 phones of three regions register with the
//! gatekeeper core on `fixtures/replay/lab.toml` (GRQ → GCF → RRQ at the named C-LAN → RCF),
//! a 21st phone's GRQ is rejected, five phones send a keep-alive and one unregisters. Every
//! datagram a phone sent or received is written, with virtual timestamps from
//! 2024-01-01T00:00:00Z, so the file is the same on every run.
//!
//! ```sh
//! cargo run --example record_fixture -- fixtures/replay/storm-20.pcap [fixtures/replay/lab.toml]
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use rasgk::gatekeeper::Gatekeeper;
use rasgk::pcap::{self, Datagram};
use rasgk::phone::{Answer, Phone};

/// 2024-01-01T00:00:00Z.
const EPOCH: Duration = Duration::from_secs(1_704_067_200);

/// (region, extension) in arrival order: 14 phones of regions 1 and 2 (caps 8 + 6; 4 of
/// them TTS, extensions 5…), 6 of region 3 (2 TTS), interleaved; then one more of region 2.
const ARRIVALS: [(u8, u32); 21] = [
    (1, 1001),
    (3, 3001),
    (1, 1002),
    (2, 2001),
    (1, 5101),
    (3, 3002),
    (1, 1003),
    (1, 1004),
    (2, 2002),
    (3, 5301),
    (1, 1005),
    (1, 1006),
    (2, 5201),
    (3, 3003),
    (1, 1007),
    (1, 1008),
    (3, 3004),
    (1, 5102),
    (2, 2003),
    (3, 5302),
    (2, 2004),
];

/// Extensions that send a keep-alive at 5 s, and the one that unregisters at 6 s.
const KEEP_ALIVES: [u32; 5] = [1001, 2001, 3002, 5101, 3004];
const UNREGISTERS: u32 = 3003;

struct Recorder {
    gatekeeper: Gatekeeper,
    start: Instant,
    clock: Duration,
    datagrams: Vec<Datagram>,
}

impl Recorder {
    /// Sends `payload` from `phone` to `to` at the current virtual time, records it and the
    /// reply addressed to the phone, and returns the reply.
    fn ask(
        &mut self,
        phone: &mut Phone,
        to: SocketAddr,
        payload: Vec<u8>,
    ) -> Result<Answer, String> {
        let time = EPOCH + self.clock;
        let now = self.start + self.clock;
        let _ = self.gatekeeper.handle_timeout(now);
        let replies = self.gatekeeper.handle(now, to, phone.ras_address, &payload);
        self.datagrams.push(Datagram {
            frame: 0,
            time,
            src: phone.ras_address,
            dst: to,
            payload,
        });
        let mut answer = None;
        for (n, reply) in replies.into_iter().enumerate() {
            if reply.to != phone.ras_address {
                continue;
            }
            // The gatekeeper answers within a millisecond of virtual time.
            self.datagrams.push(Datagram {
                frame: 0,
                time: time + Duration::from_micros(400 + 100 * n as u64),
                src: reply.local,
                dst: reply.to,
                payload: reply.payload.to_vec(),
            });
            let read = Answer::read(&reply.payload).map_err(|e| format!("reply: {e}"))?;
            phone.learn(&read);
            answer.get_or_insert(read);
        }
        self.clock += Duration::from_millis(100);
        answer.ok_or_else(|| format!("no reply to {} from {to}", phone.ras_address))
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let out =
        PathBuf::from(args.next().ok_or(
            "usage: record_fixture OUT.pcap [CONFIG]   (e.g. fixtures/replay/storm-20.pcap)",
        )?);
    let config_path = PathBuf::from(
        args.next()
            .unwrap_or_else(|| "fixtures/replay/lab.toml".to_string()),
    );
    let config = rasgk::config::load(&config_path).map_err(|e| e.to_string())?;
    let discovery = config.gatekeeper.discovery;
    let gatekeeper = Gatekeeper::new(config).map_err(|e| e.to_string())?;
    let mut recorder = Recorder {
        gatekeeper,
        start: Instant::now(),
        clock: Duration::ZERO,
        datagrams: Vec::new(),
    };

    let mut phones: Vec<(Phone, Option<SocketAddr>)> = Vec::new();
    for (n, &(region, extension)) in ARRIVALS.iter().enumerate() {
        let n = n as u8 + 1;
        let address = SocketAddr::from(([127, region, 0, n], 20_000 + u16::from(n)));
        let mut phone = Phone::extension(extension, address);
        let grq = phone.grq();
        let clan = match recorder.ask(&mut phone, discovery, grq)? {
            Answer::Gcf {
                ras_address: Some(clan),
                ..
            } => clan,
            Answer::Grj { reason, .. } => {
                println!("{extension} (region {region}): GRJ {reason}");
                phones.push((phone, None));
                continue;
            }
            other => return Err(format!("{extension}: unexpected {other:?}")),
        };
        let rrq = phone.rrq();
        let answer = recorder.ask(&mut phone, clan, rrq)?;
        println!("{extension} (region {region}): {clan} {answer:?}");
        phones.push((phone, Some(clan)));
    }

    recorder.clock = Duration::from_secs(5);
    for extension in KEEP_ALIVES {
        let (phone, clan) = find(&mut phones, extension)?;
        let clan = clan.ok_or(format!("{extension} is not registered"))?;
        let keep_alive = phone
            .keep_alive()
            .ok_or(format!("{extension}: no endpoint id"))?;
        let answer = recorder.ask(phone, clan, keep_alive)?;
        println!("{extension} keep-alive: {answer:?}");
    }

    recorder.clock = Duration::from_secs(6);
    let (phone, clan) = find(&mut phones, UNREGISTERS)?;
    let clan = clan.ok_or(format!("{UNREGISTERS} is not registered"))?;
    let urq = phone.urq();
    let answer = recorder.ask(phone, clan, urq)?;
    println!("{UNREGISTERS} URQ: {answer:?}");

    pcap::write_file(&out, &recorder.datagrams)
        .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    println!("{}: {} datagrams", out.display(), recorder.datagrams.len());
    Ok(())
}

fn find(
    phones: &mut [(Phone, Option<SocketAddr>)],
    extension: u32,
) -> Result<(&mut Phone, Option<SocketAddr>), String> {
    let alias =
        rasgk::ras::Alias::dialled_digits(&extension.to_string()).map_err(|e| e.to_string())?;
    phones
        .iter_mut()
        .find(|(p, _)| p.aliases.contains(&alias))
        .map(|(p, clan)| (p, *clan))
        .ok_or(format!("no phone {extension}"))
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("record_fixture: {error}");
            ExitCode::FAILURE
        }
    }
}
